"""Speedup semantics, written down once, and the records that carry them.

* Per test: speedup = baseline time / candidate time, so > 1 means the candidate is faster.
  In timed mode it is the geometric mean of paired per-run ratios (CPU time, see
  timing.py) with a confidence interval; in instruction mode it is the exact ratio of
  instruction counts; a copy of the baseline is 1.0 exactly and is not measured.
* Per program (one answer): the geometric mean of its per-test speedups, with an interval
  from the per-test intervals (stats.combine_geometric), widened to the instrument's
  resolution. Only answers that pass every test have one. Beside it, the reference
  system's statistic, the arithmetic mean of the per-test speedups (`mean_ratio`), with an
  interval of its own (stats.combine_arithmetic): each point is reported only with the
  interval of the same statistic, so a point always lies inside the interval shown with it.
* Suite aggregates are metrics over answers (metrics.py): the reference system's floored
  arithmetic/geometric means for comparability, and strict ones built from these intervals.

Nothing here runs a program; timing.py and valgrind.py produce these records.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from asmopt.measure.stats import (
    RatioInterval,
    combine_arithmetic,
    combine_geometric,
    exact_ratio,
    pooled_pair_variance,
    trimmed_interval,
    with_resolution,
)


class MeasureMode(StrEnum):
    TIME = "time"
    INSTRUCTIONS = "instructions"
    NONE = "none"


class MeasureStatus(StrEnum):
    """What became of the speedup measurement of a correct answer."""

    MEASURED = "measured"  # a ratio with an interval
    COPY = "copy"  # the answer is the baseline after canonicalisation: 1.0, not measured
    UNMEASURABLE = "unmeasurable"  # valgrind cannot execute an instruction it uses
    INFRA_ERROR = "infra_error"  # our side failed; retried when the run is resumed
    NOT_MEASURED = "not_measured"  # measurement switched off (--measure none)


# The confidence of every timing interval. A claim of "faster" (the interval above 1.0) is
# then wrong at most 1% of the time for an answer no faster than the baseline, one side of
# a 98% interval: rewards are paid on that claim, and a policy that writes many near-copies
# of the baseline would collect every false one (at 95%, 2.5% of them).
INTERVAL_CONFIDENCE = 0.98
INTERVAL_NAME = f"{INTERVAL_CONFIDENCE:.0%} interval"


class TimingWarning(StrEnum):
    """Things that may bias or weaken a timing; each says what to do about it."""

    TARGET_NOT_MET = "target_not_met"
    MANY_OUTLIERS = "many_outliers"
    TOO_FAST = "too_fast"
    HIGH_LOAD = "high_load"
    NOT_ISOLATED = "not_isolated"
    STALLED = "stalled"
    ONE_ROUND = "one_round"
    SPREAD_LIMITED = "spread_limited"

    @property
    def advice(self) -> str:
        return _ADVICE[self]


_ADVICE = {
    TimingWarning.TARGET_NOT_MET: (
        "the interval is wider than the target after the run budget was spent (it is "
        "sound, only less precise); for a narrower one raise the budget "
        "(--timing-max-pairs / --timing-budget) or reduce the load on the machine"
    ),
    TimingWarning.MANY_OUTLIERS: (
        "more than a fifth of the paired runs were outliers on one side, more than the "
        "estimate trims from it; "
        "something interfered (other processes, frequency changes, swapping): rerun on a "
        "quieter machine"
    ),
    TimingWarning.TOO_FAST: (
        "the program runs for under 2 ms, so process start-up dominates its time and real "
        "differences in the code are diluted; give it a larger input"
    ),
    TimingWarning.HIGH_LOAD: (
        "the machine was overloaded (load average above its core count) and the timing "
        "core itself was contended (timed runs waited off the core for a share of their "
        "time an idle core never shows, or rounds stalled), which is the likely cause of "
        "this unreliable or imprecise result: evaluate with fewer --jobs or on an idle "
        "machine"
    ),
    TimingWarning.SPREAD_LIMITED: (
        "this machine's sandboxes differ more for runs this short than the target allows "
        "(asmopt doctor shows the spread), so the test stopped at the narrowest interval "
        "its rounds can give; the interval is sound, only wider: give the test a larger "
        "input, or time on a machine whose sandboxes differ less"
    ),
    TimingWarning.ONE_ROUND: (
        "the measurement ended on one sandbox's pairs (a budget ran out), so what differs "
        "between sandboxes is covered only by this machine's general figure, not by the "
        "test itself: raise --timing-budget or give the test a smaller input"
    ),
    TimingWarning.STALLED: (
        "the timing core was repeatedly taken away from the timed runs (their wall time far "
        "exceeded their CPU time) and stalled rounds had to be kept: another real-time task "
        "or the hypervisor competes for that core; set ASMOPT_TIMING_CORES to another core"
    ),
    TimingWarning.NOT_ISOLATED: (
        "no core could be reserved for timing (a single-core machine or an affinity mask "
        "with one CPU), so timings share a core with everything else; use a machine with "
        "at least 2 cores or set ASMOPT_TIMING_CORES"
    ),
}


@dataclass
class TestSpeedup:
    """The speedup of one answer on one test, with the evidence behind it."""

    __test__ = False

    test: str
    mode: MeasureMode
    status: MeasureStatus
    ratio: float = 1.0
    low: float = 1.0
    high: float = 1.0
    n: int = 0
    n_outliers: int = 0
    reliable: bool = True
    warnings: list[str] = field(default_factory=list)
    message: str = ""
    base_mean: float | None = None  # seconds (time) or instructions
    cand_mean: float | None = None
    log_mean: float = 0.0
    log_se: float = 0.0
    df: float = math.inf
    raw: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def interval(self) -> RatioInterval:
        confidence = float(self.context.get("config", {}).get("confidence", INTERVAL_CONFIDENCE))
        return RatioInterval(
            self.ratio, self.low, self.high, self.n, self.log_mean, self.log_se, self.df, confidence
        )

    @property
    def pair_sd(self) -> float | None:
        """The per-pair noise as the engine's estimator sees it: within each round, the
        standard error of the trimmed mean of the used pairs' log-ratios (Yuen's, at the
        test's trim) times the square root of its pairs, pooled over rounds (so what shifts
        a whole sandbox is not counted). None where the raw runs are not kept or too few.
        A fixed design needs about (z * pair_sd / half-width)^2 pairs; a plain standard
        deviation would count the spikes the trimmed mean ignores."""
        raw = self.raw
        metric = raw.get("metric", "cpu")
        base, cand, rounds = raw.get(f"base_{metric}"), raw.get(f"cand_{metric}"), raw.get("round")
        if not base or not cand or not rounds or not len(base) == len(cand) == len(rounds):
            return None
        trim = float(self.context.get("config", {}).get("trim", 0.2))
        by_round: dict[Any, list[float]] = {}
        for b, c, r in zip(base, cand, rounds, strict=True):
            if b > 0 and c > 0:
                by_round.setdefault(r, []).append(math.log(b / c))
        parts = [trimmed_interval(logs, trim=trim) for logs in by_round.values() if len(logs) >= 2]
        s2 = pooled_pair_variance(parts)
        return None if s2 is None else math.sqrt(s2)

    def to_dict(self, raw: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "test": self.test,
            "mode": str(self.mode),
            "status": str(self.status),
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "n_outliers": self.n_outliers,
            "reliable": self.reliable,
            "warnings": list(self.warnings),
            "message": self.message,
            "base_mean": self.base_mean,
            "cand_mean": self.cand_mean,
            "context": self.context,
        }
        if raw:
            out["raw"] = self.raw
        return out

    @classmethod
    def copy_of_baseline(cls, test: str, mode: MeasureMode) -> TestSpeedup:
        return cls(test, mode, MeasureStatus.COPY, message="copy of the baseline: 1.0 by rule")


@dataclass
class ProgramSpeedup:
    """The speedup of one answer on a whole program.

    `ratio` in [`low`, `high`] is the geometric mean over its tests (our headline);
    `mean_ratio` in [`mean_low`, `mean_high`] the arithmetic mean over its tests (the
    reference system's per-answer s). Never pair one statistic's point with the other's
    interval: with unequal per-test speedups they differ, and not by noise."""

    mode: MeasureMode
    status: MeasureStatus
    ratio: float = 1.0
    low: float = 1.0
    high: float = 1.0
    reliable: bool = True
    message: str = ""
    tests: list[TestSpeedup] = field(default_factory=list)
    mean_ratio: float = 1.0
    mean_low: float = 1.0
    mean_high: float = 1.0

    @property
    def significantly_faster(self) -> bool:
        return self.status == MeasureStatus.MEASURED and self.low > 1.0

    @property
    def significantly_slower(self) -> bool:
        return self.status == MeasureStatus.MEASURED and self.high < 1.0

    @property
    def has_ratio(self) -> bool:
        """A speedup that metrics may use: measured, or a copy (1.0 by rule)."""
        return self.status in (MeasureStatus.MEASURED, MeasureStatus.COPY)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": str(self.mode),
            "status": str(self.status),
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "mean_ratio": self.mean_ratio,
            "mean_low": self.mean_low,
            "mean_high": self.mean_high,
            "reliable": self.reliable,
            "significantly_faster": self.significantly_faster,
            "significantly_slower": self.significantly_slower,
            "message": self.message,
            # Per test: its ratio and interval, pairs (`n`), rounds and why it stopped
            # (`context`), so a reader sees which test decided the program's verdict.
            "tests": [t.to_dict() for t in self.tests],
        }

    @classmethod
    def from_tests(
        cls, mode: MeasureMode, tests: list[TestSpeedup], resolution: float | None = None
    ) -> ProgramSpeedup:
        """Aggregate per-test results; any non-measured test decides the program's status.

        The program's interval is never narrower than `resolution`; None takes the mean of
        the resolutions its tests were measured with (_tests_resolution)."""
        if resolution is None:
            resolution = _tests_resolution(tests)
        if not tests:
            return cls(mode, MeasureStatus.NOT_MEASURED, message="no tests", tests=tests)
        for status in (MeasureStatus.INFRA_ERROR, MeasureStatus.UNMEASURABLE):
            bad = [t for t in tests if t.status == status]
            if bad:
                return cls(
                    mode,
                    status,
                    message=f"test {bad[0].test}: {bad[0].message}",
                    reliable=False,
                    tests=tests,
                )
        if all(t.status == MeasureStatus.COPY for t in tests):
            return cls(mode, MeasureStatus.COPY, message=tests[0].message, tests=tests)
        parts = _parts(tests)
        confidence = min((p.confidence for p in parts), default=INTERVAL_CONFIDENCE)
        combined = with_resolution(combine_geometric(parts, confidence), resolution)
        # Unreliable only where a test's interval may be unsound (summary._UNRELIABLE); a
        # test short of its target widens the program's interval, which decides or not.
        unreliable = [t.test for t in tests if not t.reliable]
        imprecise = [
            t.test for t in tests if t.reliable and str(TimingWarning.TARGET_NOT_MET) in t.warnings
        ]
        notes = [f"unreliable on {', '.join(unreliable)}"] if unreliable else []
        if imprecise:
            notes.append(f"wider than the target on {', '.join(imprecise)}")
        return cls(
            mode,
            MeasureStatus.MEASURED,
            ratio=combined.ratio,
            low=combined.low,
            high=combined.high,
            reliable=not unreliable,
            message="; ".join(notes),
            tests=tests,
        )._set_means(resolution)

    def fill_means(self) -> ProgramSpeedup:
        """Recompute the arithmetic-mean statistic from the per-test results (a stored
        answer keeps its tests, not this derived number); returns self."""
        if self.status != MeasureStatus.MEASURED or not self.tests:
            return self
        if any(t.status not in (MeasureStatus.MEASURED, MeasureStatus.COPY) for t in self.tests):
            return self
        return self._set_means(_tests_resolution(self.tests))

    def _set_means(self, resolution: float) -> ProgramSpeedup:
        """The arithmetic mean of the per-test speedups with its own interval; returns self."""
        parts = _parts(self.tests)
        confidence = min((p.confidence for p in parts), default=INTERVAL_CONFIDENCE)
        mean = with_resolution(combine_arithmetic(parts, confidence), resolution)
        self.mean_ratio, self.mean_low, self.mean_high = mean.ratio, mean.low, mean.high
        return self

    @classmethod
    def copy_of_baseline(cls, mode: MeasureMode, test_names: list[str]) -> ProgramSpeedup:
        tests = [TestSpeedup.copy_of_baseline(name, mode) for name in test_names]
        return cls(
            mode, MeasureStatus.COPY, message="copy of the baseline: 1.0 by rule", tests=tests
        )

    @classmethod
    def not_measured(cls) -> ProgramSpeedup:
        return cls(MeasureMode.NONE, MeasureStatus.NOT_MEASURED, message="--measure none")


def _tests_resolution(tests: list[TestSpeedup]) -> float:
    """The resolution of a mean over the tests: the mean of their resolutions (0 for counts
    and copies). The tests of a program share every sandbox, so what shifts one may shift
    all; even if the shifts were perfectly correlated, the shift of their mean is at most
    the mean of their sizes. The largest would make one short test's floor (2% on a
    machine whose short runs vary that much between sandboxes) the floor of every answer."""
    found = [float(t.context.get("config", {}).get("resolution", 0.0) or 0.0) for t in tests]
    return sum(found) / len(found) if found else 0.0


def _parts(tests: list[TestSpeedup]) -> list[RatioInterval]:
    """Each test's interval; a copied test is exactly 1.0."""
    return [
        exact_ratio(1.0, INTERVAL_CONFIDENCE) if t.status == MeasureStatus.COPY else t.interval
        for t in tests
    ]
