"""When an answer is settled: the sequential rules that end a measurement before its target.

Per test (`decided`): its interval, at a level corrected for repeated looks, lies wholly on
one side of every decision point, or (decision precision) inside the equivalence margin.
Per program (`program_decided`, decision precision only): the same question asked of the
program's statistics (the geometric and the arithmetic mean of its tests' ratios, as
measure/speedup.py combines them), since a reward or a strict metric reads those and not
each test. A program whose heavy tests are clearly faster is settled although one noisy
1 ms test is not; its unfinished tests stop where they are, their intervals wide but sound.

The engine (engine.py) asks these after every round; they read a test's state and its
current summary and never run anything. It also plans with the program's question
(`program_aims`): how precise each unfinished test must still become for the program to
settle, shared out so that cheap tests take the pairs and heavy tests few.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from asmopt.measure.speedup import MeasureStatus, TimingWarning
from asmopt.measure.stats import (
    RatioInterval,
    combine_arithmetic,
    combine_geometric,
    t_quantile,
)
from asmopt.measure.timing.config import TimingConfig
from asmopt.measure.timing.state import _TestState

# The equivalence test of the decision precision: two one-sided tests at this level each
# (the 90% interval inside the margin). Stopping there wrongly costs a missed reward for a
# speedup under the margin's size, never a reward paid for nothing, so it needs no
# correction for repeated looks; an interval that excludes 1.0 is judged at the corrected
# level as always.
EQUIVALENCE_ALPHA = 0.05


def corrected_confidence(config: TimingConfig) -> float:
    """The level a sequential stop is judged at: the error rate spread over `max_rounds`
    looks (Bonferroni), so looking after every round keeps the stated confidence."""
    return 1.0 - (1.0 - config.confidence) / config.max_rounds


def decided(stat: RatioInterval, config: TimingConfig, resolution: float) -> bool:
    """The sequential rule (see TimingConfig.early_stop): the answer to every decision the
    metrics make from this interval is already settled, at a corrected level; or, with
    `precision="decision"`, the answer is equivalent to the baseline (`equivalent`)."""
    if not config.early_stop or stat.df <= 0 or math.isinf(stat.log_se):
        return False
    if config.precision == "decision" and equivalent(stat, config):
        return True
    if stat.half_width > config.early_stop_half_width:
        return False
    t = t_quantile(0.5 + corrected_confidence(config) / 2.0, stat.df)
    low = math.exp(stat.log_mean - t * stat.log_se)
    high = math.exp(stat.log_mean + t * stat.log_se)
    return _clear_of_decision_points(low, high, config, resolution)


def _clear_of_decision_points(
    low: float, high: float, config: TimingConfig, resolution: float
) -> bool:
    """Whether [low, high], widened by the resolution on each side, holds no decision point."""
    low, high = low / (1.0 + resolution), high * (1.0 + resolution)
    return all(not (low <= point <= high) for point in config.decision_points)


def equivalent(stat: RatioInterval, config: TimingConfig) -> bool:
    """Whether the ratio lies within +-equivalence_margin of 1.0 (TOST at 5% per side)."""
    t = t_quantile(1.0 - EQUIVALENCE_ALPHA, stat.df)
    bound = math.log1p(config.equivalence_margin)
    return abs(stat.log_mean) + t * stat.log_se <= bound


def far_from_decisions(stat: RatioInterval, config: TimingConfig) -> bool:
    """Whether the interval, widened threefold, still excludes every decision point."""
    if stat.df <= 0 or math.isinf(stat.log_se):
        return False
    spread = 3.0 * (math.log(stat.high) - stat.log_mean)
    return all(abs(math.log(p) - stat.log_mean) > spread for p in config.decision_points)


# The program's two statistics (measure/speedup.ProgramSpeedup): the geometric mean of the
# tests' ratios (the headline, `check`) and the arithmetic mean (the reward's).
_PROGRAM_STATISTICS: tuple[Callable[[Sequence[RatioInterval], float], RatioInterval], ...] = (
    combine_geometric,
    combine_arithmetic,
)


def program_decided(states: Sequence[_TestState], config: TimingConfig) -> bool:
    """Whether one answer's program-level verdict is settled by what its tests hold so far
    (see TimingConfig.program_stop): under the decision precision, every test has a sound
    interval resting on enough rounds, and for both program statistics either the interval
    at the corrected level, widened by the tests' mean resolution, holds no decision point
    and is within `early_stop_half_width`, or the TOST interval lies inside the
    equivalence margin. A test that may be unsound (too many outliers on one side, not
    measured) keeps the program open."""
    if not (config.program_stop and config.early_stop and config.precision == "decision"):
        return False
    parts: list[RatioInterval] = []
    for st in states:
        sp = st.speedup
        if sp is None or sp.status != MeasureStatus.MEASURED or not sp.reliable:
            return False
        if str(TimingWarning.MANY_OUTLIERS) in sp.warnings:
            return False
        if not st.done and not st.slow and st.rounds_used < config.rounds_needed:
            return False
        part = sp.interval
        if part.df <= 0 or math.isinf(part.log_se):
            return False
        parts.append(part)
    if not parts:
        return False
    resolution = sum(st.resolution for st in states) / len(states)
    return all(
        _program_settled_by(combine, parts, config, resolution)
        for combine in _PROGRAM_STATISTICS
    )


def _program_settled_by(
    combine: Callable[[Sequence[RatioInterval], float], RatioInterval],
    parts: Sequence[RatioInterval],
    config: TimingConfig,
    resolution: float,
) -> bool:
    """One program statistic: clear of every decision point, or equivalent to 1.0."""
    tost = combine(parts, 1.0 - 2.0 * EQUIVALENCE_ALPHA)
    margin = 1.0 + config.equivalence_margin
    if tost.low >= 1.0 / margin and tost.high <= margin:
        return True
    corrected = combine(parts, corrected_confidence(config))
    if corrected.half_width > config.early_stop_half_width:
        return False
    return _clear_of_decision_points(corrected.low, corrected.high, config, resolution)


def program_aims(states: Sequence[_TestState], config: TimingConfig) -> list[float] | None:
    """The standard error of each test's log ratio that would settle its program's verdict
    at the least timing cost (see TimingConfig.program_stop); 0.0 for finished tests. None
    where the program cannot be planned from what is measured: a test without an interval
    of two pairs, or a statistic so close to a decision point that no precision settles it.

    A program statistic S has variance sum_i w_i^2 se_i^2 (geometric mean: w_i = 1/T on the
    log scale; arithmetic mean: w_i = r_i / (T mean), relative). It settles at the standard
    error A (`_settling_se`). Test i, with per-pair standard deviation s_i and c_i seconds
    a pair, takes n_i pairs; the least sum c_i n_i with sum w_i^2 s_i^2 / n_i <= A^2 has
    n_i proportional to w_i s_i / sqrt(c_i), that is se_i^2 = A^2 s_i sqrt(c_i) / (w_i
    sum_j w_j s_j sqrt(c_j)), the finished tests' share taken from A^2 first. Each test
    takes the smaller of its aims under the two statistics."""
    if not states or not (
        config.program_stop and config.early_stop and config.precision == "decision"
    ):
        return None
    stats = [st.stat for st in states]
    if any(s is None or s.n < 2 or s.df <= 0 or not math.isfinite(s.log_se) for s in stats):
        return None
    known = [s for s in stats if s is not None]
    count = len(known)
    ratios = [math.exp(s.log_mean) for s in known]
    mean_ratio = sum(ratios) / count
    per_pair = [s.log_se * math.sqrt(s.n) for s in known]
    cost = [st.used_pair_seconds for st in states]
    df = max(4.0, combine_geometric(known).df)
    resolution = sum(st.resolution for st in states) / count
    statistics = (
        (sum(s.log_mean for s in known) / count, [1.0 / count] * count),
        (math.log(mean_ratio), [r / (count * mean_ratio) for r in ratios]),
    )
    aims = [math.inf] * count
    for centre, weights in statistics:
        settle = _settling_se(centre, df, config, resolution)
        left = settle**2 - sum(
            (w * s.log_se) ** 2 for w, s, st in zip(weights, known, states, strict=True) if st.done
        )
        open_tests = [i for i, st in enumerate(states) if not st.done]
        total = sum(weights[i] * per_pair[i] * math.sqrt(cost[i]) for i in open_tests)
        if settle <= 0 or left <= 0 or total <= 0:
            return None
        for i in open_tests:
            share = per_pair[i] * math.sqrt(cost[i]) / (weights[i] * total)
            aims[i] = min(aims[i], math.sqrt(left * share))
    return [0.0 if st.done else aims[i] for i, st in enumerate(states)]


def _settling_se(centre: float, df: float, config: TimingConfig, resolution: float) -> float:
    """The standard error at which a program statistic centred at `centre` (log scale)
    settles as `_program_settled_by` asks: equivalent to 1.0, or clear of the nearest
    decision point at the corrected level within `early_stop_half_width`, whichever asks
    less; aimed a fifth short, since the centre itself moves as pairs come."""
    equivalent_at = (math.log1p(config.equivalence_margin) - abs(centre)) / t_quantile(
        1.0 - EQUIVALENCE_ALPHA, df
    )
    nearest = min(abs(math.log(p) - centre) for p in config.decision_points)
    clear = min(nearest - math.log1p(resolution), math.log1p(config.early_stop_half_width))
    clear_at = clear / t_quantile(0.5 + corrected_confidence(config) / 2.0, df)
    return 0.8 * max(equivalent_at, clear_at)
