"""Import a Project CodeNet checkout: accepted C submissions with their problem's tests.

Layout read (the one CodeNet ships):

```
ROOT/metadata/pNNNNN.csv          one row per submission; columns used: submission_id,
                                  problem_id, language, status, filename_ext
ROOT/data/pNNNNN/LANG/ID.EXT      the submission's source (LANG is the `language` value)
ROOT/derived/input_output/data/pNNNNN/input.txt, output.txt
                                  the problem's tests; more pairs may be given as
                                  input.N.txt / output.N.txt or NAME.in / NAME.out
```

Only rows whose `language` is C and `status` is Accepted are read, at most `per_problem`
per problem (10 in the reference dataset), in the CSV's order; rows skipped by those
filters are counted, not reported one by one. A submission that cannot be used (missing
file, not UTF-8, duplicate id, a file that is a symlink or a CSV-given path out of the
checkout or a FIFO (data/paths.py), a program the suite loader would refuse once written)
is dropped with its reason and the next accepted one takes its place. Program ids are
`PROBLEM-SUBMISSION`; `metadata.problem` keeps the problem so splits never separate
submissions to one problem. With `mutator=True` every submission also gets an input
generator learnt from the problem's tests where its builds accept the drawn inputs
(`common.learn_inputs`, data/mutator.py).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from asmopt.programs.model import Program, ProgramError, Suite, TestCase
from asmopt.typed_config import renamed_keywords

from .common import (
    RENAMED_KEYWORDS,
    DataError,
    ImportRun,
    ItemError,
    assign_splits,
    check_loadable,
    decode_text,
    learn_inputs,
    safe_id,
)
from .paths import Tree
from .report import DataReport
from .testfiles import pair_test_files

REQUIRED_COLUMNS = ("submission_id", "problem_id", "language", "status")
DEFAULT_PER_PROBLEM = 10


def _read_csv(path: Path, tree: Tree) -> list[dict[str, str]]:
    text = tree.read(path, "metadata file").decode("utf-8", errors="replace")
    reader = csv.DictReader(text.splitlines())
    columns = [c.strip() for c in reader.fieldnames or []]
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise ItemError("missing_column", f"{path}: missing column(s) {', '.join(missing)}")
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in reader]


@dataclass(frozen=True)
class _Checkout:
    """Where a CodeNet checkout's files are read from, and which submissions are taken."""

    tree: Tree
    io_root: Path
    io_tree: Tree
    language: str
    status: str
    per_problem: int


@renamed_keywords(RENAMED_KEYWORDS)
def import_codenet(
    root: str | Path,
    *,
    per_problem: int = DEFAULT_PER_PROBLEM,
    language: str = "C",
    status: str = "Accepted",
    io_dir: str | Path | None = None,
    problems: list[str] | None = None,
    val_frac: float = 0.025,
    test_frac: float = 0.0,
    split_seed: str = "asmopt",
    name: str = "codenet",
    run: ImportRun | None = None,
) -> tuple[Suite, DataReport]:
    """Read a CodeNet tree; bad problems and submissions are reported, never fatal.
    `run.mutator` learns fresh inputs from the tests (`common.learn_inputs`).

    Wide because its keywords are the `data import codenet` options one for one, each with the
    command's default, so the command and the tests set only those they change."""
    run = run or ImportRun()
    root = Path(root)
    meta_dir = root / "metadata"
    if not meta_dir.is_dir():
        raise DataError(f"{root}: not a CodeNet checkout (no metadata/ directory)")
    if per_problem < 1:
        raise DataError(f"--per-problem must be at least 1, got {per_problem}")
    io_root = Path(io_dir) if io_dir else root / "derived" / "input_output" / "data"
    tree = Tree(root, "the CodeNet checkout")
    io_tree = Tree(io_root, "the --io-dir directory") if io_dir else tree
    checkout = _Checkout(tree, io_root, io_tree, language, status, per_problem)
    report = DataReport("import codenet")
    csvs = _metadata_files(meta_dir, problems)
    programs: dict[str, Program] = {}

    from tqdm import tqdm

    for csv_path in tqdm(csvs, desc="codenet", unit="problem", disable=not run.progress):
        _import_problem(checkout, csv_path, programs, report)
    report.kept = sorted(programs)
    report.stats["problems"] = len({p.meta["problem"] for p in programs.values()})
    splits = assign_splits(programs.values(), val_frac, test_frac, split_seed)
    suite = Suite(
        name=name,
        programs=programs,
        splits=splits,
        description=f"CodeNet {language} submissions with status {status}",
    )
    if run.mutator and programs:
        suite = learn_inputs(suite, report, run)
    return suite, report


