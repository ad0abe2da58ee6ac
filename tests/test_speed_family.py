"""The popcount task family of the speed-learning run (bench/speed_learning/): its programs
really have the slow spot, the fast edit is correct and does less work, the wrong edit is
caught by the tests, and the run's answer classifier names each edit."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from asmopt.programs import load_suite
from asmopt.reward.service import ScoreConfig, score_one
from asmopt.toolchain import DEFAULT_O3_FLAGS, Toolchain
from asmopt.train.data import fenced_diff

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def modules():  # type: ignore[no-untyped-def]
    """The family generator and the run script, imported from bench/."""
    sys.path.insert(0, str(BENCH))
    try:
        yield (
            importlib.import_module("speed_learning.family"),
            importlib.import_module("speed_learning_run"),
        )
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def family(modules):  # type: ignore[no-untyped-def]
    return modules[0]


@pytest.fixture(scope="module")
def run_script(modules):  # type: ignore[no-untyped-def]
    return modules[1]


def test_generation_is_deterministic_and_splits_are_disjoint(family) -> None:  # type: ignore[no-untyped-def]
    a, b = family.generate(seed=3), family.generate(seed=3)
    assert [p.source for p in a] == [p.source for p in b]
    assert [p.source for p in family.generate(seed=4)] != [p.source for p in a]
    splits = family.assign_splits(a, seed=3)
    assert set(splits) == {p.id for p in a}
    for kernel in family.KERNELS:
        mine = [splits[p.id] for p in a if p.kernel == kernel]
        assert mine.count("train") == 4 and mine.count("validation") == 1
        assert mine.count("test") == 2


def test_written_suite_loads_and_every_baseline_calls_popcountdi2(
    family,
    tmp_path: Path,
    toolchain: Toolchain,  # type: ignore[no-untyped-def]
) -> None:
    dest = family.write_suite(tmp_path / "suite", per_kernel=1, seed=0)
    suite = load_suite(dest)
    assert len(suite) == len(family.KERNELS)
    meta = json.loads((dest / "suite.json").read_text())
    assert {p["split"] for p in meta["programs"]} <= {"train", "validation", "test"}
    for program in suite:
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        calls = sum(line.rstrip() == family.POPCOUNT_CALL for line in baseline.splitlines())
        assert 1 <= calls <= 3, program.id
    with pytest.raises(FileExistsError):
        family.write_suite(dest, per_kernel=1)
    # No answer can be precomputed: every timed class carries 64 bits, so each program is
    # fit for the reward the learning runs pay (asmopt.entropy).
    from asmopt.adequacy import is_reward_fit

    for program in suite:
        fit, why = is_reward_fit(program)
        assert fit, (program.id, why)


def test_fast_edit_passes_with_fewer_instructions_wrong_edit_fails(
    family,
    run_script,
    tmp_path: Path,
    toolchain: Toolchain,  # type: ignore[no-untyped-def]
) -> None:
    suite = load_suite(family.write_suite(tmp_path / "suite", per_kernel=1, seed=1))
    program = suite.get("product_counts_0")
    baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
    config = ScoreConfig(reward="robust", measure="instructions", edit_format="diff")
    verdicts = {}
    for edit in ("fast", "wrong", "align"):
        target = family.rewrite(baseline, edit)
        answer = fenced_diff(baseline, target, 0)
        assert answer is not None
        result = score_one(program, answer, None, config)
        verdicts[edit] = result
        assert run_script.classify(baseline, target) == edit
    assert verdicts["fast"].verdict == "pass"
    # Instruction counts are deterministic: popcnt retires far fewer than libgcc's routine.
    assert verdicts["fast"].speedup is not None and verdicts["fast"].speedup > 1.5
    assert verdicts["fast"].reward is not None and verdicts["fast"].reward > 0
    assert verdicts["wrong"].verdict == "wrong_output"
    assert verdicts["align"].verdict == "pass"
    assert run_script.classify(baseline, None) == "none"
    assert run_script.classify(baseline, baseline.replace("\tret", "\tnop\n\tret", 1)) == "other"


def test_held_out_summary_counts_failures_as_baseline(run_script) -> None:  # type: ignore[no-untyped-def]
    answers = [
        {
            "program": "p",
            "verdict": "pass",
            "speedup": 3.0,
            "low": 2.9,
            "high": 3.1,
            "edit": "fast",
        },
        {
            "program": "p",
            "verdict": "wrong_output",
            "speedup": None,
            "low": None,
            "high": None,
            "edit": "wrong",
        },
        {
            "program": "q",
            "verdict": "pass",
            "speedup": 1.0,
            "low": 0.99,
            "high": 1.01,
            "edit": "align",
        },
    ]
    s = run_script.summarize(answers)
    # program means: p = (3 + 1) / 2 = 2, q = 1 -> 1.5
    assert s["mean_speedup"] == pytest.approx(1.5)
    assert s["low"] <= 1.5 <= s["high"]
    assert s["faster_rate"] == pytest.approx(1 / 3)
    assert s["fast_share"] == pytest.approx(1 / 3)
    gain = run_script.paired_gain(answers, [{**a, "verdict": "wrong_output"} for a in answers])
    # One template per program here: p gains (2 - 1), q gains 0; mean over templates 0.5.
    assert gain["gain"] == pytest.approx(0.5) and gain["diffs"] == pytest.approx([1.0, 0.0])


def test_discovery_warm_start_is_never_shown_the_fast_edit(  # type: ignore[no-untyped-def]
    family, run_script, tmp_path: Path
) -> None:
    suite = family.write_suite(tmp_path / "suite", per_kernel=1, seed=0)
    edits = run_script.VARIANT_EDITS["discovery"]
    dest = run_script.sft_rows(suite, "train", tmp_path / "data" / "sft_train.jsonl", edits)
    rows = [json.loads(line) for line in dest.read_text().splitlines()]
    assert rows and {r["edit"] for r in rows} == {"align", "wrong"}
    assert not any("popcntq" in r["completion"] for r in rows)
    summary = run_script.warm_start_data(tmp_path)["train"]
    assert summary["rows"] == len(rows) and summary["rows_with_popcntq"] == 0


def test_exploration_rule_takes_the_hottest_temperature_that_still_applies(run_script) -> None:  # type: ignore[no-untyped-def]
    pick = run_script.exploration.pick
    trials = [
        {"temperature": 0.6, "applied_share": 0.9},
        {"temperature": 0.8, "applied_share": 0.5},
        {"temperature": 1.0, "applied_share": 0.2},
    ]
    assert pick(trials) == 0.8
    assert pick([{**t, "applied_share": 0.1} for t in trials]) == 0.6
