"""One candidate on one program: build, check every test, measure a correct answer.

`check_candidate` assembles, links and runs a candidate against a program's tests (the
verdicts come from judge.py); `Measurer` times a correct answer against the baseline
(measure/timing.py), counts its instructions (measure/valgrind.py) or leaves it; a
`SampleOutcome` is one judged sample, as the eval loop (run/judging.py), the store and the reward
service see it. `infra_error` is kept apart from every candidate verdict: when our side
fails (no sandbox, compiler missing, the grader raised) the candidate is not blamed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from asmopt.fresh import (
    HEAVY_CLASS_S,
    FreshInputs,
    Grading,
    check_drawn,
    draw_count,
    expected_tests,
    pair_draws,
    pair_input,
)
from asmopt.judge import TestVerdict, Verdict, classify_run
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup, TestSpeedup
from asmopt.measure.timing import CoreLock, ReferenceRun, TimingConfig, time_candidates
from asmopt.metrics import Answer
from asmopt.programs.generators import DrawError
from asmopt.programs.model import Program, TestCase
from asmopt.sandbox.records import Limits, RunResult, SandboxUnavailable
from asmopt.sandbox.runner import Sandbox
from asmopt.toolchain import BuildResult, Toolchain, ToolchainError
from asmopt.typed_config import check_arguments

if TYPE_CHECKING:
    from asmopt.measure.valgrind import CountResult, Valgrind

log = logging.getLogger(__name__)


@dataclass
class CheckResult:
    """Overall correctness of one candidate on one program."""

    program_id: str
    verdict: Verdict
    message: str = ""
    tests: list[TestVerdict] = field(default_factory=list)
    build_seconds: float = 0.0
    binary: Path | None = None
    # The answer's speedup over the baseline (measure/speedup.py), or None when not judged.
    speedup: ProgramSpeedup | None = None
    # How the drawn inputs of this verdict were drawn (fresh.Grading): enough for a person
    # to draw them again, and what the timed pairs draw with; never shown to a policy.
    inputs: Grading | None = None

    @property
    def correct(self) -> bool:
        return self.verdict == Verdict.PASS

    @property
    def built(self) -> bool:
        return self.verdict.built or (self.verdict == Verdict.INFRA_ERROR and bool(self.tests))

    @property
    def passed(self) -> int:
        return sum(t.verdict == Verdict.PASS for t in self.tests)

    @property
    def total(self) -> int:
        return len(self.tests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program_id,
            "verdict": str(self.verdict),
            "message": self.message,
            "passed": self.passed,
            "total": self.total,
            "build_seconds": self.build_seconds,
            "speedup": self.speedup.to_dict() if self.speedup is not None else None,
            "inputs": self.inputs.to_dict() if self.inputs is not None else None,
            "tests": [t.to_dict() for t in self.tests],
        }


def _overall(program_id: str, tests: list[TestVerdict]) -> CheckResult:
    failures = [t for t in tests if t.verdict.is_candidate_failure]
    if failures:
        first = failures[0]
        msg = f"test {first.test}: {first.message}"
        return CheckResult(program_id, first.verdict, msg, tests)
    infra = [t for t in tests if t.verdict == Verdict.INFRA_ERROR]
    if infra:
        return CheckResult(
            program_id, Verdict.INFRA_ERROR, f"test {infra[0].test}: {infra[0].message}", tests
        )
    return CheckResult(program_id, Verdict.PASS, f"all {len(tests)} tests passed", tests)


# The shortest wall limit a run is started with: with less left of a budget, the test is
# not run at all (RunBudget.exhausted).
MIN_RUN_S = 0.05
# Which bound a run's wall limit came from (RunBudget.cut): its test's own limit, the
# candidate's share of a deadline, or what is left of the deadline itself.
Bound = Literal["test", "budget", "deadline"]


@dataclass
class RunBudget:
    """How long a candidate's own runs may take in one check, and what the check is doing.

    The reward service holds every sample to a deadline. A candidate that sleeps must spend
    its own time and get `timeout`, never reach the deadline (which cannot tell whose time
    it was, and would exclude it as our `infra_error`). So each run's wall limit is cut to
    what is left of the candidate's share (`candidate_s`, its runs' wall times together)
    and of the deadline itself (`until`, a `time.monotonic()` by which the check should
    have returned): a run killed at the first cut is the candidate's timeout, at the second
    ours (our builds and sandboxes used the deadline). `report` is told each phase
    ("build", "runs": the candidate's own; "ours"), so that a last-resort kill from outside
    can tell whose time it was too. The default bounds nothing and reports nothing."""

    candidate_s: float = math.inf
    until: float = math.inf
    report: Callable[[str], None] | None = None
    spent_s: float = 0.0

    def phase(self, name: str) -> None:
        if self.report is not None:
            self.report(name)

    def cut(self, limits: Limits, runs: int = 1) -> tuple[Limits | None, Bound]:
        """The limits of each of the next `runs` runs (which share one sandbox): the wall cut
        to an equal share of what is left, and which bound it came from; None where less
        than MIN_RUN_S is left (the bound says whose that time was)."""
        own = (self.candidate_s - self.spent_s) / runs
        clock = (self.until - time.monotonic()) / runs
        wall = min(limits.wall_seconds, own, clock)
        bound: Bound = (
            "test" if wall >= limits.wall_seconds else "budget" if own <= clock else "deadline"
        )
        if wall < MIN_RUN_S:
            return None, bound
        return (limits if bound == "test" else replace(limits, wall_seconds=wall)), bound

    def charge(self, run: RunResult, limits: Limits) -> None:
        """Count a run's wall time against the candidate's share (a run killed at its wall
        limit, whose time the launcher does not report, ran for that limit)."""
        wall = run.wall_time_s or (limits.wall_seconds if run.timed_out else run.outer_wall_s)
        self.spent_s += wall

    def judged(self, verdict: TestVerdict, bound: Bound, limits: Limits) -> TestVerdict:
        """A run killed at a cut wall limit: where the candidate's share bound it, its own
        timeout (said so); where the deadline did, our infra_error (its own limit was never
        reached). A timeout at the CPU limit is the run's own either way."""
        cpu_limit = verdict.user_time_s + verdict.sys_time_s >= 0.75 * limits.cpu_seconds
        if verdict.verdict != Verdict.TIMEOUT or bound == "test" or cpu_limit:
            return verdict
        if bound == "budget":
            verdict.message = (
                f"exceeded its share of the scoring deadline ({self.candidate_s:.3g}s for all "
                f"its runs; this run had the last {limits.wall_seconds:.3g}s of it)"
            )
            return verdict
        verdict.verdict = Verdict.INFRA_ERROR
        verdict.message = (
            f"the scoring deadline left this run only {limits.wall_seconds:.3g}s: our own "
            "work (builds, sandboxes) used the rest (the machine may be overloaded)"
        )
        return verdict

    def exhausted(self, test: str, bound: Bound) -> TestVerdict:
        """The verdict of a test not run because nothing was left: the candidate's timeout
        where its own runs used its share, our infra_error where our work used the time."""
        if bound == "budget":
            return TestVerdict(
                test=test,
                verdict=Verdict.TIMEOUT,
                message=f"its runs used all of their {self.candidate_s:.3g}s share of the "
                "scoring deadline before this test",
            )
        return TestVerdict(
            test=test,
            verdict=Verdict.INFRA_ERROR,
            message="the scoring deadline passed before this test could run: our own work "
            "(builds, sandboxes) used it (the machine may be overloaded)",
        )


def _stops(stop_on_failure: bool | frozenset[Verdict], verdict: Verdict) -> bool:
    """Whether a check stops at this test's verdict: at any candidate failure (True), or
    at one of the verdicts given."""
    if isinstance(stop_on_failure, frozenset):
        return verdict in stop_on_failure
    return stop_on_failure and verdict.is_candidate_failure


def check_binary(
    program: Program,
    binary: str | Path,
    sandbox: Sandbox,
    limits: Limits | None = None,
    tests: Sequence[TestCase] | None = None,
    stop_on_failure: bool | frozenset[Verdict] = False,
    budget: RunBudget | None = None,
) -> CheckResult:
    """Run every test of `program` against an already built binary, each in a sandbox of
    its own, in order. `stop_on_failure`: stop at the first failing test (True), or at the
    first with one of the verdicts given; the overall verdict is the first failure's either
    way, so the tests after it only cost time (a sleeper's each its whole wall limit).
    `budget` cuts each run's wall limit to what is left of a deadline (RunBudget)."""
    limits = limits or sandbox.limits
    budget = budget or RunBudget()
    results: list[TestVerdict] = []
    for test in tests if tests is not None else program.tests:
        run_limits, bound = budget.cut(limits)
        if run_limits is None:
            results.append(budget.exhausted(test.name, bound))
            break
        late = False  # killed at what our own work left of the deadline: not to blame
        ours = False  # failed before the program started: not to blame either
        try:
            run = sandbox.run_program(binary, argv=test.argv, stdin=test.stdin, limits=run_limits)
            budget.charge(run, run_limits)
            verdict = classify_run(test, run, run_limits)
            late = bound == "deadline" and verdict.verdict == Verdict.TIMEOUT
            verdict = budget.judged(verdict, bound, run_limits)
        except SandboxUnavailable as exc:  # raised before the program's run: ours
            log.error("sandbox for %s/%s: %s", program.id, test.name, exc)
            verdict = TestVerdict(test=test.name, verdict=Verdict.INFRA_ERROR, message=str(exc))
            ours = True
        except Exception as exc:  # the grader itself failed: ours, not the candidate's
            log.error("grader error on %s/%s: %s", program.id, test.name, traceback.format_exc())
            verdict = TestVerdict(
                test=test.name,
                verdict=Verdict.INFRA_ERROR,
                message=f"grader error: {type(exc).__name__}: {exc}",
            )
        if verdict.verdict == Verdict.INFRA_ERROR and not sandbox.unsafe and not (late or ours):
            budget.phase("ours")
            verdict = _blame(verdict, sandbox, limits)
            budget.phase("runs")
        verdict.size_class = program.size_class(test.name)
        results.append(verdict)
        if _stops(stop_on_failure, verdict.verdict):
            break
    result = _overall(program.id, results)
    result.binary = Path(binary)
    return result


def _blame(verdict: TestVerdict, sandbox: Sandbox, limits: Limits) -> TestVerdict:
    """An infra error during a candidate's run is the candidate's unless the sandbox also
    fails a known-good program right after: `infra_error` pays nothing and is retried, so a
    candidate that could cause one would gain by it."""
    try:
        probe = sandbox.self_test(limits)
    except Exception as exc:  # the probe itself could not run: ours
        probe = f"{type(exc).__name__}: {exc}"
    if probe is not None:
        verdict.message = f"{verdict.message} (a known-good program fails too: {probe})"
        return verdict
    verdict.verdict = Verdict.SANDBOX_VIOLATION
    verdict.message = (
        f"the sandbox failed during this program's run ({verdict.message}); a known-good "
        "program ran fine in a fresh sandbox right after, so the failure is the program's"
    )
    return verdict


def build_verdict(program_id: str, build: BuildResult) -> CheckResult:
    stage_verdict = {
        "assemble": Verdict.ASSEMBLE_ERROR,
        "link": Verdict.LINK_ERROR,
        "compile": Verdict.ASSEMBLE_ERROR,
        "infra": Verdict.INFRA_ERROR,
    }
    return CheckResult(
        program_id, stage_verdict[build.stage], build.message, build_seconds=build.seconds
    )


def check_candidate(
    program: Program,
    assembly: str | bytes,
    toolchain: Toolchain,
    sandbox: Sandbox | None = None,
    limits: Limits | None = None,
    stop_on_failure: bool | frozenset[Verdict] = False,
    *,
    fresh: FreshInputs | None = None,
    label: object = 0,
    budget: RunBudget | None = None,
) -> CheckResult:
    """Assemble, link and run a candidate against all of a program's tests, then (when
    they pass and the program can draw inputs) against K freshly drawn inputs per size
    class, judged by the baseline's output on the same input (fresh.py). `fresh` is the
    grading's draw (a new secret seed when None); `label` names the sample within it.
    `stop_on_failure` as in `check_binary`; `budget` bounds the candidate's own runs and
    is told each phase (RunBudget).

    Wide because the graders, the adequacy check, the reward service, the compiler search and
    the import benchmarks each call it with their own mix of these settings; an options object
    would change every one of those calls."""
    sandbox = sandbox or toolchain.sandbox
    fresh = fresh if fresh is not None else FreshInputs()
    budget = budget or RunBudget()
    budget.phase("build")  # the candidate's: its assembly decides how long the build runs
    try:
        build = toolchain.assemble_and_link(assembly, program.ldflags)
    except Exception as exc:
        log.error("toolchain error on %s: %s", program.id, traceback.format_exc())
        return CheckResult(
            program.id, Verdict.INFRA_ERROR, f"toolchain error: {type(exc).__name__}: {exc}"
        )
    if not build.ok or build.output is None:
        return build_verdict(program.id, build)
    budget.phase("runs")
    result = check_binary(
        program, build.output, sandbox, limits, stop_on_failure=stop_on_failure, budget=budget
    )
    result.build_seconds = build.seconds
    grading = Grading(fresh, str(label), program.fixed_inputs)
    result.inputs = grading
    if result.verdict == Verdict.PASS and program.inputs is not None and fresh.per_class > 0:
        _check_drawn_inputs(result, program, toolchain, sandbox, limits, grading, budget)
    budget.phase("ours")
    return result


def _check_drawn_inputs(
    result: CheckResult,
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox,
    limits: Limits | None,
    grading: Grading,
    budget: RunBudget,
) -> None:
    """Extend a passing check with the drawn inputs' verdicts (and its overall verdict)."""
    heavy = frozenset(
        t.size_class
        for t in result.tests
        # CPU time: load elsewhere must not turn a light class into a heavy one.
        if t.size_class is not None and t.user_time_s + t.sys_time_s > HEAVY_CLASS_S
    )
    limits = limits or sandbox.limits
    budget.phase("ours")
    try:
        baseline = baseline_binary(program, toolchain)
        drawn = _drawn_verdicts(
            program, result.binary or "", baseline, sandbox, grading, limits, heavy, budget
        )
    except (DrawError, SandboxUnavailable) as exc:  # before any run: never the candidate's
        log.error("drawn inputs of %s: %s", program.id, exc)
        drawn = [(TestVerdict(test="drawn", verdict=Verdict.INFRA_ERROR, message=str(exc)), False)]
    except Exception as exc:  # the baseline or our side failed: not the candidate's
        log.error("drawn inputs of %s: %s", program.id, traceback.format_exc())
        drawn = [
            (
                TestVerdict(
                    test="drawn",
                    verdict=Verdict.INFRA_ERROR,
                    message=f"drawn inputs: {type(exc).__name__}: {exc}",
                ),
                True,
            )
        ]
    budget.phase("ours")
    judged = [
        _blame(v, sandbox, limits)
        if blame and v.verdict == Verdict.INFRA_ERROR and not sandbox.unsafe
        else v
        for v, blame in drawn
    ]
    tests = result.tests + judged
    overall = _overall(program.id, tests)
    result.verdict, result.message, result.tests = overall.verdict, overall.message, tests


def _drawn_verdicts(
    program: Program,
    candidate: str | Path,
    baseline: Path,
    sandbox: Sandbox,
    grading: Grading,
    limits: Limits,
    heavy: frozenset[str],
    budget: RunBudget,
) -> list[tuple[TestVerdict, bool]]:
    """The drawn inputs' verdicts, each with whether an infra error in it may be the
    candidate's (to be blamed): the drawn runs share one sandbox, so each candidate run
    gets an equal share of what is left of the budget (RunBudget.cut)."""
    runs = max(1, draw_count(program, grading.fresh.per_class, heavy))
    cand_limits, bound = budget.cut(limits, runs)
    if cand_limits is None:
        return [(budget.exhausted("drawn", bound), False)]
    budget.phase("runs")
    verdicts = check_drawn(
        program, candidate, baseline, sandbox, grading, limits, heavy, cand_limits
    )
    out = []
    for v in verdicts:
        late = bound == "deadline" and v.verdict == Verdict.TIMEOUT
        out.append((budget.judged(v, bound, cand_limits), not late))
    return out


def baseline_binary(program: Program, toolchain: Toolchain) -> Path:
    """The program's -O3 baseline, built (from the build cache after the first time)."""
    build = toolchain.assemble_and_link(toolchain.baseline_assembly(program), program.ldflags)
    if not build.ok or build.output is None:
        raise ToolchainError(f"the baseline assembly did not build: {build.message}")
    return Path(build.output)


@dataclass
class MeasureOptions:
    """How correct answers are measured against the baseline."""

    mode: MeasureMode = MeasureMode.TIME
    timing: TimingConfig = field(default_factory=TimingConfig)
    # Timing a copy measures the instrument, not the answer; on for A/A checks only.
    time_copies: bool = False
    lock: CoreLock | None = None


@dataclass
class SampleOutcome:
    """One candidate for one program, judged (and measured when it is correct)."""

    program_id: str
    sample: int
    check: CheckResult
    assembly: str | None = None
    policy_info: dict[str, Any] = field(default_factory=dict)
    is_copy: bool = False
    seconds: float = 0.0
    resumed: bool = False  # loaded from the results store, not judged in this session

    @property
    def key(self) -> tuple[str, int]:
        return (self.program_id, self.sample)

    @classmethod
    def infra_error(cls, program_id: str, sample: int, why: str) -> SampleOutcome:
        """A sample our side failed to judge (a broken baseline, a policy or grader error):
        recorded, never counted against the policy, and judged again on a rerun."""
        return cls(program_id, sample, CheckResult(program_id, Verdict.INFRA_ERROR, why))

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program_id,
            "sample": self.sample,
            **self.check.to_dict(),
            "is_copy": self.is_copy,
            "resumed": self.resumed,
            "seconds": self.seconds,
            "policy": self.policy_info,
        }

    def answer(self) -> Answer:
        """The metrics view of this outcome."""
        sp = self.check.speedup
        measured = sp is not None and sp.status == MeasureStatus.MEASURED
        return Answer(
            program_id=self.program_id,
            sample=self.sample,
            verdict=self.check.verdict,
            built=self.check.built,
            correct=self.check.correct,
            is_copy=self.is_copy,
            measure_status=str(sp.status) if sp else "not_measured",
            speedup=sp.ratio if sp and sp.has_ratio else None,
            low=sp.low if sp and sp.has_ratio else None,
            high=sp.high if sp and sp.has_ratio else None,
            test_speedups=tuple(t.ratio for t in sp.tests if t.status == MeasureStatus.MEASURED)
            if sp and measured
            else (),
            reliable=sp.reliable if sp else True,
        )


