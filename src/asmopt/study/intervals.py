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
