"""Statistics of the held-out table: intervals that resample kernel templates, and Holm.

The test split holds two instances of each of eight kernel templates. Two instances of one
template share their loop shape, so their answers are not independent draws: an interval
that resamples programs treats 16 correlated numbers as 16 independent ones and is too
narrow. Every interval here resamples templates (with replacement) and keeps all of a
drawn template's programs; a comparison's p-value comes from the same bootstrap, and the
family of comparisons a report makes is corrected with Holm's step-down procedure.

With eight templates the bootstrap is coarse (a statistic takes few distinct values) and,
as every cluster bootstrap with few clusters, somewhat optimistic; reports say so.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from asmopt.measure.stats import holm_adjusted

DRAWS = 10000
LEVEL = 0.95


def held_out_speedup(answer: Mapping[str, Any]) -> float:
    """An answer's contribution: its measured speedup when it passes, else 1.0 (the -O3
    baseline is kept, as in the reference evaluation)."""
    if answer["verdict"] == "pass" and answer["speedup"]:
        return float(answer["speedup"])
    return 1.0


def template_groups(
    values: Mapping[str, float], template_of: Mapping[str, str]
) -> list[list[float]]:
    """`values` (one number per program) grouped by the program's template, in a fixed
    order (sorted template names), so a seeded bootstrap is reproducible."""
    groups: dict[str, list[float]] = {}
    for program in sorted(values):
        groups.setdefault(template_of[program], []).append(values[program])
    return [groups[t] for t in sorted(groups)]


def mean_of(groups: list[list[float]]) -> float:
    """Mean over every program of the groups (each program counts once)."""
    flat = [v for g in groups for v in g]
    return sum(flat) / len(flat)


def template_bootstrap(groups: list[list[float]], seed: int, draws: int = DRAWS) -> list[float]:
    """Sorted bootstrap distribution of the program mean, resampling whole templates."""
    rng = random.Random(seed)
    return sorted(mean_of([rng.choice(groups) for _ in groups]) for _ in range(draws))


def percentile_interval(boots: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The central `level` percentile interval of a sorted bootstrap distribution."""
    tail = (1.0 - level) / 2
    n = len(boots)
    return boots[int(tail * n)], boots[int((1.0 - tail) * n) - 1]


def bootstrap_p(boots: list[float]) -> float:
    """Two-sided bootstrap p-value of "the mean is 0": twice the smaller share of draws on
    either side of 0 (inverting the percentile interval), at least 1/draws."""
    n = len(boots)
    below = sum(b <= 0.0 for b in boots) / n
    above = sum(b >= 0.0 for b in boots) / n
    return min(1.0, max(2.0 * min(below, above), 1.0 / n))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values, same order as given (`stats.holm_adjusted`, the
    library's one implementation): a comparison holds at level a when its adjusted p is
    below a, with the family-wise error rate at most a whatever the dependence."""
    return holm_adjusted(pvalues)


def summary(
    values: Mapping[str, float], template_of: Mapping[str, str], seed: int
) -> dict[str, float]:
    """Point estimate (mean over programs), 95% template-bootstrap interval and p-value."""
    groups = template_groups(values, template_of)
    boots = template_bootstrap(groups, seed)
    low, high = percentile_interval(boots)
    return {
        "mean": mean_of(groups),
        "low": low,
        "high": high,
        "p": bootstrap_p(boots),
        "templates": len(groups),
        "programs": len(values),
    }
