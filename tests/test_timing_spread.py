"""Sandbox-to-sandbox variation in the timing model: the machine's measured spread, rounds
combined with a between-round variance from the second round on, no test ending on one
sandbox, and the decision precision. Mock executors with per-sandbox random effects (no
real timing) check the properties; one test measures the real machine."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Sequence

import pytest

from asmopt.measure.speedup import TimingWarning
from asmopt.measure.stats import RatioInterval, pooled_within, random_effects
from asmopt.measure.timing import (
    DEFAULT_SPREAD,
    CandidateRoundRequest,
    CandidateTest,
    Round,
    RoundRequest,
    RunTiming,
    SandboxSpread,
    TimingConfig,
    measure_candidates,
    measure_tests,
)
from asmopt.measure.timing import calibration as spread_module
from asmopt.measure.timing.calibration import machine_spread
from asmopt.measure.timing.spread import (
    calibration_rounds,
    chi2_quantile,
    spread_from_rounds,
)


def _pair(log_ratio: float, base_s: float) -> tuple[RunTiming, RunTiming]:
    cand = base_s / math.exp(log_ratio)
    return RunTiming(base_s, base_s), RunTiming(cand, cand)


class SandboxEffects:
    """A BatchExecutor in which every sandbox (batch) shifts each test's log-ratio by its
    own N(0, tau) effect, and every pair adds N(0, sigma) on top: the model the engine must
    cover, with `true_log` the real difference."""

    def __init__(
        self, tau: float, true_log: float, seed: int, sigma: float = 0.01, base_s: float = 0.005
    ) -> None:
        self.rng = random.Random(seed)
        self.tau, self.true_log, self.sigma, self.base_s = tau, true_log, sigma, base_s
        self.batches = 0

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        self.batches += 1
        out = {}
        for i, pairs, warmup in requests:
            shift = self.true_log + self.rng.gauss(0.0, self.tau)
            made = [
                _pair(shift + self.rng.gauss(0.0, self.sigma), self.base_s)
                for _ in range(pairs + warmup)
            ]
            out[i] = Round(
                pairs=made[warmup:], warmups=made[:warmup], seconds=2 * self.base_s * len(made)
            )
        return out


def _calibrated(tau: float, seed: int = 1000) -> SandboxSpread:
    """The spread the machine's calibration would store, run on the mock machine."""
    rounds = calibration_rounds(SandboxEffects(tau, 0.0, seed).run_batch, 1)
    return spread_from_rounds(rounds, "mock")


# ---------------------------------------------------------------------------- the spread
def test_the_spread_interpolates_on_a_log_scale_and_holds_beyond_its_ends() -> None:
    sp = SandboxSpread(((0.001, 0.02), (0.01, 0.01)), df=9, source="test")
    assert sp.tau(0.0005) == 0.02 and sp.tau(0.05) == 0.01
    assert sp.tau(math.sqrt(0.001 * 0.01)) == pytest.approx(0.015)
    both = SandboxSpread.worst_of([sp, SandboxSpread(((0.005, 0.03),), 4, "x")], "two cores")
    assert both.tau(0.005) == 0.03 and both.df == 4
    assert SandboxSpread.from_dict(json.loads(json.dumps(sp.to_dict()))) == sp
    with pytest.raises(ValueError, match="increasing"):
        SandboxSpread(((0.01, 0.01), (0.001, 0.02)), 9, "x")
    with pytest.raises(ValueError, match="positive seconds"):
        SandboxSpread(((0.0, 0.01),), 9, "x")


def test_the_worst_of_several_cores_never_falls_for_shorter_runs() -> None:
    """Interpolating one core's points at another's lengths can land a last bit below the
    next shorter point; the combined spread is still non-increasing in run length."""
    rng = random.Random(7)
    for _ in range(300):
        cores = []
        for _ in range(rng.randint(1, 3)):
            lengths = sorted(rng.sample([0.001, 0.002, 0.005, 0.0125, 0.016, 0.05], 3))
            taus = sorted((rng.uniform(0.001, 0.05) for _ in lengths), reverse=True)
            if rng.random() < 0.5:  # a flat stretch, as the never-falling rule leaves
                taus[-1] = taus[-2]
            cores.append(SandboxSpread(tuple(zip(lengths, taus, strict=True)), 5, "x"))
        taus = [t for _, t in SandboxSpread.worst_of(cores, "cores").points]
        assert all(a >= b for a, b in itertools.pairwise(taus))
        assert all(cores[0].tau(s) == t for s, t in cores[0].points)


