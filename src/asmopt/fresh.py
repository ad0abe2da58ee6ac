"""Fresh inputs for one grading: a secret seed, inputs drawn from it, and their expected
outputs from the trusted baseline run on the same input.

The design rule (docs/sandbox.md, "No run's input can be predicted"): a fixed test's
answer is fixed and knowable, so a candidate that memorised it, or replayed it from an
earlier run through a channel nobody closed, would be paid. An input drawn from a seed the
candidate never sees has no stored answer anywhere. Every correctness check therefore runs
K drawn inputs per size class beside the fixed tests, and every timed pair runs on its own
fresh input (measure/timing/executor.py); the baseline's output on that same input is the
expected output. The seed is recorded in the verdict, so a person can draw every input of
a verdict again (`asmopt check --input-seed`); a policy is never told it, nor any drawn byte.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from asmopt.errors import InputError
from asmopt.judge import TestVerdict, Verdict, classify_run
from asmopt.measure.timing.executor import DrawInput
from asmopt.programs.generators import DrawError, derive_seed
from asmopt.programs.model import Comparison, Program, TestCase
from asmopt.sandbox.records import Limits, RunResult
from asmopt.sandbox.runner import MAX_INPUTS, Sandbox
from asmopt.typed_config import unknown_key

log = logging.getLogger(__name__)

# Drawn inputs per size class in a correctness check. Chosen so that the built-in suite's
# adequacy mutants are killed (docs/adequacy.md); the heavy class is also checked on every
# timed pair, so K costs little where it matters most.
DEFAULT_PER_CLASS = 2
MAX_PER_CLASS = 64
# A class whose fixed tests ran longer than this (wall seconds, in the candidate's own
# correctness run) gets one drawn input, not K: a heavy draw costs as much as many light
# ones, and every timed pair of it runs on a fresh input whose output is judged anyway.
HEAVY_CLASS_S = 0.05


def new_seed() -> int:
    """A secret 63-bit seed (positive, so it prints and stores as an ordinary integer)."""
    return secrets.randbits(63)


@dataclass(frozen=True)
class FreshInputs:
    """How one grading draws its inputs: the secret input seed, K drawn inputs per size
    class in the correctness check, and whether timed pairs run on fresh inputs. One
    grading (an evaluation, a reward batch, a check) has one; every draw is labelled with
    the program, the sample and its purpose, so no two draws of a grading coincide.

    In a config that makes many gradings (ScoreConfig: every sample its own), `seed` None
    stands for "a new secret seed each grading", made by `for_grading`; a seed there
    replays every grading with it (never in training)."""

    seed: int | None = field(default_factory=new_seed)
    per_class: int = DEFAULT_PER_CLASS
    timed: bool = True

    def __post_init__(self) -> None:
        seed = self.seed
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InputError(f"seed must be a non-negative integer, got {seed!r}")
        if isinstance(self.per_class, bool) or not isinstance(self.per_class, int):
            raise InputError(f"per_class must be an integer, got {self.per_class!r}")
        if not 0 <= self.per_class <= MAX_PER_CLASS:
            raise InputError(f"per_class must be in 0..{MAX_PER_CLASS}, got {self.per_class}")
        if not isinstance(self.timed, bool):
            raise InputError(f"timed must be true or false, got {self.timed!r}")

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any], where: str, seed: Any = None) -> FreshInputs:
        """The settings a mapping names (`{"per_class": 4, "timed": false}`), each key one
        of `seed`, `per_class`, `timed`; a key missing takes its default, a missing seed
        `seed`. An unknown key names the nearest (`where.KEY`)."""
        names = ("seed", "per_class", "timed")
        for key in settings:
            if key not in names:
                raise unknown_key(key, names, "fresh-input setting", where)
        try:
            return cls(**{"seed": seed, **settings})
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None

    def for_grading(self) -> FreshInputs:
        """This, with a new secret seed where none is set: what one grading draws with."""
        return self if self.seed is not None else replace(self, seed=new_seed())

    @classmethod
    def off(cls) -> FreshInputs:
        """Fixed tests only (A/A checks of the instrument, old results): every input is
        then one a candidate could know."""
        return cls(seed=0, per_class=0, timed=False)

    @property
    def enabled(self) -> bool:
        return self.per_class > 0 or self.timed

    def draw(
        self, program: Program, label: object, purpose: str, size_class: str, index: object
    ) -> tuple[bytes, int]:
        """One input of `size_class` and the seed it was drawn from. A draw that fails
        (any exception: a spec that passed the load checks and still broke, or a bug of
        ours) is a DrawError naming the program, the class and the seed, so that no grader
        can take it for the candidate's failure: it happens before any run on the input."""
        if program.inputs is None:
            raise InputError(f"program {program.id!r} has fixed inputs only")
        if self.seed is None:
            raise InputError("no input seed: draw with FreshInputs.for_grading()")
        seed = derive_seed(self.seed, program.id, label, purpose, size_class, index)
        try:
            return program.inputs.draw(size_class, seed), seed
        except Exception as exc:
            raise DrawError(
                f"program {program.id!r}: drawing an input of class {size_class!r} (seed "
                f"{seed}) failed: {type(exc).__name__}: {exc}; the program's input generator "
                "or asmopt is at fault, not the answer",
                program.id,
                size_class,
                seed,
            ) from exc

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "per_class": self.per_class, "timed": self.timed}


