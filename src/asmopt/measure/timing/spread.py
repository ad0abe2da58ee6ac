"""How much one sandbox differs from the next on this machine: the between-sandbox spread,
its model and its estimate.

Pairing inside a sandbox cancels drift, but not what is fixed for the sandbox's lifetime:
where the fresh binary copies land in physical memory, the environment padding that moves
the stack, the state a sandbox start leaves in the caches. Such an effect shifts every
pair of a round alike, so the pairs of one round say nothing about it; only several
rounds do, and two rounds say little (one degree of freedom). The engine therefore pools
what a test's own rounds show with what this machine shows in general: the standard
deviation `tau` of the per-sandbox mean log-ratio of two identical binaries, estimated
here from A/A rounds (`spread_from_rounds`); measuring it on the machine and keeping it is
`calibration`'s job.

The same figure sets the engine's resolution: an interval is never narrower than one
between-sandbox standard deviation, the size of difference this machine cannot tell from
where a binary happened to land.

Short runs vary more between sandboxes than long ones (start-up and page-fault work is a
larger share of them), so the spread is a function of the run length, interpolated on a
log scale between the measured lengths and held constant beyond them.
"""

from __future__ import annotations

import itertools
import logging
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from asmopt.errors import InputError
from asmopt.measure.stats import (
    RatioInterval,
    between_variance_upper,
    chi2_quantile,
    trimmed_interval,
)
from asmopt.measure.timing.requests import RoundRequest

log = logging.getLogger(__name__)

# Rounds (sandboxes) and timed pairs per round of the calibration: 24 rounds give tau on
# 23 degrees of freedom, a prior that a test's own few rounds refine but cannot overturn.
CALIBRATION_ROUNDS = 24
CALIBRATION_PAIRS = 10
# The spread kept is an upper confidence bound of the measured one, at this level: a
# calibration that came out low by chance would let every later test claim more than the
# machine can resolve (on a mock with a 1% sandbox effect, a calibration that read 0.66%
# let 6% of A/A tests read "faster"), while one that came out high only costs pairs.
UPPER_BOUND_LEVEL = 0.95


@dataclass(frozen=True)
class SandboxSpread:
    """The between-sandbox standard deviation of an A/A log-ratio, by run length.

    `points` are (run seconds, tau) in increasing run length; `df` the degrees of freedom
    of each tau (rounds - 1 of the calibration); `source` says where it came from."""

    points: tuple[tuple[float, float], ...]
    df: float
    source: str

    def __post_init__(self) -> None:
        if not self.points:
            raise InputError("a spread needs at least one point")
        if any(not (s > 0 and t >= 0 and math.isfinite(t)) for s, t in self.points):
            raise InputError(f"spread points must be (positive seconds, tau >= 0): {self.points}")
        if list(self.points) != sorted(self.points):
            raise InputError("spread points must be in increasing run length")
        if self.df < 0:
            raise InputError("df must be non-negative")

    def tau(self, run_s: float) -> float:
        """The spread for runs of `run_s` seconds (log-linear between measured lengths)."""
        pts = self.points
        if run_s <= pts[0][0] or len(pts) == 1:
            return pts[0][1]
        if run_s >= pts[-1][0]:
            return pts[-1][1]
        for (s0, t0), (s1, t1) in itertools.pairwise(pts):
            if run_s == s1:  # t0 + (t1 - t0) need not be t1 to the last bit
                return t1
            if s0 <= run_s < s1:
                f = math.log(run_s / s0) / math.log(s1 / s0)
                return t0 + f * (t1 - t0)
        return pts[-1][1]  # unreachable: the points are sorted

    def to_dict(self) -> dict[str, Any]:
        return {"points": [list(p) for p in self.points], "df": self.df, "source": self.source}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxSpread:
        return cls(
            tuple((float(s), float(t)) for s, t in data["points"]),
            float(data["df"]),
            str(data["source"]),
        )

    @classmethod
    def worst_of(cls, spreads: Sequence[SandboxSpread], source: str) -> SandboxSpread:
        """One spread for several timing cores: the largest tau at each length, so a test
        that may land on any of them is never given less allowance than its core needs."""
        lengths = sorted({s for sp in spreads for s, _ in sp.points})
        points = [(s, max(sp.tau(s) for sp in spreads)) for s in lengths]
        return cls(_never_falling_as_runs_shorten(points), min(sp.df for sp in spreads), source)


