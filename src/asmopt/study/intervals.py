"""The two intervals the loop-count study states: over windows (normal) and over seeds (t).

Both come from differences taken in pairs (the same windows, or the same seed), so that
what two models share does not widen the interval.
"""

from __future__ import annotations

import math
from typing import Any

from asmopt.measure import stats

Z95 = 1.959964


def t_quantile(df: int) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return stats.t_quantile(0.975, df)


def t_interval(values: list[float]) -> dict[str, Any]:
    """Mean of a few values (one per seed) with its 95% t-interval and min / max.

    Seeds are few, so the normal interval used over windows would be far too narrow: with
    3 seeds the t quantile is 4.30, not 1.96. n < 2 gives no interval; `significant` is True
    when the interval excludes 0 (used for differences)."""
    n = len(values)
    out: dict[str, Any] = {"values": list(values), "n": n, "mean": None, "min": None}
    out.update(max=None, low=None, high=None, significant=False)
    if n == 0:
        return out
    mean = sum(values) / n
    out.update(mean=mean, min=min(values), max=max(values))
    if n >= 2:
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
        half = t_quantile(n - 1) * sd / math.sqrt(n)
        out.update(low=mean - half, high=mean + half)
        out["significant"] = out["low"] > 0 or out["high"] < 0
    return out


def paired_difference(a: list[float | None], b: list[float | None]) -> dict[str, Any]:
    """Mean of b - a over the windows where both are known, with a normal 95% interval.

    `significant` is True when the interval excludes 0. n < 2 gives no interval."""
    diffs = [y - x for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n = len(diffs)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0, "significant": False}
    mean = sum(diffs) / n
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": n, "significant": False}
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    half = Z95 * math.sqrt(var / n)
    low, high = mean - half, mean + half
    return {"mean": mean, "low": low, "high": high, "n": n, "significant": low > 0 or high < 0}


def t_test_p(values: list[float]) -> float | None:
    """Two-sided p-value of the one-sample t-test of mean 0 (paired differences, one per
    seed), the test whose 95% interval `t_interval` shows: p < 0.05 exactly when that
    interval excludes 0. None with fewer than two values; differences that do not vary
    give 0 (all equal and non-zero) or 1 (all zero)."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    t = abs(mean) / (sd / math.sqrt(n))
    return min(1.0, 2.0 * (1.0 - stats.t_cdf(t, n - 1)))


def normal_p(d: dict[str, Any]) -> float | None:
    """Two-sided p-value of mean 0 behind a normal 95% interval (`paired_difference`):
    the standard error is recovered from the interval's half-width, so the p-value can be
    derived from a study.json written before p-values were recorded. None without an
    interval."""
    mean, low, high = d.get("mean"), d.get("low"), d.get("high")
    if mean is None or low is None or high is None:
        return None
    se = (high - low) / (2.0 * Z95)
    if se <= 0.0:
        return 1.0 if mean == 0.0 else 0.0
    return math.erfc(abs(mean) / se / math.sqrt(2.0))


def holm(p_values: list[float | None], alpha: float = 0.05) -> list[dict[str, Any]]:
    """Holm's step-down correction over one family of tests, in the order given.

    Each test gets `p_holm`, its Holm-adjusted p-value (the smallest family-wise level at
    which Holm's procedure rejects it: sorted ascending, the i-th of m p-values is scaled
    by m - i + 1, then made non-decreasing and capped at 1), and `reject`, whether
    `p_holm <= alpha`. Holm controls the family-wise error rate at `alpha` under any
    dependence between the tests, which pairwise comparisons sharing models have. A test
    without a p-value (None: too few values) counts in the family and is never rejected."""
    adjusted = stats.holm_adjusted([1.0 if p is None else p for p in p_values])
    return [
        {"p": p, "p_holm": None if p is None else adj, "reject": p is not None and adj <= alpha}
        for p, adj in zip(p_values, adjusted, strict=True)
    ]