# ---------------------------------------------------------------------------- measurement
def _grading_inputs(check: CheckResult) -> tuple[FreshInputs, str]:
    """The draw a check was graded with (so its timed pairs come from the same secret
    seed and sample label), or a new secret one for a check that records none."""
    if check.inputs is None:
        return FreshInputs(), "0"
    return check.inputs.fresh, check.inputs.label


def reference_runs(check: CheckResult, tests: Sequence[TestCase]) -> list[ReferenceRun] | None:
    """The answer's own correctness run of each of `tests` (None where one is missing): the
    yardstick its timed runs must be consistent with (measure/timing/executor.py)."""
    by_name = {t.test: t for t in check.tests}
    if not all(t.name in by_name for t in tests):
        return None
    return [
        ReferenceRun(
            cpu_s=by_name[t.name].user_time_s + by_name[t.name].sys_time_s,
            wall_s=by_name[t.name].wall_time_s,
            stdout_sha256=by_name[t.name].stdout_sha256,
        )
        for t in tests
    ]


class Measurer:
    """Measures correct answers of one program against its baseline binary.

    The baseline is built once (lazily: programs whose answers all fail never need it) and,
    in instruction mode, its counts are computed once per test."""

    def __init__(
        self,
        program: Program,
        baseline_asm: str,
        toolchain: Toolchain,
        sandbox: Sandbox,
        options: MeasureOptions,
        limits: Limits | None,
        valgrind: Valgrind | None = None,
    ) -> None:
        self.program = program
        self.baseline_asm = baseline_asm
        self.toolchain = toolchain
        self.sandbox = sandbox
        self.options = options
        self.limits = limits
        self.valgrind = valgrind
        self._baseline_binary: Any = None
        self._baseline_error: str | None = None
        self._base_counts: dict[str, CountResult] = {}
        self._lock = threading.Lock()

    def baseline_binary(self) -> Any:
        with self._lock:
            if self._baseline_binary is None and self._baseline_error is None:
                build = self.toolchain.assemble_and_link(self.baseline_asm, self.program.ldflags)
                if build.ok and build.output is not None:
                    self._baseline_binary = build.output
                else:
                    self._baseline_error = f"the baseline assembly did not build: {build.message}"
            if self._baseline_error:
                raise ToolchainError(self._baseline_error)
            return self._baseline_binary

    def measure(self, check: CheckResult, is_copy: bool) -> None:
        """Attach a ProgramSpeedup to a correct `check` (or turn it into a failure when the
        candidate misbehaves during timing runs): `measure_many` with one answer."""
        self.measure_many([(check, is_copy)])

    def measure_many(self, checks: Sequence[tuple[CheckResult, bool]]) -> None:
        """Measure several correct answers of the program, given as (check, is copy):
        attach a ProgramSpeedup to each, or turn it into a failure when it misbehaves during
        timing runs. Timed answers are timed together (time_candidates): the baseline's runs
        are shared between them, so K answers cost about (K+1)/K runs a pair instead of 2,
        and each keeps its own interval, budget and failure as if timed alone."""
        mode = self.options.mode
        names = [t.name for t in self.program.tests]
        timed: list[CheckResult] = []
        for check, is_copy in checks:
            if mode == MeasureMode.NONE:
                check.speedup = ProgramSpeedup.not_measured()
            elif is_copy and not self.options.time_copies:
                check.speedup = ProgramSpeedup.copy_of_baseline(mode, names)
            elif check.binary is None:
                check.speedup = ProgramSpeedup(
                    mode, MeasureStatus.INFRA_ERROR, reliable=False, message="no candidate binary"
                )
            else:
                timed.append(check)
        if not timed:
            return
        try:
            baseline = self.baseline_binary()
        except ToolchainError as exc:
            for check in timed:
                check.speedup = ProgramSpeedup(
                    mode, MeasureStatus.INFRA_ERROR, reliable=False, message=str(exc)
                )
            return
        grading = [_grading_inputs(check) for check in timed]
        if mode == MeasureMode.TIME:
            # All tests of the program, and all answers, share each timing sandbox; every
            # pair of a test that stands for a size class runs on its own fresh input.
            draw, fresh_tests = pair_draws(self.program, grading)
            results = time_candidates(
                self.sandbox,
                baseline,
                [check.binary for check in timed if check.binary is not None],
                self.program.tests,
                self.options.timing,
                limits=self.limits,
                lock=self.options.lock,
                references=[self._reference(check) for check in timed],
                draw=draw,
                fresh_tests=fresh_tests,
            )
            for k, (check, (speedups, failure, failed_test)) in enumerate(
                zip(timed, results, strict=True)
            ):
                if failure is not None and failure.candidate_fault and failed_test is not None:
                    drawn = self._timed_draw(grading[k], failed_test, failure.serial)
                    self._fail(check, failed_test, failure.verdict, failure.message, drawn)
                    for tv in check.tests:
                        if tv.test == failed_test:
                            tv.difference = failure.difference
                else:
                    self._finish(check, speedups)
            return
        for check, (fresh, label) in zip(timed, grading, strict=True):
            per_test: list[TestSpeedup] = []
            for test in self.program.tests:
                per_test.append(self._count(self._count_input(test, fresh, label), check.binary))
                if per_test[-1].status == MeasureStatus.INFRA_ERROR:
                    break
            self._finish(check, per_test)

    def _count_input(self, test: TestCase, fresh: FreshInputs, label: str) -> TestCase:
        """The input an instruction count runs: a fresh draw of the test's class (its
        expected output the baseline's), or the fixed test where it stands for none."""
        size_class = self.program.size_class(test.name)
        if size_class is None or not fresh.timed:
            return test
        stdin, _ = fresh.draw(self.program, label, "count", size_class, test.name)
        drawn = expected_tests(
            self.program, self.baseline_binary(), self.sandbox, [(size_class, stdin)], self.limits
        )
        if not drawn:  # the baseline refuses the draw: count the fixed test instead
            return test
        return replace(drawn[0], name=test.name, argv=test.argv)

    def _reference(self, check: CheckResult) -> list[ReferenceRun] | None:
        return reference_runs(check, self.program.tests)

    def _finish(self, check: CheckResult, per_test: Sequence[TestSpeedup]) -> None:
        mode = self.options.mode
        # Timed tests carry the resolution they were measured with (the engine derives it
        # from this machine's between-sandbox spread); counts are exact.
        resolution = None if mode == MeasureMode.TIME else 0.0
        check.speedup = ProgramSpeedup.from_tests(mode, list(per_test), resolution)

    def _count(self, test: TestCase, binary: Path) -> TestSpeedup:
        from asmopt.measure.valgrind import count_instructions, instruction_speedup

        key = f"{test.name}:{hashlib.sha256(test.stdin).hexdigest()}"
        with self._lock:
            base = self._base_counts.get(key)
        if base is None:
            base = count_instructions(
                self.sandbox, self._baseline_binary, test, self.limits, self.valgrind
            )
            if base.candidate_fault:  # the baseline misbehaves under valgrind: not measurable
                base.status = MeasureStatus.UNMEASURABLE
            with self._lock:
                self._base_counts[key] = base
        cand = count_instructions(self.sandbox, binary, test, self.limits, self.valgrind)
        if cand.candidate_fault:
            # Correct natively, different under valgrind's emulation (x87 precision, timing,
            # uninitialised memory): no count, but no verdict on correctness either.
            cand.status = MeasureStatus.UNMEASURABLE
        return instruction_speedup(test.name, base, cand)

    def _timed_draw(
        self, grading: tuple[FreshInputs, str], test: str, serial: int | None
    ) -> dict[str, Any] | None:
        """How to draw again the input of the timed pair that failed (for a person)."""
        size_class = self.program.size_class(test)
        if serial is None or size_class is None:
            return None
        fresh, label = grading
        index = [t.name for t in self.program.tests].index(test)
        _, seed = pair_input(fresh, self.program, label, index, serial)
        return {"class": size_class, "seed": seed, "timed": True}

    @staticmethod
    def _fail(
        check: CheckResult,
        test: str,
        verdict: Verdict,
        message: str,
        drawn: dict[str, Any] | None = None,
    ) -> None:
        """A run during timing failed: the answer is not correct after all (a flaky answer,
        or one that behaves differently when run repeatedly, or wrong on a fresh input)."""
        for i, tv in enumerate(check.tests):
            if tv.test == test:
                check.tests[i] = TestVerdict(
                    test=test,
                    verdict=verdict,
                    message=message,
                    size_class=drawn["class"] if drawn else tv.size_class,
                    drawn=drawn,
                )
        check.verdict = verdict
        check.message = f"test {test}: {message}"
        check.speedup = None


