"""What the loop study may say: Holm over the pairwise comparisons of R, trend words from the
sign of the data, and the committed report's reading recomputed from its raw data.

Pure functions on study.json-shaped dicts: no model is trained here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from asmopt.study import findings as F
from asmopt.study.intervals import holm, normal_p, t_interval, t_test_p
from asmopt.study.report import render_markdown

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "docs" / "study" / "loops_cpu_seeds_study.json"
PLOTS = {k: f"{k}.png" for k in ("summary", "training", "states", "attention", "outputs", "peaks")}

# --------------------------------------------------------------------------- Holm


def test_holm_on_a_hand_checked_example() -> None:
    # Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06
    # (adjusted p-values never fall along the sorted order). At 5%: the first two only.
    tests = holm([0.01, 0.04, 0.03, 0.005])
    assert [t["p_holm"] for t in tests] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [t["reject"] for t in tests] == [True, False, False, True]
    assert [t["p"] for t in tests] == [0.01, 0.04, 0.03, 0.005]
    # Bonferroni's 0.05 / 4 = 0.0125 would reject the same two; Holm steps down further when
    # the smallest are far below: 0.001 x 3, 0.02 x 2 = 0.04 and 0.04 x 1 all pass.
    assert [t["reject"] for t in holm([0.001, 0.02, 0.04])] == [True, True, True]
    # Adjusted values are capped at 1; a test with no p-value counts in the family (m = 3
    # here, so 0.02 x 3 = 0.06 fails) and is never rejected.
    capped = holm([0.6, 0.02, None])
    assert capped[0]["p_holm"] == 1.0 and not capped[1]["reject"]
    assert capped[1]["p_holm"] == pytest.approx(0.06)
    assert capped[2] == {"p": None, "p_holm": None, "reject": False}
    assert holm([]) == []
    assert holm([0.04])[0]["reject"] and not holm([0.04], alpha=0.01)[0]["reject"]


def test_paired_t_test_matches_the_interval_and_a_closed_form() -> None:
    # [1, 2, 3]: mean 2, sd 1, t = 2 sqrt(3); with 2 degrees of freedom the two-sided p is
    # 1 - t / sqrt(t^2 + 2) in closed form.
    t = 2 * math.sqrt(3)
    assert t_test_p([1.0, 2.0, 3.0]) == pytest.approx(1 - t / math.sqrt(t * t + 2))
    for values in ([1.0, 1.1, 1.2], [0.3, -0.2, 0.9], [2.0, 2.5, 1.0, 3.0], [-1.0, -1.3, -0.8]):
        assert (t_test_p(values) < 0.05) == t_interval(values)["significant"]
    assert t_test_p([0.5]) is None
    assert t_test_p([0.2, 0.2, 0.2]) == 0.0 and t_test_p([0.0, 0.0]) == 1.0
    # The normal p-value recovered from an interval: a mean 1.96 standard errors from 0.
    assert normal_p({"mean": 1.96, "low": 0.0, "high": 3.92}) == pytest.approx(0.05, abs=1e-4)
    assert normal_p({"mean": 0.3, "low": None, "high": None}) is None


# --------------------------------------------------------------------------- trend words


def test_trend_word_follows_the_sign_of_every_step() -> None:
    rising = F.trend([10.8, 12.9, 14.4])  # the committed R = 4 offset costs of seed 0
    assert rising["direction"] == "rising" and rising["label"] != "shrinking"
    assert rising["change"] == pytest.approx(14.4 / 10.8)
    # A rise smaller than the size factor is still a rise (seed 2: x1.20).
    small = F.trend([13.34, 14.90, 16.04])
    assert small["direction"] == "rising" and small["label"] == "flat"
    assert F.trend([0.333, 0.210, 0.162])["direction"] == "falling"
    assert F.trend([1.0, 0.9, 1.1])["direction"] == "mixed"
    assert F.trend([2.0, 2.0])["direction"] == "mixed"  # a zero step is neither
    # Signs, not ratios: a negative sequence falling in value is "falling" and has no ratio.
    negative = F.trend([-1.0, -2.0])
    assert negative["direction"] == "falling" and negative["change"] is None
    assert negative["label"] is None
    assert F.trend([None, 2.0]) is None
    # No rising sequence is ever called shrinking or falling.
    for k in range(1, 40):
        values = [0.1 * k * (i + 1) ** (k % 3 + 1) for i in range(4)]
        t = F.trend(values)
        assert t["direction"] == "rising" and t["label"] in ("flat", "growing")
        down = F.trend(values[::-1])
        assert down["direction"] == "falling" and down["label"] in ("flat", "shrinking")
    assert F.direction_count([rising, small, None]) == "rising in 2, undefined in 1 of 3 seeds"


def committed() -> dict[str, Any]:
    return json.loads(COMMITTED.read_text())


def test_report_words_follow_the_data_not_a_fixed_word() -> None:
    result = committed()
    result["findings"] = F.findings(result)
    rows = {r["key"]: r for r in result["findings"]["loop_trends"]["rows"]}
    assert rows["offset_cost"]["count"] == "rising in 3 of 3 seeds"
    assert rows["offset_cost_rel"]["count"] == "falling in 3 of 3 seeds"
    text = render_markdown(result, PLOTS, None)
    assert "shrinking" not in text
    assert "the offset cost Ω is rising in 3 of 3 seeds" in text
    assert "its relative value falls only because the state norm grows faster" in text

    # The same file with every seed's offset costs reversed reads the other way.
    flipped = committed()
    runs = F.seed_runs(flipped)
    for model in runs[4].values():
        per_loop = model["diagnostics"]["per_loop"]
        per_loop["offset_cost"] = [None, *per_loop["offset_cost"][1:][::-1]]
    flipped["findings"] = F.findings(flipped)
    text = render_markdown(flipped, PLOTS, None)
    assert "the offset cost Ω is falling in 3 of 3 seeds" in text
    assert "grows faster" not in text


def test_rule_of_thumb_is_not_stated_as_a_recommendation() -> None:
    result = committed()
    result["findings"] = F.findings(result)
    assert result["findings"]["loop_trends"]["erank_rule"] == {"0": 1, "1": 1, "2": 1}
    text = render_markdown(result, PLOTS, None)
    assert "Rule of thumb (add a loop" not in text
    assert "would stop at 1 loop(s) in every seed. This study does not test that rule" in text


# --------------------------------------------------------------------------- rankings


def study(diffs: dict[int, list[float]]) -> dict[str, Any]:
    """A three-seed study.json of R = 1, 2, 3 whose assembly loss of R in seed k is
    diffs[R][k] (R = 1 is 0 throughout)."""

    def model(r: int, k: int) -> dict[str, Any]:
        asm = diffs[r][k]
        per_loop = {"erank": [5.0 - i for i in range(r)], "step_size_rel": [9.0] * r}
        per_loop["offset_cost_rel"] = [None, *([0.5] * (r - 1))]
        return {
            "summary": {"heldout": {"loss": asm + 1.0, "asm_loss": asm}},
            "diagnostics": {"per_loop": per_loop},
        }

    return {
        "loops": [1, 2, 3],
        "seed_list": [0, 1, 2],
        "models": {str(r): model(r, 0) for r in (1, 2, 3)},
        "other_seeds": {str(r): {str(k): model(r, k) for k in (1, 2)} for r in (1, 2, 3)},
        "comparisons": [],
    }


def test_a_pair_that_does_not_survive_holm_is_not_a_ranking() -> None:
    # R = 2 and R = 3 lie above R = 1 in every seed, each with an uncorrected p of about
    # 0.041 (their 95% intervals exclude 0), and R = 2 vs 3 is undecided. Holm multiplies
    # the smallest of the three p-values by 3: 0.12, so no pair survives.
    fnd = F.findings(study({1: [0.0, 0.0, 0.0], 2: [0.3, 0.5, 0.65], 3: [0.35, 0.45, 0.7]}))
    pairs = {(p["from"], p["to"]): p for p in fnd["seed_pairs"]}
    for pair in ((1, 2), (1, 3)):
        assert pairs[pair]["p"] == pytest.approx(0.041, abs=1e-3)
        assert pairs[pair]["asm_loss"]["significant"] and pairs[pair]["uncorrected"] == "worse"
        assert not pairs[pair]["reject"] and pairs[pair]["p_holm"] > 0.05
        assert pairs[pair]["verdict"] == "not distinguishable with 3 seeds"
    assert fnd["ranking"] == [] and not fnd["best_asm_significant"]
    assert [(p["from"], p["to"]) for p in fnd["uncorrected_only"]] == [(1, 2), (1, 3)]
    line = fnd["summary_line"]
    assert line.startswith("no single best R") and "): none;" in line
    assert "R=1 < R=2" not in line and "R=1 < R=3" not in line
    assert "(R=1 vs R=2, R=1 vs R=3: interval excludes 0 only without the correction)" in line
    assert fnd["correction"] == {"method": "Holm", "family_alpha": 0.05}


def test_the_committed_study_ranks_only_what_survives_holm() -> None:
    """Recomputed from the committed raw data: with Holm over the six pairs only R = 1 < R = 3
    and R = 1 < R = 4 survive (hand check: paired t-tests with 2 degrees of freedom give
    p = 7.0e-5, 0.0078, 0.015, 0.023, 0.027, 0.18; Holm compares them with 0.05 / 6, / 5,
    / 4, ...: 0.015 > 0.0125 stops the procedure after two)."""
    result = committed()
    fnd = F.findings(result)
    assert {(x["lower"], x["higher"]) for x in fnd["ranking"]} == {(1, 3), (1, 4)}
    p = sorted(x["p"] for x in fnd["seed_pairs"])
    assert p == pytest.approx([7.0e-5, 0.0078, 0.0152, 0.0228, 0.0270, 0.1835], abs=2e-4)
    assert not fnd["best_asm_significant"] and fnd["summary_line"].startswith("no single best R")
    # Every step from one R to the next is undecided, yet loss rises with R in every seed:
    # Page's L over 3 seeds x 4 R takes its maximum, 90, exact p = (1/24)^3 one-sided.
    trend = fnd["trend"]
    assert trend["L"] == 90 and trend["method"] == "exact" and trend["direction"] == "rises"
    assert trend["p"] == pytest.approx(1 / 24**3) and trend["p_two"] == pytest.approx(2 / 24**3)
    assert fnd["shape"].startswith("rising with R by the trend test")
    assert "no single step from one R to the next is distinguishable" in fnd["shape"]
    assert "L = 90, p = 1.4e-04" in fnd["summary_line"]
    assert not fnd["paper_pattern"]
    result["findings"] = fnd
    text = render_markdown(result, PLOTS, None)
    assert "With Holm, only R=1 < R=3 and R=1 < R=4 survive." in text
    assert "no correction for multiple comparisons" not in text
    assert "| p | Holm p |" in text
