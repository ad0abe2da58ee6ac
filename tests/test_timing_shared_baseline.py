"""Several candidates of one program timed together, sharing the baseline's runs.

The engine (`measure_candidates`) with mock executors whose samples depend only on the
candidate, the test and how many rounds that candidate has had: a candidate measured
beside others must get exactly what it gets alone. Then the sandbox executor's plan, and
one real measurement where the runs are counted."""

from __future__ import annotations

import math
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from waste_program import WastePolicy, waste_program

from asmopt import evaluate
from asmopt.evaluate import MeasureOptions, SampleOutcome
from asmopt.judge import Verdict
from asmopt.measure.speedup import MeasureMode, MeasureStatus, TestSpeedup
from asmopt.measure.timing import (
    MAX_SHARED_CANDIDATES,
    CandidateRoundRequest,
    CandidateTest,
    ReferenceRun,
    Round,
    RoundRequest,
    RunFailure,
    RunTiming,
    SharedSandboxExecutor,
    TimingConfig,
    measure_candidates,
    measure_tests,
    time_candidates,
    time_tests,
)
from asmopt.programs.model import Program, TestCase
from asmopt.run import evaluate_programs
from asmopt.sandbox import Sandbox
from asmopt.sandbox.records import Limits, RunResult
from asmopt.toolchain import Toolchain


def _round(c: int, i: int, r: int, pairs: int, warmup: int, true_log: float) -> Round:
    """Round `r` of candidate `c` on test `i`: its samples come from its own stream."""
    rng = random.Random(f"{c}/{i}/{r}")
    timed = []
    for _ in range(pairs):
        base = 0.01 * math.exp(rng.gauss(0.0, 0.01))
        cand = base / math.exp(rng.gauss(true_log, 0.03))
        timed.append((RunTiming(base, base), RunTiming(cand, cand)))
    warm = [(RunTiming(0.01, 0.01), RunTiming(0.01, 0.01))] * warmup
    return Round(pairs=timed, warmups=warm, seconds=0.02 * (pairs + warmup))


class StreamExecutor:
    """A CandidatesExecutor: each candidate has its own true speedup (log) and its own
    sample stream; `fail` maps a candidate to the request number (its own) that fails."""

    def __init__(self, true_logs: Sequence[float], fail: dict[int, int] | None = None) -> None:
        self.true_logs = list(true_logs)
        self.fail = fail or {}
        self.counts: dict[tuple[int, int], int] = {}
        self.asked: dict[int, int] = {}
        self.batches: list[list[CandidateRoundRequest]] = []

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]:
        self.batches.append(list(requests))
        out: dict[CandidateTest, Round] = {}
        for c, i, pairs, warmup in requests:
            self.asked[c] = self.asked.get(c, 0) + 1
            if self.fail.get(c) == self.asked[c]:
                failure = RunFailure(True, f"candidate {c} misbehaved", None, 1, "wrong_output")
                out[c, i] = Round(pairs=[], failure=failure)
                continue
            r = self.counts.get((c, i), 0)
            self.counts[c, i] = r + 1
            out[c, i] = _round(c, i, r, pairs, warmup, self.true_logs[c])
        return out


class AloneExecutor:
    """A BatchExecutor giving one candidate (`c`) the very samples StreamExecutor gives it."""

    def __init__(self, c: int, true_log: float) -> None:
        self.c, self.true_log = c, true_log
        self.counts: dict[int, int] = {}

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        out = {}
        for i, pairs, warmup in requests:
            r = self.counts.get(i, 0)
            self.counts[i] = r + 1
            out[i] = _round(self.c, i, r, pairs, warmup, self.true_log)
        return out


def _view(sp: TestSpeedup) -> dict[str, Any]:
    return sp.to_dict(raw=True)


NAMES = ["small", "large"]
CONFIG = TimingConfig(budget_s=30.0)


