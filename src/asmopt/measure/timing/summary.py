"""A test's estimate and summary: from the pairs its rounds collected to its TestSpeedup.

Which pairs the estimate rests on (the pilot round left out where it disagrees with the
later rounds), their interval (trimmed means per round, combined by random effects with
this machine's between-sandbox spread), the warnings on it, whether the timing core was
contended, and the stored record of every used run. The engine (engine.py) calls
`_summarise` after every round and reads what it leaves in the test's state (state.py).
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

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
from asmopt.measure.timing.rounds import Round, RunTiming
from asmopt.measure.timing.spread import DEFAULT_SPREAD, SandboxSpread
from asmopt.measure.timing.state import _Pair, _TestState

TOO_FAST_S = 0.002  # below this, process start-up dominates a run

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


def _spread_limit(config: TimingConfig, tau: float, df: float) -> float:
    """The narrowest half-width `max_rounds` sandboxes can give when sandboxes differ by
    `tau` (however many pairs each holds)."""
    if tau <= 0:
        return 0.0
    t = t_quantile(0.5 + config.confidence / 2.0, max(df, 1.0))
    return math.expm1(t * tau / math.sqrt(config.max_rounds))