def check(
    program: Program,
    assembly: str | bytes,
    *,
    measure: MeasureMode | str = MeasureMode.NONE,
    timing: TimingConfig | None = None,
    fresh: FreshInputs | None = None,
    label: object = 0,
    toolchain: Toolchain | None = None,
    sandbox: Sandbox | None = None,
    limits: Limits | None = None,
) -> CheckResult:
    """Build one candidate and judge it on the program's tests and on fresh draws (a new
    secret seed unless `fresh` replays one); with `measure` "time" or "instructions", a
    correct candidate is then measured against the -O3 baseline as an evaluation does, the
    result in `.speedup`. What `asmopt check` runs; the public entry point.

    Wide because it is the public entry point (`asmopt.check`): each keyword is a documented
    option, checked by name (`check_arguments`)."""
    check_arguments(check, dict(locals()))
    from asmopt.toolchain import default_toolchain

    mode = MeasureMode(measure)
    valgrind = None
    if mode == MeasureMode.INSTRUCTIONS:  # before anything is built
        from asmopt.measure.valgrind import Valgrind

        valgrind = Valgrind.locate()
    toolchain = toolchain or default_toolchain()
    sandbox = sandbox or toolchain.sandbox
    result = check_candidate(
        program, assembly, toolchain, sandbox, limits, fresh=fresh, label=label
    )
    if result.correct and mode != MeasureMode.NONE:
        from asmopt.measure.timing import default_core_lock

        lock = default_core_lock() if mode == MeasureMode.TIME else None
        options = MeasureOptions(mode=mode, timing=timing or TimingConfig(), lock=lock)
        _measure_against_baseline(
            program, assembly, result, toolchain, sandbox, limits, options, valgrind
        )
    return result


def _measure_against_baseline(
    program: Program,
    assembly: str | bytes,
    result: CheckResult,
    toolchain: Toolchain,
    sandbox: Sandbox,
    limits: Limits | None,
    options: MeasureOptions,
    valgrind: Valgrind | None,
) -> None:
    """Time (or count) one correct candidate against the baseline as `options` say (the
    core lock set for timing); builds and checks stay off the timing cores, as in an
    evaluation. A copy of the baseline is 1.0 by rule."""
    from asmopt.measure.canonical import canonical_statements
    from asmopt.measure.timing import general_affinity

    baseline = toolchain.baseline_assembly(program)
    text = assembly.decode("utf-8", "surrogateescape") if isinstance(assembly, bytes) else assembly
    is_copy = canonical_statements(text) == canonical_statements(baseline)
    measurer = Measurer(program, baseline, toolchain, sandbox, options, limits, valgrind)
    lock = options.lock
    placement = general_affinity(lock.layout) if lock is not None else contextlib.nullcontext()
    with placement:
        measurer.measure(result, is_copy)