def test_each_candidate_gets_what_it_would_get_alone() -> None:
    logs = [0.0, math.log(1.3), math.log(0.8)]
    together = measure_candidates(StreamExecutor(logs), NAMES, 3, CONFIG)
    for c, (speedups, failure, failed) in enumerate(together):
        alone, alone_failure, _ = measure_tests(AloneExecutor(c, logs[c]), NAMES, CONFIG)
        assert failure is None and failed is None and alone_failure is None
        assert [_view(s) for s in speedups] == [_view(s) for s in alone]
        assert all(s.status == MeasureStatus.MEASURED for s in speedups)
    # And the answers differ as the candidates do.
    ratios = [together[c][0][1].ratio for c in range(3)]
    assert ratios[2] < 0.9 < ratios[0] < 1.1 < ratios[1]


def test_one_candidate_is_measure_tests() -> None:
    (result,) = measure_candidates(StreamExecutor([math.log(1.1)]), NAMES, 1, CONFIG)
    alone = measure_tests(AloneExecutor(0, math.log(1.1)), NAMES, CONFIG)
    assert [_view(s) for s in result[0]] == [_view(s) for s in alone[0]]
    assert result[1:] == alone[1:] == (None, None)


def test_a_done_candidate_drops_out_of_later_batches() -> None:
    # A 2x answer settles after the pilot and one round; an A/A pair needs more rounds.
    ex = StreamExecutor([math.log(2.0), 0.0])
    cfg = TimingConfig(budget_s=1e9, target_half_width=0.005, resolution=0.0)
    (fast, _, _), (aa, _, _) = measure_candidates(ex, ["t"], 2, cfg)
    fast_batches = [k for k, b in enumerate(ex.batches) if any(c == 0 for c, *_ in b)]
    aa_batches = [k for k, b in enumerate(ex.batches) if any(c == 1 for c, *_ in b)]
    assert fast[0].context["stopped"] == "decided"
    assert fast_batches == list(range(len(fast_batches)))  # from the start, then never
    assert len(aa_batches) > len(fast_batches)
    assert aa[0].context["rounds"] == len(aa_batches)
    assert fast[0].context["rounds"] == len(fast_batches)


def test_a_failing_candidate_does_not_stop_the_others() -> None:
    logs = [0.0, math.log(1.2), math.log(0.9)]
    ex = StreamExecutor(logs, fail={1: 3})  # candidate 1's third request (batch 2, test 0)
    together = measure_candidates(ex, NAMES, 3, CONFIG)
    speedups, failure, failed = together[1]
    assert failure is not None and failure.verdict == "wrong_output" and failed == "small"
    assert speedups[0].status == MeasureStatus.INFRA_ERROR
    # Nothing more was asked of it once it failed.
    after = [b for b in ex.batches[2:] if any(c == 1 for c, *_ in b)]
    assert after == []
    # The others: exactly what they get alone, as if nothing had happened beside them.
    for c in (0, 2):
        alone, _, _ = measure_tests(AloneExecutor(c, logs[c]), NAMES, CONFIG)
        assert together[c][1] is None
        assert [_view(s) for s in together[c][0]] == [_view(s) for s in alone]


class LosesRoundsBesideAFailure(StreamExecutor):
    """A candidate's failure wipes the other candidates' rounds of that batch (as the
    sandbox executor does: one sandbox, the neighbour's runs discarded)."""

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]:
        out = super().run_candidates(requests)
        if any(r.failure is not None for r in out.values()):
            return {k: r for k, r in out.items() if r.failure is not None}
        return out


def test_rounds_lost_beside_a_failure_are_retried_not_counted_against_a_test() -> None:
    # Candidates 1..4 fail one after another (the launcher takes at most 3 a sandbox, but
    # the engine does not care): candidate 0 loses 4 batches yet is measured in full.
    ex = LosesRoundsBesideAFailure([0.1] * 5, fail={1: 1, 2: 2, 3: 3, 4: 4})
    together = measure_candidates(ex, ["t"], 5, CONFIG)
    assert [f is not None for _, f, _ in together] == [False, True, True, True, True]
    assert together[0][0][0].status == MeasureStatus.MEASURED
    assert together[0][0][0].context["stopped"] != "not_run"