# Where nothing was measured (a mock executor, calibration impossible): figures at the high
# end of what A/A checks found on shared 2-core machines (per test, DerSimonian-Laird:
# under 2 ms p75 1.4%, heavier tests p75 0.6%), on few degrees of freedom so a test's own
# rounds soon outweigh them.
DEFAULT_SPREAD = SandboxSpread(
    ((0.001, 0.015), (0.005, 0.0075), (0.05, 0.005)),
    df=4.0,
    source="default (not measured on this machine)",
)


# ---------------------------------------------------------------------------- estimation
def spread_from_rounds(
    rounds_by_length: dict[float, Sequence[Sequence[float]]], source: str
) -> SandboxSpread:
    """tau per run length from A/A rounds: for each length, the log-ratios of each round
    (one sandbox); each round's 20% trimmed mean and its standard error, then the
    UPPER_BOUND_LEVEL upper confidence bound of the between-round variance (stats.
    between_variance_upper, the Q-profile), never below the detection floor
    (_detection_floor). The df is the fewest rounds less one."""
    points = []
    rounds_used = []
    for run_s in sorted(rounds_by_length):
        parts = [trimmed_interval(r) for r in rounds_by_length[run_s] if len(r) >= 2]
        if len(parts) < 2:
            raise InputError(f"need at least two rounds of two pairs at {run_s:.4g} s")
        upper = between_variance_upper(parts, UPPER_BOUND_LEVEL)
        points.append((run_s, math.sqrt(max(upper, _detection_floor(parts)))))
        rounds_used.append(len(parts))
    return SandboxSpread(
        _never_falling_as_runs_shorten(points), float(min(rounds_used) - 1), source
    )


def _never_falling_as_runs_shorten(
    points: Sequence[tuple[float, float]],
) -> tuple[tuple[float, float], ...]:
    """tau must not fall as runs get shorter (a noisy estimate can, and so can the last bit
    of an interpolation between two cores' points): shorter runs share every source of
    sandbox variation that longer ones have. Points in increasing run length."""
    fixed: list[tuple[float, float]] = []
    for s, t in reversed(points):
        fixed.append((s, max(t, fixed[-1][1]) if fixed else t))
    return tuple(reversed(fixed))


def _detection_floor(parts: Sequence[RatioInterval]) -> float:
    """The smallest upper bound of tau^2 a calibration of these rounds may keep: the bound
    it gives when its rounds differ exactly as much as their own errors predict (Q = R - 1,
    its expected value with no spread at all), v (R - 1) / chi2(1 - level, R - 1) - v with
    v the rounds' median variance. A spread that small is one these rounds cannot tell
    from none; rounds that by chance agree better than their errors say (Q below its lower
    quantile, a profile bound of 0) say nothing smaller about the machine."""
    df = len(parts) - 1
    v = statistics.median(p.log_se**2 for p in parts)
    return v * max(0.0, df / chi2_quantile(1.0 - UPPER_BOUND_LEVEL, df) - 1.0)


def calibration_rounds(
    run_batch: Callable[[Sequence[RoundRequest]], dict[int, Any]],
    lengths: int,
    metric: str = "cpu",
    rounds: int = CALIBRATION_ROUNDS,
    pairs: int = CALIBRATION_PAIRS,
) -> dict[float, list[list[float]]]:
    """Each test's log-ratios by round, keyed by its median baseline run length (see
    calibration_rounds_by_test)."""
    return dict(calibration_rounds_by_test(run_batch, lengths, metric, rounds, pairs))


def calibration_rounds_by_test(
    run_batch: Callable[[Sequence[RoundRequest]], dict[int, Any]],
    lengths: int,
    metric: str = "cpu",
    rounds: int = CALIBRATION_ROUNDS,
    pairs: int = CALIBRATION_PAIRS,
) -> list[tuple[float, list[list[float]]]]:
    """Run `rounds` A/A batches of `lengths` tests through a BatchExecutor's `run_batch`
    (one sandbox each, one warm-up pair per test) and return, test by test, its median
    baseline run length and its log-ratios by round."""
    logs: list[list[list[float]]] = [[] for _ in range(lengths)]
    base: list[list[float]] = [[] for _ in range(lengths)]
    for _ in range(rounds):
        out = run_batch([RoundRequest(i, pairs, 1) for i in range(lengths)])
        for i in range(lengths):
            rnd = out.get(i)
            if rnd is None or rnd.failure is not None or not rnd.pairs:
                why = rnd.failure.message if rnd is not None and rnd.failure else "no pairs"
                raise RuntimeError(f"calibration round failed: {why}")
            logs[i].append([math.log(b.value(metric) / c.value(metric)) for b, c in rnd.pairs])
            base[i] += [b.value(metric) for b, _ in rnd.pairs]
    return [(sorted(base[i])[len(base[i]) // 2], logs[i]) for i in range(lengths)]
