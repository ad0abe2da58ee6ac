"""PPO with the real execution reward: rows name built-in programs, completions are built and
run in the sandbox, and the trainer logs the share of each verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asmopt.cli import main
from asmopt.programs import load_builtin_suite


@pytest.mark.ml
@pytest.mark.usefixtures("one_thread")
def test_one_ppo_step_with_the_execution_reward(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = [p.id for p in load_builtin_suite().select(split="train")[:2]]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(json.dumps({"prompt": f"Optimize {i}:", "program_id": i}) + "\n" for i in ids)
    )
    out = tmp_path / "run"
    options = json.dumps({"measure": "none", "workers": 1, "backend": "thread"})
    argv = [
        "train",
        "ppo",
        "--config",
        "ppo_tiny",
        "--set",
        "model=tiny:plt",
        "--set",
        f"train_data={rows}",
        "--set",
        f"val_data={rows}",
        "--set",
        "reward=execution",
        "--set",
        f"reward_options={options}",
        "--set",
        "total_steps=1",
        "--set",
        "prompts_per_step=2",
        "--set",
        "rollout_batch_size=2",
        "--set",
        "mini_batch_size=2",
        "--set",
        "micro_batch_size=2",
        "--set",
        "eval_every=0",
        "--set",
        "save_every=0",
        "--output-dir",
        str(out),
        "--no-progress",
    ]
    # In this process (the command line is what a user types; a subprocess would only add
    # the interpreter's and torch's start-up).
    assert main(argv) == 0, capsys.readouterr().err[-2000:]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [m for m in metrics if m.get("step") == 1 and "reward/mean" in m]
    assert train, metrics
    # A random tiny model writes no assembly: every sample is an extraction error (-1 under
    # the robust reward), and the verdict shares are logged.
    assert train[0]["reward/mean"] == -1.0
    assert any("extraction_error" in key for key in train[0])