def test_the_measured_spread_is_an_upper_bound_that_never_falls_for_shorter_runs() -> None:
    # Eight calibrations on a machine with a 1% sandbox effect: the stored figure (a 95%
    # upper bound) is at or above the truth in most of them, far from it in none.
    stored = [_calibrated(0.01, seed).tau(0.005) for seed in range(8)]
    assert sum(t >= 0.01 for t in stored) >= 6
    assert all(0.006 < t < 0.025 for t in stored)
    # Chi-square quantiles (Wilson-Hilferty) against tabulated values.
    assert chi2_quantile(0.05, 23) == pytest.approx(13.091, rel=0.01)
    assert chi2_quantile(0.95, 9) == pytest.approx(16.919, rel=0.01)
    # A longer run that happened to vary more lifts the shorter ones to its figure.
    rng = random.Random(5)

    def rounds_with(tau: float) -> list[list[float]]:
        effects = [rng.gauss(0.0, tau) for _ in range(12)]
        return [[rng.gauss(u, 0.01) for _ in range(8)] for u in effects]

    rounds = {0.001: rounds_with(0.0), 0.01: rounds_with(0.03)}
    sp = spread_from_rounds(rounds, "x")
    assert sp.tau(0.001) == sp.tau(0.01) > 0.01


@pytest.mark.parametrize(
    "tau, sigma",
    [(0.005, 0.03), pytest.param(0.01, 0.01, marks=pytest.mark.slow),
     pytest.param(0.02, 0.03, marks=pytest.mark.slow)],
)
def test_the_stored_spread_covers_the_true_one_at_its_stated_level(tau, sigma) -> None:
    # 200 calibrations on mock machines with a known sandbox effect: the stored figure is a
    # 95% upper bound, so at most 5% of them (a little more for Monte Carlo error) may fall
    # below the truth. Scaling DerSimonian-Laird's point estimate, as before, fell below it
    # in 11-18% of these (0 outright in 9% where per-pair noise is 3%).
    stored = [
        spread_from_rounds(
            calibration_rounds(SandboxEffects(tau, 0.0, seed, sigma=sigma).run_batch, 1), "m"
        ).tau(0.005)
        for seed in range(200)
    ]
    assert sum(t < tau for t in stored) <= 0.075 * len(stored)
    assert max(stored) < 4 * tau + 2 * sigma  # an upper bound, not a blanket


def test_a_calibration_whose_rounds_agree_by_chance_never_stores_a_spread_of_zero() -> None:
    # No sandbox effect at all: the rounds differ only by their pairs' noise, and many
    # calibrations' point estimates are 0. The stored figure is the detection floor there,
    # the spread rounds this precise cannot tell from none, never 0.
    for sigma in (0.01, 0.03):
        stored = [
            spread_from_rounds(
                calibration_rounds(SandboxEffects(0.0, 0.0, s, sigma=sigma).run_batch, 1), "m"
            ).tau(0.005)
            for s in range(40)
        ]
        se = sigma / math.sqrt(10)  # one round of ten pairs
        assert min(stored) > 0.5 * se
        assert max(stored) < 4 * se
    # Rounds that agree exactly: the profile bound is 0, the floor is what is kept.
    flat = {0.005: [[0.01, -0.01, 0.01, -0.01] for _ in range(12)]}
    assert spread_from_rounds(flat, "x").tau(0.005) > 0.0


# ---------------------------------------------------------------------------- statistics
def _part(mean: float, se: float, df: float = 3.0, n: int = 4) -> RatioInterval:
    return RatioInterval(math.exp(mean), 0.0, 0.0, n, mean, se, df, 0.98)


def test_two_rounds_carry_the_machines_between_sandbox_variance() -> None:
    parts = [_part(0.0, 0.004), _part(0.004, 0.004)]
    # Data alone: Q = 0.5 < 1, tau_hat = 0, the fixed-effect interval on the pooled df.
    plain = random_effects(parts, 0.95)
    assert plain.df == 6 and plain.log_se == pytest.approx(0.004 / math.sqrt(2))
    # With a prior of 1% on 9 df: tau^2 = 9 * 1e-4 / 10, weights 1 / (v + tau^2).
    tau2 = 9 * 1e-4 / 10
    iv = random_effects(parts, 0.95, prior_tau2=1e-4, prior_df=9)
    assert iv.log_se == pytest.approx(math.sqrt((0.004**2 + tau2) / 2))
    within, between = 0.004**2 / 2 / 2, tau2 / 2 / 2
    df = (within + between) ** 2 / (within**2 / 6 + between**2 / 10)
    assert iv.df == pytest.approx(df)
    assert iv.high / iv.ratio > 1.0 + 2 * plain.log_se  # far wider than the pairs alone say
    # One round alone gets the prior's variance added to its own.
    one = random_effects(parts[:1], 0.95, prior_tau2=1e-4, prior_df=9)
    assert one.log_se == pytest.approx(math.sqrt(0.004**2 + 1e-4))


