"""The sandbox executor: baseline and candidate alternate in one sandbox on a locked core;
`time_tests` ties it to the engine, with blame and the consistency check."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from asmopt.measure.speedup import TestSpeedup, TimingWarning
from asmopt.measure.timing.cores import CoreLock, default_core_lock
from asmopt.measure.timing.engine import (
    MAX_ROUND_OUTPUT,
    Round,
    RunFailure,
    RunTiming,
    TimingConfig,
    TimingOutcome,
    measure_tests,
)
from asmopt.programs.model import TestCase
from asmopt.sandbox.launcher import LaunchRecord
from asmopt.sandbox.runner import MAX_INPUTS, Limits, RunResult, Sandbox


# ---------------------------------------------------------------------------- sandbox executor
class SandboxExecutor:
    """Runs baseline (A) and candidate (B) alternately in the sandbox on a locked core.

    A batch puts every requested test in ONE sandbox (their inputs as descriptors, one
    after another, each test's pairs counterbalanced AB, BA, ...), so a program's tests
    pay for one sandbox start-up instead of one each. Tests whose argv differ go to
    separate sandboxes, as do batches of more than the launcher's 36 inputs."""

    def __init__(
        self,
        sandbox: Sandbox,
        baseline: str | os.PathLike[str],
        candidate: str | os.PathLike[str],
        tests: Sequence[TestCase],
        limits: Limits | None = None,
        lock: CoreLock | None = None,
        check_output: bool = True,
        priority: Literal["normal", "high", "realtime"] = "realtime",
        candidate_wall_s: float | None = None,
    ) -> None:
        self.priority = priority
        self.sandbox = sandbox
        self.binaries = [baseline, candidate]
        self.tests = list(tests)
        self.limits = limits or sandbox.limits
        self.lock = lock or default_core_lock()
        self.check_output = check_output
        # Each candidate run's own deadline (the baseline keeps the limits' wall time): a
        # candidate that idles only when timed is stopped early and charged a timeout.
        self.candidate_wall_s = candidate_wall_s
        # sha256 of every run's stdout, per test: (baseline digests, candidate digests).
        self.outputs: dict[int, tuple[set[str], set[str]]] = {}

    def _max_pairs_for_output(self, test: TestCase) -> int:
        per_run = len(test.expected_stdout) + 64
        return max(2, MAX_ROUND_OUTPUT // (2 * 2 * per_run))

    def run_batch(self, requests: Sequence[tuple[int, int, int]]) -> dict[int, Round]:
        groups: list[list[tuple[int, int, int]]] = []
        for req in requests:
            argv = self.tests[req[0]].argv
            for g in groups:
                if self.tests[g[0][0]].argv == argv and len(g) < MAX_INPUTS:
                    g.append(req)
                    break
            else:
                groups.append([req])
        out: dict[int, Round] = {}
        for group in groups:
            rounds = self._run_group(group)
            out.update(rounds)
            if any(r.failure is not None for r in rounds.values()):
                break
        return out

    def run_round(self, pairs: int, warmup_pairs: int) -> Round:
        """One test (the first): a PairExecutor for single-test callers."""
        return self.run_batch([(0, pairs, warmup_pairs)])[0]

    def _run_group(self, group: Sequence[tuple[int, int, int]]) -> dict[int, Round]:
        """One sandbox for a group of (test index, pairs, warm-up pairs) that share an argv:
        plan the runs, run them on a locked core, judge every run, then split the timings
        into each test's pairs. The first failing run ends the group (its test's Round
        carries the failure; the other Rounds stay empty)."""
        batch = self._plan(group)
        marker = secrets.token_hex(16)
        limits = self.limits
        walls = [limits.wall_seconds, self.candidate_wall_s or limits.wall_seconds]
        load_before = os.getloadavg()[0]
        asked = time.monotonic()
        with self.lock.hold() as cpu:
            start = time.monotonic()
            result = self.sandbox.run_binaries(
                self.binaries,
                batch.order,
                argv=self.tests[group[0][0]].argv,
                stdin=[self.tests[index].stdin for index, _, _ in group],
                feed=batch.feed,
                limits=limits,
                marker=marker,
                cpus=[cpu],
                priority=self.priority,
                run_wall_s=walls,
                max_total_output=min(MAX_ROUND_OUTPUT, max(limits.stdout_cap, 2 * batch.out_bytes)),
            )
            seconds = time.monotonic() - start
        load_after = os.getloadavg()[0]
        rounds = {
            index: Round(
                pairs=[],
                env_pad=result.env_pad,
                cpus=result.cpus,
                load_before=load_before,
                load_after=load_after,
                priority=result.priority,
                waited_s=start - asked,
            )
            for index, _, _ in group
        }
        if result.infra_error:
            rounds[group[0][0]].failure = RunFailure(
                False, f"timing sandbox: {result.infra_error}", result
            )
            return rounds
        failed = self._first_failure(batch, result, walls)
        if failed is not None:
            index, failure = failed
            rounds[index].failure = failure
            return rounds
        # Each test's share of the batch: its own runs plus an equal part of the rest
        # (sandbox start-up, the launcher's work between runs).
        records = result.records
        overhead = max(0.0, seconds - sum(r.wall_time_s for r in records)) / len(group)
        for index, first, pairs, warmup in batch.plan:
            _split_pairs(rounds[index], batch, records, first, pairs, warmup, overhead)
        return rounds

    def _plan(self, group: Sequence[tuple[int, int, int]]) -> _Batch:
        """The runs of a group: each test's pairs (and warm-ups) one after another, as
        many as its share of the output cap allows, at least one of them timed."""
        batch = _Batch()
        for slot, (index, pairs, warmup) in enumerate(group):
            test = self.tests[index]
            total = min(pairs + warmup, self._max_pairs_for_output(test))
            batch.plan.append(
                (index, len(batch.order), total - min(warmup, total - 1), min(warmup, total - 1))
            )
            # Counterbalanced: AB, BA, AB, ... so that whatever favours the first (or
            # second) run of a pair cancels out; a pair is always two adjacent runs.
            for i in range(total):
                batch.order += [0, 1] if i % 2 == 0 else [1, 0]
            batch.feed += [slot] * (2 * total)
            batch.owner += [index] * (2 * total)
            batch.out_bytes += 2 * total * (len(test.expected_stdout) + 64)
        return batch

    def _first_failure(
        self, batch: _Batch, result: RunResult, walls: list[float]
    ) -> tuple[int, RunFailure] | None:
        """The first run that failed, as (its test index, the failure), or None.

        Every run is judged like a correctness run (its output included, unless
        `check_output` is off): a timed run that misbehaves stops the measurement. Each
        judged run's output digest is kept in `self.outputs` for the consistency check
        against the candidate's own correctness run (time_tests)."""
        from asmopt.judge import Verdict, classify_run

        order, owner = batch.order, batch.owner
        records = list(result.records)
        segments = list(result.segments or ())
        if result.stdout_truncated or result.stderr_truncated:
            i = min(len(segments), len(order) - 1)
            return owner[i], RunFailure(
                order[i] == 1,
                f"{batch.who(i)} failed in timing run {i + 1} of {len(order)}: output_limit: "
                "it wrote more than its share of the batch's output cap",
                None,
                i,
                "output_limit",
            )
        for i, rec in enumerate(records):
            test = self.tests[owner[i]]
            single = RunResult.from_record(rec, segments[i] if i < len(segments) else b"")
            if not self.check_output:
                single.stdout = test.expected_stdout
            run_limits = replace(self.limits, wall_seconds=walls[order[i]])
            verdict = classify_run(test, single, run_limits)
            # The verdict carries the output's digest (judge.classify_run hashes it once).
            digests = self.outputs.setdefault(owner[i], (set(), set()))
            digests[order[i]].add(verdict.stdout_sha256 or "")
            if verdict.verdict != Verdict.PASS:
                return owner[i], RunFailure(
                    order[i] == 1,
                    f"{batch.who(i)} failed in timing run {i + 1} of {len(order)}: "
                    f"{verdict.verdict}: {verdict.message}",
                    single,
                    i,
                    str(verdict.verdict),
                )
        if len(records) < len(order):
            return _unfinished_run(batch, result, len(records))
        return None


@dataclass
class _Batch:
    """The runs of one sandbox session, by run number."""

    # The binary of each run (0 baseline, 1 candidate), its input (slot in the group) and
    # the index of the test it belongs to.
    order: list[int] = field(default_factory=list)
    feed: list[int] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)
    # Per test: (test index, its first run, timed pairs, warm-up pairs).
    plan: list[tuple[int, int, int, int]] = field(default_factory=list)
    out_bytes: int = 0  # expected output of all runs, with a margin per run

    def who(self, i: int) -> str:
        return "baseline" if self.order[i] == 0 else "candidate"


def _unfinished_run(batch: _Batch, result: RunResult, i: int) -> tuple[int, RunFailure]:
    """Run `i` did not finish and every run before it passed: why the sandbox stopped, and
    whether that is plainly the candidate's fault (a stop we cannot explain is not; then
    time_tests decides by running the baseline alone)."""
    if result.timed_out:
        why, verdict_name = "exceeded the whole batch's wall-clock limit", "timeout"
    elif result.launcher_lost:
        why, verdict_name = "the program interfered with the launcher", "sandbox_violation"
    else:
        why, verdict_name = "the sandbox stopped early", "infra_error"
    return batch.owner[i], RunFailure(
        batch.order[i] == 1 and verdict_name != "infra_error",
        f"{batch.who(i)} failed in timing run {i + 1} of {len(batch.order)}: {verdict_name}: {why}",
        None,
        i,
        verdict_name,
    )


def _split_pairs(
    rnd: Round,
    batch: _Batch,
    records: Sequence[LaunchRecord],
    first: int,
    pairs: int,
    warmup: int,
    overhead: float,
) -> None:
    """One test's runs (from run `first`) as (baseline, candidate) timings, whichever ran
    first in the pair; its warm-ups are kept apart, and its time is its own runs plus
    `overhead`, its share of the batch's fixed cost."""
    timed = []
    for k in range(pairs + warmup):
        a, b = records[first + 2 * k], records[first + 2 * k + 1]
        base, cand = (a, b) if batch.order[first + 2 * k] == 0 else (b, a)
        timed.append((RunTiming.from_record(base), RunTiming.from_record(cand)))
    rnd.warmups = timed[:warmup]
    rnd.pairs = timed[warmup:]
    rnd.seconds = overhead + sum(
        records[j].wall_time_s for j in range(first, first + 2 * (pairs + warmup))
    )


@dataclass(frozen=True)
class ReferenceRun:
    """What the candidate did in its own correctness run of a test (evaluate.check_binary):
    the yardstick its timed runs must be consistent with."""

    cpu_s: float
    wall_s: float
    stdout_sha256: str | None = None


# A timed run may take this many times its correctness run's wall time (and at least
# CANDIDATE_WALL_MIN_S, so a busy machine does not turn a slow start into a timeout) before
# it is stopped; a timed run's median CPU time below 1/INCONSISTENT_CPU_FACTOR of the
# correctness run's (and INCONSISTENT_CPU_FLOOR_S less) means it skipped work it did then.
CANDIDATE_WALL_FACTOR = 10.0
CANDIDATE_WALL_MIN_S = 5.0
INCONSISTENT_CPU_FACTOR = 4.0
INCONSISTENT_CPU_FLOOR_S = 0.005


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
) -> tuple[list[TestSpeedup], RunFailure | None, str | None]:
    """Measure the speedup of `candidate` over `baseline` on every test (see measure_tests).

    With `reference` (the candidate's correctness run of each test), each candidate run gets
    a deadline of CANDIDATE_WALL_FACTOR times its correctness run's wall time, and the
    timed runs must be consistent with that run: the same output wherever the baseline's
    output is stable, and no far smaller CPU time. Inconsistency is the candidate's failure
    (verdict sandbox_violation): it behaved differently when it could have been timed.

    Blame: a failure that is not plainly the candidate's (the baseline failed, the sandbox
    broke) is charged to the candidate unless the baseline alone, in a fresh sandbox, fails
    the same test too; only then is it `infra_error`."""
    lock = lock or default_core_lock()
    config = config or TimingConfig()
    limits = limits or sandbox.limits
    if reference is not None and len(reference) != len(tests):
        raise ValueError("one reference run per test")
    cand_wall = None
    if reference:
        longest = max(r.wall_s for r in reference)
        cand_wall = min(
            limits.wall_seconds, max(CANDIDATE_WALL_MIN_S, CANDIDATE_WALL_FACTOR * longest)
        )
    executor = SandboxExecutor(
        sandbox,
        baseline,
        candidate,
        tests,
        limits,
        lock,
        priority=config.priority,
        candidate_wall_s=cand_wall,
    )
    warnings = [] if lock.layout.isolated else [TimingWarning.NOT_ISOLATED]
    speedups, failure, failed = measure_tests(
        executor, [t.name for t in tests], config, warnings=warnings, targets=targets
    )
    if failure is not None and not failure.candidate_fault and failed is not None:
        failure = _blame(
            sandbox, baseline, tests[[t.name for t in tests].index(failed)], limits, failure
        )
    if failure is None and reference is not None:
        found = _inconsistency(speedups, reference, executor.outputs)
        if found is not None:
            index, why = found
            failure = RunFailure(True, why, None, 0, "sandbox_violation")
            failed = tests[index].name
    return speedups, failure, failed


