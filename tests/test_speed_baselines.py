"""Baselines and statistics of the speed-learning report (bench/speed_learning/): the rule
covers every call site of the family and is correct, best-of-N ranks by a measurement,
the kernel template is the unit of every interval and test, and Holm corrects the declared
family of comparisons."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from asmopt.programs import load_suite
from asmopt.reward.service import ScoreConfig, score_one
from asmopt.toolchain import DEFAULT_O3_FLAGS, Toolchain

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    """The family, its baselines and statistics, and the run script, imported from bench/."""
    sys.path.insert(0, str(BENCH))
    try:
        yield {
            name: importlib.import_module(module)
            for name, module in (
                ("family", "speed_learning.family"),
                ("baselines", "speed_learning.baselines"),
                ("stats", "speed_learning.stats"),
                ("run", "speed_learning_run"),
            )
        }
    finally:
        sys.path.remove(str(BENCH))


def test_rule_replaces_every_reference_to_the_helper(
    bench, tmp_path: Path, toolchain: Toolchain
) -> None:  # type: ignore[no-untyped-def]
    """Every use of `__popcountdi2` in the family's baselines is a plain `call` line, so the
    substitution rule reaches every call site (no tail jump or indirect call is left; the
    `.globl` declaration gcc writes stays, harmless without a use)."""
    family, baselines = bench["family"], bench["baselines"]
    suite = load_suite(family.write_suite(tmp_path / "suite", per_kernel=1, seed=0))
    for program in suite:
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)

        def uses(text: str) -> list[str]:
            return [
                line
                for line in text.splitlines()
                if "__popcountdi2" in line and not line.lstrip().startswith(".globl")
            ]

        assert uses(baseline)
        assert all(line.rstrip() == family.POPCOUNT_CALL for line in uses(baseline))
        ruled = baselines.popcnt_rule(baseline)
        assert uses(ruled) == []
        assert ruled.splitlines() == family.rewrite(baseline, "fast").splitlines()


def test_rule_answer_passes_and_retires_fewer_instructions(
    bench, tmp_path: Path, toolchain: Toolchain
) -> None:  # type: ignore[no-untyped-def]
    family, baselines = bench["family"], bench["baselines"]
    suite = load_suite(family.write_suite(tmp_path / "suite", per_kernel=1, seed=2))
    program = suite.get("stream_mix_0")
    baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
    answer = baselines.rule_answer(baseline)
    assert (
        baselines.applied(baseline, answer).splitlines()
        == baselines.popcnt_rule(baseline).splitlines()
    )
    config = ScoreConfig(reward="robust", measure="instructions", edit_format="diff")
    result = score_one(program, answer, None, config)
    assert result.verdict == "pass"
    assert result.speedup is not None and result.speedup > 1.5
    with pytest.raises(ValueError):
        baselines.rule_answer(baselines.popcnt_rule(baseline))


def test_best_of_ranks_by_the_named_measurement(bench) -> None:  # type: ignore[no-untyped-def]
    best_of = bench["baselines"].best_of
    failed = {"reward": None, "raw_speedup": None}
    rows = [
        {"id": 0, "select": failed, "score": {"reward": 0.9, "raw_speedup": 2.4}},
        {
            "id": 1,
            "select": {"reward": 0.0, "raw_speedup": 1.004},
            "score": {"reward": 0.0, "raw_speedup": 1.0},
        },
        {"id": 2, "select": {"reward": 0.0, "raw_speedup": 1.001}, "score": failed},
        {"id": 3, "select": {"reward": 0.0, "raw_speedup": 1.004}, "score": failed},
    ]
    assert best_of(rows, "select")["id"] == 1  # best reward, then raw speedup, then earliest
    assert best_of(rows, "score")["id"] == 0
    assert best_of([rows[2], rows[3]], "score")["id"] == 2  # all failed: the first sample


def test_measurement_log_resumes(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    log_type = bench["baselines"].MeasurementLog
    log = log_type(tmp_path / "m" / "score.jsonl")
    log.add("p|abc", {"verdict": "pass", "speedup": 1.5})
    again = log_type(tmp_path / "m" / "score.jsonl")
    assert again.rows["p|abc"]["speedup"] == 1.5
    measured = []
    bench["baselines"].measure_pass([(None, "x", "p|abc")], again, measured.append)
    assert measured == []  # nothing left to measure


def test_template_is_the_unit_of_every_interval(bench) -> None:  # type: ignore[no-untyped-def]
    stats = bench["stats"]
    values = {"a0": 0.0, "a1": 0.0, "b0": 1.0, "b1": 1.0}
    template_of = {"a0": "a", "a1": "a", "b0": "b", "b1": "b"}
    means = stats.template_means(values, template_of)
    assert means == {"a": 0.0, "b": 1.0}
    # Two templates, not four programs: one degree of freedom (t quantile 12.71).
    summary = stats.t_summary(list(means.values()))
    assert summary["mean"] == pytest.approx(0.5) and summary["k"] == 2
    assert summary["low"] == pytest.approx(0.5 - 12.7062047 * 0.5)  # sd 0.707, se 0.5


def test_holm_adjusts_in_step_down_order(bench) -> None:  # type: ignore[no-untyped-def]
    holm = bench["stats"].holm
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.6, 0.6]) == pytest.approx([1.0, 1.0])


def test_comparisons_test_the_declared_family_over_templates(bench) -> None:  # type: ignore[no-untyped-def]
    run = bench["run"]

    def answers(speedups: list[float]) -> list[dict]:
        return [
            {
                "program": f"k{i}_0",
                "kernel": f"k{i}",
                "verdict": "pass",
                "speedup": s,
                "low": s,
                "high": s,
                "edit": "fast",
            }
            for i, s in enumerate(speedups)
        ]

    rows = {
        "rule": answers([2.0] * 8),
        "sft": answers([1.0] * 8),
        run.BEST_OF: answers([1.5] * 8),
        "timed-s0": answers([1.0, 2.0, 2.0, 2.0, 1.8, 1.8, 1.8, 1.8]),
        "timed-s1": answers([1.0, 1.6, 1.6, 1.6, 1.8, 1.8, 1.8, 1.8]),
        "control-s0": answers([1.2] * 8),
    }
    plan = run.comparison_plan(rows, [0, 1], [0])
    assert [p[1:] for p in plan] == [
        (["timed-s0", "timed-s1"], ["rule"]),
        (["timed-s0", "timed-s1"], [run.BEST_OF]),
        (["timed-s0", "timed-s1"], ["control-s0"]),
    ]
    comps = run.comparisons(rows, plan)
    # Seeds averaged per template first: templates 1-3 at 1.8, template 0 at 1.0.
    assert comps[0]["diffs"] == pytest.approx([-1.0, -0.2, -0.2, -0.2, -0.2, -0.2, -0.2, -0.2])
    assert comps[0]["below"] == 8 and comps[0]["p"] == pytest.approx(2 / 256)
    assert comps[0]["holm_p"] == pytest.approx(3 * 2 / 256) and comps[0]["holds"]
    # Without a control the third comparison is against the warm start.
    del rows["control-s0"]
    plan = run.comparison_plan(rows, [0, 1], [0])
    assert plan[2][2] == ["sft"]
