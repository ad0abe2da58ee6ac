"""`asmopt study loops` end to end on the toy config: real gcc, real training, real report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

# Trains three looped models and a tokenizer and runs the study's task and report: the
# parts are tested one by one in test_study_lm.py and test_study_diagnostics.py.
pytestmark = [pytest.mark.ml, pytest.mark.slow]


def parser() -> argparse.ArgumentParser:
    """The study and train groups on a parser of our own (as `asmopt` would register them)."""
    from asmopt.cli import study as study_cli
    from asmopt.cli import train as train_cli
    from asmopt.cli.common import common_parser

    top = argparse.ArgumentParser(prog="asmopt")
    sub = top.add_subparsers(dest="command", required=True)
    study_cli.register(sub, common_parser())
    train_cli.register(sub, common_parser())
    return top


def run(argv: list[str]) -> int:
    """As if typed as `asmopt ARGV...` (the report records the command line)."""
    import sys
    from unittest import mock

    with mock.patch.object(sys, "argv", ["asmopt", *argv]):
        args = parser().parse_args(argv)
        return int(args.func(args) or 0)


def test_study_runs_end_to_end(
    tmp_path: Path, sandbox: object, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "run"
    report = tmp_path / "docs" / "loops_toy.md"
    common = ["--config", "toy", "--output-dir", str(out), "--no-progress"]
    assert run(["study", "loops", *common, "--loops", "1", "2", "3", "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    # One training run per R: the reading states losses, not a ranking of R.
    assert "no ranking of R is claimed" in printed

    text = report.read_text()
    for heading in ("## Result", "### R = 1", "### R = 2", "### R = 3", "## Plots"):
        assert heading in text
    assert "asmopt study loops --config toy" in text  # the command is recorded as typed
    pngs = sorted(report.parent.glob("loops_toy_*.png"))
    assert len(pngs) == 6
    assert all(0 < p.stat().st_size < 200_000 for p in pngs)

    study = json.loads((out / "study.json").read_text())
    assert study["loops"] == [1, 2, 3]
    assert set(study["models"]) == {"1", "2", "3"}
    three = study["models"]["3"]
    assert three["diagnostics"]["loops"] == 3
    assert three["diagnostics"]["per_loop"]["gate"][1] is not None
    assert three["task"]["programs"] == 1
    assert three["task"]["samples"][0]["stage"] in ("assemble", "link", "ok")
    assert [c["from"] for c in study["comparisons"]] == [1, 2]
    # Matched settings: every model saw the same number of tokens in the same steps.
    seen = {m["summary"]["tokens_seen"] for m in study["models"].values()}
    assert len(seen) == 1

    # `train lm` reuses the finished model; a rerun of the study reuses everything.
    assert run(["train", "lm", *common, "--loops", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["loops"] == 2
    assert summary["train_seconds"] == study["models"]["2"]["summary"]["train_seconds"]
    assert run(["study", "loops", *common, "--loops", "1", "2", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["findings"]["best_asm_loss"] in (1, 2, 3)

    # Redraw with a discussion; diagnose one model from the command line.
    notes = tmp_path / "notes.md"
    notes.write_text("Hand-written reading of the numbers.\n")
    redrawn = tmp_path / "redrawn.md"
    assert (
        run(["study", "report", str(out / "study.json"), "-o", str(redrawn), "--notes", str(notes)])
        == 0
    )
    assert "## Discussion" in redrawn.read_text()
    assert "wrote" in capsys.readouterr().out
    # The raw data is written beside every report, and redrawing from that copy reproduces
    # the report exactly.
    raw = tmp_path / "redrawn_study.json"
    assert json.loads(raw.read_text()) == json.loads((out / "study.json").read_text())
    again = tmp_path / "again" / "redrawn.md"
    assert run(["study", "report", str(raw), "-o", str(again), "--notes", str(notes)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert again.read_text() == redrawn.read_text()
    assert "redrawn_study.json" in again.read_text()
    final = out / "models" / "R2" / "final"
    assert run(["study", "diagnose", str(final), *common, "--json"]) == 0
    diag = json.loads(capsys.readouterr().out)
    assert diag["loops"] == 2 and diag["per_loop"]["output_kl"][1] is not None
