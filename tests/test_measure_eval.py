"""Evaluation with measurement: copies are not timed, real edits are, failures are caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from waste_program import WastePolicy, waste_program

from asmopt.evaluate import MeasureOptions, SampleOutcome
from asmopt.judge import Verdict
from asmopt.measure.speedup import MeasureMode, MeasureStatus
from asmopt.measure.timing import TimingConfig
from asmopt.programs.model import Program, TestCase
from asmopt.run import RunHooks, evaluate_programs, summarize
from asmopt.sandbox import Sandbox
from asmopt.store import ResultStore
from asmopt.toolchain import Toolchain


def _program() -> Program:
    return waste_program(
        TestCase("t1", b"1000000\n", b"1999998\n"),
        TestCase("t2", b"1500000\n", b"2999999\n"),
    )


def _slowed(asm: str, iterations: int) -> str:
    """The same program with a spin loop of `iterations` inserted at the start of main."""
    spin = f"main:\n\tmovq\t${iterations}, %r11\n.Lspin_extra:\n\tdecq\t%r11\n\tjnz\t.Lspin_extra\n"
    return asm.replace("main:\n", spin, 1)


class VariantPolicy(WastePolicy):
    """copy (with comments), faster (no wasted loop), slower (extra spin), wrong output."""

    name = "variants"

    def answers(self, base: str, faster: str) -> list[str]:
        wrong = base.replace("$7", "$5", 1) if "$7" in base else base.replace("ret", "ud2", 1)
        return [
            base.replace("\tret\n", "\tret # the end\n"),
            faster,
            _slowed(base, 6_000_000),
            wrong,
        ]


@pytest.fixture(scope="module")
def timed(
    toolchain: Toolchain, sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> list[SampleOutcome]:
    run_dir = tmp_path_factory.mktemp("run")
    cfg = TimingConfig(min_pairs=3, max_pairs=20, budget_s=10)
    options = MeasureOptions(mode=MeasureMode.TIME, timing=cfg)
    with ResultStore(run_dir) as store:
        store.begin_run({"suite": "t", "policy": "variants", "measure": "time"}, {})
        outcomes = evaluate_programs(
            [_program()],
            VariantPolicy(toolchain),
            toolchain,
            sandbox,
            samples=4,
            jobs=2,
            progress=False,
            measure=options,
            hooks=RunHooks(store=store),
        )
    return outcomes


def test_copy_is_flagged_and_not_timed(timed: list[SampleOutcome]) -> None:
    copy = timed[0]
    assert copy.is_copy and copy.check.correct
    assert copy.check.speedup is not None and copy.check.speedup.status == MeasureStatus.COPY
    assert copy.check.speedup.ratio == 1.0


def test_faster_and_slower_answers_are_measured(timed: list[SampleOutcome]) -> None:
    fast, slow = timed[1].check.speedup, timed[2].check.speedup
    assert fast is not None and slow is not None
    assert fast.status == slow.status == MeasureStatus.MEASURED
    assert fast.ratio > 1.15 and fast.significantly_faster
    assert slow.ratio < 0.95 and slow.significantly_slower
    assert [t.test for t in fast.tests] == ["t1", "t2"]
    # Per-test speedups are stored once, in the answer's speedup record, not per verdict.
    assert not hasattr(timed[1].check.tests[0], "speedup")


def test_wrong_answer_is_not_timed(timed: list[SampleOutcome]) -> None:
    wrong = timed[3]
    assert wrong.check.verdict.is_candidate_failure and wrong.check.speedup is None


def test_summary_has_reference_and_strict_metrics(timed: list[SampleOutcome]) -> None:
    m = summarize(timed)["metrics"]
    assert m["strict"]["copy_rate"] == pytest.approx(0.25)
    # A strict win needs a reliable measurement (a loaded machine can flag the fast one).
    fast = timed[1].check.speedup
    assert fast is not None
    assert m["strict"]["significantly_faster"] == pytest.approx(0.25 if fast.reliable else 0.0)
    assert m["strict"]["significantly_slower"] == pytest.approx(0.25)
    assert m["reference"]["pass_rate"] == pytest.approx(0.75)
    assert m["reference"]["speedup"] > 1.0


def test_instruction_mode_is_exact(toolchain: Toolchain, sandbox: Sandbox) -> None:
    pytest.importorskip("asmopt.measure.valgrind")
    import shutil

    if shutil.which("valgrind") is None:
        pytest.skip("valgrind missing")
    outcomes = evaluate_programs(
        [_program()],
        VariantPolicy(toolchain),
        toolchain,
        sandbox,
        samples=3,
        progress=False,
        measure=MeasureOptions(mode=MeasureMode.INSTRUCTIONS),
    )
    copy, fast, slow = (o.check.speedup for o in outcomes)
    assert copy is not None and copy.status == MeasureStatus.COPY
    assert fast is not None and fast.ratio > 1.15 and fast.low == fast.ratio
    assert slow is not None and slow.ratio < 1.0
    assert outcomes[0].check.verdict == Verdict.PASS


def test_cli_eval_report_and_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from asmopt.cli import main

    run = tmp_path / "r"
    args = ["eval", "--policy", "identity", "--only", "gcd_pairs", "--run-dir", str(run)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "copies of baseline    100.0%" in out and "test pass         100.0%" in out
    assert main([*args, "--json"]) == 0
    assert '"resumed": 1' in capsys.readouterr().out
    assert main(["results", "show", str(run)]) == 0
    assert main(["results", "compare", str(run), str(run)]) == 0
    assert main(["results", "export", str(run), "--format", "jsonl"]) == 0
    assert (run / "results.jsonl").exists()
    assert main(["report", str(run)]) == 0
    assert "gcd_pairs" in (run / "report.html").read_text()
    assert (
        main(
            [
                "eval",
                "--policy",
                "identity",
                "--only",
                "gcd_pairs",
                "--run-dir",
                str(run),
                "--measure",
                "none",
            ]
        )
        == 2
    )  # a different measurement in the same run dir
