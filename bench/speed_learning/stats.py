"""Statistics of the learning runs, valid with few clusters: the kernel template is the unit.

The test split holds two programs of each of eight kernel templates, and every model row
is sampled several times per program and, for PPO, trained with several seeds. Programs of
one template share their loop shape and answers of one program share the program, so the
independent units are the eight templates, not the 16 programs or the 64 answers. Every
number here is therefore computed from one value per template: a row's value for a
template is the mean over its programs (each program the mean over its answers), seeds of
one arm are averaged per template before anything is compared, and a comparison is the
per-template difference of two rows.

A bootstrap that resamples eight templates is too lenient (under the null it rejects about
twice as often as its nominal level), so a comparison is tested here by
- the exact sign-flip (randomisation) test: under the null that each template's difference
  is symmetric about 0, all 2^k sign patterns of the k differences are equally likely; the
  two-sided p-value is the share of patterns whose |mean| is at least the observed one.
  With k = 8 its smallest value is 2/256 = 1/128, so a family of m comparisons can pass
  Holm only if its smallest p is at most 0.05 / m (three comparisons: at most 4/256);
- the paired t-test over templates beside it (t on k - 1 degrees of freedom), whose 95%
  interval of the mean difference is the interval every report prints;
- Holm's step-down correction over a small family of comparisons (at most `MAX_FAMILY`)
  that a report names before its numbers; the sign-flip p is the one the verdict rests on.

Page's L test of an ordered alternative (`page_l`, the loop-count study's trend test over
R) lives with the study's statistics, `asmopt.study.intervals`, and is named here too.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from asmopt.measure.stats import holm_adjusted, t_cdf, t_quantile
from asmopt.study.intervals import page_l

__all__ = [
    "ALPHA",
    "LEVEL",
    "MAX_FAMILY",
    "compare",
    "differences",
    "family",
    "held_out_speedup",
    "holm",
    "page_l",
    "seed_average",
    "sign_flip_p",
    "t_summary",
    "template_means",
]

LEVEL = 0.95
ALPHA = 0.05
# The largest family a report names. With eight templates the smallest sign-flip p is
# 2/256, so Holm's first step over m comparisons needs m x 2/256 <= 0.05 (m <= 6), and over
# 16 comparisons nothing can ever hold; with three, a comparison that one template goes
# against (p 4/256) can still hold (3 x 4/256 = 0.047).
MAX_FAMILY = 3
# Two means closer than this (relative) count as equal in the sign-flip test's ">=".
_TIE = 1e-12


def held_out_speedup(answer: Mapping[str, Any]) -> float:
    """An answer's contribution: its measured speedup when it passes, else 1.0 (the -O3
    baseline is kept, as in the reference evaluation)."""
    if answer["verdict"] == "pass" and answer["speedup"]:
        return float(answer["speedup"])
    return 1.0


def template_means(values: Mapping[str, float], template_of: Mapping[str, str]) -> dict[str, float]:
    """One value per template: the mean of its programs' values (sorted by template, so a
    table reads in a fixed order). Programs, not answers, are averaged: a template's value
    does not depend on how many answers each program had."""
    groups: dict[str, list[float]] = {}
    for program in sorted(values):
        groups.setdefault(template_of[program], []).append(values[program])
    return {t: sum(groups[t]) / len(groups[t]) for t in sorted(groups)}


def seed_average(per_seed: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per-template values of one arm averaged over its seeds (templates every seed has):
    the seeds of an arm are repeated runs of one procedure, not independent units, so they
    are averaged before the templates are compared."""
    if not per_seed:
        raise ValueError("no seed to average")
    common = sorted(set.intersection(*(set(s) for s in per_seed)))
    return {t: sum(s[t] for s in per_seed) / len(per_seed) for t in common}


def differences(after: Mapping[str, float], before: Mapping[str, float]) -> list[float]:
    """`after - before` per template both have, in template order: the paired values the
    tests read."""
    return [after[t] - before[t] for t in sorted(set(after) & set(before))]


def sign_flip_p(diffs: Sequence[float]) -> float:
    """Exact two-sided sign-flip p-value of "the differences are symmetric about 0": the
    share of all 2^k sign patterns whose |sum| is at least the observed |sum| (the observed
    pattern included, so p >= 2 / 2^k unless some differences are 0). Enumerated, so k is
    kept small (templates: 8)."""
    k = len(diffs)
    if k == 0:
        return 1.0
    if k > 20:
        raise ValueError(f"{k} differences: the exact enumeration is meant for a few clusters")
    observed = abs(sum(diffs))
    tolerance = _TIE * max(1.0, sum(abs(d) for d in diffs))
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) >= observed - tolerance
        for signs in itertools.product((1.0, -1.0), repeat=k)
    )
    return hits / 2**k


def t_summary(values: Sequence[float], level: float = LEVEL) -> dict[str, Any]:
    """Mean of per-template values with its `level` t-interval over templates (k - 1
    degrees of freedom), the one-sample t statistic of mean 0 and its two-sided p. With one
    value there is no interval (None); values that do not vary give a zero-width interval
    and p 0 (mean not 0) or 1."""
    k = len(values)
    if k == 0:
        raise ValueError("no template values")
    mean = sum(values) / k
    out: dict[str, Any] = {"mean": mean, "k": k, "df": k - 1, "low": None, "high": None}
    out.update(t=None, p_t=None)
    if k < 2:
        return out
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (k - 1))
    se = sd / math.sqrt(k)
    half = t_quantile(0.5 + level / 2, k - 1) * se
    out.update(low=mean - half, high=mean + half)
    if se == 0.0:
        out.update(p_t=1.0 if mean == 0.0 else 0.0)
        return out
    t = mean / se
    out.update(t=t, p_t=min(1.0, 2.0 * (1.0 - t_cdf(abs(t), k - 1))))
    return out


def compare(after: Mapping[str, float], before: Mapping[str, float]) -> dict[str, Any]:
    """One comparison, `after` minus `before` (per-template values, seeds already averaged):
    the mean difference over templates with its t-interval and t-test p (`p_t`), the exact
    sign-flip p (`p`, the one a verdict rests on), and how many templates are above, below
    and equal."""
    diffs = differences(after, before)
    return {
        **t_summary(diffs),
        "p": sign_flip_p(diffs),
        "diffs": diffs,
        "above": sum(d > 0 for d in diffs),
        "below": sum(d < 0 for d in diffs),
        "equal": sum(d == 0 for d in diffs),
    }


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, same order as given (`stats.holm_adjusted`, the
    library's one implementation): a comparison holds at level a when its adjusted p is at
    most a, with the family-wise error rate at most a whatever the dependence."""
    return holm_adjusted(list(pvalues))


def family(comparisons: Sequence[dict[str, Any]], alpha: float = ALPHA) -> list[dict[str, Any]]:
    """A report's family of comparisons (each a `compare` result) with Holm-adjusted
    sign-flip p (`holm_p`, the verdict's), Holm-adjusted t-test p (`holm_p_t`, beside it)
    and `holds` (`holm_p <= alpha`). Refuses more than `MAX_FAMILY`: with eight templates
    a larger family could not reject anything."""
    if len(comparisons) > MAX_FAMILY:
        raise ValueError(f"{len(comparisons)} comparisons: a family holds at most {MAX_FAMILY}")
    flip = holm([c["p"] for c in comparisons])
    tp = holm([1.0 if c["p_t"] is None else c["p_t"] for c in comparisons])
    return [
        {**c, "holm_p": h, "holm_p_t": ht, "holds": h <= alpha}
        for c, h, ht in zip(comparisons, flip, tp, strict=True)
    ]
