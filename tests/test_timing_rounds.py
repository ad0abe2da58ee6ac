"""The timing engine's rounds: the pilot round, stalled rounds, waiting, the sequential
stop, the load warning, and points that stay inside their own intervals. A mock executor
hands out chosen samples (no real timing), so every property is exact and fast."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import pytest

from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup, TestSpeedup
from asmopt.measure.speedup import TimingWarning as W
from asmopt.measure.stats import combine_arithmetic, combine_geometric, exact_ratio
from asmopt.measure.timing import (
    CandidateRoundRequest,
    CandidateTest,
    Round,
    RoundRequest,
    RunTiming,
    SandboxSpread,
    TimingConfig,
    measure_candidates,
    measure_pairs,
    measure_tests,
)

# (round index, pair index within the round) -> (baseline, candidate) run timings
Sampler = Callable[[int, int], tuple[RunTiming, RunTiming]]


class RoundExecutor:
    """A PairExecutor whose samples depend on the round: one bad round among good ones."""

    def __init__(self, sample: Sampler, **round_fields: object) -> None:
        self.sample = sample
        self.rounds = 0
        self.requests: list[int] = []
        self.round_fields: dict[str, object] = dict(round_fields)
        self.per_round: dict[int, dict[str, object]] = {}

    def run_round(self, pairs: int, warmup_pairs: int) -> Round:
        r = self.rounds
        self.rounds += 1
        self.requests.append(pairs)
        fields = {**self.round_fields, **self.per_round.get(r, {})}
        return Round(
            pairs=[self.sample(r, k) for k in range(pairs)],
            warmups=[(RunTiming(0.01, 0.01), RunTiming(0.01, 0.01))] * warmup_pairs,
            seconds=float(fields.pop("seconds", 0.001 * pairs)),  # type: ignore[arg-type]
            **fields,  # type: ignore[arg-type]
        )


def _pair(log_ratio: float, base_s: float = 0.01, stall: float = 1.0) -> tuple[RunTiming, ...]:
    cand = base_s / math.exp(log_ratio)
    return (RunTiming(base_s, base_s * stall), RunTiming(cand, cand))


def _aa_with_bad_first_round(seed: int, shift: float, spread: float) -> Sampler:
    rng = random.Random(seed)

    def sample(r: int, k: int) -> tuple[RunTiming, RunTiming]:
        if r == 0:  # a cold or disturbed first round
            return _pair(rng.gauss(shift, spread))  # type: ignore[return-value]
        return _pair(rng.gauss(0.0, 0.02))  # type: ignore[return-value]

    return sample


# Bad first rounds: displaced and tight (it alone would meet the target), displaced and
# loose, and wild (the trimmed mean would shed it anyway).
BAD_ROUNDS = [(0.06, 0.01), (0.1, 0.03), (0.25, 0.15)]


def _half_width(sp: TestSpeedup) -> float:
    return max(sp.high / sp.ratio - 1.0, 1.0 - sp.low / sp.ratio)


@pytest.mark.parametrize(("shift", "spread"), BAD_ROUNDS)
def test_a_bad_first_round_cannot_widen_an_aa_interval_past_the_target(
    shift: float, spread: float
) -> None:
    covered = dropped = 0
    for seed in range(40):
        ex = RoundExecutor(_aa_with_bad_first_round(seed, shift, spread))
        sp = measure_pairs(ex, TimingConfig(budget_s=1e9)).speedup
        assert sp.status == MeasureStatus.MEASURED and sp.reliable
        assert _half_width(sp) <= 0.02 + 1e-9, (seed, sp.ratio, sp.low, sp.high)
        left_out = sp.context["pilot_pairs_left_out"]
        assert left_out in (0, 4)
        assert len(sp.raw["pilot_base_cpu"]) == left_out  # left out of the estimate, kept raw
        dropped += left_out == 4
        covered += sp.low <= 1.0 <= sp.high
    assert covered >= 37  # a 95% interval (+-1% floor) of an A/A pair: the bad round is gone
    if spread < 0.05:  # a displaced pilot that is not also wild disagrees, and is dropped
        assert dropped >= 36


def test_without_the_pilot_and_rounds_rules_the_same_bad_round_does_reach_the_estimate() -> None:
    # The property above is the rules' doing: with no pilot, a test allowed to end on one
    # round and no between-sandbox allowance (the old rules: 95%, a fixed 1% floor), a tight
    # displaced first round is taken for the answer, 6% off.
    cfg = TimingConfig(
        budget_s=1e9,
        pilot_round=False,
        min_rounds=1,
        confidence=0.95,
        resolution=0.01,
        spread=SandboxSpread(((0.001, 0.0),), 0.0, "none"),
    )
    results = [
        measure_pairs(RoundExecutor(_aa_with_bad_first_round(s, 0.06, 0.01)), cfg).speedup
        for s in range(40)
    ]
    assert sum(sp.ratio > 1.04 for sp in results) >= 20


def test_a_tight_pilot_round_is_still_confirmed_by_a_second_round() -> None:
    ex = RoundExecutor(lambda r, k: _pair(0.1 + 0.001 * (-1) ** k))  # type: ignore[arg-type,return-value]
    sp = measure_pairs(ex, TimingConfig(budget_s=1e9, resolution=0.0)).speedup
    # The two rounds agree, so the pilot's pairs join the estimate.
    assert ex.requests == [4, 4] and sp.n == 8 and sp.context["stopped"] == "target"
    assert sp.context["pilot_pairs_left_out"] == 0
    assert sp.ratio == pytest.approx(math.exp(0.1), rel=1e-3)
    one = RoundExecutor(lambda r, k: _pair(0.1 + 0.001 * (-1) ** k))  # type: ignore[arg-type,return-value]
    measure_pairs(one, TimingConfig(budget_s=1e9, max_rounds=1))
    assert one.requests == [4]  # with one round allowed, the pilot is the estimate


def test_stalled_round_is_discarded_repeated_and_charged_to_no_budget() -> None:
    rng = random.Random(1)

    def sample(r: int, k: int) -> tuple[RunTiming, ...]:
        if r == 1:  # the core was taken away: wall 3x CPU, and a shifted ratio
            return _pair(0.3, stall=3.0)
        return _pair(rng.gauss(0.0, 0.02))

    ex = RoundExecutor(sample)  # type: ignore[arg-type]
    ex.per_round[1] = {"seconds": 500.0}  # far over the budget: must not be charged
    sp = measure_pairs(ex, TimingConfig(budget_s=20.0)).speedup
    ctx = sp.context
    assert ctx["stalled_rounds_discarded"] == 1 and ctx["stalled_s"] == pytest.approx(500.0)
    assert ctx["seconds"] < 20.0 and ctx["stopped"] == "target"
    # Replaced, never merged: one executor round fewer was kept, none of it shifted by 0.3.
    assert ctx["rounds"] == ex.rounds - 1 and ex.rounds >= 3
    assert (
        max(math.log(b / c) for b, c in zip(sp.raw["base_cpu"], sp.raw["cand_cpu"], strict=True))
        < 0.2
    )
    assert sp.low <= 1.0 <= sp.high and sp.reliable
    assert str(W.STALLED) not in sp.warnings


def test_a_core_that_always_stalls_is_kept_after_the_allowance_and_says_so() -> None:
    ex = RoundExecutor(lambda r, k: _pair(0.0005 * (-1) ** k, stall=4.0))  # type: ignore[arg-type,return-value]
    cfg = TimingConfig(budget_s=1e9, max_stalled_rounds=2)
    sp = measure_pairs(ex, cfg).speedup
    assert sp.context["stalled_rounds_discarded"] == 2
    assert str(W.STALLED) in sp.warnings and "ASMOPT_TIMING_CORES" in sp.message


def test_waiting_for_the_core_is_reported_and_not_charged() -> None:
    rng = random.Random(2)
    ex = RoundExecutor(lambda r, k: _pair(rng.gauss(0, 0.01)), waited_s=300.0)  # type: ignore[arg-type,return-value]
    sp = measure_pairs(ex, TimingConfig(budget_s=20.0)).speedup
    assert sp.context["waited_s"] >= 300.0 and sp.context["seconds"] < 20.0
    assert sp.context["stopped"] == "target" and sp.reliable


def test_clearly_faster_answer_stops_early_and_stays_reliable() -> None:
    rng = random.Random(3)
    ex = RoundExecutor(lambda r, k: _pair(math.log(2.0) + rng.gauss(0, 0.06)))  # type: ignore[arg-type,return-value]
    sp = measure_pairs(ex, TimingConfig(budget_s=1e9)).speedup
    assert sp.context["stopped"] == "decided" and sp.reliable
    assert str(W.TARGET_NOT_MET) not in sp.warnings
    assert sp.low > 1.10 and sp.high / sp.ratio - 1 <= 0.05 + 1e-9
    # Without the sequential rule the same answer costs more pairs.
    rng = random.Random(3)
    slow = RoundExecutor(lambda r, k: _pair(math.log(2.0) + rng.gauss(0, 0.06)))  # type: ignore[arg-type,return-value]
    sp2 = measure_pairs(slow, TimingConfig(budget_s=1e9, early_stop=False)).speedup
    assert sp2.context["stopped"] == "target" and sum(slow.requests) > sum(ex.requests)


@pytest.mark.parametrize("truth", [1.0, 1.10])
def test_answers_at_a_decision_point_never_stop_early(truth: float) -> None:
    for seed in range(6):
        rng = random.Random(seed)

        def sample(r: int, k: int, rng: random.Random = rng) -> tuple[RunTiming, ...]:
            return _pair(math.log(truth) + rng.gauss(0, 0.03))

        ex = RoundExecutor(sample)  # type: ignore[arg-type]
        sp = measure_pairs(ex, TimingConfig(budget_s=1e9)).speedup
        assert sp.context["stopped"] != "decided", (seed, sp.ratio, sp.low, sp.high)


def _loaded(noise: float, off_core: float = 0.3) -> RoundExecutor:
    """A busy machine whose timed runs are preempted (involuntary switches) and spend
    `off_core` of their CPU time waiting off the core."""
    rng = random.Random(4)

    def sample(r: int, k: int) -> tuple[RunTiming, RunTiming]:
        x = rng.gauss(0.0, noise)
        base, cand = _pair(x)
        return (
            RunTiming(base.cpu_s, base.cpu_s * (1 + off_core), involuntary_switches=3),
            RunTiming(cand.cpu_s, cand.cpu_s * (1 + off_core), involuntary_switches=2),
        )

    return RoundExecutor(sample, load_before=50.0, load_after=50.0)  # type: ignore[arg-type]


def test_high_load_is_shown_only_where_it_cost_precision() -> None:
    quiet = measure_pairs(_loaded(0.01), TimingConfig(budget_s=1e9)).speedup
    assert quiet.reliable and quiet.context["high_load"] is True
    assert str(W.HIGH_LOAD) not in quiet.warnings
    cfg = TimingConfig(budget_s=1e9, max_pairs=12, max_rounds=2)
    noisy = measure_pairs(_loaded(0.2), cfg).speedup
    assert str(W.TARGET_NOT_MET) in noisy.warnings and str(W.HIGH_LOAD) in noisy.warnings


def test_switches_that_cost_no_time_are_no_evidence_of_contention() -> None:
    # Every run preempted a few times, as on an idle timing core (kernel work of a few
    # microseconds), with wall equal to CPU: the machine is busy, its timing core is not.
    cfg = TimingConfig(budget_s=1e9, max_pairs=12, max_rounds=2)
    sp = measure_pairs(_loaded(0.2, off_core=0.0), cfg).speedup
    assert sp.context["high_load"] is False and str(W.HIGH_LOAD) not in sp.warnings


def test_a_busy_machine_with_an_uncontended_timing_core_is_not_high_load() -> None:
    rng = random.Random(5)
    ex = RoundExecutor(lambda r, k: _pair(rng.gauss(0, 0.2)), load_before=50.0)  # type: ignore[arg-type,return-value]
    sp = measure_pairs(ex, TimingConfig(budget_s=1e9, max_pairs=12, max_rounds=2)).speedup
    assert str(W.TARGET_NOT_MET) in sp.warnings and sp.context["high_load"] is False
    assert str(W.HIGH_LOAD) not in sp.warnings


class TwoTests:
    """A BatchExecutor for two tests: the first waits, the second runs."""

    def __init__(self) -> None:
        self.rng = random.Random(6)

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        return {
            i: Round(
                pairs=[_pair(self.rng.gauss(0.05 * i, 0.01)) for _ in range(n)],  # type: ignore[misc]
                seconds=0.002 * n,
                waited_s=10.0,
            )
            for i, n, _ in requests
        }


def test_batched_tests_share_the_wait_and_keep_their_own_budgets() -> None:
    speedups, failure, _ = measure_tests(TwoTests(), ["a", "b"], TimingConfig(budget_s=5.0))
    assert failure is None
    assert all(sp.context["seconds"] < 5.0 and sp.context["waited_s"] > 0 for sp in speedups)
    assert speedups[1].ratio == pytest.approx(math.exp(0.05), rel=0.02)


# ---------------------------------------------------------------------------- point in interval
def _test_speedup(name: str, ratio: float, log_se: float, df: float) -> TestSpeedup:
    t = 2.0
    return TestSpeedup(
        name,
        MeasureMode.TIME,
        MeasureStatus.MEASURED,
        ratio=ratio,
        low=ratio * math.exp(-t * log_se),
        high=ratio * math.exp(t * log_se),
        n=int(df) + 1,
        log_mean=math.log(ratio),
        log_se=log_se,
        df=df,
        context={"config": {"resolution": 0.01}},
    )


@pytest.mark.parametrize("seed", range(30))
def test_every_program_speedup_lies_inside_the_interval_of_its_own_statistic(seed: int) -> None:
    rng = random.Random(seed)
    tests = [
        _test_speedup(
            f"t{k}",
            math.exp(rng.uniform(-1.0, 3.5)),
            rng.uniform(0.001, 0.3),
            rng.choice([3.0, 10.0, 60.0]),
        )
        for k in range(rng.randint(1, 8))
    ]
    sp = ProgramSpeedup.from_tests(MeasureMode.TIME, tests, resolution=0.01)
    assert sp.low <= sp.ratio <= sp.high
    assert sp.mean_low <= sp.mean_ratio <= sp.mean_high
    assert sp.mean_ratio == pytest.approx(sum(t.ratio for t in tests) / len(tests))
    stored = ProgramSpeedup(
        MeasureMode.TIME, MeasureStatus.MEASURED, sp.ratio, sp.low, sp.high, tests=tests
    ).fill_means()  # what the store rebuilds from the per-test rows
    assert (stored.mean_ratio, stored.mean_low, stored.mean_high) == pytest.approx(
        (sp.mean_ratio, sp.mean_low, sp.mean_high)
    )


def test_the_two_statistics_differ_and_neither_interval_serves_the_other() -> None:
    # One 30x test among nine unchanged ones: the mean is 3.9, the geometric mean 1.4.
    parts = [exact_ratio(30.0)] + [exact_ratio(1.0)] * 9
    parts = [
        p.__class__(p.ratio, p.ratio * 0.98, p.ratio * 1.02, 10, p.log_mean, 0.01, 9.0, 0.95)
        for p in parts
    ]
    geo, mean = combine_geometric(parts), combine_arithmetic(parts)
    assert mean.ratio == pytest.approx(3.9) and geo.ratio == pytest.approx(30**0.1)
    assert not geo.low <= mean.ratio <= geo.high
    assert mean.low <= mean.ratio <= mean.high and geo.low <= geo.ratio <= geo.high


# ---------------------------------------------------------------------------- budgets
class SlowNoisy:
    """A CandidatesExecutor whose pairs never settle and cost `pair_s` seconds each."""

    def __init__(self, pair_s: float) -> None:
        self.pair_s = pair_s
        self.rng = random.Random(7)
        self.requests: list[CandidateRoundRequest] = []

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]:
        self.requests += requests
        return {
            (c, i): Round(
                pairs=[_pair(self.rng.gauss(0.0, 0.3)) for _ in range(n)],  # type: ignore[misc]
                warmups=[_pair(0.0)] * w,  # type: ignore[list-item]
                seconds=self.pair_s * (n + w),
            )
            for c, i, n, w in requests
        }


def test_a_candidate_budget_bounds_all_of_its_tests_together() -> None:
    cfg = TimingConfig(budget_s=1e9, candidate_budget_s=60.0)
    ex = SlowNoisy(pair_s=1.0)
    ((speedups, failure, _),) = measure_candidates(ex, ["a", "b", "c"], 1, cfg)
    assert failure is None
    spent = sum(sp.context["seconds"] for sp in speedups)
    assert 60.0 <= spent <= 60.0 + 3 * 51  # stops after the batch that crossed it
    assert {sp.context["stopped"] for sp in speedups} == {"candidate_budget"}
    assert all(str(W.TARGET_NOT_MET) in sp.warnings for sp in speedups)
    # Short of the target is no reason to distrust an interval; one sandbox alone is.
    assert all(sp.reliable == (str(W.ONE_ROUND) not in sp.warnings) for sp in speedups)


def test_runs_too_slow_for_a_pilot_get_two_short_rounds_sized_to_the_budget() -> None:
    cfg = TimingConfig(budget_s=20.0)
    ex = SlowNoisy(pair_s=6.0)  # a 3 s program: 2 rounds of 4 + 1 pairs would take 60 s
    ((speedups, _, _),) = measure_candidates(ex, ["t"], 1, cfg, pair_seconds=[[6.0]])
    (sp,) = speedups
    # 3 pairs fit 20 s; they come as two rounds of 2 (no warm-up, both in the estimate),
    # since no test ends on one sandbox: the budget gives way by one pair.
    assert ex.requests == [(0, 0, 2, 0), (0, 0, 2, 0)]
    assert sp.n == 4 and sp.context["pilot_pairs_left_out"] == 0
    assert sp.context["rounds_used"] == 2
    assert sp.context["stopped"] == "budget" and sp.context["seconds"] <= 2 * 20.0
    assert str(W.ONE_ROUND) not in sp.warnings
    # Without the estimate the same test spends 30 s on a first round it then discards.
    blind = SlowNoisy(pair_s=6.0)
    measure_candidates(blind, ["t"], 1, cfg)
    assert blind.requests[0] == (0, 0, 4, 1)


def _short_noisy(seed: int) -> RoundExecutor:
    rng = random.Random(seed)
    return RoundExecutor(lambda r, k: _pair(rng.gauss(0.0, 0.1), base_s=0.001))  # type: ignore[arg-type,return-value]


def test_a_sub_2ms_test_may_take_more_pairs_to_reach_its_target() -> None:
    # Per-pair spread 10% at 1 ms a run: about 300 pairs for +-2%; they cost a second.
    sp = measure_pairs(_short_noisy(8), TimingConfig(budget_s=1e9)).speedup
    assert sp.n > 200 and sp.context["stopped"] == "target" and sp.reliable
    capped = TimingConfig(budget_s=1e9, short_test_pair_factor=1)
    sp1 = measure_pairs(_short_noisy(8), capped).speedup
    assert sp1.context["stopped"] == "pairs" and str(W.TARGET_NOT_MET) in sp1.warnings


def test_the_short_test_allowance_and_the_too_fast_warning_are_one_rule() -> None:
    """A ~1.9 ms test whose occasional slow runs lift the mean above 2 ms: warned too_fast
    (by its median run) and so also given the short-test allowance; one rule, not two
    statistics that disagree around 2 ms."""
    rng = random.Random(3)

    def sample(r: int, k: int) -> tuple[RunTiming, ...]:
        base = 0.0019 if k % 4 else 0.0031  # median 1.9 ms, mean 2.2 ms
        return _pair(rng.gauss(0.0, 0.15), base_s=base)

    sp = measure_pairs(RoundExecutor(sample), TimingConfig(budget_s=1e9)).speedup  # type: ignore[arg-type]
    assert str(W.TOO_FAST) in sp.warnings
    assert sp.n > TimingConfig().max_pairs, sp.context  # the allowance applied


def test_a_programs_speedup_record_carries_each_tests_evidence() -> None:
    """`check --json`, `eval --json` and stored results show which test decided: each test's
    ratio, interval, pairs, rounds and why it stopped sit in the program's record."""

    tests = [
        TestSpeedup("short", MeasureMode.TIME, MeasureStatus.MEASURED, ratio=1.02, low=0.95,
                    high=1.09, n=176, context={"rounds": 5, "stopped": "budget"}),
        TestSpeedup("heavy", MeasureMode.TIME, MeasureStatus.MEASURED, ratio=2.2, low=2.1,
                    high=2.3, n=33, context={"rounds": 2, "stopped": "target"}),
    ]
    record = ProgramSpeedup.from_tests(MeasureMode.TIME, tests, 0.0).to_dict()
    by_test = {t["test"]: t for t in record["tests"]}
    assert set(by_test) == {"short", "heavy"}
    assert (by_test["short"]["low"], by_test["short"]["high"], by_test["short"]["n"]) == (
        0.95, 1.09, 176)
    assert by_test["heavy"]["context"] == {"rounds": 2, "stopped": "target"}


