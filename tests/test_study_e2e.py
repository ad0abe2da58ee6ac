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


def test_study_with_three_seeds_aggregates_resumes_and_redraws(
    tmp_path: Path, sandbox: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--seeds 0 1 2`: every R once per seed, in its own resumable run directory; the
    report aggregates over seeds and is redrawn identically from its raw data."""
    pytest.importorskip("matplotlib")
    import torch

    from asmopt.study import lm, loops
    from asmopt.study.config import load_study_config
    from asmopt.study.data import prepare

    out = tmp_path / "run"
    report = tmp_path / "docs" / "seeds.md"
    common = ["--config", "toy", "--output-dir", str(out), "--no-progress"]
    study_args = ["study", "loops", *common, "--loops", "1", "2", "--seeds", "0", "1", "2"]
    assert run([*study_args, "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    assert "| 2 | 2 |" in printed  # one row per (R, seed)

    study = json.loads((out / "study.json").read_text())
    assert study["seeds"] == 3 and study["seed_list"] == [0, 1, 2]
    assert set(study["models"]) == {"1", "2"}
    assert {r: set(v) for r, v in study["other_seeds"].items()} == {
        "1": {"1", "2"},
        "2": {"1", "2"},
    }
    names = sorted(p.name for p in (out / "models").iterdir())
    assert names == ["R1", "R1-seed1", "R1-seed2", "R2", "R2-seed1", "R2-seed2"]
    runs = loops.seed_runs(study)
    # Another seed is another training run: other weights and data, so another loss.
    assert len({runs[2][s]["summary"]["heldout"]["loss"] for s in (0, 1, 2)}) == 3

    fnd = study["findings"]
    assert fnd["seeds"] == 3 and fnd["can_rank"]
    agg = fnd["across_seeds"]
    assert agg["per_r"]["1"]["asm_loss"]["n"] == 3
    assert agg["per_r"]["1"]["asm_loss"]["low"] is not None
    (pair,) = fnd["seed_pairs"]
    expected = [
        runs[2][s]["summary"]["heldout"]["asm_loss"] - runs[1][s]["summary"]["heldout"]["asm_loss"]
        for s in (0, 1, 2)
    ]
    assert pair["asm_loss"]["values"] == pytest.approx(expected)
    assert pair["verdict"] in ("better", "worse", "not distinguishable with 3 seeds")
    assert (pair["verdict"] != "not distinguishable with 3 seeds") == pair["asm_loss"][
        "significant"
    ]
    text = report.read_text()
    assert "Across seeds (3 training runs per R" in text
    assert "3 training runs per R with seeds 0, 1, 2" in text

    # Within a seed every R starts from the same weights and sees the same tokens; another
    # seed changes both.
    cfg = load_study_config("toy", [f"output_dir={out}"])
    prepared = prepare(cfg, progress=False)
    one = lm.seed_config(cfg, 1)
    assert lm.seed_config(cfg, cfg.train.init_seed) == cfg
    w1 = lm.build_model(one, 1, prepared.tokenizer).state_dict()
    w2 = lm.build_model(one, 2, prepared.tokenizer).state_dict()
    w0 = lm.build_model(cfg, 1, prepared.tokenizer).state_dict()
    shared = [k for k in w1 if k in w2 and "plt_gate" not in k]
    assert all(torch.equal(w1[k], w2[k]) for k in shared)
    assert not torch.equal(w0["model.embed_tokens.weight"], w1["model.embed_tokens.weight"])
    batch0, _ = lm.pretrain_batch(prepared.train, 0, cfg.train, 2)
    batch1, _ = lm.pretrain_batch(prepared.train, 0, one.train, 2)
    assert not torch.equal(batch0, batch1)

    # `study report` redraws the same page from study.json, and again from the copy
    # written beside the report.
    first = tmp_path / "a" / "seeds.md"
    assert run(["study", "report", str(out / "study.json"), "-o", str(first)]) == 0
    assert first.read_text() == text
    second = tmp_path / "b" / "seeds.md"
    raw = tmp_path / "a" / "seeds_study.json"
    assert run(["study", "report", str(raw), "-o", str(second)]) == 0
    assert second.read_text() == text
    capsys.readouterr()

    # Resumption per (R, seed): a model that lost its final/ resumes from its checkpoint, a
    # model removed entirely is retrained; every other (R, seed) is reused as it is.
    import shutil

    def summary_file(r: int, seed: int) -> Path:
        return lm.model_dir(cfg, r, loops.seed_dir(cfg, seed)) / "final" / lm.SUMMARY_FILE

    kept = ((1, 0), (1, 1), (2, 0), (2, 2))
    written = {key: summary_file(*key).stat().st_mtime_ns for key in kept}
    shutil.rmtree(out / "models" / "R2-seed1" / "final")
    shutil.rmtree(out / "models" / "R1-seed2")
    assert run([*study_args, "--json"]) == 0
    capsys.readouterr()
    again = loops.seed_runs(json.loads((out / "study.json").read_text()))
    for key in kept:
        assert summary_file(*key).stat().st_mtime_ns == written[key]
        assert again[key[0]][key[1]]["summary"] == runs[key[0]][key[1]]["summary"]
    for r, seed in ((2, 1), (1, 2)):
        assert summary_file(r, seed).is_file()
        # Resumed or retrained with the same seed: the same model as before.
        new, old = again[r][seed]["summary"]["heldout"], runs[r][seed]["summary"]["heldout"]
        assert new["loss"] == pytest.approx(old["loss"], abs=1e-5)
