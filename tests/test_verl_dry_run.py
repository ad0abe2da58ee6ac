"""`recipes/verl/run_ppo.sh`'s dry run scores a real answer, the -O3 baseline of the first
row of the training parquet, through the sandbox, and stops the script before verl starts
unless that answer passes: with bubblewrap missing it fails loudly, in one line, instead of
letting every row score 0.0 as an excluded `infra_error` while training carries on.

verl itself is not installed here: a script that got past its dry run ends at
`python3 -m verl.trainer.main_ppo` with "No module named 'verl'", which is how these tests see
that it did (or did not) get there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from asmopt.adequacy import is_reward_fit
from asmopt.data.export import export_suite
from asmopt.programs import load_builtin_suite
from asmopt.reward.adapters import baseline_answer, dry_run_verl, first_parquet_row

pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "recipes" / "verl" / "run_ppo.sh"


@pytest.fixture(scope="module")
def train_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A verl parquet as `asmopt data export` writes it: the validation split (few rows)."""
    out = tmp_path_factory.mktemp("verl") / "train.parquet"
    export_suite(load_builtin_suite(), out, "verl-parquet", splits=("validation",))
    return out


def _python3_first(tmp: Path) -> str:
    """PATH with `python3` as this interpreter (its environment holds asmopt's
    dependencies, as verl's does; asmopt itself comes through PYTHONPATH)."""
    bin_dir = tmp / "python-bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python3.chmod(0o755)
    return os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])


def _path_without(tmp: Path, missing: str) -> str:
    """`_python3_first`'s PATH with every directory that holds `missing` replaced by a copy
    of it (links to its other entries) that does not."""
    parts = []
    for directory in _python3_first(tmp).split(os.pathsep):
        if not directory or not (Path(directory) / missing).exists():
            parts.append(directory)
            continue
        copy = tmp / f"without-{len(parts)}"
        copy.mkdir()
        for entry in Path(directory).iterdir():
            if entry.name != missing:
                (copy / entry.name).symlink_to(entry)
        parts.append(str(copy))
    return os.pathsep.join(parts)


def _run_script(train: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(ROOT / "src")}
    env["ASMOPT_TRAIN_PARQUET"] = str(train)
    env.pop("ASMOPT_UNSAFE_NO_SANDBOX", None)
    return subprocess.run(
        ["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=600
    )


def test_dry_run_scores_a_rows_baseline_through_the_sandbox(train_parquet: Path) -> None:
    row = first_parquet_row(str(train_parquet))
    out = dry_run_verl(str(train_parquet), reward="robust", measure="none")
    # The baseline itself: it builds and passes every test, and robust pays a copy 0.
    assert out["verdict"] == "pass" and out["identical"] == 1.0 and out["score"] == 0.0
    assert out["passed"] == out["total"] > 0 and out["excluded"] == 0.0
    # The same from the row as a dict, and in the diff form (a hunk that changes nothing).
    again = dry_run_verl(row, reward="robust", measure="none", edit_format="diff")
    assert again["verdict"] == "pass"
    truth = row["reward_model"]["ground_truth"]
    assert baseline_answer(truth, "diff").startswith("```diff\n@@ -1,1 +1,1 @@\n ")
    # Without a row: the built-in suite's first program fit for reward.
    assert dry_run_verl(reward="robust", measure="none")["verdict"] == "pass"
    assert any(is_reward_fit(p)[0] for p in load_builtin_suite().select())


def test_run_ppo_sh_passes_its_dry_run_then_starts_verl(
    train_parquet: Path, tmp_path: Path
) -> None:
    proc = _run_script(train_parquet, _python3_first(tmp_path))
    assert "reward dry run: pass" in proc.stdout, proc.stderr[-3000:]
    assert "No module named 'verl'" in proc.stderr  # it got as far as verl's main_ppo


def test_run_ppo_sh_fails_loudly_without_a_sandbox(train_parquet: Path, tmp_path: Path) -> None:
    proc = _run_script(train_parquet, _path_without(tmp_path, "bwrap"))
    assert proc.returncode != 0
    assert "No module named 'verl'" not in proc.stderr, "verl was started without a sandbox"
    # The script's last word is one line naming the failed answer and the fix (before it,
    # the reward service's own log of the grader error).
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("run_ppo.sh: reward dry run: "), proc.stderr[-3000:]
    assert "infra_error" in last and "bubblewrap" in last


def test_run_ppo_sh_names_a_missing_training_file(tmp_path: Path) -> None:
    proc = _run_script(tmp_path / "nope.parquet", _python3_first(tmp_path))
    assert proc.returncode != 0 and "ASMOPT_TRAIN_PARQUET" in proc.stderr
    assert "No module named 'verl'" not in proc.stderr
