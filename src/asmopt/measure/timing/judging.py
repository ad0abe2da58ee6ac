"""Timed judging: a candidate (or several) timed against the baseline test by test in the
sandbox executor, by the engine, with this machine's spread (calibration), then settled:
blame for failures that are not plainly the candidate's, and the consistency of its timed
runs with its correctness runs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from asmopt.errors import InputError
from asmopt.judge import Verdict, classify_run
from asmopt.measure.speedup import TestSpeedup, TimingWarning
from asmopt.measure.timing.calibration import machine_spread
from asmopt.measure.timing.config import TimingConfig
from asmopt.measure.timing.cores import CoreLock, default_core_lock
from asmopt.measure.timing.engine import TimingOutcome, measure_candidates
from asmopt.measure.timing.executor import DrawInput, SharedSandboxExecutor
from asmopt.measure.timing.rounds import RunFailure
from asmopt.programs.model import TestCase
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import Sandbox


@dataclass(frozen=True)
class ReferenceRun:
    """What the candidate did in its own correctness run of a test (evaluate.check_binary):
    the yardstick its timed runs must be consistent with."""

    cpu_s: float
    wall_s: float
    stdout_sha256: str | None = None


# A timed run may take this many times its correctness run's wall time (and at least
# CANDIDATE_WALL_MIN_S, so a busy machine does not turn a slow start into a timeout) before
# it is stopped; any timed run on a fixed input using less than 1/INCONSISTENT_CPU_FACTOR
# of its correctness run's CPU time means it skipped work it did then. The slack only
# covers the clock's granularity (the kernel accounts CPU time in scheduler ticks split
# by runtime): unlike a floor, it leaves the rule binding for all but sub-millisecond runs.
CANDIDATE_WALL_FACTOR = 10.0
CANDIDATE_WALL_MIN_S = 5.0
INCONSISTENT_CPU_FACTOR = 4.0
INCONSISTENT_CPU_SLACK_S = 0.0005


def time_tests(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    tests: Sequence[TestCase],
    config: TimingConfig | None = None,
    *,
    limits: Limits | None = None,
    lock: CoreLock | None = None,
    targets: Sequence[float] | None = None,
    reference: Sequence[ReferenceRun] | None = None,
    draw: DrawInput | None = None,
    fresh_tests: Sequence[bool] | None = None,
) -> tuple[list[TestSpeedup], RunFailure | None, str | None]:
    """Measure the speedup of `candidate` over `baseline` on every test (see measure_tests):
    `time_candidates` with one candidate (`draw` as there).

    Wide because it is `time_candidates` for one candidate and keeps its parameters."""
    (result,) = time_candidates(
        sandbox,
        baseline,
        [candidate],
        tests,
        config,
        limits=limits,
        lock=lock,
        targets=targets,
        references=[reference],
        draw=draw,
        fresh_tests=fresh_tests,
    )
    return result


def time_candidates(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    candidates: Sequence[str | os.PathLike[str]],
    tests: Sequence[TestCase],
    config: TimingConfig | None = None,
    *,
    limits: Limits | None = None,
    lock: CoreLock | None = None,
    targets: Sequence[float] | None = None,
    references: Sequence[Sequence[ReferenceRun] | None] | None = None,
    draw: DrawInput | None = None,
    fresh_tests: Sequence[bool] | None = None,
) -> list[tuple[list[TestSpeedup], RunFailure | None, str | None]]:
    """Measure the speedup of each of `candidates` over `baseline` on every test, the
    baseline's runs shared between them (SharedSandboxExecutor, measure_candidates): K
    candidates cost about (K+1)/K runs a pair instead of 2. Returns, per candidate, its
    speedups, its failure and the name of the failing test (as `time_tests`).

    With a reference (the candidate's correctness run of each test; `references` holds one
    list, or None, per candidate), each of that candidate's runs gets a deadline of
    CANDIDATE_WALL_FACTOR times its correctness run's wall time, and its timed runs must be
    consistent with that run: the same output wherever the baseline's output is stable,
    and no far smaller CPU time. Inconsistency is the candidate's failure (verdict
    sandbox_violation): it behaved differently when it could have been timed.

    With `draw` (fresh.py), every pair of a test flagged in `fresh_tests` runs on its own
    freshly drawn input, and the candidate's output is judged against the baseline's on
    that input: an answer stored or memorised beforehand is then simply wrong.

    Blame: a failure that is not plainly the candidate's (the baseline failed beside it,
    the sandbox broke) is charged to the candidate unless the baseline alone, in a fresh
    sandbox, fails the same test too; only then is it `infra_error`. Each candidate is
    judged on its own: one candidate's failure does not stop the others.

    Wide because the executor's inputs (sandbox, binaries, tests, limits, core lock) and the
    judging's (targets, references, fresh draws) are independent, and each caller sets a
    different few of the keyword-only ones."""
    lock = lock or default_core_lock()
    config = _with_machine_spread(config or TimingConfig(), sandbox, lock)
    limits = limits or sandbox.limits
    refs = _checked_references(references, len(candidates), len(tests))
    executor = SharedSandboxExecutor(
        sandbox,
        baseline,
        candidates,
        tests,
        limits,
        lock,
        priority=config.priority,
        candidate_wall_s=[_candidate_wall(r, limits) for r in refs],
        draw=draw,
        fresh_tests=fresh_tests,
    )
    warnings = [] if lock.layout.isolated else [TimingWarning.NOT_ISOLATED]
    names = [t.name for t in tests]
    results = measure_candidates(
        executor,
        names,
        len(candidates),
        config,
        warnings=warnings,
        targets=targets,
        pair_seconds=[_pair_seconds(ref) for ref in refs],
    )
    judge = _CandidateJudge(sandbox, baseline, tests, limits, executor)
    return [judge.settle(c, result, refs[c]) for c, result in enumerate(results)]


def _with_machine_spread(config: TimingConfig, sandbox: Sandbox, lock: CoreLock) -> TimingConfig:
    """The config with this machine's between-sandbox spread (measured once a day) where
    it names none."""
    if config.spread is None:
        config = replace(config, spread=machine_spread(sandbox, lock))
    return config


def _checked_references(
    references: Sequence[Sequence[ReferenceRun] | None] | None, n_candidates: int, n_tests: int
) -> list[Sequence[ReferenceRun] | None]:
    """One reference list (or None) per candidate, each with one run per test."""
    refs = list(references) if references is not None else [None] * n_candidates
    if len(refs) != n_candidates:
        raise InputError("one reference (or None) per candidate")
    if any(r is not None and len(r) != n_tests for r in refs):
        raise InputError("one reference run per test")
    return refs


def _pair_seconds(reference: Sequence[ReferenceRun] | None) -> list[float] | None:
    """The seconds one pair of each test is expected to take, from a candidate's
    correctness runs.

    One pair of a test costs about two of the candidate's correctness runs, on a core of
    its own: their CPU time, not their wall time, which load on the other cores (where
    correctness runs go) inflates; a plan sized from it would shrink the measurement to
    one short round. A run that mostly waits (CPU far under wall) is bounded by the budget."""
    return [2.0 * r.cpu_s for r in reference] if reference is not None else None


@dataclass(frozen=True)
class _CandidateJudge:
    """Turns a candidate's measurement into its final answer: blame for failures that are
    not plainly its own, and the consistency check against its correctness runs."""

    sandbox: Sandbox
    baseline: str | os.PathLike[str]
    tests: Sequence[TestCase]
    limits: Limits
    executor: SharedSandboxExecutor

    def settle(
        self,
        candidate: int,
        result: tuple[list[TestSpeedup], RunFailure | None, str | None],
        reference: Sequence[ReferenceRun] | None,
    ) -> tuple[list[TestSpeedup], RunFailure | None, str | None]:
        """(speedups, failure, failing test's name) after blame and the consistency check."""
        speedups, failure, failed = result
        names = [t.name for t in self.tests]
        if failure is not None and not failure.candidate_fault and failed is not None:
            test = self.tests[names.index(failed)]
            failure = _blame(self.sandbox, self.baseline, test, self.limits, failure)
        if failure is None and reference is not None:
            digests = self.executor.digests[candidate]
            found = _inconsistency(speedups, reference, digests, self.executor.fresh_tests)
            if found is not None:
                index, why = found
                failure = RunFailure(True, why, None, 0, Verdict.SANDBOX_VIOLATION)
                failed = self.tests[index].name
        return speedups, failure, failed


def _candidate_wall(reference: Sequence[ReferenceRun] | None, limits: Limits) -> float | None:
    """A candidate run's deadline from its correctness runs (None: the limits' own)."""
    if not reference:
        return None
    longest = max(r.wall_s for r in reference)
    return min(limits.wall_seconds, max(CANDIDATE_WALL_MIN_S, CANDIDATE_WALL_FACTOR * longest))


def _blame(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    test: TestCase,
    limits: Limits,
    failure: RunFailure,
) -> RunFailure:
    """Decide who a non-candidate failure belongs to: rerun the baseline alone, fresh."""
    stdin = failure.stdin if failure.stdin is not None else test.stdin
    rerun = sandbox.run_program(baseline, argv=test.argv, stdin=stdin, limits=limits)
    if failure.stdin is not None:  # a drawn input: its only expected output is this run's
        test = replace(test, stdin=stdin, expected_stdout=rerun.stdout)
    verdict = classify_run(test, rerun, limits)
    if verdict.verdict == Verdict.PASS:
        return RunFailure(
            True,
            f"{failure.message}; the baseline alone passes this test in a fresh sandbox, so "
            "the failure is charged to the candidate that ran beside it",
            failure.run_result,
            failure.run_index,
            Verdict.SANDBOX_VIOLATION,
            stdin=failure.stdin,
            difference=failure.difference,
            serial=failure.serial,
        )
    return RunFailure(
        False,
        f"{failure.message}; the baseline alone fails too in a fresh sandbox "
        f"({verdict.verdict}: {verdict.message})",
        failure.run_result,
        failure.run_index,
        Verdict.INFRA_ERROR,
    )


def _inconsistency(
    speedups: Sequence[TestSpeedup],
    reference: Sequence[ReferenceRun],
    outputs: dict[int, tuple[set[str], set[str]]],
    fresh_tests: Sequence[bool],
) -> tuple[int, str] | None:
    """The first fixed-input test whose timed candidate runs disagree with its correctness
    run on the same input: another output while the baseline's never changed, or ANY
    timed run (not their median) using less than 1/INCONSISTENT_CPU_FACTOR of its CPU.

    Tests on fresh inputs are not checked here: each of their timed runs is judged against
    the baseline's output on an input no earlier run saw, so a run that skipped work and
    still printed the right answer skipped nothing the answer needed."""
    for index, (sp, ref) in enumerate(zip(speedups, reference, strict=True)):
        if fresh_tests[index]:
            continue
        base_out, cand_out = outputs.get(index, (set(), set()))
        stable = ref.stdout_sha256 is not None and len(base_out) == 1
        if stable and cand_out and cand_out != {ref.stdout_sha256}:
            return index, (
                f"test {sp.test}: its timed runs wrote {len(cand_out - {ref.stdout_sha256})} "
                "output(s) different from its own correctness run, while the baseline's "
                "output never changed: a program must not behave differently when timed"
            )
        cpus = sp.raw.get("cand_cpu", []) + sp.raw.get("warmup_cand_cpu", [])
        if not cpus:
            continue
        least = min(cpus)
        if ref.cpu_s > INCONSISTENT_CPU_FACTOR * least + INCONSISTENT_CPU_SLACK_S:
            return index, (
                f"test {sp.test}: a timed run used {least * 1e3:.3g} ms of CPU against "
                f"{ref.cpu_s * 1e3:.3g} ms in its own correctness run on the same input: it "
                "skipped work when it could have been timed"
            )
    return None


def time_test(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    test: TestCase,
    config: TimingConfig | None = None,
    *,
    limits: Limits | None = None,
    lock: CoreLock | None = None,
) -> TimingOutcome:
    """Measure the speedup of `candidate` over `baseline` on one test."""
    speedups, failure, _ = time_tests(
        sandbox, baseline, candidate, [test], config, limits=limits, lock=lock
    )
    return TimingOutcome(speedups[0], failure)
