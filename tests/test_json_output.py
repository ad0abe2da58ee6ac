"""`--json` output is JSON and nothing else: every command's stdout parses as one JSON
document, including first runs that build something on the way (a results store, a tiny
model, a study's corpus and tokenizer), whose notices go to stderr (the library logs them;
the command shows them there) and never into the JSON.

Each command runs as a user runs it: `python -m asmopt.cli ...` in its own interpreter, so
stdout is exactly what the command wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def json_of(argv: list[str], timeout: float = 600, **env: str) -> tuple[Any, str]:
    """The command's stdout as JSON (the test fails naming the command when it is not),
    and its stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "asmopt.cli", *argv, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env},
        timeout=timeout,
        cwd=ROOT,
    )
    assert proc.returncode == 0, (argv, proc.stderr[-3000:])
    try:
        return json.loads(proc.stdout), proc.stderr
    except json.JSONDecodeError as exc:
        raise AssertionError(f"`asmopt {' '.join(argv)} --json` wrote no JSON ({exc}):\n"
                             f"{proc.stdout[:2000]}") from None  # fmt: skip


@pytest.mark.slow
def test_json_commands_print_json_only(tmp_path: Path) -> None:
    from asmopt.programs import load_builtin_suite

    program = load_builtin_suite().select()[0].id
    listed, _ = json_of(["suite", "list"])
    assert program in json.dumps(listed)
    json_of(["suite", "show", program])
    json_of(["doctor"])
    rewards, _ = json_of(["train", "rewards"])
    assert "execution" in rewards
    # A first run: the results store is created, the identity answer judged in the sandbox.
    run = tmp_path / "run"
    done, _ = json_of(["eval", "--only", program, "--measure", "none", "--run-dir", str(run)])
    assert done["summary"]["programs"] == 1 and done["results"][0]["verdict"] == "pass"
    shown, _ = json_of(["results", "show", str(run)])
    assert shown


@pytest.mark.ml
@pytest.mark.slow  # whole first runs of a trainer: make test-slow
def test_train_ppo_json_on_a_first_run_that_builds_its_model(tmp_path: Path) -> None:
    """`model: tiny:llama` builds the model into the output directory on the first run; the
    resolved config, the plan and the model's loading go to stderr."""
    out = tmp_path / "ppo"
    sets = ["total_steps=1", "eval_every=0", "eval_at_start=false", "save_every=0"]
    argv = ["train", "ppo", "--config", "ppo_tiny", "--output-dir", str(out)]
    summary, stderr = json_of([*argv, *(a for s in sets for a in ("--set", s))])
    assert summary["total_steps"] == 1 and (out / "init-model").is_dir()
    assert "PPO config:" in stderr  # the trainer's notices: on stderr, not in the JSON


@pytest.mark.ml
@pytest.mark.slow  # whole first runs of a trainer: make test-slow
def test_train_lm_json_on_a_first_run_that_builds_everything(tmp_path: Path) -> None:
    """`asmopt train lm --json` on a fresh output directory and a fresh cache: the corpus
    is compiled, the tokenizer trained and the corpus tokenized before the model trains;
    the progress lines (which went to stdout, into the JSON) are on stderr, stdout is the
    summary alone."""
    out = tmp_path / "lm"
    argv = ["train", "lm", "--config", "toy", "--loops", "1", "--output-dir", str(out)]
    summary, stderr = json_of(argv, timeout=1800, ASMOPT_CACHE_DIR=str(tmp_path / "cache"))
    assert summary["loops"] == 1
    assert "tokenizer: training BPE" in stderr and "data: tokenizing the corpus" in stderr