def test_a_round_that_looks_tight_by_chance_gets_the_pooled_per_pair_error() -> None:
    lucky, usual, noisy = _part(0.03, 0.0005), _part(0.0, 0.005), _part(0.0, 0.02)
    pooled = pooled_within([lucky, usual, noisy])
    s2 = (3 * 4 * 0.0005**2 + 3 * 4 * 0.005**2 + 3 * 4 * 0.02**2) / 9
    assert pooled[0].log_se == pytest.approx(math.sqrt(s2 / 4))
    assert pooled[2].log_se == 0.02  # a noisier round keeps its own, larger, error
    combined = random_effects(pooled, 0.95)
    assert combined.log_mean < 0.02  # the lucky round no longer takes nearly all the weight


# ---------------------------------------------------------------------------- properties
TAUS = [0.0, 0.005, 0.01, 0.02, 0.04]


def _sweep(precisions: list[str], taus: list[float], default_up_to: float) -> list[object]:
    """(precision, tau) pairs; those past `default_up_to` run with the slow tests only (a
    sweep of 200 simulated answers each: the default suite keeps the small effects)."""
    return [
        pytest.param(p, t, marks=[pytest.mark.slow] if t > default_up_to else [])
        for p in precisions
        for t in taus
    ]


@pytest.mark.parametrize(("precision", "tau"), _sweep(["target", "decision"], TAUS, 0.005))
def test_aa_intervals_cover_and_are_almost_never_faster_whatever_the_sandbox_effect(
    tau: float, precision: str
) -> None:
    config = TimingConfig(spread=_calibrated(tau), precision=precision)  # type: ignore[arg-type]
    results = [
        measure_tests(SandboxEffects(tau, 0.0, seed), ["t"], config)[0][0] for seed in range(200)
    ]
    covered = sum(sp.low <= 1.0 <= sp.high for sp in results)
    faster = sum(sp.low > 1.0 for sp in results)
    assert covered >= 0.95 * len(results), (covered, faster)
    assert faster <= 0.01 * len(results), faster
    assert all(sp.context["rounds_used"] >= 2 for sp in results)


@pytest.mark.parametrize(
    ("precision", "tau"), _sweep(["target", "decision"], [0.0, 0.005, 0.01], 0.0)
)
def test_a_true_three_percent_speedup_is_still_found(tau: float, precision: str) -> None:
    config = TimingConfig(spread=_calibrated(tau), precision=precision)  # type: ignore[arg-type]
    results = [
        measure_tests(SandboxEffects(tau, math.log(1.03), 5000 + s), ["t"], config)[0][0]
        for s in range(100)
    ]
    assert sum(sp.low > 1.0 for sp in results) >= 90
    assert all(sp.high > 1.0 for sp in results)  # never called slower


def test_the_decision_precision_settles_copies_with_fewer_pairs() -> None:
    spread = _calibrated(0.005)
    cost = {}
    for precision in ("target", "decision"):
        config = TimingConfig(spread=spread, precision=precision)  # type: ignore[arg-type]
        # A noisy test (5% per pair): +-2% needs many pairs, "within 3% of 1.0" fewer.
        results = [
            measure_tests(SandboxEffects(0.005, 0.0, s, sigma=0.05), ["t"], config)[0][0]
            for s in range(60)
        ]
        cost[precision] = sum(sp.context["runs"] for sp in results)
        # One side of a 98% interval: 0.6 false "faster" expected in 60, so one may occur.
        assert sum(sp.low > 1.0 for sp in results) <= 1
    assert cost["decision"] < 0.7 * cost["target"], cost


