"""The statistics the loop-count study states: two intervals, Holm, and a trend test.

The intervals are over windows (normal) and over seeds (t); both come from differences
taken in pairs (the same windows, or the same seed), so that what two models share does
not widen the interval. Pairwise tests over few seeds, corrected for the number of pairs,
can miss an order that every seed shows; Page's L test (`page_l`) asks the one question of
an ordered alternative (loss rises with R) instead, with one p-value and no correction.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from asmopt.measure import stats

Z95 = 1.959964
# Page's L is computed exactly by enumerating every block's rank permutations up to this
# many treatments (8! = 40,320 per block); above it, from its normal approximation.
PAGE_EXACT_MAX_K = 8


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


def _ranks(block: Sequence[float]) -> list[float]:
    """Ranks within one block, 1 = smallest, ties sharing their mean rank."""
    order = sorted(range(len(block)), key=lambda i: block[i])
    ranks = [0.0] * len(block)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and block[order[j + 1]] == block[order[i]]:
            j += 1
        for m in range(i, j + 1):
            ranks[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _page_null(blocks_ranks: list[list[float]]) -> dict[int, int]:
    """Exact null distribution of 2L (an integer: ranks are halves at worst) as counts:
    each block's ranks permuted uniformly and independently, convolved over blocks."""
    total: dict[int, int] = {0: 1}
    for ranks in blocks_ranks:
        one: dict[int, int] = {}
        for perm in itertools.permutations(ranks):
            key = round(2 * sum((j + 1) * r for j, r in enumerate(perm)))
            one[key] = one.get(key, 0) + 1
        merged: dict[int, int] = {}
        for a, na in total.items():
            for b, nb in one.items():
                merged[a + b] = merged.get(a + b, 0) + na * nb
        total = merged
    return total


def page_l(blocks: Sequence[Sequence[float]], exact: bool | None = None) -> dict[str, Any]:
    """Page's L test of an ordered alternative: in every block (here a seed) the values of
    k ordered treatments (here R = 1..k) tend to rise with the treatment's position.

    Values are ranked within each block (1 = smallest, ties sharing their mean rank);
    L = sum over positions j of j times the rank sum of position j, largest when every
    block rises. Under the null each block's ranks are a random permutation. `p`: one-sided,
    P(L >= observed), the test of a rising order; `p_lower`: P(L <= observed), of a falling
    one; `p_two`: two-sided (twice the smaller tail, at most 1), the one to state when the
    direction was not fixed before the data were seen. Exact by enumeration (`method`
    "exact", the default for k <= `PAGE_EXACT_MAX_K`) or from the normal approximation
    (mean n k (k+1)^2 / 4, variance n k^2 (k+1) (k^2-1) / 144)."""
    if not blocks or len({len(b) for b in blocks}) != 1 or len(blocks[0]) < 2:
        raise ValueError("Page's L needs blocks of the same number (>= 2) of treatments")
    n, k = len(blocks), len(blocks[0])
    ranks = [_ranks(b) for b in blocks]
    stat = sum((j + 1) * sum(r[j] for r in ranks) for j in range(k))
    mean = n * k * (k + 1) ** 2 / 4
    var = n * k**2 * (k + 1) * (k**2 - 1) / 144
    z = (stat - mean) / math.sqrt(var)
    out: dict[str, Any] = {"L": stat, "n": n, "k": k, "mean": mean, "var": var, "z": z}
    out["p_normal"] = 0.5 * math.erfc(z / math.sqrt(2.0))
    if not (k <= PAGE_EXACT_MAX_K if exact is None else exact):
        upper, lower, method = out["p_normal"], 0.5 * math.erfc(-z / math.sqrt(2.0)), "normal"
    else:
        counts = _page_null(ranks)
        total, key = sum(counts.values()), round(2 * stat)
        upper = sum(c for v, c in counts.items() if v >= key) / total
        lower = sum(c for v, c in counts.items() if v <= key) / total
        method = "exact"
    out.update(p=upper, p_lower=lower, p_two=min(1.0, 2.0 * min(upper, lower)))
    out["method"] = "exact" if method == "exact" else "normal approximation"
    return out