@dataclass(frozen=True)
class Grading:
    """How one verdict's drawn inputs were drawn: the grading's FreshInputs (its seed always
    set), the sample's label within it, and whether the program had fixed inputs only.
    Enough for a person to draw them again (stored with the verdict, never shown to a
    policy), and what the answer's timed pairs draw with, so they come from the same secret
    seed: a record without a seed cannot be made."""

    fresh: FreshInputs
    label: str
    fixed_inputs: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.fresh, FreshInputs) or self.fresh.seed is None:
            raise InputError("a grading records the FreshInputs it drew with, its seed set")

    def to_dict(self) -> dict[str, Any]:
        return {**self.fresh.to_dict(), "label": self.label, "fixed_inputs": self.fixed_inputs}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grading:
        """A grading read back (the store): every field present and of its type."""
        try:
            fresh = FreshInputs(
                seed=int(data["seed"]), per_class=int(data["per_class"]), timed=bool(data["timed"])
            )
            return cls(fresh, str(data["label"]), bool(data.get("fixed_inputs", False)))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"a stored grading lacks or mistypes {exc}: {dict(data)}") from None


def class_comparison(program: Program, size_class: str) -> tuple[Comparison, int]:
    """The comparison and expected exit code of a class: those of its first fixed test.
    Where no fixed test stands for it (a learnt checking class `<class>.sample`, or a
    class learnt from a test that ends with an error exit: data/mutator.py), those of the
    test its name comes from, else the program's first test's."""
    by_name = {t.name: t for t in program.tests}
    chosen = next(
        (t for t in program.tests if program.size_class(t.name) == size_class),
        by_name.get(size_class) or by_name.get(size_class.split(".")[0]) or program.tests[0],
    )
    return fresh_comparison(chosen.compare), chosen.expected_exit


def fresh_comparison(compare: Comparison) -> Comparison:
    """How a run on a drawn input is compared with the baseline's output on it: as the
    test compares, except that an `md5` test (whose expected file is a digest) compares
    the two outputs themselves, exactly."""
    return Comparison() if compare.mode == "md5" else compare


def drawn_name(size_class: str, index: int) -> str:
    """A drawn test's name: its class and number (no fixed test name has a `~`)."""
    return f"{size_class}~{index + 1}"


def graded_per_class(program: Program, per_class: int) -> int:
    """K for `program`: the requested K, raised to what its entropy measurement requires
    (`metadata.entropy.per_class`, asmopt.entropy: where outputs repeat, as a sum's or a
    yes/no answer's do, more draws per class keep a constant answer from passing), while
    the measurement is for the program as it is. A request of 0 draws nothing."""
    mark = program.meta.get("entropy")
    if per_class <= 0 or not isinstance(mark, dict):
        return per_class
    required = mark.get("per_class")
    if mark.get("program_hash") != program.content_hash() or not isinstance(required, int):
        return per_class
    return max(per_class, required)


def draw_count(program: Program, per_class: int, heavy: frozenset[str] = frozenset()) -> int:
    """How many inputs `draw_inputs` draws: K per size class (`graded_per_class`), one for
    a class in `heavy` (what a check's drawn runs may cost: the reward service's deadline
    counts them)."""
    per_class = graded_per_class(program, per_class)
    if program.inputs is None or per_class <= 0:
        return 0
    return sum(1 if c in heavy else per_class for c in program.inputs.class_names)