def test_a_short_test_short_of_its_target_does_not_void_a_decided_program() -> None:
    # floyd_warshall's case: heavy tests clearly faster (2.2x and 4.9x), one 1 ms test so
    # noisy (10% a pair) that its pair allowance ends short of the target. Its interval is
    # sound, only wide; the program's interval, which carries that width, is decided.
    rng = random.Random(11)

    def clear(speedup: float) -> RoundExecutor:
        return RoundExecutor(lambda r, k: _pair(math.log(speedup) + rng.gauss(0.0, 0.01)))  # type: ignore[arg-type,return-value]

    capped = TimingConfig(budget_s=1e9, short_test_pair_factor=1)
    short = measure_pairs(_short_noisy(8), capped).speedup
    heavy = [measure_pairs(clear(s), TimingConfig(budget_s=1e9)).speedup for s in (2.2, 4.9)]
    assert str(W.TARGET_NOT_MET) in short.warnings and short.reliable
    program = ProgramSpeedup.from_tests(MeasureMode.TIME, [short, *heavy])
    assert program.reliable and program.significantly_faster
    assert "wider than the target" in program.message and "unreliable" not in program.message
    # A test whose interval may be unsound (a third of its pairs outliers, more than the
    # estimate trims) still voids the program.
    spiky = RoundExecutor(lambda r, k: _pair(0.4 if k % 3 == 0 else rng.gauss(0.0, 0.01)))  # type: ignore[arg-type,return-value]
    outliers = measure_pairs(spiky, TimingConfig(budget_s=1e9)).speedup
    assert not outliers.reliable and str(W.MANY_OUTLIERS) in outliers.warnings
    voided = ProgramSpeedup.from_tests(MeasureMode.TIME, [outliers, *heavy])
    assert not voided.reliable and "unreliable on" in voided.message


def test_outliers_of_both_signs_within_what_is_trimmed_leave_the_interval_sound() -> None:
    # A loaded machine interrupts either run of a pair: 28% of the pairs are outliers, half
    # each way, fewer on each side than the 20% trimmed mean drops from it. The estimate is
    # blind to them (an A/A stays at 1.0 inside its interval) and the test is reliable; the
    # same share all on one side is not.
    rng = random.Random(5)

    def spikes(signs: tuple[float, ...]) -> RoundExecutor:
        def pair(r: int, k: int) -> object:
            if k % 7 in (0, 3):
                return _pair(signs[(k // 7) % len(signs)] * 0.3)
            return _pair(rng.gauss(0.0, 0.01))

        return RoundExecutor(pair)  # type: ignore[arg-type]

    both = measure_pairs(spikes((1.0, -1.0)), TimingConfig(budget_s=1e9)).speedup
    assert both.reliable and str(W.MANY_OUTLIERS) not in both.warnings
    assert both.low <= 1.0 <= both.high and abs(math.log(both.ratio)) < 0.01
    one_side = measure_pairs(spikes((1.0,)), TimingConfig(budget_s=1e9)).speedup
    assert not one_side.reliable and str(W.MANY_OUTLIERS) in one_side.warnings
