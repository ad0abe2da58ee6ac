"""Statistics of the learning runs (bench/speed_learning/stats.py), checked against hand
computations: the exact sign-flip test over templates, the t-interval beside it, Holm over
a small family, Page's L trend test, and the sign-flip test's level under the null with
eight templates (a bootstrap over eight clusters rejects about twice too often)."""

from __future__ import annotations

import importlib
import itertools
import math
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def stats() -> ModuleType:
    """The statistics module, imported from bench/ as the run script imports it."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("speed_learning.stats")
    finally:
        sys.path.remove(str(BENCH))


def test_sign_flip_p_on_hand_computed_cases(stats: ModuleType) -> None:
    # All 8 positive: only the observed pattern and its mirror reach |sum| = 8.
    assert stats.sign_flip_p([1.0] * 8) == pytest.approx(2 / 256)
    assert stats.sign_flip_p([-0.5] * 8) == pytest.approx(2 / 256)
    # 7 positive, the smallest one negative: |sum| = 3 + 2 + ... reached by the observed
    # pattern, the all-positive one and their mirrors: 4 of 256.
    assert stats.sign_flip_p([1, 2, 3, 4, 5, 6, 7, -0.5]) == pytest.approx(4 / 256)
    # Three differences 1, 2, 3: |sum| >= 6 only for (+,+,+) and (-,-,-); >= 2 for all but
    # the two patterns summing to 0 (1 + 2 - 3, -1 - 2 + 3).
    assert stats.sign_flip_p([1.0, 2.0, 3.0]) == pytest.approx(2 / 8)
    assert stats.sign_flip_p([1.0, -2.0, 3.0]) == pytest.approx(6 / 8)
    # Zeros flip to themselves: four zeros among eight leave 2 x 16 extreme patterns.
    assert stats.sign_flip_p([1.0] * 4 + [0.0] * 4) == pytest.approx(32 / 256)
    assert stats.sign_flip_p([0.0] * 8) == 1.0
    assert stats.sign_flip_p([]) == 1.0


def test_t_interval_against_a_hand_computation(stats: ModuleType) -> None:
    values = [0.1, 0.3, -0.2, 0.4, 0.0, 0.2, 0.1, 0.3]
    s = stats.t_summary(values)
    mean = sum(values) / 8  # 0.15
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 7)
    half = 2.364624252 * sd / math.sqrt(8)  # t(0.975, 7 df) from a table
    assert s["mean"] == pytest.approx(0.15)
    assert s["low"] == pytest.approx(mean - half, abs=1e-6)
    assert s["high"] == pytest.approx(mean + half, abs=1e-6)
    assert s["df"] == 7 and s["t"] == pytest.approx(mean / (sd / math.sqrt(8)))
    # p < 0.05 exactly when the 95% interval excludes 0.
    assert (s["p_t"] < 0.05) == (s["low"] > 0)
    assert stats.t_summary([0.0, 0.0])["p_t"] == 1.0
    assert stats.t_summary([1.0])["low"] is None


def test_compare_averages_seeds_per_template_first(stats: ModuleType) -> None:
    template_of = {"a0": "a", "a1": "a", "b0": "b", "b1": "b"}
    seed0 = stats.template_means({"a0": 1.0, "a1": 3.0, "b0": 2.0, "b1": 2.0}, template_of)
    seed1 = stats.template_means({"a0": 3.0, "a1": 3.0, "b0": 4.0, "b1": 2.0}, template_of)
    assert seed0 == {"a": 2.0, "b": 2.0} and seed1 == {"a": 3.0, "b": 3.0}
    arm = stats.seed_average([seed0, seed1])
    assert arm == {"a": 2.5, "b": 2.5}
    c = stats.compare(arm, {"a": 2.0, "b": 3.0})
    assert c["diffs"] == [0.5, -0.5] and c["mean"] == 0.0
    assert (c["above"], c["below"], c["equal"], c["k"]) == (1, 1, 0, 2)
    assert c["p"] == 1.0


def test_holm_on_a_known_set(stats: ModuleType) -> None:
    # Sorted 0.01, 0.03, 0.04 (of 3): 0.03, 0.06, then max(0.06, 0.04) = 0.06.
    assert stats.holm([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])
    family = stats.family(
        [
            {"p": 2 / 256, "p_t": 0.06},
            {"p": 26 / 256, "p_t": 0.07},
            {"p": 4 / 256, "p_t": 0.01},
        ]
    )
    assert [f["holm_p"] for f in family] == pytest.approx([6 / 256, 26 / 256, 8 / 256])
    assert [f["holds"] for f in family] == [True, False, True]
    assert [f["holm_p_t"] for f in family] == pytest.approx([0.12, 0.12, 0.03])
    with pytest.raises(ValueError, match="at most 3"):
        stats.family([{"p": 0.01, "p_t": 0.01}] * 4)


def test_page_l_on_known_examples(stats: ModuleType) -> None:
    # One block of three, ranks (1, 2, 3): L = 1 + 4 + 9 = 14, the largest of the six
    # permutations' L (14, 13, 13, 11, 11, 10): exact p = 1/6.
    one = stats.page_l([[0.1, 0.5, 0.9]])
    assert one["L"] == 14 and one["p"] == pytest.approx(1 / 6) and one["method"] == "exact"
    assert stats.page_l([[0.1, 0.9, 0.5]])["p"] == pytest.approx(3 / 6)  # L = 13
    # Three blocks of four, every block rising: L = 3 (1 + 4 + 9 + 16) = 90, the maximum,
    # p = (1/24)^3; the normal approximation has mean 75, variance 25, so z = 3.
    rising = stats.page_l([[1.7, 3.0, 3.0 + 0.1 * s, 4.0] for s in range(1, 4)])
    assert rising["L"] == 90 and rising["p"] == pytest.approx(1 / 24**3)
    assert rising["z"] == pytest.approx(3.0)
    assert rising["p_normal"] == pytest.approx(0.5 * math.erfc(3 / math.sqrt(2)))
    assert stats.page_l([[1, 2, 3, 4]] * 3, exact=False)["method"] == "normal approximation"


def test_page_l_critical_values_match_pages_table(stats: ModuleType) -> None:
    """Page (1963), critical values of L: k = 4 treatments, n = 3 blocks: 84 at 5%, 87 at
    1%, 89 at 0.1%; k = 3, n = 2: 28 at 5%. Each is the smallest L whose exact upper tail
    is at most the level."""
    from asmopt.study.intervals import _page_null

    def tail(k: int, n: int, value: int) -> float:
        counts = _page_null([[float(r) for r in range(1, k + 1)]] * n)
        return sum(c for v, c in counts.items() if v >= 2 * value) / sum(counts.values())

    for k, n, level, critical in ((4, 3, 0.05, 84), (4, 3, 0.01, 87), (4, 3, 0.001, 89)):
        assert tail(k, n, critical) <= level < tail(k, n, critical - 1)
    assert tail(3, 2, 28) <= 0.05 < tail(3, 2, 27)


def test_page_l_ties_share_their_rank(stats: ModuleType) -> None:
    # Ties get the mean rank, and the null permutes the block's own ranks.
    tied = stats.page_l([[1.0, 1.0, 2.0]])
    assert tied["L"] == pytest.approx(1 * 1.5 + 2 * 1.5 + 3 * 3)
    perms = {tuple(p) for p in itertools.permutations([1.5, 1.5, 3.0])}
    assert len(perms) == 3  # (1.5, 1.5, 3), (1.5, 3, 1.5), (3, 1.5, 1.5): top L once in 3
    assert tied["p"] == pytest.approx(1 / 3)


def test_sign_flip_holds_its_level_under_the_null_with_eight_templates(
    stats: ModuleType,
) -> None:
    """Under the null (each template's difference symmetric about 0, templates of unequal
    spread) the exact test rejects at most its level: with 8 templates p <= 0.05 takes 12
    of the 256 patterns, a rejection rate of 12/256 = 0.047."""
    rng = random.Random(43)
    trials = 1000
    rejected = 0
    for _ in range(trials):
        diffs = [rng.gauss(0.0, 0.05 + 0.1 * t) for t in range(8)]
        rejected += stats.sign_flip_p(diffs) <= 0.05
    rate = rejected / trials
    # Binomial(1000, 0.047): sd 0.0067; a lenient test at 0.11 would be far above this bound.
    assert rate <= 0.047 + 3 * math.sqrt(0.047 * 0.953 / trials)


def test_page_l_two_sided_p_takes_the_smaller_tail(stats: ModuleType) -> None:
    # A falling order is the mirror of a rising one: the lower tail is the small one.
    falling = stats.page_l([[4.0, 3.0, 2.0, 1.0]] * 3)
    assert falling["L"] == 60 and falling["p_lower"] == pytest.approx(1 / 24**3)
    assert falling["p"] == pytest.approx(1.0)
    assert falling["p_two"] == pytest.approx(2 / 24**3)
    assert stats.page_l([[1.0, 2.0]])["p_two"] == 1.0  # one block of two: no evidence
