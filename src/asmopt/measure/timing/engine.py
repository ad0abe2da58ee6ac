"""The timing engine: the adaptive loop over rounds of paired samples.

It only sees an executor that returns paired samples (`BatchExecutor`, rounds.py), so its
statistics are tested with a mock executor and no real timing; executor.py runs real
sandboxes. Its knobs are config.py's `TimingConfig`.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from asmopt.errors import InputError
from asmopt.measure.speedup import (
    MeasureMode,
    MeasureStatus,
    TestSpeedup,
    TimingWarning,
)
from asmopt.measure.stats import (
    RatioInterval,
    outlier_flags,
    pooled_within,
    random_effects,
    t_quantile,
    trimmed_interval,
    with_resolution,
)
from asmopt.measure.timing.config import TimingConfig
from asmopt.measure.timing.requests import CandidateRoundRequest, CandidateTest, RoundRequest
from asmopt.measure.timing.rounds import (
    BatchExecutor,
    CandidatesExecutor,
    PairExecutor,
    Round,
    RunFailure,
    RunTiming,
)
from asmopt.measure.timing.spread import DEFAULT_SPREAD, SandboxSpread

TOO_FAST_S = 0.002  # below this, process start-up dominates a run


class _OneCandidate:
    """A BatchExecutor (one candidate) seen as a CandidatesExecutor of candidate 0."""

    def __init__(self, executor: BatchExecutor) -> None:
        self.executor = executor

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]:
        rounds = self.executor.run_batch([req.for_test() for req in requests])
        return {CandidateTest(0, i): rnd for i, rnd in rounds.items()}


class _OneTest:
    """A PairExecutor seen as a BatchExecutor of a single test."""

    def __init__(self, executor: PairExecutor) -> None:
        self.executor = executor

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        first = requests[0]
        return {first.test: self.executor.run_round(first.pairs, first.warmup_pairs)}


@dataclass
class TimingOutcome:
    """The engine's answer: a speedup, or the failure that stopped the measurement."""

    speedup: TestSpeedup
    failure: RunFailure | None = None


# ---------------------------------------------------------------------------- engine
# The pilot round joins the estimate only when it agrees with the rounds after it: their
# means may differ by at most this many standard errors of the difference.
PILOT_AGREEMENT_Z = 3.0


def _mean_se(xs: Sequence[float]) -> tuple[float, float]:
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return mean, math.inf
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, math.sqrt(var / n)


def _used_pairs(
    pairs: list[tuple[RunTiming, RunTiming, int]], config: TimingConfig, tau: float = 0.0
) -> list[tuple[RunTiming, RunTiming, int]]:
    """The pairs the estimate rests on. Once a later round exists, the pilot round's pairs
    count only if they agree with the later rounds' (means within PILOT_AGREEMENT_Z
    standard errors of their difference, which counts the between-sandbox spread `tau`:
    a pilot that differs as any other sandbox may is not displaced): a displaced pilot is
    left out, a sound one saves its pairs from being paid for twice."""
    if not (config.pilot_round and any(r > 0 for _, _, r in pairs)):
        return pairs
    later = [p for p in pairs if p[2] > 0]
    pilot = [p for p in pairs if p[2] == 0]
    if not pilot:
        return pairs
    metric = config.metric
    m1, se1 = _mean_se([math.log(b.value(metric) / c.value(metric)) for b, c, _ in pilot])
    m2, se2 = _mean_se([math.log(b.value(metric) / c.value(metric)) for b, c, _ in later])
    later_rounds = len({r for _, _, r in later})
    spread = math.hypot(se1, se2, tau * math.sqrt(1.0 + 1.0 / later_rounds))
    if math.isfinite(spread) and abs(m1 - m2) <= PILOT_AGREEMENT_Z * spread:
        return pairs
    return later


# A timed run lost its core when it was preempted and spent more than this share of its
# CPU time, and at least OFF_CORE_MIN_S, off the core (wall - CPU). An involuntary switch
# alone is no evidence: on an idle timing core every run of a few ms sees one to a few
# (kernel work that takes microseconds), so counting switches calls every machine loaded.
OFF_CORE_SHARE = 0.05
OFF_CORE_MIN_S = 2e-4