def draw_inputs(
    program: Program,
    fresh: FreshInputs,
    label: object,
    purpose: str = "check",
    heavy: frozenset[str] = frozenset(),
) -> list[tuple[TestCase, dict[str, Any]]]:
    """K inputs per size class (`graded_per_class`; one for a class in `heavy`; no
    expected output yet), each with how to draw it again."""
    out: list[tuple[TestCase, dict[str, Any]]] = []
    per_class = graded_per_class(program, fresh.per_class)
    if program.inputs is None or per_class <= 0:
        return out
    for size_class in program.inputs.class_names:
        compare, code = class_comparison(program, size_class)
        for k in range(1 if size_class in heavy else per_class):
            stdin, seed = fresh.draw(program, label, purpose, size_class, k)
            test = TestCase(
                name=drawn_name(size_class, k),
                stdin=stdin,
                expected_stdout=b"",
                expected_exit=code,
                compare=compare,
            )
            out.append((test, {"class": size_class, "seed": seed}))
    return out


def pair_input(
    fresh: FreshInputs, program: Program, label: object, test_index: int, serial: int
) -> tuple[bytes, int]:
    """The input of timed pair `serial` of test `test_index` of one sample (and its seed):
    a draw of the class the test stands for, which no other pair or sample gets."""
    size_class = program.size_class(program.tests[test_index].name) or ""
    return fresh.draw(program, label, "time", size_class, f"{test_index}.{serial}")


def pair_draws(
    program: Program, gradings: Sequence[tuple[FreshInputs, object]]
) -> tuple[DrawInput | None, list[bool] | None]:
    """What the timing executor draws with: each candidate's pairs from its own grading
    and sample label (`gradings[c]`), and which tests draw (those that stand for a size
    class); (None, None) when the program, or any grading, times fixed inputs only."""
    if program.inputs is None or not all(fresh.timed for fresh, _ in gradings):
        return None, None

    def draw(c: int, i: int, serial: int) -> bytes:
        fresh, label = gradings[c]
        return pair_input(fresh, program, label, i, serial)[0]

    return draw, [program.size_class(t.name) is not None for t in program.tests]


def _baseline_ok(test: TestCase, run: RunResult, limits: Limits) -> bool:
    """The baseline's run of a drawn input defines its expected output only if it ended
    cleanly with the class's exit code: any other input is not one the program accepts."""
    judged = classify_run(replace(test, expected_stdout=run.stdout), run, limits)
    return judged.verdict == Verdict.PASS


def expected_tests(
    program: Program,
    baseline: str | Path,
    sandbox: Sandbox,
    inputs: Sequence[tuple[str, bytes]],
    limits: Limits | None = None,
) -> list[TestCase]:
    """TestCases for (size class, stdin) inputs whose expected output is the baseline's
    own on that input; inputs the baseline does not accept are left out."""
    limits = limits or sandbox.limits
    out: list[TestCase] = []
    for start in range(0, len(inputs), MAX_INPUTS):
        chunk = list(inputs[start : start + MAX_INPUTS])
        marker = secrets.token_hex(16)
        result = sandbox.run_binaries(
            [baseline],
            [0] * len(chunk),
            stdin=[stdin for _, stdin in chunk],
            feed=list(range(len(chunk))),
            limits=limits,
            marker=marker,
        )
        if result.infra_error:
            raise RuntimeError(f"the baseline's sandbox failed: {result.infra_error}")
        for k, run in enumerate(result.each_run()[: len(chunk)]):
            size_class, stdin = chunk[k]
            compare, code = class_comparison(program, size_class)
            test = TestCase(
                name=drawn_name(size_class, start + k),
                stdin=stdin,
                expected_stdout=run.stdout,
                expected_exit=code,
                compare=compare,
            )
            if _baseline_ok(test, run, limits):
                out.append(test)
    return out