# ---------------------------------------------------------------------------- the plan
class _NoSandbox:
    limits = Limits()


def _executor(n: int, tests: Sequence[TestCase]) -> SharedSandboxExecutor:
    return SharedSandboxExecutor(
        _NoSandbox(),  # type: ignore[arg-type]
        "base",
        [f"cand{k}" for k in range(n)],
        tests,
        lock=object(),  # type: ignore[arg-type]
    )


def test_blocks_rotate_and_shrink_as_candidates_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("asmopt.measure.timing.executor.secrets.randbelow", lambda n: 0)
    tests = [TestCase("t0", b"1\n", b"1\n"), TestCase("t1", b"2\n", b"2\n")]
    ex = _executor(3, tests)
    # Candidate 0: 3 pairs + 1 warm-up on t0; candidate 2: 1 + 1 on t0, 2 + 1 on t1.
    batch = ex._plan(
        [
            CandidateRoundRequest(0, 0, 3, 1),
            CandidateRoundRequest(2, 0, 1, 1),
            CandidateRoundRequest(2, 1, 2, 1),
        ]
    )
    assert batch.cands == [0, 2] and batch.tests == [0, 1]
    # Binary 0 is the baseline, 1 candidate 0, 2 candidate 2: the cycle (0, 1, 2) rotated
    # by one place per block, then (0, 1) once candidate 2 is done.
    t0 = [0, 1, 2] + [1, 2, 0] + [0, 1] + [1, 0]
    t1 = [0, 2] + [2, 0] + [0, 2]
    assert batch.order == t0 + t1
    assert batch.feed == [0] * len(t0) + [1] * len(t1)
    plan = {key: (blocks, warmup) for key, blocks, warmup in batch.plan}
    # Each pair is (the block's baseline run, the candidate's own run, candidates in it).
    assert plan[0, 0] == ([(0, 1, 2), (5, 3, 2), (6, 7, 1), (9, 8, 1)], 1)
    assert plan[2, 0] == ([(0, 2, 2), (5, 4, 2)], 1)
    assert plan[2, 1] == ([(10, 11, 1), (13, 12, 1), (14, 15, 1)], 1)
    # A baseline run serves every candidate of its block; its failure goes to the first
    # candidate of the block, a candidate run's to its own candidate.
    assert batch.block[0] == batch.block[5] == (0, 2) and batch.block[6] == (0,)
    assert batch.key(0) == batch.key(5) == (0, 0)
    assert batch.key(4) == (2, 0) and batch.key(13) == (2, 1)


def _old_block_order(inside: Sequence[int], turn: int) -> list[int]:
    """The plan before rotation: A B1 .. Bk, then Bk .. B1 A."""
    return [-1, *inside] if turn % 2 == 0 else [*reversed(inside), -1]


