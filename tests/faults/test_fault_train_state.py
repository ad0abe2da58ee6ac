"""Damaged or full training state (docs/faults.md): a checkpoint or model file that cannot
be used is one line naming the file, what is wrong and the way out; a checkpoint write that
fails (a full disk, an error while serialising) leaves no temporary directory behind.

A tiny PPO run and a tiny SFT run (real random models from asmopt.train.tiny) are trained
once per module; every test damages a copy of one and runs `asmopt train` on it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from faultkit import env, error_line, run_asmopt

# Each test trains a tiny model for real (a checkpoint to damage, a disk to fill): minutes
# in all, so they run with `make test-slow`.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("yaml")

from asmopt.train.checkpoint import find_checkpoint, save_checkpoint  # noqa: E402

BWRAP = shutil.which("bwrap")

PPO_YAML = """\
model: tiny:llama
device: cpu
num_threads: 1
train_seed: 0
train_data: text-task:train
val_data: null
reward: text-task
prompts_per_step: 4
max_prompt_len: 128
max_response_len: 4
temperature: 1.0
rollout_batch_size: 4
mini_batch_size: 4
micro_batch_size: 4
total_steps: 2
save_every: 1
keep_checkpoints: 3
tensorboard: false
save_final_model: false
"""

SFT_YAML = """\
model: tiny:llama
device: cpu
num_threads: 1
train_data: text-task:train
val_data: null
max_seq_len: 256
batch_size: 4
micro_batch_size: 4
total_steps: 2
save_every: 1
tensorboard: false
save_final_model: false
"""


def _train(kind: str, config: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_asmopt(
        "train", kind, "--config", str(config), "--output-dir", str(out), "--no-progress", *extra
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """kind -> (config file, a finished two-step run with checkpoints at steps 1 and 2)."""
    base = tmp_path_factory.mktemp("train-state")
    out: dict[str, tuple[Path, Path]] = {}
    for kind, text in (("ppo", PPO_YAML), ("sft", SFT_YAML)):
        config = base / f"{kind}.yaml"
        config.write_text(text)
        proc = _train(kind, config, base / kind)
        assert proc.returncode == 0, proc.stderr
        out[kind] = (config, base / kind)
    return out


def _copy(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest)
    return dest


def _drop_key(state_file: Path, key: str) -> None:
    state = torch.load(state_file, weights_only=True)
    del state[key]
    torch.save(state, state_file)


def _damage(state_file: Path, how: str) -> None:
    data = state_file.read_bytes()
    if how == "truncated":
        state_file.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        state_file.write_bytes(b"")
    elif how == "random":
        state_file.write_bytes(os.urandom(len(data)))
    elif how == "no-optimizer":
        _drop_key(state_file, "optimizers")
    elif how == "not-a-mapping":
        torch.save([1, 2, 3], state_file)


# what the line says is wrong with the file
WHAT = {
    "truncated": "cannot be read",
    "empty": "empty",
    "random": "cannot be read",
    "no-optimizer": "no optimizer state",
    "not-a-mapping": "not a checkpoint",
}


@pytest.mark.parametrize("how", list(WHAT))
def test_damaged_latest_checkpoint_is_one_line_with_the_way_out(
    runs: dict[str, tuple[Path, Path]], tmp_path: Path, how: str
) -> None:
    config, finished = runs["ppo"]
    run = _copy(finished, tmp_path / "run")
    state = run / "checkpoints" / "step-00000002" / "state.pt"
    _damage(state, how)
    before = state.read_bytes()
    line = error_line(_train("ppo", config, run, "--set", "total_steps=3"))
    assert str(state) in line and WHAT[how] in line, line
    # the way out: the earlier checkpoint, or a fresh start
    assert "step-00000001" in line and "fresh" in line, line
    assert state.read_bytes() == before  # nothing written into it
    assert not (run / "checkpoints" / "step-00000003").exists()


def test_resume_option_to_a_damaged_checkpoint_names_the_earlier_one(
    runs: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    config, finished = runs["ppo"]
    run = _copy(finished, tmp_path / "run")
    damaged = run / "checkpoints" / "step-00000002"
    _damage(damaged / "state.pt", "truncated")
    line = error_line(_train("ppo", config, tmp_path / "new", "--resume", str(damaged)))
    assert str(damaged / "state.pt") in line
    assert f"--resume {run / 'checkpoints' / 'step-00000001'}" in line, line


def test_sft_checkpoint_without_optimizer_state(
    runs: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    config, finished = runs["sft"]
    run = _copy(finished, tmp_path / "run")
    state = run / "checkpoints" / "step-00000002" / "state.pt"
    _drop_key(state, "optimizers")
    line = error_line(_train("sft", config, run, "--set", "total_steps=3"))
    assert str(state) in line and "no optimizer state" in line, line


def test_optimizer_state_of_another_part_is_refused_naming_the_file(
    runs: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    """The parts are all there, but the actor's optimiser state is the value head's: found
    only when the models are loaded, and still reported against the file."""
    config, finished = runs["ppo"]
    run = _copy(finished, tmp_path / "run")
    file = run / "checkpoints" / "step-00000002" / "state.pt"
    state = torch.load(file, weights_only=True)
    state["optimizers"]["actor"]["param_groups"][0]["params"] = [0]
    torch.save(state, file)
    line = error_line(_train("ppo", config, run, "--set", "total_steps=3"))
    assert str(file) in line and "step-00000001" in line, line


def test_truncated_model_weights_name_the_file(
    runs: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    config, finished = runs["ppo"]
    run = _copy(finished, tmp_path / "run")
    weights = run / "init-model" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:3000])
    line = error_line(_train("ppo", config, run, "--set", "total_steps=3"))
    assert str(weights) in line and "damaged" in line, line
    assert f"delete {run / 'init-model'}" in line, line  # a tiny model is built again


def test_damaged_tiny_model_marker_names_the_file(
    runs: dict[str, tuple[Path, Path]], tmp_path: Path
) -> None:
    config, finished = runs["ppo"]
    run = _copy(finished, tmp_path / "run")
    marker = run / "init-model" / "asmopt_tiny.json"
    marker.write_bytes(b"\xff\x00{")
    line = error_line(_train("ppo", config, run, "--set", "total_steps=3"))
    assert str(marker) in line, line


def test_a_failed_checkpoint_write_leaves_no_temporary_directory(tmp_path: Path) -> None:
    """Serialising fails half-way (an object torch cannot store): the temporary directory
    goes, the previous checkpoint and `latest` stay."""
    save_checkpoint(tmp_path, 1, {"step": 1}, config_yaml="{}\n", keep=2)
    with pytest.raises(Exception, match=r"pickle|lambda|serializ"):
        save_checkpoint(tmp_path, 2, {"step": 2, "bad": lambda: 0}, config_yaml="{}\n", keep=2)
    root = tmp_path / "checkpoints"
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step-00000001"]
    assert find_checkpoint(tmp_path) == root / "step-00000001"


FULL_SCRIPT = """
cd "$DISK"
"$PY" -m asmopt.cli train ppo --config "$CFG" --output-dir "$DISK/run" --no-progress \
    --set total_steps=1 >/dev/null 2>"$DISK/first.err" || tail -3 "$DISK/first.err"