def check_drawn(
    program: Program,
    candidate: str | Path,
    baseline: str | Path,
    sandbox: Sandbox,
    grading: Grading,
    limits: Limits | None = None,
    heavy: frozenset[str] = frozenset(),
    candidate_limits: Limits | None = None,
) -> list[TestVerdict]:
    """Run the candidate and the baseline on K drawn inputs per class (one per class in
    `heavy`), drawn with `grading`'s FreshInputs and label, in one sandbox, pair by pair
    (the candidate first in every other pair, so a run learns nothing from its place), and
    judge each candidate run against the baseline's output on the same input. Inputs the
    baseline does not accept are dropped (logged). `candidate_limits` (default `limits`)
    are the candidate's runs' own: a deadline may have cut their wall limit
    (evaluate.RunBudget).

    The launcher ends the sandbox after a run killed at its limit, so a candidate that
    times out on one input costs that one run, and its verdict is that run's; where the
    baseline was killed instead, the inputs after it are left out (logged), never the
    candidate's fault."""
    limits = limits or sandbox.limits
    cand_limits = candidate_limits or limits
    drawn = draw_inputs(program, grading.fresh, grading.label, heavy=heavy)
    verdicts: list[TestVerdict] = []
    for start in range(0, len(drawn), MAX_INPUTS):
        chunk = drawn[start : start + MAX_INPUTS]
        order: list[int] = []
        feed: list[int] = []
        for k in range(len(chunk)):
            pair = [0, 1] if k % 2 == 0 else [1, 0]
            order += pair
            feed += [k, k]
        result = sandbox.run_binaries(
            [baseline, candidate],
            order,
            stdin=[t.stdin for t, _ in chunk],
            feed=feed,
            limits=limits,
            marker=secrets.token_hex(16),
            run_wall_s=[limits.wall_seconds, cand_limits.wall_seconds],
        )
        runs = result.each_run()[: len(order)]
        for k, (test, how) in enumerate(chunk):
            base_i, cand_i = (2 * k, 2 * k + 1) if k % 2 == 0 else (2 * k + 1, 2 * k)
            verdict = _pair_verdict(program, test, how, result, runs, base_i, cand_i, limits)
            if isinstance(verdict, TestVerdict):  # the sandbox's own: nothing more to judge
                verdicts.append(verdict)
                break
            if verdict == "judge":
                verdicts.append(_candidate_verdict(test, how, runs, base_i, cand_i, cand_limits))
            if verdict == "stop" or len(runs) <= max(base_i, cand_i) + 1 < len(order):
                break  # the sandbox ended within this pair: nothing after it ran
        if any(v.verdict != Verdict.PASS for v in verdicts) or len(runs) < len(order):
            break
    return verdicts


def _ended_sandbox(run: RunResult) -> bool:
    """Whether the launcher ended the sandbox after this run: it was killed at a limit, or
    could not be executed (the runs after it never started)."""
    return run.timed_out or run.stdout_truncated or run.stderr_truncated or bool(run.exec_error)


def _pair_verdict(
    program: Program,
    test: TestCase,
    how: dict[str, Any],
    result: RunResult,
    runs: Sequence[RunResult],
    base_i: int,
    cand_i: int,
    limits: Limits,
) -> TestVerdict | str:
    """What one pair of a drawn-input sandbox comes to before the candidate's run is
    judged: "judge" (judge it: `_candidate_verdict`), "skip" (the baseline does not accept
    the input: left out), "stop" (the baseline's run was killed, which ended the sandbox:
    this input and those after it are left out, never the candidate's fault), or a verdict
    of its own (the sandbox failed, or stopped before this pair for no run's reason)."""
    extra: dict[str, Any] = {"size_class": how["class"], "drawn": how}
    if result.infra_error:
        return TestVerdict(
            test=test.name, verdict=Verdict.INFRA_ERROR, message=result.infra_error, **extra
        )
    have_base, have_cand = base_i < len(runs), cand_i < len(runs)
    if have_cand and (have_base or _ended_sandbox(runs[cand_i])):
        if have_base and not _baseline_ok(test, runs[base_i], limits):
            log.warning(
                "%s: the baseline does not accept drawn input %s (seed %d); it is left out",
                program.id,
                test.name,
                how["seed"],
            )
            return "skip"
        return "judge"  # with no baseline run: the candidate's was killed and ended it
    if have_base and _ended_sandbox(runs[base_i]):
        log.warning(
            "%s: the baseline's run on drawn input %s (seed %d) was killed at its limit, "
            "which ended the sandbox; it and the inputs after it are left out",
            program.id,
            test.name,
            how["seed"],
        )
        return "stop"
    if result.launcher_lost:
        return TestVerdict(
            test=test.name,
            verdict=Verdict.SANDBOX_VIOLATION,
            message="the program interfered with the sandbox's launcher",
            **extra,
        )
    if result.timed_out:
        return TestVerdict(
            test=test.name,
            verdict=Verdict.TIMEOUT,
            message="exceeded the drawn inputs' overall wall-clock limit",
            **extra,
        )
    return TestVerdict(
        test=test.name,
        verdict=Verdict.INFRA_ERROR,
        message="the sandbox stopped before this run",
        **extra,
    )


def _candidate_verdict(
    test: TestCase,
    how: dict[str, Any],
    runs: Sequence[RunResult],
    base_i: int,
    cand_i: int,
    cand_limits: Limits,
) -> TestVerdict:
    """The candidate's run judged against the baseline's output on the same input (none
    where the candidate's run was killed before the baseline's ran: its limit decides
    before any output is compared)."""
    expected = runs[base_i].stdout if base_i < len(runs) else b""
    verdict = classify_run(replace(test, expected_stdout=expected), runs[cand_i], cand_limits)
    verdict.size_class = how["class"]
    verdict.drawn = how
    return verdict