# ---------------------------------------------------------------------------- recorded cases
def _four(mean: float, sd: float) -> list[float]:
    """Four log-ratios with this mean and sample standard deviation."""
    unit = [-1.5, -0.5, 0.5, 1.5]
    scale = sd / math.sqrt(sum(u * u for u in unit) / 3)
    return [mean + scale * u for u in unit]


class Recorded:
    """Hands out recorded rounds, then A/A rounds from a machine with a 1% sandbox effect."""

    def __init__(self, rounds: list[list[float]], base_s: float, seed: int = 0) -> None:
        self.rounds, self.base_s = rounds, base_s
        self.after = SandboxEffects(0.01, 0.0, seed, base_s=base_s)
        self.asked: list[int] = []

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        (i, pairs, warmup), *_ = requests
        self.asked.append(pairs)
        if self.rounds:
            logs = self.rounds.pop(0)
            made = [_pair(x, self.base_s) for x in logs]
            warm = [_pair(0.0, self.base_s)] * warmup
            return {i: Round(pairs=made, warmups=warm, seconds=0.01 * (len(made) + warmup))}
        return self.after.run_batch(requests)


# The two A/A tests that ended on the 4 pairs of their second round alone, the pilot left
# out for disagreeing: edit_distance 1.0243 [1.0072, 1.0417] (a 4.6 ms test) and
# hash_table_open 0.9781 [0.9675, 0.9888] (4.1 ms), both "reliable, stopped=target". The
# second round is rebuilt from its interval (t(3) = 3.182 on 4 pairs), the pilot as a round
# that disagrees with it by more than PILOT_AGREEMENT_Z standard errors.
RECORDED = {
    "edit_distance": (0.0046, 1.0243, 1.0417),
    "hash_table_open": (0.0041, 0.9781, 0.9888),
}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_recorded_single_round_endings_no_longer_end_a_test(name: str) -> None:
    base_s, ratio, high = RECORDED[name]
    mean = math.log(ratio)
    sd = 2 * math.log(high / ratio) / 3.182446  # se * sqrt(4), se = half-width / t(3)
    second = _four(mean, sd)
    pilot = _four(-mean, sd)  # displaced the other way: it disagrees and is left out
    # As they were measured: with the old rules (a round may stand alone, no between-sandbox
    # allowance, a fixed 1% floor), the test ends after two rounds on the second's pairs.
    old = TimingConfig(
        min_rounds=1,
        spread=SandboxSpread(((0.001, 0.0),), 0.0, "none"),
        resolution=0.01,
        confidence=0.95,
    )
    (sp_old,), _, _ = measure_tests(Recorded([pilot, second], base_s), [name], old)
    assert sp_old.context["stopped"] == "target" and sp_old.context["rounds"] == 2
    assert sp_old.context["pilot_pairs_left_out"] == 4
    assert not sp_old.low <= 1.0 <= sp_old.high  # the false "faster" / "slower"
    # Now: the same two rounds ask for a third, and the interval covers 1.0 at the end,
    # over many continuations (the rounds after the recorded ones differ by seed).
    covered = 0
    for seed in range(20):
        ex = Recorded([pilot, second], base_s, seed)
        (sp,), _, _ = measure_tests(ex, [name], TimingConfig(spread=_calibrated(0.01)))
        assert len(ex.asked) >= 3 and sp.context["rounds_used"] >= 2, sp.context
        covered += sp.low <= 1.0 <= sp.high
    assert covered >= 19


def test_a_test_stopped_by_a_budget_on_one_round_is_flagged() -> None:
    cfg = TimingConfig(budget_s=1e9, candidate_budget_s=0.05, spread=DEFAULT_SPREAD)
    ((speedups, _, _),) = measure_candidates(_OneBatch(SandboxEffects(0.01, 0.0, 3)), ["t"], 1, cfg)
    (sp,) = speedups
    assert sp.context["stopped"] == "candidate_budget" and sp.context["rounds_used"] == 1
    assert str(TimingWarning.ONE_ROUND) in sp.warnings and not sp.reliable


class _OneBatch:
    def __init__(self, executor: SandboxEffects) -> None:
        self.executor = executor

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]:
        out = self.executor.run_batch([req.for_test() for req in requests])
        return {(0, i): r for i, r in out.items()}


