"""Helpers every importer shares: errors, safe ids, text decoding, splits, the check that
a program the importer keeps can be loaded once written, writing suites, and the two
checks every import ends with (fresh inputs learnt from the tests, test adequacy). Where
an importer may read files is data/paths.py."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from asmopt.programs.model import Program, ProgramError, Suite
from asmopt.programs.rows import ItemError, json_safe, normalize_split_name, safe_id
from asmopt.programs.schema import describe_errors
from asmopt.programs.suite_io import load_program_dir, save_suite
from asmopt.typed_config import Renamed, renamed_keywords

from .report import DataReport

__all__ = ["ItemError", "json_safe", "normalize_split_name", "safe_id"]

if TYPE_CHECKING:
    from asmopt.sandbox.runner import Sandbox
    from asmopt.toolchain import Toolchain

    from .mutator import AcceptConfig

REPORT_FILE = "data_report.json"


@dataclass(frozen=True)
class ImportRun:
    """How an import runs, whatever it reads: whether it learns fresh inputs from the
    tests (`learn_inputs`, data/mutator.py), with how many programs at once, whether it
    shows progress, and the toolchain and sandbox it builds and runs with (the defaults
    where None)."""

    mutator: bool = False
    jobs: int = 2
    progress: bool = False
    toolchain: Toolchain | None = None
    sandbox: Sandbox | None = None

    def tools(self, skip_hint: str) -> tuple[Toolchain, Sandbox]:
        """The toolchain and a checked sandbox this run uses; an unusable sandbox is a
        DataError that says how to skip the step needing it (`skip_hint`)."""
        from asmopt.sandbox.records import SandboxUnavailable
        from asmopt.toolchain import default_toolchain

        tc = self.toolchain or default_toolchain()
        try:
            box = self.sandbox or tc.sandbox
            box.check()
        except SandboxUnavailable as exc:
            raise DataError(f"{exc} ({skip_hint})") from None
        return tc, box


class DataError(ProgramError):
    """Dataset input that cannot be used at all (as opposed to one bad item, which is
    dropped and reported); the message names the file and the problem."""


def decode_text(data: bytes, where: str, what: str = "source") -> str:
    """UTF-8 text or ItemError('not_utf8') naming the file and the first bad byte."""
    if b"\x00" in data:
        raise ItemError("not_utf8", f"{where}: {what} is binary (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ItemError(
            "not_utf8", f"{where}: {what} is not UTF-8 (invalid byte at offset {exc.start})"
        ) from None


# ---------------------------------------------------------------------------- loadable
NOT_LOADABLE = "not_loadable"
# Write errors that are the program's own fault (a name no file system takes); any other
# error writing to the scratch directory is ours (a full or missing $TMPDIR).
_PROGRAM_WRITE_ERRORS = (errno.ENAMETOOLONG, errno.EILSEQ, errno.EINVAL)


def check_loadable(program: Program) -> None:
    """ItemError('not_loadable') unless the suite loader reads `program` back once written.

    A program the loader refuses (a NUL in its source or an argv string, a generator that
    names a test it lacks, text no file can hold) would otherwise be written with the rest
    and make the whole suite unloadable. The program is written exactly as `save_suite`
    writes it, into a scratch directory, and read back with `load_program_dir`, so the
    rule is the loader's own and never a second copy of it."""
    try:
        with tempfile.TemporaryDirectory(prefix="asmopt-import-check-") as tmp:
            problem = _loader_refusal(program, Path(os.path.realpath(tmp)))
    except OSError as exc:
        raise DataError(
            f"{tempfile.gettempdir()}: cannot check imported programs there ({exc.strerror}); "
            "free space or point TMPDIR elsewhere"
        ) from None
    if problem is not None:
        raise ItemError(
            NOT_LOADABLE, f"{program.id}: the suite loader would refuse it once written: {problem}"
        )


def _loader_refusal(program: Program, scratch: Path) -> str | None:
    """Why the loader refuses `program` written under `scratch`, or None; scratch paths
    are cut from the message, which then names only files of the program (`main.c`)."""
    pdir = scratch / "programs" / program.id
    try:
        save_suite(Suite("check", {program.id: program}, {program.id: "test"}), scratch)
        load_program_dir(pdir, program.id)
        return None
    except ValidationError as exc:  # the schema refused what save_suite would write
        problem = describe_errors("program.json", exc)
    except (ProgramError, ValueError, TypeError) as exc:  # the loader; text or JSON writing
        problem = str(exc)
    except OSError as exc:
        if exc.errno not in _PROGRAM_WRITE_ERRORS:
            raise
        problem = f"cannot be written ({exc.strerror})"
    return problem.replace(f"{pdir}{os.sep}", "").replace(str(pdir), "program directory")