dd if=/dev/zero of="$DISK/filler" bs=64k 2>/dev/null
truncate -s -256K "$DISK/filler"
"$PY" -m asmopt.cli train ppo --config "$CFG" --output-dir "$DISK/run" --no-progress \
    --set total_steps=2 >/dev/null
echo "rc=$?"
echo "tmp=$(find "$DISK/run" -name '.tmp-*' -o -name '.*.tmp-*' | wc -l)"
echo "latest=$(cat "$DISK/run/checkpoints/latest")"
rm "$DISK/filler"
"$PY" -m asmopt.cli train ppo --config "$CFG" --output-dir "$DISK/run" --no-progress \
    --set total_steps=2 >/dev/null 2>&1
echo "rerun=$?"
echo "after=$(cat "$DISK/run/checkpoints/latest")"
"""


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap to mount a small file system")
def test_disk_full_while_checkpointing_is_one_line_and_resumes(
    runs: dict[str, tuple[Path, Path]],
) -> None:
    config, _ = runs["ppo"]
    disk = Path(tempfile.mkdtemp(prefix="train-full-"))
    child_env = env()
    child_env.update(PY=sys.executable, CFG=str(config), DISK=str(disk))
    assert BWRAP is not None
    # fmt: off
    proc = subprocess.run(
        [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
         "--size", "12000000", "--tmpfs", str(disk), "sh", "-c", FULL_SCRIPT],
        capture_output=True, text=True, timeout=600, env=child_env,
    )
    # fmt: on
    out = proc.stdout
    assert out.startswith("rc=2"), (out, proc.stderr)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    line = errors[0]
    assert f"{disk}/run/checkpoints: no space left on device" in line, line
    assert "free disk space" in line and "resume" in line and "step-00000001" in line, line
    assert "tmp=0" in out  # the half-written checkpoint is gone
    assert "latest=step-00000001" in out
    assert "rerun=0" in out and "after=step-00000002" in out, out  # with space, it resumes
    shutil.rmtree(disk, ignore_errors=True)


def test_ppo_checkpoint_holds_what_resume_checks(runs: dict[str, tuple[Path, Path]]) -> None:
    """The parts the start-up check requires are the ones a PPO checkpoint is written with
    (so the check refuses damaged files, never good ones)."""
    _, finished = runs["ppo"]
    state = torch.load(finished / "checkpoints" / "step-00000002" / "state.pt", weights_only=True)
    from asmopt.train.run import required_parts

    cfg = json.loads(json.dumps(state["config"]))
    for key, parts in required_parts("ppo", cfg).items():
        assert set(parts) <= set(state[key]), key


FINAL_SCRIPT = """
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

from asmopt.train.checkpoint import disk_full, staged_dir


final = Path(sys.argv[1]) / "final"
try:
    with staged_dir(final) as tmp:
        save_file({"w": torch.zeros(1_000_000)}, str(tmp / "model.safetensors"))
except Exception as exc:
    print("disk_full", disk_full(exc))
print("left", sorted(p.name for p in Path(sys.argv[1]).iterdir()))
"""


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap to mount a small file system")
def test_disk_full_while_saving_a_model_is_recognised_and_cleaned_up(tmp_path: Path) -> None:
    """safetensors reports a full disk in its own error type; the half-written model
    directory is removed and the error is still known for a full disk."""
    disk = Path(tempfile.mkdtemp(prefix="model-full-"))
    script = tmp_path / "save.py"
    script.write_text(FINAL_SCRIPT)
    assert BWRAP is not None
    # fmt: off
    proc = subprocess.run(
        [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
         "--size", "1000000", "--tmpfs", str(disk), sys.executable, str(script), str(disk)],
        capture_output=True, text=True, timeout=300, env=env(),
    )
    # fmt: on
    assert proc.stdout.splitlines() == ["disk_full True", "left []"], (proc.stdout, proc.stderr)
    shutil.rmtree(disk, ignore_errors=True)