# ---------------------------------------------------------------------------- the machine
def test_the_machine_spread_is_measured_once_then_read_back(
    sandbox: object, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real calibration on this machine's timing core (fewer rounds than the default),
    stored in the cache; the next process reads the file instead of measuring, and a file
    from another boot or CPU is measured again."""
    from asmopt.measure.timing import default_core_lock

    monkeypatch.setenv("ASMOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(spread_module, "CALIBRATION_ROUNDS", 6)
    monkeypatch.setattr(spread_module, "_MEMO", {})
    lock = default_core_lock()
    measured = machine_spread(sandbox, lock)
    assert measured.source.startswith("measured on cores") and measured.df == 5
    # Three lengths of cache-bound work and two of memory-bound work, the larger spread
    # kept where they meet, never falling for shorter runs.
    assert len(measured.points) == 5 and all(0 < t < 0.2 for _, t in measured.points)
    taus = [t for _, t in measured.points]
    assert taus == sorted(taus, reverse=True)
    stored = json.loads(spread_module.spread_path().read_text())
    assert stored["key"]["cores"] == list(lock.layout.timing)

    def must_not_measure(*args: object, **kw: object) -> None:
        raise AssertionError("measured again")

    monkeypatch.setattr(spread_module, "_MEMO", {})
    monkeypatch.setattr(spread_module, "calibrate", must_not_measure)
    assert machine_spread(sandbox, lock) == measured
    # Another boot: measured again (here: the stand-in refuses, so the default is used).
    stored["key"]["boot_id"] = "another-boot"
    spread_module.spread_path().write_text(json.dumps(stored))
    monkeypatch.setattr(spread_module, "_MEMO", {})
    monkeypatch.setattr(
        spread_module, "calibrate", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no"))
    )
    assert machine_spread(sandbox, lock) is DEFAULT_SPREAD
    monkeypatch.setenv("ASMOPT_TIMING_SPREAD", "default")
    assert machine_spread(sandbox, lock) is DEFAULT_SPREAD


def test_a_target_the_machines_spread_forbids_is_met_at_the_narrowest_interval_it_allows() -> None:
    """Sandboxes that differ by 3%: +-2% at 98% would need more than 8 sandboxes, so the
    test aims at what 8 allow and says so (spread_limited), without being unreliable; on a
    machine whose sandboxes agree, the same target is met as asked."""
    wide = TimingConfig(spread=_calibrated(0.03))
    results = [measure_tests(SandboxEffects(0.03, 0.0, s), ["t"], wide)[0][0] for s in range(40)]
    limited = [sp for sp in results if str(TimingWarning.SPREAD_LIMITED) in sp.warnings]
    assert len(limited) >= 36
    for sp in limited:
        target = sp.context["config"]["effective_target"]
        assert target > 0.02 and max(sp.high / sp.ratio, sp.ratio / sp.low) - 1 <= target + 1e-9
        assert sp.reliable and str(TimingWarning.TARGET_NOT_MET) not in sp.warnings
    assert sum(sp.low <= 1.0 <= sp.high for sp in results) >= 38
    narrow = TimingConfig(spread=_calibrated(0.0))
    (sp,), _, _ = measure_tests(SandboxEffects(0.0, 0.0, 1), ["t"], narrow)
    assert sp.context["config"]["effective_target"] == 0.02
    assert str(TimingWarning.SPREAD_LIMITED) not in sp.warnings


class OneLuckySandbox(SandboxEffects):
    """An attack on the rounds: an answer no faster than the baseline that lands well in one
    sandbox out of many (a placement it found by chance, or an alignment it can only hit
    sometimes), 4% faster there and tight, equal elsewhere."""

    def __init__(self, seed: int, lucky: int) -> None:
        super().__init__(0.005, 0.0, seed)
        self.lucky = lucky

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        if self.batches != self.lucky:
            return super().run_batch(requests)
        self.batches += 1
        out = {}
        for i, pairs, warmup in requests:
            made = [_pair(0.04 + self.rng.gauss(0.0, 0.002), self.base_s) for _ in range(pairs)]
            warm = [_pair(0.0, self.base_s)] * warmup
            out[i] = Round(pairs=made, warmups=warm, seconds=2 * self.base_s * len(made))
        return out


@pytest.mark.parametrize("lucky", [0, 1, 2])
def test_one_lucky_sandbox_does_not_make_an_answer_faster(lucky: int) -> None:
    config = TimingConfig(spread=_calibrated(0.005), precision="decision")
    results = [
        measure_tests(OneLuckySandbox(seed, lucky), ["t"], config)[0][0] for seed in range(40)
    ]
    assert sum(sp.low > 1.0 for sp in results) <= 1, [(sp.ratio, sp.low) for sp in results]