def _metadata_files(meta_dir: Path, problems: list[str] | None) -> list[Path]:
    """The per-problem metadata files (pNNNNN.csv), only the named problems' if any."""
    csvs = sorted(p for p in meta_dir.glob("p*.csv") if p.stem != "problem_list")
    if problems:
        wanted = set(problems)
        csvs = [p for p in csvs if p.stem in wanted]
    if not csvs:
        raise DataError(f"{meta_dir}: no per-problem metadata files (pNNNNN.csv)")
    return csvs


def _import_problem(
    checkout: _Checkout, csv_path: Path, programs: dict[str, Program], report: DataReport
) -> None:
    """Add up to `per_problem` submissions of one problem to `programs`, in the CSV's
    order; what cannot be imported is reported (a problem without tests as a whole)."""
    problem = csv_path.stem
    try:
        rows = _read_csv(csv_path, checkout.tree)
    except ItemError as exc:
        report.drop(problem, exc.reason, exc.detail)
        return
    chosen = _chosen_rows(rows, checkout.language, checkout.status, report)
    if not chosen:
        return
    try:
        tests = _problem_tests(checkout, problem)
    except ItemError as exc:
        report.drop(problem, exc.reason, exc.detail)
        return
    taken = 0
    for row in chosen:
        if taken >= checkout.per_problem:
            report.filter(f"beyond {checkout.per_problem} submissions per problem")
            continue
        program = _submission(checkout.tree, problem, row, tests, programs, report)
        if program is not None:
            programs[program.id] = program
            taken += 1


def _chosen_rows(
    rows: list[dict[str, str]], language: str, status: str, report: DataReport
) -> list[dict[str, str]]:
    """The rows in `language` with `status`; the others are counted as filtered."""
    chosen = [r for r in rows if r["language"] == language and r["status"] == status]
    report.filter(f"language is not {language}", sum(r["language"] != language for r in rows))
    report.filter(
        f"status is not {status}",
        sum(r["language"] == language and r["status"] != status for r in rows),
    )
    return chosen


def _problem_tests(checkout: _Checkout, problem: str) -> list[TestCase]:
    """The problem's test pairs from its input/output directory."""
    problem_io = checkout.io_root / problem
    tests = pair_test_files(problem_io, checkout.io_tree) if problem_io.is_dir() else None
    if tests is None:
        raise ItemError("no_tests", f"{checkout.io_root / problem}: no test directory")
    return tests


def _submission(
    tree: Tree,
    problem: str,
    row: dict[str, str],
    tests: list[TestCase],
    programs: dict[str, Program],
    report: DataReport,
) -> Program | None:
    sub = row["submission_id"]
    pid = safe_id(problem, sub)
    ext = row.get("filename_ext") or "c"
    root = tree.root
    path = root / "data" / problem / row["language"] / f"{sub}.{ext}"
    try:
        if row["problem_id"] and row["problem_id"] != problem:
            raise ItemError(
                "bad_row", f"{problem}.csv: row {sub} names problem {row['problem_id']}"
            )
        if pid in programs:
            raise ItemError("duplicate_id", f"{problem}.csv: submission {sub} listed twice")
        source = decode_text(tree.read(path, "source"), str(path.relative_to(root)))
        program = Program(
            id=pid,
            source=source,
            tests=tuple(tests),
            metadata=(
                ("origin", str(path.relative_to(root))),
                ("problem", problem),
                ("source", "codenet"),
                ("submission", sub),
            ),
        )
        check_loadable(program)
        return program
    except ItemError as exc:
        report.drop(pid, exc.reason, exc.detail)
    except ProgramError as exc:
        report.drop(pid, "invalid_program", f"{path}: {exc}")
    return None