def _lost_core(run: RunTiming) -> bool:
    """Whether this run waited off its core for a share of its time an idle core never
    shows (see OFF_CORE_SHARE)."""
    off = run.wall_s - run.cpu_s
    return run.involuntary_switches > 0 and off > max(OFF_CORE_SHARE * run.cpu_s, OFF_CORE_MIN_S)


def _contended(pairs: Sequence[tuple[RunTiming, RunTiming, int]], stalled_rounds: int) -> bool:
    """Whether the timing core itself was contended: a tenth of the timed runs lost their
    core for a measurable time (`_lost_core`; at real-time priority only the kernel or
    another real-time task can take it), or a round stalled. The load average alone says
    little on a small machine: it counts work on the other cores, which CPU time on a
    reserved core does not feel."""
    runs = [x for b, c, _ in pairs for x in (b, c)]
    lost = sum(_lost_core(x) for x in runs)
    return stalled_rounds > 0 or (bool(runs) and lost > 0.1 * len(runs))


_Pair = tuple[RunTiming, RunTiming, int]  # (baseline run, candidate run, round index)


def _upper_median(xs: Sequence[float]) -> float:
    """The middle value (the upper one of an even count)."""
    return sorted(xs)[len(xs) // 2]


@dataclass(frozen=True)
class _Estimate:
    """The interval of one test over the pairs it rests on, with what it was made of."""

    used: list[_Pair]
    logs: list[float]
    flags: list[bool]
    per_round: list[RatioInterval]
    stat: RatioInterval
    tau: float
    base_vals: list[float]
    cand_vals: list[float]


def _estimate(state: _TestState, config: TimingConfig, spread: SandboxSpread) -> _Estimate:
    """The used pairs' log-ratios, per round, combined across rounds.

    Rounds are combined with a between-sandbox variance from the first on: the rounds' own
    spread pooled with this machine's (spread.py), so two rounds that agree by chance still
    carry the machine's allowance, and two that disagree widen it."""
    metric = config.metric
    everything = [b.value(metric) for b, _, _ in state.pairs]
    tau = spread.tau(_upper_median(everything))
    used = _used_pairs(
        state.pairs, replace(config, pilot_round=False) if state.slow else config, tau
    )
    logs = [math.log(b.value(metric) / c.value(metric)) for b, c, _ in used]
    flags = outlier_flags(logs, config.outlier_threshold)
    by_round: dict[int, list[float]] = {}
    for x, (_, _, r) in zip(logs, used, strict=True):
        by_round.setdefault(r, []).append(x)
    per_round = pooled_within(
        [
            trimmed_interval(xs, config.confidence, config.trim)
            for xs in by_round.values()
            if len(xs) >= 2
        ]
    )
    base_vals = [b.value(metric) for b, _, _ in used]
    cand_vals = [c.value(metric) for _, c, _ in used]
    tau = spread.tau(_upper_median(base_vals))
    stat = (
        random_effects(per_round, config.confidence, prior_tau2=tau * tau, prior_df=spread.df)
        if per_round
        else trimmed_interval(logs, config.confidence, config.trim)
    )
    return _Estimate(used, logs, flags, per_round, stat, tau, base_vals, cand_vals)


def _effective_target(config: TimingConfig, tau: float, df: float) -> float:
    """The target half-width, or what this machine allows if that is more.

    With every round's pairs infinite, max_rounds sandboxes still leave tau /
    sqrt(max_rounds). A target below that cannot be met here; the test aims at 1.25 times
    the limit instead and says so (spread_limited), which is no fault of its measurement."""
    target = config.target_half_width
    limit = _spread_limit(config, tau, df)
    if 1.25 * limit > target:
        target = 1.25 * limit
    return target


def _quality_warnings(
    state: _TestState,
    config: TimingConfig,
    est: _Estimate,
    extra_warnings: Sequence[TimingWarning],
) -> list[TimingWarning]:
    """The warnings on the estimate itself (precision, outliers, rounds, run length)."""
    warnings: list[TimingWarning] = list(extra_warnings)
    target = state.effective_target
    if est.stat.half_width > target and not state.decided:
        warnings.append(TimingWarning.TARGET_NOT_MET)
    elif target > config.target_half_width and state.done:
        warnings.append(TimingWarning.SPREAD_LIMITED)
    if _outliers_beyond_trim(est, config.max_outlier_share):
        warnings.append(TimingWarning.MANY_OUTLIERS)
    if state.kept_stalled:
        warnings.append(TimingWarning.STALLED)
    if state.rounds_used < config.rounds_needed and state.done:
        warnings.append(TimingWarning.ONE_ROUND)
    if min(_upper_median(est.base_vals), _upper_median(est.cand_vals)) < TOO_FAST_S:
        warnings.append(TimingWarning.TOO_FAST)
    return warnings


def _outliers_beyond_trim(est: _Estimate, share: float) -> bool:
    """Whether the outliers on one side of the median outnumber what the trimmed estimate
    drops from that side (`share` of the pairs: the 20% trimmed mean drops a fifth from
    each end). Outliers of both signs are the usual kind on a loaded machine (either run
    of a pair can be the one interrupted); the estimate is blind to as many on each side
    as it trims, so only more than that on one side can reach it."""
    centre = statistics.median(est.logs) if est.logs else 0.0
    above = sum(1 for x, f in zip(est.logs, est.flags, strict=True) if f and x > centre)
    below = sum(1 for x, f in zip(est.logs, est.flags, strict=True) if f and x < centre)
    return max(above, below) > share * len(est.logs)


# What makes an interval unsound, so its result could be wrong in sign or beyond its
# bounds: outliers beyond what the estimate trims, or one sandbox carrying what varies
# between sandboxes. A test short of its target (a budget spent first) is not among them:
# its interval is as sound as any, only wider, and the program's interval carries that
# width; it is reported (`target_not_met`) and never voids a program decided anyway.
_UNRELIABLE = {
    TimingWarning.MANY_OUTLIERS,
    TimingWarning.ONE_ROUND,
}


def _round_loads(rounds: Sequence[Round]) -> list[float]:
    """The load averages recorded before and after every round."""
    return [x for r in rounds for x in (r.load_before, r.load_after) if x is not None]


def _high_load(state: _TestState, used: Sequence[_Pair]) -> bool:
    """Whether the machine was overloaded and the timing core itself contended."""
    loads = _round_loads(state.rounds)
    busy_machine = bool(loads) and max(loads) > (os.cpu_count() or 1)
    return busy_machine and _contended(used, state.discarded + state.kept_stalled)


def _pilot_pairs_left_out(state: _TestState, used: Sequence[_Pair]) -> int:
    """How many pilot-round pairs the estimate left out (0 when none was)."""
    return [r for _, _, r in state.pairs].count(0) if len(used) < len(state.pairs) else 0


def _raw_record(
    state: _TestState, config: TimingConfig, est: _Estimate, pilot: int
) -> dict[str, Any]:
    """Every used run's numbers, the pilot's and the warm-ups', for the stored record."""
    used, rounds = est.used, state.rounds
    return {
        "metric": config.metric,
        "round": [r for _, _, r in used],
        "base_cpu": [b.cpu_s for b, _, _ in used],
        "cand_cpu": [c.cpu_s for _, c, _ in used],
        "base_wall": [b.wall_s for b, _, _ in used],
        "cand_wall": [c.wall_s for _, c, _ in used],
        "base_nivcsw": [b.involuntary_switches for b, _, _ in used],
        "cand_nivcsw": [c.involuntary_switches for _, c, _ in used],
        "outlier": est.flags,
        "estimator": (
            f"{config.trim:.0%} trimmed mean of log-ratios (Yuen) per round; rounds "
            "combined by random effects, the between-round variance pooled from the "
            "rounds' own (DerSimonian-Laird) and this machine's measured spread; the pilot "
            "round left out where it disagrees with the later rounds"
        ),
        "order": "AB and BA pairs alternate",
        "pilot_base_cpu": [b.cpu_s for b, _, r in state.pairs if r == 0] if pilot else [],
        "pilot_cand_cpu": [c.cpu_s for _, c, r in state.pairs if r == 0] if pilot else [],
        "warmup_base_cpu": [b.cpu_s for r in rounds for b, _ in r.warmups],
        "warmup_cand_cpu": [c.cpu_s for r in rounds for _, c in r.warmups],
    }


def _context_record(
    state: _TestState,
    config: TimingConfig,
    spread: SandboxSpread,
    pilot: int,
    high_load: bool,
) -> dict[str, Any]:
    """Where and how the test was measured, its costs and why it stopped."""
    rounds = state.rounds
    return {
        "rounds": len(rounds),
        "pilot_pairs_left_out": pilot,
        "env_pad": [r.env_pad for r in rounds],
        "cores": sorted({c for r in rounds for c in r.cpus}),
        "priority": sorted({r.priority for r in rounds}),
        "load": [round(x, 2) for x in _round_loads(rounds)],
        "high_load": high_load,
        "seconds": round(state.spent, 4),
        "waited_s": round(state.waited, 4),
        "stalled_s": round(state.stalled_s, 4),
        "stalled_rounds_discarded": state.discarded,
        "stopped": state.stopped,
        "runs": 2 * sum(len(r.pairs) + len(r.warmups) for r in rounds),
        # Fewer than `runs` where baseline runs were shared with other candidates.
        "charged_runs": round(
            sum(r.charged_runs or 2 * (len(r.pairs) + len(r.warmups)) for r in rounds), 3
        ),
        "rounds_used": state.rounds_used,
        "between_sandbox_sd": round(state.tau, 5),
        "spread_source": spread.source,
        "config": {
            "target_half_width": state.target or config.target_half_width,
            "effective_target": round(state.effective_target, 5),
            "resolution": round(state.resolution, 5),
            "metric": config.metric,
            "precision": config.precision,
            "confidence": config.confidence,
        },
    }


def _summarise(
    state: _TestState,
    config: TimingConfig,
    extra_warnings: Sequence[TimingWarning],
) -> tuple[TestSpeedup, RatioInterval]:
    """The interval over the used pairs; returns the speedup and the raw statistic.

    It also leaves in `state` what the stopping rule reads: the resolution, tau, the
    rounds in the estimate and their intervals, and the effective target."""
    spread = config.spread or DEFAULT_SPREAD
    est = _estimate(state, config, spread)
    stat = est.stat
    resolution = config.resolution_for(est.tau)
    state.resolution, state.tau = resolution, est.tau
    state.rounds_used, state.parts = len(est.per_round), est.per_round
    shown = with_resolution(stat, resolution)
    state.effective_target = _effective_target(config, est.tau, stat.df)
    warnings = _quality_warnings(state, config, est, extra_warnings)
    reliable = not any(w in _UNRELIABLE for w in warnings)
    high_load = _high_load(state, est.used)
    # Shown only where it explains an unreliable or imprecise result; otherwise context.
    if high_load and (not reliable or TimingWarning.TARGET_NOT_MET in warnings):
        warnings.append(TimingWarning.HIGH_LOAD)
    pilot = _pilot_pairs_left_out(state, est.used)
    # Order-preserving de-duplication of the warning codes.
    codes = list(dict.fromkeys(str(w) for w in warnings))
    speedup = TestSpeedup(
        test=state.name,
        mode=MeasureMode.TIME,
        status=MeasureStatus.MEASURED,
        ratio=shown.ratio,
        low=shown.low,
        high=shown.high,
        n=len(est.logs),
        n_outliers=sum(est.flags),
        reliable=reliable,
        warnings=codes,
        message="; ".join(TimingWarning(c).advice for c in codes),
        base_mean=sum(est.base_vals) / len(est.base_vals),
        cand_mean=sum(est.cand_vals) / len(est.cand_vals),
        log_mean=stat.log_mean,
        log_se=stat.log_se,
        df=stat.df,
        raw=_raw_record(state, config, est, pilot),
        context=_context_record(state, config, spread, pilot, high_load),
    )
    return speedup, stat


@dataclass
class _TestState:
    name: str
    pairs: list[tuple[RunTiming, RunTiming, int]] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    spent: float = 0.0  # seconds of timing charged to the budget
    waited: float = 0.0  # seconds waiting for the timing core (never charged)
    stalled_s: float = 0.0  # seconds of discarded stalled rounds (never charged)
    discarded: int = 0  # stalled rounds discarded and repeated
    kept_stalled: int = 0  # stalled rounds kept once the discard allowance was used up
    want: int = 0
    speedup: TestSpeedup | None = None
    done: bool = False
    decided: bool = False  # stopped by the sequential rule before the target
    stopped: str = ""  # why the test stopped: target, decided, pairs, rounds, budget
    retries: int = 0
    target: float | None = None  # this test's own target half-width, if it has one
    # Its runs are so slow that the budget affords only a few pairs: they come in short
    # rounds without warm-up, every round in the estimate (no pilot is left out).
    slow: bool = False
    # From the last summary: its resolution (config.resolution_for), the rounds of two or
    # more pairs in its estimate with their intervals, and the machine's between-sandbox
    # standard deviation for this test's run length.
    resolution: float = 0.0
    effective_target: float = 0.0  # the target, or what the spread allows if that is more
    rounds_used: int = 0
    parts: list[RatioInterval] = field(default_factory=list)
    tau: float = 0.0


def _spread_limit(config: TimingConfig, tau: float, df: float) -> float:
    """The narrowest half-width `max_rounds` sandboxes can give when sandboxes differ by
    `tau` (however many pairs each holds)."""
    if tau <= 0:
        return 0.0
    t = t_quantile(0.5 + config.confidence / 2.0, max(df, 1.0))
    return math.expm1(t * tau / math.sqrt(config.max_rounds))


def _decided(stat: RatioInterval, config: TimingConfig, resolution: float) -> bool:
    """The sequential rule (see TimingConfig.early_stop): the answer to every decision the
    metrics make from this interval is already settled, at a corrected level; or, with
    `precision="decision"`, the answer is equivalent to the baseline (_equivalent)."""
    if not config.early_stop or stat.df <= 0 or math.isinf(stat.log_se):
        return False
    if config.precision == "decision" and _equivalent(stat, config):
        return True
    if stat.half_width > config.early_stop_half_width:
        return False
    alpha = (1.0 - config.confidence) / config.max_rounds
    t = t_quantile(1.0 - alpha / 2.0, stat.df)
    low = math.exp(stat.log_mean - t * stat.log_se) / (1.0 + resolution)
    high = math.exp(stat.log_mean + t * stat.log_se) * (1.0 + resolution)
    return all(not (low <= point <= high) for point in config.decision_points)


# The equivalence test of the decision precision: two one-sided tests at this level each
# (the 90% interval inside the margin). Stopping there wrongly costs a missed reward for a
# speedup under the margin's size, never a reward paid for nothing, so it needs no
# correction for repeated looks; an interval that excludes 1.0 is judged at the corrected
# level as always.
EQUIVALENCE_ALPHA = 0.05


def _equivalent(stat: RatioInterval, config: TimingConfig) -> bool:
    """Whether the ratio lies within +-equivalence_margin of 1.0 (TOST at 5% per side)."""
    t = t_quantile(1.0 - EQUIVALENCE_ALPHA, stat.df)
    bound = math.log1p(config.equivalence_margin)
    return abs(stat.log_mean) + t * stat.log_se <= bound


def _far_from_decisions(stat: RatioInterval, config: TimingConfig) -> bool:
    """Whether the interval, widened threefold, still excludes every decision point."""
    if stat.df <= 0 or math.isinf(stat.log_se):
        return False
    spread = 3.0 * (math.log(stat.high) - stat.log_mean)
    return all(abs(math.log(p) - stat.log_mean) > spread for p in config.decision_points)


def _warmup(state: _TestState, config: TimingConfig) -> int:
    """Warm-up pairs for the test's next round (see TimingConfig.warmup_pairs)."""
    return 0 if state.slow or state.rounds else config.warmup_pairs


def _plan_slow(state: _TestState, pair_s: float | None, config: TimingConfig) -> None:
    """Size the first round of a test whose pairs are slow (see measure_candidates)."""
    if pair_s is None or pair_s <= 0:
        return
    affordable = int(config.budget_s / pair_s)
    if affordable >= 2 * (config.min_pairs + config.warmup_pairs):
        return
    state.slow = True
    state.want = max(2, min(config.min_pairs, affordable // config.rounds_needed))


def _stop(
    state: _TestState, config: TimingConfig, warnings: Sequence[TimingWarning], why: str
) -> None:
    """End a test's measurement where it stands (a budget outside the test ran out)."""
    if state.target is not None:
        config = replace(config, target_half_width=state.target)
    state.done, state.stopped = True, why
    state.speedup, _ = _summarise(state, config, warnings)


def _advance(state: _TestState, config: TimingConfig, warnings: Sequence[TimingWarning]) -> None:
    """Recompute the test's interval; decide whether it is done or how many pairs it needs.

    A test with its own target (`state.target`) is judged against that half-width instead
    of the config's."""
    if state.target is not None:
        config = replace(config, target_half_width=state.target)
    speedup, stat = _summarise(state, config, warnings)
    half_width = stat.half_width
    n_used = speedup.n
    clean = str(TimingWarning.MANY_OUTLIERS) not in speedup.warnings
    # No test ends on one sandbox's pairs (TimingConfig.min_rounds): the pilot alone, or a
    # later round alone once the pilot was left out, asks for another round.
    # The pilot round alone never settles a test either (see TimingConfig.pilot_round).
    piloting = config.pilot_round and len(state.rounds) == 1 and not state.slow
    short_of_rounds = state.rounds_used < config.rounds_needed
    enough = n_used >= config.min_pairs and clean and not short_of_rounds and not piloting
    settled = enough and half_width <= state.effective_target
    decided = enough and not settled and _decided(stat, config, state.resolution)
    n = len(state.pairs)
    # The same test as the `too_fast` warning (either side's median run under TOO_FAST_S):
    # a test warned too fast always gets the short-test allowance, and only such a test.
    if str(TimingWarning.TOO_FAST) in speedup.warnings:
        factor = config.short_test_pair_factor
        config = replace(
            config, max_pairs=factor * config.max_pairs, round_pairs=factor * config.round_pairs
        )
    # Budgets give way, up to twice over, to the round a test still needs.
    over_budget = state.spent >= (2.0 if short_of_rounds else 1.0) * config.budget_s
    reasons = [
        (settled, "target"),
        (decided, "decided"),
        (n >= config.max_pairs and not short_of_rounds, "pairs"),
        (len(state.rounds) >= config.max_rounds, "rounds"),
        (over_budget, "budget"),
    ]
    stop = next((why for hit, why in reasons if hit), "")
    if stop:
        state.done, state.stopped, state.decided = True, stop, decided
        # Summarise again so the record says why it stopped (and drops target_not_met
        # where the sequential rule settled the answer).
        state.speedup, _ = _summarise(state, config, warnings)
        return
    state.speedup = speedup
    needed = _pairs_needed(state, stat, config)
    per_pair = state.spent / max(1, sum(len(r.pairs) + len(r.warmups) for r in state.rounds))
    warmup = _warmup(state, config)
    left = config.budget_s - state.spent
    by_time = int(left / per_pair) - warmup if per_pair > 0 else config.round_pairs
    if by_time < 2:
        if not short_of_rounds:
            state.done, state.stopped = True, "budget"
            state.speedup, _ = _summarise(state, config, warnings)
            return
        by_time = 2  # the smallest round that can stand as one: the budget gives way
    state.want = max(2, min(needed, config.max_pairs - n, by_time, config.round_pairs))


def _pairs_needed(state: _TestState, stat: RatioInterval, config: TimingConfig) -> int:
    """Pairs for the next round, from the variance model of the estimate: a round of n
    pairs adds precision 1 / (s2 / n + tau^2), s2 the per-pair variance within rounds and
    tau^2 the between-sandbox variance. Enough pairs to reach the aimed standard error in
    one more round where one round can; else the n where s2 / n = tau^2, past which more
    pairs in a round buy little and further rounds are what narrows the interval."""
    parts = state.parts
    floor = config.min_pairs if len(parts) <= 1 and not state.slow else 2
    if not parts or not math.isfinite(stat.log_se) or stat.df <= 0:
        return config.min_pairs
    s2 = sum(p.log_se**2 * p.n for p in parts) / len(parts)
    tau2 = state.tau**2
    # The aimed standard error: the target half-width at the confidence; where it already
    # lies far from every decision point, the sequential rule's width; with the decision
    # precision, whichever of that and the equivalence test's needs is less.
    df = max(stat.df, 4.0)
    aim = max(config.target_half_width, state.effective_target)
    if config.early_stop and _far_from_decisions(stat, config):
        aim = max(aim, 0.6 * config.early_stop_half_width)
    aim_se = math.log1p(aim) / t_quantile(0.5 + config.confidence / 2.0, df)
    if config.precision == "decision":
        room = math.log1p(config.equivalence_margin) - abs(stat.log_mean)
        aim_se = max(aim_se, room / t_quantile(1.0 - EQUIVALENCE_ALPHA, df))
    have = 1.0 / stat.log_se**2
    more = 1.0 / aim_se**2 - have
    if more <= 0:  # precise enough already: the round is for the rounds rule
        return max(floor, config.min_pairs)
    if tau2 > 0 and more >= 1.0 / tau2:
        n = s2 / tau2
    else:
        n = s2 / (1.0 / more - tau2)
    return max(floor, math.ceil(1.2 * n))


def measure_tests(
    executor: BatchExecutor,
    names: Sequence[str],
    config: TimingConfig | None = None,
    *,
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
    targets: Sequence[float] | None = None,
) -> tuple[list[TestSpeedup], RunFailure | None, str | None]:
    """Measure several tests together: every batch runs the tests that still need pairs.

    `targets` optionally gives each test its own target half-width. Returns the speedups
    (in `names` order), and the failure that stopped the measurement with the name of its
    test (None, None when every run behaved). One candidate: `measure_candidates` with K=1."""
    (result,) = measure_candidates(
        _OneCandidate(executor), names, 1, config, warnings=warnings, clock=clock, targets=targets
    )
    return result


def measure_candidates(
    executor: CandidatesExecutor,
    names: Sequence[str],
    n_candidates: int,
    config: TimingConfig | None = None,
    *,
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
    targets: Sequence[float] | None = None,
    pair_seconds: Sequence[Sequence[float | None] | None] | None = None,
) -> list[tuple[list[TestSpeedup], RunFailure | None, str | None]]:
    """Measure several candidates of one program on several tests together.

    `pair_seconds` optionally estimates, per candidate and test, the seconds one pair
    takes (from its correctness run): a test whose runs are so slow that its budget
    affords no second round gets one round without warm-up, sized to the budget, and that
    round is its estimate; its result says it stopped on the budget.

    Every batch runs, for each candidate, the tests it still needs pairs on; the executor
    shares the baseline's runs between the candidates of a test (see CandidatesExecutor),
    so K candidates cost about (K+1)/K runs a pair instead of 2. Each candidate keeps its
    own statistics, stopping rule, budget and failure exactly as if it were measured alone:
    a candidate whose tests are done asks for nothing more, and one whose run fails is
    removed (its failure recorded) while the others go on with the next batch.

    Budget: each (candidate, test) is charged the seconds its Round reports (the executor's
    share: its own runs, its part of every shared baseline run, its part of the sandbox's
    fixed cost); waiting for the timing core and stalled rounds are counted apart, the wait
    split evenly over every (candidate, test) of the batch.

    Returns, per candidate (in order), what `measure_tests` returns for one candidate."""
    config = config or TimingConfig()
    if targets is not None and len(targets) != len(names):
        raise InputError("one target per test")
    if n_candidates < 1:
        raise InputError(f"need at least one candidate, got {n_candidates}")
    states = _initial_states(names, n_candidates, config, targets, pair_seconds)
    failures: list[tuple[RunFailure, str] | None] = [None] * n_candidates
    while active := _active(states, failures):
        start = clock()
        rounds = executor.run_candidates(
            [
                CandidateRoundRequest(c, i, states[c][i].want, _warmup(states[c][i], config))
                for c, i in active
            ]
        )
        elapsed = clock() - start
        batch = _BatchShare(elapsed, len(active), _record_failures(rounds, states, failures))
        for c, i in active:
            if failures[c] is None:
                _take_round(states[c][i], rounds.get((c, i)), batch, config, warnings)
        _enforce_candidate_budgets(states, config, warnings)
    return [
        (
            [_final(x) for x in states[c]],
            failures[c][0] if failures[c] else None,
            failures[c][1] if failures[c] else None,
        )
        for c in range(n_candidates)
    ]


def _initial_states(
    names: Sequence[str],
    n_candidates: int,
    config: TimingConfig,
    targets: Sequence[float] | None,
    pair_seconds: Sequence[Sequence[float | None] | None] | None,
) -> list[list[_TestState]]:
    """Each candidate's state on each test before the first batch (slow tests planned)."""
    states = [
        [
            _TestState(name, want=config.min_pairs, target=targets[k] if targets else None)
            for k, name in enumerate(names)
        ]
        for _ in range(n_candidates)
    ]
    for c, hints in enumerate(pair_seconds or ()):
        for st, hint in zip(states[c], hints or (), strict=False):
            _plan_slow(st, hint, config)
    return states


def _active(
    states: Sequence[Sequence[_TestState]], failures: Sequence[tuple[RunFailure, str] | None]
) -> list[CandidateTest]:
    """The (candidate, test)s the next batch runs: unfinished tests of unfailed candidates."""
    return [
        CandidateTest(c, i)
        for c in range(len(states))
        if failures[c] is None
        for i, st in enumerate(states[c])
        if not st.done
    ]


def _record_failures(
    rounds: dict[CandidateTest, Round],
    states: Sequence[Sequence[_TestState]],
    failures: list[tuple[RunFailure, str] | None],
) -> bool:
    """Record the first failure of each candidate that failed in this batch (its test's
    speedup says so); True if any did."""
    failed_now = False
    for (c, i), rnd in rounds.items():
        if rnd.failure is not None and failures[c] is None:
            st = states[c][i]
            st.speedup = TestSpeedup(
                st.name,
                MeasureMode.TIME,
                MeasureStatus.INFRA_ERROR,
                reliable=False,
                message=rnd.failure.message,
            )
            failures[c] = (rnd.failure, st.name)
            failed_now = True
    return failed_now


@dataclass(frozen=True)
class _BatchShare:
    """What a (candidate, test) of a batch needs to know of the batch as a whole."""

    elapsed: float  # seconds the whole batch took (its wait for the core included)
    active: int  # (candidate, test)s in the batch
    failed_now: bool  # some candidate failed in it


def _take_round(
    st: _TestState,
    rnd: Round | None,
    batch: _BatchShare,
    config: TimingConfig,
    warnings: Sequence[TimingWarning],
) -> None:
    """Add one (candidate, test)'s Round of a batch to its state and advance it: a round
    not run is retried (at most three times), a stalled one discarded and repeated (up to
    max_stalled_rounds), any other joins the estimate."""
    if rnd is None or not rnd.pairs:  # not run: the next batch retries it
        # A round lost because another candidate failed beside it is not the
        # test's doing (and cannot recur: that candidate is gone).
        if not batch.failed_now:
            st.retries += 1
        if st.retries > 3:
            st.done, st.stopped = True, "not_run"
        return
    # The budget counts time spent timing (the executor's share for this test);
    # waiting for the core lock and stalled rounds are counted apart.
    seconds = rnd.seconds if rnd.seconds > 0 else batch.elapsed / batch.active
    st.waited += rnd.waited_s / batch.active
    if rnd.stalled(config):
        if st.discarded < config.max_stalled_rounds:
            st.discarded += 1
            st.stalled_s += seconds
            return  # repeated by the next batch, with the same request
        st.kept_stalled += 1
    st.rounds.append(rnd)
    st.pairs += [(b, c_run, len(st.rounds) - 1) for b, c_run in rnd.pairs]
    st.spent += seconds
    _advance(st, config, warnings)


def _enforce_candidate_budgets(
    states: Sequence[Sequence[_TestState]],
    config: TimingConfig,
    warnings: Sequence[TimingWarning],
) -> None:
    """Stop the unfinished tests of every candidate whose whole budget is spent."""
    for candidate_states in states:
        if sum(st.spent for st in candidate_states) >= config.candidate_budget_s:
            for st in candidate_states:
                if not st.done and st.pairs:
                    _stop(st, config, warnings, "candidate_budget")


def _final(state: _TestState) -> TestSpeedup:
    if state.speedup is not None:
        return state.speedup
    return TestSpeedup(
        state.name,
        MeasureMode.TIME,
        MeasureStatus.INFRA_ERROR,
        reliable=False,
        message="not measured: the measurement stopped on another test",
    )


def measure_pairs(
    executor: PairExecutor,
    config: TimingConfig | None = None,
    *,
    test: str = "test",
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
) -> TimingOutcome:
    """One test: run rounds until the interval is narrow enough or the budget is spent."""
    speedups, failure, _ = measure_tests(
        _OneTest(executor), [test], config, warnings=warnings, clock=clock
    )
    return TimingOutcome(speedups[0], failure)