def _carryover_logs(
    order: Sequence[int], blocks: dict[int, list[tuple[int, int]]]
) -> dict[int, float]:
    """Each candidate's mean log-ratio when every binary is identical except that a run
    directly after a run of its own binary is 2% faster (its code still in the caches)."""
    times = [0.98 if k and order[k - 1] == b else 1.0 for k, b in enumerate(order)]
    return {
        c: sum(math.log(times[base] / times[own]) for base, own in pairs) / len(pairs)
        for c, pairs in blocks.items()
    }


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_a_shared_baseline_gives_each_candidate_what_it_would_get_alone(
    monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    """Identical candidates sharing the baseline must all read 1.0, whatever an order effect
    does: with rotated blocks no binary follows itself, and over a full cycle every binary
    takes every place. The old alternating plan gave the repeat to the baseline and the last
    candidate only, so an effect of running twice in a row biased the other candidates."""
    import asmopt.measure.timing.executor as executor_module

    tests = [TestCase("t0", b"1\n", b"1\n")]
    blocks_per_candidate = 4 * (k + 1)  # whole cycles
    for start in range(k + 1):
        monkeypatch.setattr(executor_module.secrets, "randbelow", lambda n, s=start: s)
        batch = _executor(k, tests)._plan(
            [CandidateRoundRequest(c, 0, blocks_per_candidate, 0) for c in range(k)]
        )
        order = batch.order
        assert all(order[j] != order[j + 1] for j in range(len(order) - 1))
        blocks = {c: [(b, o) for b, o, _ in bl] for (c, _), bl, _ in batch.plan}
        # Linear drift cancels: each candidate's run is as often before its baseline run
        # as after it, by the same distances.
        for pairs in blocks.values():
            assert sum(own - base for base, own in pairs) == 0
        assert all(abs(x) < 1e-12 for x in _carryover_logs(order, blocks).values())
    # The old plan, on the same order effect, was biased for every candidate but the last.
    monkeypatch.setattr(executor_module, "_block_order", _old_block_order)
    batch = _executor(k, tests)._plan(
        [CandidateRoundRequest(c, 0, blocks_per_candidate, 0) for c in range(k)]
    )
    blocks = {c: [(b, o) for b, o, _ in bl] for (c, _), bl, _ in batch.plan}
    old = _carryover_logs(batch.order, blocks)
    assert all(old[c] < -0.005 for c in range(k - 1)) and abs(old[k - 1]) < 0.002


def test_more_candidates_than_a_sandbox_holds_are_spread_evenly() -> None:
    tests = [TestCase("t0", b"1\n", b"1\n")]
    n = MAX_SHARED_CANDIDATES + 2  # one sandbox holds MAX_SHARED_CANDIDATES
    groups = _executor(n, tests)._groups([CandidateRoundRequest(c, 0, 4, 1) for c in range(n)])
    sizes = sorted(len({c for c, *_ in g}) for g in groups)
    assert len(sizes) == 2 and sizes[1] - sizes[0] <= 1 and max(sizes) <= MAX_SHARED_CANDIDATES
    assert sorted(c for g in groups for c, *_ in g) == list(range(n))


# ---------------------------------------------------------------------------- real runs
SPIN_C = r"""
#include <stdio.h>
#ifndef BUMP
#define BUMP 0
#endif
#ifndef REPEAT
#define REPEAT 1
#endif
int main(void) {
    long n; if (scanf("%ld", &n) != 1) return 1;
    unsigned long x = 0;
    /* REPEAT > 1 does the same loop again from scratch: the same output for REPEAT times
       the work on any machine. The empty asm keeps the compiler from folding the copies. */
    for (int r = 0; r < REPEAT; r++) {
        x = 0;
        __asm__ volatile("" : "+r"(x));
        for (long i = 0; i < n; i++) x += i ^ (x >> 3);
    }
    printf("%ld %lu\n", n + BUMP, x & 1);
    return 0;
}
"""


class CountingSandbox:
    """A real sandbox that counts the baseline's and the candidates' timed runs."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.limits = sandbox.limits
        self.base_runs = self.cand_runs = 0

    def run_binaries(self, binaries: Sequence[Any], order: Sequence[int], **kw: Any) -> RunResult:
        self.base_runs += sum(k == 0 for k in order)
        self.cand_runs += sum(k != 0 for k in order)
        return self.sandbox.run_binaries(binaries, order, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sandbox, name)


def _binary(toolchain: Toolchain, flags: tuple[str, ...]) -> Path:
    build = toolchain.compile_binary(Program(id="spin", source=SPIN_C, tests=()), flags)
    assert build.ok and build.output is not None, build.message
    return build.output


def test_real_candidates_share_the_baseline_runs(
    toolchain: Toolchain, sandbox: Sandbox, tmp_path: Path
) -> None:
    base = _binary(toolchain, ("-O2",))
    # Slower by construction (three times the work, same code generation), not by an
    # optimisation level: -O0's stack traffic is nearly free on CPUs with memory renaming.
    slow = _binary(toolchain, ("-O2", "-DREPEAT=3"))
    copy = tmp_path / "copy"
    shutil.copy2(base, copy)
    run = sandbox.run_program(base, stdin=b"5000000\n")
    tests = [TestCase("t", b"5000000\n", run.stdout)]
    cfg = TimingConfig(min_pairs=4, max_pairs=16, max_rounds=3, budget_s=4)
    counting = CountingSandbox(sandbox)
    (slow_sp, slow_fail, _), (copy_sp, copy_fail, _) = time_candidates(
        counting,  # type: ignore[arg-type]
        base,
        [slow, copy],
        tests,
        cfg,
    )
    assert slow_fail is None and copy_fail is None
    s, a = slow_sp[0], copy_sp[0]
    assert s.status == a.status == MeasureStatus.MEASURED
    assert s.high < 0.75  # three times the work is slower, and measured so
    # An identical copy: no difference beyond the few per cent that fixed effects (where
    # the file's pages land, alignment) can cause. Not "the 95% interval covers 1.0":
    # that misses one run in twenty by construction.
    assert 1 / 1.05 < a.ratio < 1.05 and a.low < 1.05 and a.high > 1 / 1.05, a
    # Fewer than two runs a pair: every candidate run is half of a pair, and the baseline
    # ran fewer times than the candidates together.
    assert counting.base_runs + counting.cand_runs < 2 * counting.cand_runs
    assert all(sp.context["charged_runs"] < sp.context["runs"] for sp in (s, a))


def test_a_plan_is_sized_from_cpu_time_not_from_wall_time_inflated_by_load(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    """The candidate's correctness run took 8 s of wall time for a few ms of CPU (the other
    cores were busy): its timing, on a core of its own, is still planned as a few-ms test
    (warm-ups, a pilot round and more), not as one short round sized to an 8 s run."""
    base = _binary(toolchain, ("-O2",))
    run = sandbox.run_program(base, stdin=b"2000000\n")
    tests = [TestCase("t", b"2000000\n", run.stdout)]
    loaded = ReferenceRun(cpu_s=run.cpu_time_s, wall_s=8.0)
    cfg = TimingConfig(min_pairs=4, max_pairs=16, max_rounds=3, budget_s=4)
    [(speedups, failure, _)] = time_candidates(
        sandbox, base, [base], tests, cfg, references=[[loaded]]
    )
    assert failure is None
    sp = speedups[0]
    assert sp.n >= cfg.min_pairs and sp.context["rounds"] >= 2, sp.context
    # Its rounds had their warm-up pairs: a plan from the 8 s wall time would have made the
    # first round a 2-pair one with no warm-up (measure_candidates' single-round plan).
    assert sp.context["runs"] > 2 * sp.n, sp.context


def test_real_one_candidate_through_time_tests_matches_its_plan(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    base = _binary(toolchain, ("-O2",))
    run = sandbox.run_program(base, stdin=b"200000\n")
    tests = [TestCase("t", b"200000\n", run.stdout)]
    counting = CountingSandbox(sandbox)
    cfg = TimingConfig(min_pairs=4, max_pairs=8, max_rounds=2, budget_s=5)
    speedups, failure, _ = time_tests(counting, base, base, tests, cfg)  # type: ignore[arg-type]
    assert failure is None
    sp = speedups[0]
    assert counting.base_runs == counting.cand_runs  # alone: two runs a pair
    assert sp.context["runs"] == sp.context["charged_runs"] <= 2 * counting.cand_runs


@pytest.mark.parametrize("which", [0, 1])
def test_real_failing_candidate_is_removed_and_the_other_measured(
    toolchain: Toolchain, sandbox: Sandbox, which: int
) -> None:
    base = _binary(toolchain, ("-O2",))
    bad = _binary(toolchain, ("-O2", "-DBUMP=1"))
    run = sandbox.run_program(base, stdin=b"100000\n")
    tests = [TestCase("t", b"100000\n", run.stdout)]
    cands = [bad, base] if which == 0 else [base, bad]
    cfg = TimingConfig(min_pairs=4, max_pairs=8, max_rounds=2, budget_s=5)
    results = time_candidates(sandbox, base, cands, tests, cfg)
    bad_result, good_result = results[which], results[1 - which]
    assert bad_result[1] is not None and bad_result[1].candidate_fault
    assert bad_result[1].verdict == "wrong_output"
    assert good_result[1] is None and good_result[0][0].status == MeasureStatus.MEASURED


# ---------------------------------------------------------------------------- eval
class FivePolicy(WastePolicy):
    """faster, slower, faster again (the same text), a copy, a wrong answer."""

    name = "five"

    def answers(self, base: str, faster: str) -> list[str]:
        slower = base.replace(
            "main:\n", "main:\n\tmovq\t$3000000, %r11\n.Lx:\n\tdecq\t%r11\n\tjnz\t.Lx\n", 1
        )
        wrong = base.replace("ret", "ud2", 1)
        return [faster, slower, faster, base + "\n# copy\n", wrong]


def _eval_five(toolchain: Toolchain, sandbox: Sandbox) -> list[SampleOutcome]:
    program = waste_program(
        TestCase("t1", b"300000\n", b"599998\n"), TestCase("t2", b"400000\n", b"800001\n")
    )
    cfg = TimingConfig(min_pairs=3, max_pairs=12, max_rounds=3, budget_s=5)
    return evaluate_programs(
        [program],
        FivePolicy(toolchain),
        toolchain,
        sandbox,
        samples=5,
        jobs=1,
        progress=False,
        measure=MeasureOptions(mode=MeasureMode.TIME, timing=cfg),
    )


def test_eval_times_a_programs_correct_answers_together(
    toolchain: Toolchain, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = evaluate.time_candidates

    def spy(*args: Any, **kw: Any) -> Any:
        calls.append(len(args[2]))
        return real(*args, **kw)

    monkeypatch.setattr(evaluate, "time_candidates", spy)
    out = _eval_five(toolchain, sandbox)
    assert [o.sample for o in out] == [0, 1, 2, 3, 4]
    assert calls == [2]  # faster and slower, once each, in one measurement
    faster, slower, again, copy, wrong = out
    assert again.check is faster.check  # the same text: the same verdict and measurement
    assert faster.check.speedup is not None and slower.check.speedup is not None
    assert faster.check.speedup.status == slower.check.speedup.status == MeasureStatus.MEASURED
    assert faster.check.speedup.ratio > 1.0 > slower.check.speedup.ratio
    assert copy.is_copy and copy.check.speedup is not None
    assert copy.check.speedup.status != MeasureStatus.MEASURED  # 1.0 by rule, not timed
    assert wrong.check.verdict != Verdict.PASS and wrong.check.speedup is None


def test_an_error_in_the_shared_measurement_is_ours(
    toolchain: Toolchain, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("the timing broke")

    monkeypatch.setattr(evaluate, "time_candidates", broken)
    faster, slower, again, copy, _ = _eval_five(toolchain, sandbox)
    for o in (faster, slower, again):
        assert o.check.verdict == Verdict.PASS and o.check.speedup is not None
        assert o.check.speedup.status == MeasureStatus.INFRA_ERROR
        assert "the timing broke" in o.check.speedup.message
    assert copy.check.speedup is not None and copy.check.speedup.status != MeasureStatus.INFRA_ERROR
