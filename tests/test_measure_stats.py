"""Statistics of the speedup measurement, checked against hand-computed values."""

from __future__ import annotations

import math

import pytest

from asmopt.measure.stats import (
    RatioInterval,
    combine_geometric,
    exact_ratio,
    log_ratio_interval,
    modified_z_scores,
    outlier_flags,
    paired_interval,
    random_effects,
    t_quantile,
    trimmed_interval,
    with_resolution,
)


@pytest.mark.parametrize(
    ("df", "expected"),
    [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452), (math.inf, 1.9600)],
)
def test_t_quantile_matches_tables(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_is_symmetric() -> None:
    assert t_quantile(0.025, 5) == pytest.approx(-t_quantile(0.975, 5))


def test_log_ratio_interval_hand_computed() -> None:
    # logs 0.01, 0.03, 0.02, 0.04: mean 0.025, sd sqrt(0.0005/3), se sd/2, t(3) = 3.1824
    logs = [0.01, 0.03, 0.02, 0.04]
    iv = log_ratio_interval(logs)
    sd = math.sqrt(((0.015**2) + (0.005**2) + (0.005**2) + (0.015**2)) / 3)
    half = 3.182446 * sd / 2
    assert iv.ratio == pytest.approx(math.exp(0.025))
    assert iv.low == pytest.approx(math.exp(0.025 - half), rel=1e-6)
    assert iv.high == pytest.approx(math.exp(0.025 + half), rel=1e-6)
    assert iv.n == 4 and iv.df == 3
    assert iv.significantly_faster and not iv.significantly_slower


def test_paired_interval_uses_base_over_candidate() -> None:
    base = [110.0, 220.0, 330.0]
    cand = [100.0, 200.0, 300.0]
    iv = paired_interval(base, cand)
    assert iv.ratio == pytest.approx(1.1)
    assert iv.low == pytest.approx(1.1) and iv.high == pytest.approx(1.1)  # no spread


def test_single_sample_has_no_interval() -> None:
    iv = log_ratio_interval([0.1])
    assert iv.low == 0.0 and math.isinf(iv.high)
    assert math.isinf(iv.half_width)


def test_modified_z_score_flags_the_outlier() -> None:
    values = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 5.0]
    flags = outlier_flags(values)
    assert flags == [False] * 6 + [True]
    z = modified_z_scores(values)
    # median 1.0, MAD 0.05: z = 0.6745 * 4.0 / 0.05
    assert z[-1] == pytest.approx(0.6745 * 4.0 / 0.05)


def test_modified_z_score_with_zero_mad_falls_back_to_mean_deviation() -> None:
    values = [1.0, 1.0, 1.0, 1.0, 2.0]
    z = modified_z_scores(values)
    assert z[:4] == [0.0] * 4 and z[4] > 3.5
    assert modified_z_scores([2.0, 2.0, 2.0]) == [0.0, 0.0, 0.0]


def test_combine_geometric_of_exact_parts_is_exact() -> None:
    combined = combine_geometric([exact_ratio(2.0), exact_ratio(0.5), exact_ratio(1.0)])
    assert combined.ratio == pytest.approx(1.0)
    assert combined.low == combined.high == pytest.approx(1.0)


def test_combine_geometric_hand_computed() -> None:
    a = log_ratio_interval([0.10, 0.12, 0.08, 0.10])
    b = log_ratio_interval([0.00, 0.02, -0.02, 0.00])
    c = combine_geometric([a, b])
    assert c.ratio == pytest.approx(math.exp(0.05))
    se = math.sqrt(a.log_se**2 + b.log_se**2) / 2
    assert c.log_se == pytest.approx(se)
    # equal variances and df: Welch-Satterthwaite gives df = 3 + 3
    assert c.df == pytest.approx(6.0)
    assert c.low == pytest.approx(math.exp(0.05 - t_quantile(0.975, 6) * se))


def test_resolution_widens_narrow_intervals_only() -> None:
    narrow = exact_ratio(1.004)
    wide = log_ratio_interval([0.0, 0.1, -0.1, 0.05])
    assert with_resolution(narrow, 0.01).low == pytest.approx(1.004 / 1.01)
    assert not with_resolution(narrow, 0.01).significantly_faster
    assert with_resolution(wide, 0.01).low == wide.low


def test_trimmed_interval_hand_computed() -> None:
    # n = 5, g = 1: trimmed [0.01, 0.02, 0.03] -> mean 0.02; winsorized
    # [0.01, 0.01, 0.02, 0.03, 0.03] -> s_w^2 = 0.0004 / 4; se^2 = 4 s_w^2 / (3 * 2)
    iv = trimmed_interval([0.5, 0.0, 0.01, 0.02, 0.03])
    se = math.sqrt(4 * 0.0001 / 6)
    assert iv.ratio == pytest.approx(math.exp(0.02))
    assert iv.log_se == pytest.approx(se)
    assert iv.df == 2
    assert iv.high == pytest.approx(math.exp(0.02 + 4.302653 * se), rel=1e-6)


def test_trimming_ignores_a_spike_the_mean_pays_for() -> None:
    logs = [0.001 * k for k in (-2, -1, 0, 1, 2)] * 4 + [0.25, -0.2]
    assert trimmed_interval(logs).half_width < 0.5 * log_ratio_interval(logs).half_width


def _part(mean: float, se: float, df: float = 9.0) -> RatioInterval:
    return RatioInterval(math.exp(mean), 0.0, 0.0, 10, mean, se, df, 0.95)


def test_random_effects_without_heterogeneity_is_the_weighted_mean() -> None:
    iv = random_effects([_part(0.01, 0.01), _part(0.012, 0.02)])
    w1, w2 = 1 / 0.01**2, 1 / 0.02**2
    assert iv.log_mean == pytest.approx((w1 * 0.01 + w2 * 0.012) / (w1 + w2))
    assert iv.log_se == pytest.approx(math.sqrt(1 / (w1 + w2)))
    assert iv.df == 18


def test_random_effects_hand_computed_heterogeneity() -> None:
    # Q = 200, tau^2 = (200 - 2) / 20000 = 0.0099, weights 1 / 0.01 each.
    iv = random_effects([_part(0.0, 0.01), _part(0.1, 0.01), _part(0.2, 0.01)])
    assert iv.log_mean == pytest.approx(0.1)
    assert iv.log_se == pytest.approx(math.sqrt(1 / 300))
    assert iv.df == 2
    assert iv.low == pytest.approx(math.exp(0.1 - 4.302653 * math.sqrt(1 / 300)), rel=1e-6)
