"""Statistics for speedup ratios: paired log-ratio intervals, combination, outliers.

Why the log-ratio of paired samples (and not a bootstrap of the ratio of means):

* Baseline and candidate run alternately (A B A B ...), so run i of each saw nearly the same
  machine state (frequency, cache pressure, neighbours). The paired difference
  d_i = ln(a_i) - ln(b_i) cancels those slow drifts; a ratio of two independent means
  does not.
* Speedups are multiplicative: ln makes a 2x speedup and a 2x slowdown symmetric, and the
  exponential of a t-interval on the mean of d_i is an interval for the geometric-mean
  ratio, which is what the per-program and suite aggregates are built from.
* A t-interval needs only the mean and standard deviation, so it is cheap to recompute
  after every round of the adaptive sampler, and it is exact for known inputs (the unit
  tests check it against hand-computed values).

The estimate is the 20% trimmed mean of the log-ratios with Yuen's interval
(`trimmed_interval`): timing noise on shared machines comes in one-run spikes, and trimming
makes the interval depend on the bulk of the runs rather than on the worst few. Rounds
(separate sandboxes) are combined with a random-effects model (`random_effects`), so
effects that are fixed within a round but vary between rounds widen the interval instead
of hiding in it.

Outliers are flagged with the modified z-score (Iglewicz and Hoaglin): 0.6745 (x - median)
/ MAD, |z| > 3.5, as hyperfine does. They are kept in the raw data and reported; a
measurement where more of them than the trimmed fraction is marked unreliable by the
caller.

Only the standard library is used, so the core stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

MODIFIED_Z_THRESHOLD = 3.5
_MAD_TO_SIGMA = 0.6745  # the 0.75 quantile of the standard normal


# ---------------------------------------------------------------------------- Student's t
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (df may be fractional)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(df):
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (bisection on t_cdf; accurate to ~1e-10)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------------------- outliers
def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    s = sorted(values)
    n = len(s)
    mid = n // 2
    return s[mid] if n % 2 else 0.5 * (s[mid - 1] + s[mid])


def modified_z_scores(values: Sequence[float]) -> list[float]:
    """0.6745 (x - median) / MAD for each value.

    When more than half the values are equal the MAD is 0; the mean absolute deviation
    (scaled to match the MAD of a normal sample) stands in, and when that is 0 too every
    value is the median and every score is 0."""
    if not values:
        return []
    med = median(values)
    deviations = [abs(v - med) for v in values]
    mad = median(deviations)
    if mad > 0:
        return [_MAD_TO_SIGMA * (v - med) / mad for v in values]
    mean_ad = sum(deviations) / len(deviations)
    if mean_ad > 0:
        return [(v - med) / (1.2533141373155 * mean_ad) for v in values]
    return [0.0 for _ in values]


def outlier_flags(values: Sequence[float], threshold: float = MODIFIED_Z_THRESHOLD) -> list[bool]:
    """True for each value whose modified z-score exceeds `threshold` in magnitude."""
    if len(values) < 3:
        return [False for _ in values]
    return [abs(z) > threshold for z in modified_z_scores(values)]


# ---------------------------------------------------------------------------- intervals
@dataclass(frozen=True)
class RatioInterval:
    """A ratio (baseline time / candidate time) with a confidence interval.

    `log_mean` and `log_se` are the mean and standard error of the log-ratio; `df` its
    degrees of freedom (0 when there is no estimate of spread: a single sample)."""

    ratio: float
    low: float
    high: float
    n: int
    log_mean: float
    log_se: float
    df: float
    confidence: float

    @property
    def half_width(self) -> float:
        """Relative half-width: how far (as a fraction) the interval reaches from the ratio."""
        if self.ratio <= 0 or math.isinf(self.high):
            return math.inf
        return max(self.high / self.ratio - 1.0, 1.0 - self.low / self.ratio)

    @property
    def significantly_faster(self) -> bool:
        return self.low > 1.0

    @property
    def significantly_slower(self) -> bool:
        return self.high < 1.0


def log_ratio_interval(log_ratios: Sequence[float], confidence: float = 0.95) -> RatioInterval:
    """exp(mean ± t * sd / sqrt(n)) over paired log-ratios ln(base_i / cand_i)."""
    n = len(log_ratios)
    if n == 0:
        raise ValueError("no samples")
    mean = sum(log_ratios) / n
    if n == 1:
        return RatioInterval(math.exp(mean), 0.0, math.inf, 1, mean, math.inf, 0.0, confidence)
    var = sum((x - mean) ** 2 for x in log_ratios) / (n - 1)
    return _log_interval(mean, math.sqrt(var / n), float(n - 1), n, confidence)


def _log_interval(mean: float, se: float, df: float, n: int, confidence: float) -> RatioInterval:
    """exp(mean ± t * se), t Student's at `confidence` with `df` degrees of freedom: an
    interval on the log scale, read back as ratios."""
    t = t_quantile(0.5 + confidence / 2.0, df)
    return RatioInterval(
        ratio=math.exp(mean),
        low=math.exp(mean - t * se),
        high=math.exp(mean + t * se),
        n=n,
        log_mean=mean,
        log_se=se,
        df=df,
        confidence=confidence,
    )


def trimmed_interval(
    log_ratios: Sequence[float], confidence: float = 0.95, trim: float = 0.2
) -> RatioInterval:
    """exp of Yuen's interval for the `trim`-trimmed mean of paired log-ratios.

    Timing noise on shared machines is heavy-tailed: a run that meets memory-bandwidth
    contention or a hypervisor hiccup is 10-20% slower while its neighbours are not. The
    mean and its t-interval pay for every such spike; the 20% trimmed mean ignores the
    most extreme fifth on each side yet loses only ~6% efficiency when the noise is normal.
    Yuen (1974): winsorized variance s_w^2, h = n - 2g kept values, se^2 = (n-1) s_w^2 /
    (h (h-1)), t with h - 1 degrees of freedom. With fewer than 5 samples nothing is
    trimmed and this is the ordinary t-interval."""
    n = len(log_ratios)
    if n == 0:
        raise ValueError("no samples")
    if not 0 <= trim < 0.5:
        raise ValueError(f"trim must be in [0, 0.5), got {trim}")
    g = int(trim * n)
    if g == 0 or n < 3:
        return log_ratio_interval(log_ratios, confidence)
    s = sorted(log_ratios)
    h = n - 2 * g
    mean = sum(s[g : n - g]) / h
    wins = [s[g]] * g + s[g : n - g] + [s[n - g - 1]] * g
    wmean = sum(wins) / n
    sw2 = sum((x - wmean) ** 2 for x in wins) / (n - 1)
    se = math.sqrt((n - 1) * sw2 / (h * (h - 1)))
    return _log_interval(mean, se, float(h - 1), n, confidence)


def between_variance(parts: Sequence[RatioInterval]) -> float:
    """DerSimonian-Laird's between-part variance of the log-ratios: Q = sum w_j (m_j -
    m_w)^2 with w_j = 1/v_j, tau^2 = max(0, (Q - (R - 1)) / (sum w - sum w^2 / sum w));
    0 for a single part."""
    return _cochran(parts)[0]


def _cochran(parts: Sequence[RatioInterval]) -> tuple[float, float]:
    """(DerSimonian-Laird tau^2, Cochran's Q) of the parts."""
    if len(parts) < 2:
        return 0.0, 0.0
    w = [1.0 / max(p.log_se**2, 1e-12) for p in parts]
    sw = sum(w)
    mean = sum(wi * p.log_mean for wi, p in zip(w, parts, strict=True)) / sw
    q = sum(wi * (p.log_mean - mean) ** 2 for wi, p in zip(w, parts, strict=True))
    denom = sw - sum(wi * wi for wi in w) / sw
    return (max(0.0, (q - (len(parts) - 1)) / denom) if denom > 0 else 0.0), q


def generalized_q(parts: Sequence[RatioInterval], tau2: float) -> float:
    """Q(tau^2) = sum w_j (m_j - m_w)^2 with w_j = 1 / (v_j + tau^2): Cochran's Q with the
    between-part variance tau^2 added to every part's own. Falls as tau^2 grows; at the
    true tau^2 it is chi-square on R - 1 degrees of freedom."""
    w = [1.0 / max(p.log_se**2 + tau2, 1e-24) for p in parts]
    mean = sum(wi * p.log_mean for wi, p in zip(w, parts, strict=True)) / sum(w)
    return sum(wi * (p.log_mean - mean) ** 2 for wi, p in zip(w, parts, strict=True))


def between_variance_upper(parts: Sequence[RatioInterval], level: float) -> float:
    """A one-sided `level` upper confidence bound of the between-part variance tau^2 (the
    Q-profile method, Viechtbauer 2007): the tau^2 at which Q(tau^2) falls to the lower
    1 - level quantile of chi-square on R - 1 degrees of freedom.

    Why not scale the point estimate (tau_hat^2 * df / chi2): DerSimonian-Laird's estimate
    is cut at 0, so that bound is 0 whenever the parts agree at least as well as their own
    errors predict, which for a true spread near the parts' errors is often; the profile
    still bounds the spread those errors could hide. It is 0 only where the parts agree far
    better than their errors say (Q(0) below the quantile), which the caller floors."""
    if len(parts) < 2:
        return 0.0
    target = chi2_quantile(1.0 - level, len(parts) - 1)
    if generalized_q(parts, 0.0) <= target:
        return 0.0
    means = [p.log_mean for p in parts]
    hi = max(1e-12, 4.0 * (max(means) - min(means)) ** 2)
    while generalized_q(parts, hi) > target:  # Q -> 0 as tau^2 grows: this ends
        hi *= 4.0
    lo = 0.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if generalized_q(parts, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def chi2_quantile(p: float, df: float) -> float:
    """The p-quantile of chi-square on `df` degrees of freedom (Wilson-Hilferty: within
    about 1% from 5 degrees of freedom on, a few percent below)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(p)
    c = 2.0 / (9.0 * df)
    return df * max(1e-6, 1.0 - c + z * math.sqrt(c)) ** 3


def random_effects(
    parts: Sequence[RatioInterval],
    confidence: float = 0.95,
    *,
    prior_tau2: float = 0.0,
    prior_df: float = 0.0,
) -> RatioInterval:
    """Combine per-round estimates of the same ratio, allowing for between-round variation.

    Each round is a fresh sandbox: fresh copies of both binaries (landing elsewhere in
    physical memory) and a fresh environment padding. Such effects are constant within a
    round, so the pairs of one round are not independent evidence about them; the spread
    of the round estimates is. DerSimonian-Laird from the data: Q = sum w_j (m_j - m_w)^2
    with w_j = 1/v_j, tau_hat^2 = max(0, (Q - (R - 1)) / (sum w - sum w^2 / sum w)).

    Two rounds carry one degree of freedom about tau, too little to stand alone (t(1) =
    12.7), yet a test must not end with no allowance for it. So the data's estimate is
    pooled with a prior one, `prior_tau2` on `prior_df` degrees of freedom (the machine's
    measured between-sandbox variance, timing.spread): tau^2 = (prior_df prior_tau2 + (R-1)
    tau_hat^2) / (prior_df + R - 1), as pooled variances combine. The rounds are weighted
    1/(v_j + tau^2); the degrees of freedom of the result are Welch-Satterthwaite's over
    its within-round part (the rounds' own df) and its between-round part (prior_df + R -
    1). Without a prior this is the plain DerSimonian-Laird combination; with neither prior
    nor heterogeneity, the precision-weighted mean with the pooled degrees of freedom. A
    single round gets the prior's variance added to its own."""
    if not parts:
        raise ValueError("nothing to combine")
    if prior_tau2 < 0 or prior_df < 0:
        raise ValueError("prior_tau2 and prior_df must be non-negative")
    if any(math.isinf(p.log_se) for p in parts):
        finite = [p for p in parts if not math.isinf(p.log_se)]
        if not finite:
            return parts[0]
        return random_effects(finite, confidence, prior_tau2=prior_tau2, prior_df=prior_df)
    r = len(parts)
    v = [max(p.log_se**2, 1e-12) for p in parts]
    tau2_data, q = _cochran(parts)
    between_df = prior_df + (r - 1)
    if prior_df > 0:
        tau2 = (prior_df * prior_tau2 + (r - 1) * tau2_data) / between_df
        # The rounds reject the prior (Cochran's Q beyond its 95% point): this test's
        # sandboxes differ more than the machine's do, and only its own rounds say by
        # how much, on their own few degrees of freedom. An answer that is faster in one
        # sandbox only (a lucky placement) so gets a wide interval and more rounds,
        # where the prior alone would have called it faster.
        if r > 1 and q > chi2_quantile(0.95, r - 1) and tau2_data > tau2:
            tau2, between_df = tau2_data, float(r - 1)
    else:
        tau2 = tau2_data
    if r == 1 and tau2 == 0:
        return parts[0]
    ws = [1.0 / (x + tau2) for x in v]
    total = sum(ws)
    mean = sum(wi * p.log_mean for wi, p in zip(ws, parts, strict=True)) / total
    se = math.sqrt(1.0 / total)
    within = sum(wi * wi * vi for wi, vi in zip(ws, v, strict=True)) / total**2
    between = sum(wi * wi * tau2 for wi in ws) / total**2
    within_df = sum(p.df for p in parts)
    if tau2 == 0:
        df = within_df
    elif prior_df == 0:
        df = float(r - 1)  # tau from the data alone: as DerSimonian-Laird
    else:
        df = (within + between) ** 2 / (
            (within**2 / within_df if within_df > 0 else 0.0) + between**2 / between_df
        )
    return _log_interval(mean, se, df, sum(p.n for p in parts), confidence)


def pooled_pair_variance(parts: Sequence[RatioInterval]) -> float | None:
    """The per-pair variance the rounds share: the df-weighted mean of n_j se_j^2 over the
    rounds with a spread (None where none has one). What shifts a whole round is not in
    it: each se_j is about its own round's pairs."""
    usable = [p for p in parts if p.df > 0 and math.isfinite(p.log_se)]
    total_df = sum(p.df for p in usable)
    if total_df <= 0:
        return None
    return sum(p.df * p.n * p.log_se**2 for p in usable) / total_df


def pooled_within(parts: Sequence[RatioInterval]) -> list[RatioInterval]:
    """Rounds whose standard errors are at least what the rounds' pooled per-pair variance
    gives their size: se_j = max(se_j, sqrt(s2 / n_j)), s2 = the df-weighted mean of
    n_j se_j^2.

    A round of 4 pairs estimates its own variance on 3 degrees of freedom; weighting rounds
    by such estimates gives a round that looks tight by chance most of the weight, and the
    combined interval then claims that chance precision (an A/A coverage of 91% where 95%
    was asked). The rounds of one test measure the same two binaries on the same input, so
    their per-pair spread is one quantity; a round that was noisier (a burst of load)
    keeps its own, larger, error and its smaller weight."""
    s2 = pooled_pair_variance(parts)
    if s2 is None:
        return list(parts)
    return [
        RatioInterval(
            p.ratio,
            p.low,
            p.high,
            p.n,
            p.log_mean,
            max(p.log_se, math.sqrt(s2 / p.n)),
            p.df,
            p.confidence,
        )
        if math.isfinite(p.log_se)
        else p
        for p in parts
    ]


def paired_interval(
    base: Sequence[float], cand: Sequence[float], confidence: float = 0.95
) -> RatioInterval:
    """Interval for the geometric-mean speedup from paired times (base_i, cand_i)."""
    if len(base) != len(cand):
        raise ValueError(f"unpaired samples: {len(base)} baseline vs {len(cand)} candidate")
    if any(x <= 0 for x in (*base, *cand)):
        raise ValueError("times must be positive")
    return log_ratio_interval(
        [math.log(a / b) for a, b in zip(base, cand, strict=True)], confidence
    )


def exact_ratio(ratio: float, confidence: float = 0.95, n: int = 1) -> RatioInterval:
    """A ratio known without error (instruction counts, copies): a zero-width interval."""
    return RatioInterval(ratio, ratio, ratio, n, math.log(ratio), 0.0, math.inf, confidence)


def combine_geometric(parts: Sequence[RatioInterval], confidence: float = 0.95) -> RatioInterval:
    """Geometric mean of independent ratios with an interval (Welch-Satterthwaite df).

    The log of the geometric mean is the mean of the logs; its variance is the sum of the
    parts' squared standard errors over T^2. Parts measured without error contribute no
    variance; if none has spread, the result is exact."""
    if not parts:
        raise ValueError("nothing to combine")
    k = len(parts)
    mean = sum(p.log_mean for p in parts) / k
    if any(math.isinf(p.log_se) for p in parts):
        return RatioInterval(
            math.exp(mean), 0.0, math.inf, sum(p.n for p in parts), mean, math.inf, 0.0, confidence
        )
    var_sum = sum(p.log_se**2 for p in parts)
    n_total = sum(p.n for p in parts)
    if var_sum == 0:
        return RatioInterval(
            math.exp(mean),
            math.exp(mean),
            math.exp(mean),
            n_total,
            mean,
            0.0,
            math.inf,
            confidence,
        )
    denom = sum(p.log_se**4 / p.df for p in parts if p.log_se > 0 and p.df > 0)
    df = var_sum**2 / denom if denom > 0 else math.inf
    return _log_interval(mean, math.sqrt(var_sum) / k, df, n_total, confidence)


def combine_arithmetic(parts: Sequence[RatioInterval], confidence: float = 0.95) -> RatioInterval:
    """Arithmetic mean of independent ratios with an interval.

    The reference system's per-answer speedup is this statistic (the mean of per-test
    ratios), so it needs an interval of its own: the geometric mean's interval does not
    bound it (one 30x test and nine 1.0x tests: arithmetic 3.9, geometric 1.4).

    Its interval is the delta method's (_delta_mean), except that its low end is raised to
    the geometric mean's where that is higher. The delta method is tight where the parts
    are alike, but symmetric on the ratio scale, while a ratio from few pairs is skewed: a
    30x test measured within [14x, 68x] beside three 1.0x tests put the mean's low end
    below 1. An arithmetic mean of positive numbers is never below their geometric mean,
    and the geometric mean's interval lives on the log scale, where such a ratio is
    symmetric; so its low end bounds the mean from below as well. Both are taken at half
    the error rate (P(either misses) <= alpha/2 + alpha/2), so the pair keeps the stated
    confidence. `log_mean`/`log_se` describe the log of the mean, to first order."""
    if not parts:
        raise ValueError("nothing to combine")
    level = 1.0 - (1.0 - confidence) / 2.0
    delta = _delta_mean(parts, level)
    geometric = combine_geometric(parts, level)
    return RatioInterval(
        ratio=delta.ratio,
        low=min(delta.ratio, max(delta.low, geometric.low)),
        high=delta.high,
        n=delta.n,
        log_mean=delta.log_mean,
        log_se=delta.log_se,
        df=delta.df,
        confidence=confidence,
    )


def _delta_mean(parts: Sequence[RatioInterval], confidence: float) -> RatioInterval:
    """The mean of the ratios, bounded by the first-order delta method with Welch df: each
    ratio's standard error on the ratio scale is ratio * log_se; the mean's variance is
    their sum of squares over k^2. Symmetric on the ratio scale, clipped below at 0."""
    k = len(parts)
    mean = sum(p.ratio for p in parts) / k
    n_total = sum(p.n for p in parts)
    if any(math.isinf(p.log_se) for p in parts):
        return RatioInterval(
            mean, 0.0, math.inf, n_total, math.log(mean), math.inf, 0.0, confidence
        )
    ses = [p.ratio * p.log_se for p in parts]
    var_sum = sum(s * s for s in ses)
    if var_sum == 0:
        return RatioInterval(mean, mean, mean, n_total, math.log(mean), 0.0, math.inf, confidence)
    denom = sum(s**4 / p.df for s, p in zip(ses, parts, strict=True) if s > 0 and p.df > 0)
    df = var_sum**2 / denom if denom > 0 else math.inf
    se = math.sqrt(var_sum) / k
    t = t_quantile(0.5 + confidence / 2.0, df)
    return RatioInterval(
        ratio=mean,
        low=max(0.0, mean - t * se),
        high=mean + t * se,
        n=n_total,
        log_mean=math.log(mean),
        log_se=se / mean,
        df=df,
        confidence=confidence,
    )


def with_resolution(interval: RatioInterval, resolution: float) -> RatioInterval:
    """Widen the interval to at least ±`resolution` (relative) around the ratio.

    Pairing removes drift but not systematic effects that stay fixed through a measurement
    (code and stack alignment, one sandbox's memory layout): a paired interval can be far
    narrower than the error those cause. The resolution is the smallest difference the
    instrument is trusted to resolve; a claim of "faster" must exceed it."""
    if resolution <= 0 or math.isinf(interval.high):
        return interval
    low = min(interval.low, interval.ratio / (1.0 + resolution))
    high = max(interval.high, interval.ratio * (1.0 + resolution))
    return RatioInterval(
        interval.ratio,
        low,
        high,
        interval.n,
        interval.log_mean,
        interval.log_se,
        interval.df,
        interval.confidence,
    )


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: sorted ascending, the k-th
    smallest of m is scaled by m - k + 1, then made non-decreasing and capped at 1. A test
    holds at family-wise level a when its adjusted p is at most a, under any dependence
    between the tests (pairwise comparisons that share a model have some)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