# ---------------------------------------------------------------------------- splits
def problem_of(program: Program) -> str:
    """The problem a program solves; submissions to one problem share a split."""
    return str(program.meta.get("problem") or program.id)


# Keyword arguments of the importers that were renamed: `seed=` is refused naming the new one.
RENAMED_KEYWORDS: Renamed = {
    "seed": (
        "split_seed",
        "the text hashed with each problem id to pick its split",
    ),
}


@renamed_keywords(RENAMED_KEYWORDS)
def split_for(
    problem: str, val_frac: float, test_frac: float, split_seed: str = "asmopt"
) -> str:
    """Deterministic split of a problem from a hash of (split_seed, problem).

    Hashing the problem id (never the program id, never an RNG over the pool) means the
    answer does not depend on which other programs are in the pool or on their order, and
    every submission to a problem lands on the same side."""
    if not (0 <= val_frac <= 1 and 0 <= test_frac <= 1 and val_frac + test_frac <= 1):
        raise DataError(
            f"split fractions must be in [0, 1] and sum to at most 1 "
            f"(validation {val_frac}, test {test_frac})"
        )
    digest = hashlib.sha256(f"{split_seed}\0{problem}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    if u < test_frac:
        return "test"
    if u < test_frac + val_frac:
        return "validation"
    return "train"


def assign_splits(
    programs: Iterable[Program], val_frac: float, test_frac: float, split_seed: str = "asmopt"
) -> dict[str, str]:
    return {p.id: split_for(problem_of(p), val_frac, test_frac, split_seed) for p in programs}


# ---------------------------------------------------------------------------- writing
def check_output(path: Path, force: bool) -> bool:
    """Whether writing a suite to `path` will replace one (DataError if it may not).

    Importers call this before any work, so a long import never ends by refusing its
    destination; `write_suite` calls it again just before writing."""
    if not path.exists():
        return False
    if not path.is_dir():
        raise DataError(f"{path}: output exists and is not a directory")
    if not any(path.iterdir()):
        return False
    if not force:
        raise DataError(f"{path}: output directory is not empty (use --force to replace a suite)")
    if not (path / "suite.json").exists():
        raise DataError(
            f"{path}: --force only replaces an existing suite directory (no suite.json here)"
        )
    return True


def write_suite(
    suite: Suite, path: str | Path, report: DataReport | None = None, force: bool = False
) -> Path:
    """Save a suite (format v1) plus its data report as data_report.json beside suite.json.

    The suite is written into a directory beside `path` and moved into place when whole,
    so a full disk or an interruption leaves `path` as it was (a rerun of the same command
    then works): the error names the directory that could not be written."""
    root = Path(path)
    replacing = check_output(root, force)
    staging = _staging_dir(root)
    try:
        save_suite(suite, staging)
        if report is not None:
            report.write(staging / REPORT_FILE)
        _move_into_place(staging, root, replacing)
    except OSError as exc:
        fix = "; free disk space and rerun" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else ""
        raise DataError(
            f"{root}: the suite could not be written ({exc.strerror or exc}){fix}; "
            f"{root} is left as it was"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def _staging_dir(root: Path) -> Path:
    """A new directory beside `root` (same file system: moved into place by a rename)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{root.name}.partial-", dir=root.parent))


def _move_into_place(staging: Path, root: Path, replacing: bool) -> None:
    """`staging` renamed to `root`; an existing suite there (`replacing`, checked to be one)
    or an empty directory is set aside first and removed only after the rename."""
    aside = None
    if root.exists():
        aside = root.parent / f".{root.name}.old-{staging.name.rsplit('-', 1)[-1]}"
        root.rename(aside)
    try:
        staging.rename(root)
    except OSError:
        if aside is not None:
            aside.rename(root)  # put back what was there
        raise
    if aside is not None and replacing:
        shutil.rmtree(aside, ignore_errors=True)
    elif aside is not None:
        aside.rmdir()  # it was empty


# ---------------------------------------------------------------------------- adequacy
def mark_adequacy(
    suite: Suite,
    report: DataReport,
    run: ImportRun | None = None,
) -> Suite:
    """The suite with every program's test-adequacy report stored as its mark.

    Imports keep programs whose tests may accept a trivial or mutated program (a reward
    hole, docs/adequacy.md); they are kept, because more tests can be added later, but
    marked, so rewards, training rows and exports refuse them until they are fixed or
    explicitly allowed. Counts and every unfit program go into the data report. A program
    the check could not judge (our side failed) stays unmarked and is noted."""
    from asmopt.adequacy.check import check_programs
    from asmopt.adequacy.fitness import marked_program
    from asmopt.adequacy.summary import summarize_reports

    run = run or ImportRun(progress=True)
    tc, box = run.tools("or skip the test-adequacy check with --no-adequacy")
    programs = suite.select()
    reports = check_programs(programs, tc, box, jobs=run.jobs, progress=run.progress)
    identity = tc.identity()
    marked = {p.id: marked_program(p, r, identity) for p, r in zip(programs, reports, strict=True)}
    summary = summarize_reports(reports)
    report.stats["adequacy"] = {
        "checked": summary["checked"],
        "fit": summary["fit"],
        "unfit": len(summary["unfit"]),
        "not_checked": len(summary["not_checked"]),
    }
    unfit = summary["unfit"]
    if unfit:
        shown = "; ".join(f"{pid} ({reasons[0]})" for pid, reasons in list(unfit.items())[:5])
        report.note(
            f"{len(unfit)} program(s) marked unfit for reward (their tests accept a trivial or "
            f"mutated program; see metadata.adequacy): {shown}" + (" ..." if len(unfit) > 5 else "")
        )
    for pid, error in summary["not_checked"].items():
        report.note(f"{pid}: test adequacy not checked ({error})")
    return Suite(
        name=suite.name,
        programs=marked,
        splits=dict(suite.splits),
        description=suite.description,
    )


# ---------------------------------------------------------------------------- fresh inputs
def learn_inputs(
    suite: Suite,
    report: DataReport,
    run: ImportRun | None = None,
    config: AcceptConfig | None = None,
) -> Suite:
    """The suite with a learnt input generator for every program that can have one.

    An imported program's fixed tests can be memorised (a lookup table keyed by stdin) or
    replayed; a generator learnt from those tests (data/mutator.py) lets every grading draw
    inputs nobody has seen. Only classes whose drawn inputs the program's own -O0, -O3 and
    sanitizer builds accept are kept; a program none of whose classes pass keeps its fixed
    inputs (`fixed_inputs`). Programs that already carry a generator are left as they are.
    What each program could draw (accepted/tried per class) is its
    `metadata.inputs_report`; the data report holds the totals and one line per program
    (`stats.inputs`)."""
    import time

    from .mutator import learn_programs, summarize

    run = run or ImportRun(progress=True)
    jobs, progress = run.jobs, run.progress
    tc, box = run.tools("or skip learning fresh inputs with --no-mutator")
    programs = suite.select()
    start = time.monotonic()
    learnt = learn_programs(programs, tc, box, jobs=jobs, progress=progress, config=config)
    learnt = _measure_learnt_entropy(
        programs, learnt, report, tc, box, jobs=jobs, progress=progress
    )
    seconds = time.monotonic() - start
    lines: dict[str, str] = {}
    counts = {"generator": 0, "fixed_inputs": 0, "carried": 0, "accepted": 0, "tried": 0}
    kept: dict[str, Program] = {}
    for before, program in zip(programs, learnt, strict=True):
        if before.inputs is not None:
            counts["carried"] += 1
            lines[program.id] = f"generator carried with the program ({program.inputs.origin})"
            kept[program.id] = program
            continue
        rep = program.meta.get("inputs_report", {})
        if not _drop_ill_defined_tests(program, rep, report):
            report.kept = [pid for pid in report.kept if pid != program.id]
            continue
        kept[program.id] = program
        counts["generator" if program.inputs is not None else "fixed_inputs"] += 1
        counts["accepted"] += int(rep.get("accepted", 0))
        counts["tried"] += int(rep.get("tried", 0))
        lines[program.id] = summarize(rep)
        if rep.get("infra_error"):
            report.note(f"{program.id}: fresh inputs not learnt ({rep.get('reason')})")
    report.stats["inputs"] = {
        **counts,
        "seconds": round(seconds, 2),
        "seconds_per_program": round(seconds / len(programs), 3) if programs else 0.0,
        "programs": lines,
    }
    if counts["fixed_inputs"]:
        report.note(
            f"{counts['fixed_inputs']} program(s) keep fixed inputs only (no input class "
            "could be learnt and accepted; see metadata.inputs_report): they are unfit for "
            "rewards unless fixed inputs are allowed"
        )
    return Suite(
        name=suite.name,
        programs=kept,
        splits={pid: split for pid, split in suite.splits.items() if pid in kept},
        description=suite.description,
    )


def _measure_learnt_entropy(
    before: list[Program],
    learnt: list[Program],
    report: DataReport,
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int,
    progress: bool = False,
) -> list[Program]:
    """`learnt` with the entropy measurement (asmopt.entropy) stored as the mark of every
    program whose learnt generator declares enough entropy: a generator can draw 2^64
    inputs whose outputs are nearly all one (`NEITHER` in 196 of 200 draws), and only
    the measured outputs show it. The mark makes such a program unfit for reward at once
    (`adequacy.is_reward_fit`), not only after a `suite verify --write-marks`."""
    from asmopt.entropy import (
        MARK_KEY,
        declared_class_problems,
        declared_problems,
        measure_entropy,
        timed_classes,
    )
    from asmopt.measure.coverage import measure_coverage
    from asmopt.parallel import parallel_map

    from .class_folding import fold_classes

    learnt = [  # a class a sample too small to carry 64 bits gave: folded, where others do
        (fold_classes(new, declared_class_problems(new)) or new) if old.inputs is None else new
        for old, new in zip(before, learnt, strict=True)
    ]
    chosen = [
        k
        for k, (old, new) in enumerate(zip(before, learnt, strict=True))
        if old.inputs is None and new.inputs is not None and not declared_problems(new)
    ]
    if not chosen:
        return learnt

    def measure(k: int) -> Program:
        program = learnt[k]
        try:
            measured = measure_entropy(program, toolchain, sandbox)
        except RuntimeError as exc:  # our sandbox failed: unmeasured, not unfit
            report.note(f"{program.id}: drawn outputs not measured ({exc})")
            return program
        folded = fold_classes(program, measured.class_problems())
        if folded is not None:  # each class draws alone: every measure stands, the folded
            program = folded  # classes' now as checking classes'
            timed = set(timed_classes(program))
            measured.checking += [c for c in measured.classes if c.size_class not in timed]
            measured.classes = [c for c in measured.classes if c.size_class in timed]
            measured.program_hash = program.content_hash()
        try:  # do the draws reach what the samples reach?
            reached = measure_coverage(program, toolchain, sandbox)
        except RuntimeError as exc:
            report.note(f"{program.id}: coverage of the drawn inputs not measured ({exc})")
            reached = None
        measured.coverage = reached.to_dict() if reached is not None else None
        meta = program.meta
        meta[MARK_KEY] = measured.to_dict()
        return replace(program, metadata=tuple(sorted(meta.items())))

    out = list(learnt)
    for k, program in zip(chosen, parallel_map(
        measure, chosen, jobs=jobs, desc="entropy", progress=progress
    ), strict=True):
        out[k] = program
    tabulable = [out[k].id for k in chosen if out[k].meta.get(MARK_KEY, {}).get("tabulable")]
    report.stats["entropy"] = {"measured": len(chosen), "tabulable": len(tabulable)}
    if tabulable:
        report.note(
            f"{len(tabulable)} program(s) with a learnt generator are unfit for reward: their "
            f"drawn outputs collide or ignore a field (metadata.entropy): {', '.join(tabulable)}"
        )
    return out


def _drop_ill_defined_tests(program: Program, inputs_report: dict, report: DataReport) -> bool:
    """Note every fixed test the mutator dropped (its -O0, -O3 and sanitizer builds
    disagree: data/mutator.py, `vet_fixed_tests`) by name; False, with the program dropped,
    when no test was left."""
    relaxed: dict[str, str] = inputs_report.get("relaxed_tests") or {}
    if relaxed:
        report.note(
            f"{program.id}: fixed test(s) {', '.join(relaxed)} compared ignoring whitespace "
            "(their given output differs from the program's only in whitespace)"
        )
    codes: dict[str, int] = inputs_report.get("exit_codes_taken") or {}
    if codes:
        shown = ", ".join(f"{name}: exit {code}" for name, code in codes.items())
        report.note(
            f"{program.id}: fixed test(s) expect the exit code every build of the program "
            f"gives, since their files give none ({shown})"
        )
    dropped: dict[str, str] = inputs_report.get("dropped_tests") or {}
    if not dropped:
        return True
    why = "; ".join(f"{name}: {reason}" for name, reason in dropped.items())
    if len(dropped) >= len(program.tests) and program.inputs is None:
        report.drop(program.id, "ill_defined_tests", f"every fixed test dropped ({why})")
        return False
    report.note(f"{program.id}: fixed test(s) dropped ({why})")
    return True