def _blame(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    test: TestCase,
    limits: Limits,
    failure: RunFailure,
) -> RunFailure:
    """Decide who a non-candidate failure belongs to: rerun the baseline alone, fresh."""
    from asmopt.judge import Verdict, classify_run

    rerun = sandbox.run_program(baseline, argv=test.argv, stdin=test.stdin, limits=limits)
    verdict = classify_run(test, rerun, limits)
    if verdict.verdict == Verdict.PASS:
        return RunFailure(
            True,
            f"{failure.message}; the baseline alone passes this test in a fresh sandbox, so "
            "the failure is charged to the candidate that ran beside it",
            failure.run_result,
            failure.run_index,
            "sandbox_violation",
        )
    return RunFailure(
        False,
        f"{failure.message}; the baseline alone fails too in a fresh sandbox "
        f"({verdict.verdict}: {verdict.message})",
        failure.run_result,
        failure.run_index,
        "infra_error",
    )


def _inconsistency(
    speedups: Sequence[TestSpeedup],
    reference: Sequence[ReferenceRun],
    outputs: dict[int, tuple[set[str], set[str]]],
) -> tuple[int, str] | None:
    """The first test whose timed candidate runs disagree with its correctness run."""
    for index, (sp, ref) in enumerate(zip(speedups, reference, strict=True)):
        base_out, cand_out = outputs.get(index, (set(), set()))
        stable = ref.stdout_sha256 is not None and len(base_out) == 1
        if stable and cand_out and cand_out != {ref.stdout_sha256}:
            return index, (
                f"test {sp.test}: its timed runs wrote {len(cand_out - {ref.stdout_sha256})} "
                "output(s) different from its own correctness run, while the baseline's "
                "output never changed: a program must not behave differently when timed"
            )
        cpus = sorted(sp.raw.get("cand_cpu", []) + sp.raw.get("warmup_cand_cpu", []))
        if not cpus:
            continue
        median = cpus[len(cpus) // 2]
        if (
            ref.cpu_s > INCONSISTENT_CPU_FACTOR * median
            and ref.cpu_s - median > INCONSISTENT_CPU_FLOOR_S
        ):
            return index, (
                f"test {sp.test}: its timed runs used {median * 1e3:.3g} ms of CPU (median) "
                f"against {ref.cpu_s * 1e3:.3g} ms in its own correctness run on the same "
                "input: it skipped work when it could have been timed"
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
