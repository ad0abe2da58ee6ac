"""Config and results files that cannot be used (docs/faults.md): one line each, naming the
file or the command-line option the problem comes from, the key, and what is wrong; an
unusable device is refused before any model is built.

Every case runs the real `asmopt` command on real files; `--print-config` stops the
trainers right after the config is read, so no model is built for config errors.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from faultkit import error_line, run_asmopt

pytest.importorskip("yaml")

BIG = "9" * 5000  # past Python's 4300-digit limit for int(str)


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The error line, which must also be the only line on stderr."""
    line = error_line(proc)
    assert proc.stderr.strip().splitlines() == [line], proc.stderr
    return line


# --------------------------------------------------------------------------- devices


@pytest.mark.parametrize("device", ["tpu9", "cuda:x", "meta"])
def test_invalid_device_is_refused_as_the_command_lines_before_any_model(
    tmp_path: Path, device: str
) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "run"
    proc = run_asmopt(
        "train", "ppo", "--config", "ppo_tiny", "--output-dir", str(out), "--set",
        f"device={device}",
    )  # fmt: skip
    line = _one_line(proc)
    assert line.startswith(f"asmopt: error: --set device: device {device!r}"), line
    assert "cpu" in line and "cuda" in line, line  # what is accepted
    assert not (out / "init-model").exists()  # refused before the model is built


def test_cuda_without_cuda_is_refused_before_any_model(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "run"
    proc = run_asmopt(
        "train", "ppo", "--config", "ppo_tiny", "--output-dir", str(out), "--set", "device=cuda"
    )
    line = _one_line(proc)
    assert "'cuda'" in line and "no CUDA device" in line and "device: cpu" in line, line
    assert not (out / "init-model").exists()


def test_invalid_study_device_names_the_key() -> None:
    line = _one_line(
        run_asmopt("train", "lm", "--config", "toy", "--loops", "1", "--print-config",
                   "--set", "train.device=tpu9")
    )  # fmt: skip
    assert line.startswith("asmopt: error: --set train.device: "), line
    assert "'tpu9'" in line, line


# --------------------------------------------------------------------------- attribution


def test_range_error_of_a_set_value_names_the_command_line(tmp_path: Path) -> None:
    line = _one_line(
        run_asmopt("train", "ppo", "--config", "ppo_tiny", "--set", "total_steps=-5",
                   "--print-config")
    )  # fmt: skip
    assert line.startswith("asmopt: error: --set total_steps: total_steps must be >= 0"), line
    assert "ppo_tiny.yaml" not in line
    # the file's own error, with an unrelated --set, is still the file's
    config = tmp_path / "bad.yaml"
    config.write_text("total_steps: -5\nmodel: tiny:llama\n")
    line = _one_line(
        run_asmopt("train", "sft", "--config", str(config), "--set", "train_seed=3",
                   "--print-config")
    )  # fmt: skip
    assert line.startswith(f"asmopt: error: {config}: total_steps must be >= 0"), line


def test_set_value_that_breaks_a_relation_names_the_command_line() -> None:
    line = _one_line(
        run_asmopt("train", "ppo", "--config", "ppo_tiny", "--set", "mini_batch_size=3",
                   "--print-config")
    )  # fmt: skip
    assert line.startswith("asmopt: error: --set mini_batch_size: "), line


def test_study_range_error_names_the_command_line_or_the_file(tmp_path: Path) -> None:
    line = _one_line(
        run_asmopt("train", "lm", "--config", "toy", "--loops", "1", "--print-config",
                   "--set", "train.max_steps=-5")
    )  # fmt: skip
    assert line.startswith("asmopt: error: --set train.max_steps: train.max_steps must be"), line
    config = tmp_path / "study.yaml"
    config.write_text("train:\n  max_steps: -5\n")
    line = _one_line(
        run_asmopt("train", "lm", "--config", str(config), "--loops", "1", "--print-config")
    )
    assert line.startswith(f"asmopt: error: {config}: train.max_steps must be"), line


# --------------------------------------------------------------------------- file contents


@pytest.mark.parametrize("group", ["train", "study"])
def test_non_utf8_yaml_config_names_the_file(tmp_path: Path, group: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_bytes(b"train_seed: 1\n# caf\xe9\n")
    args = ["train", "ppo"] if group == "train" else ["train", "lm", "--loops", "1"]
    line = _one_line(run_asmopt(*args, "--config", str(config), "--print-config"))
    assert f"{config}: not UTF-8 text" in line and "0xe9" in line and "line 2" in line, line


@pytest.mark.parametrize("group", ["train", "study"])
def test_invalid_yaml_is_one_line(tmp_path: Path, group: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("seed: [1, 2\n")
    args = ["train", "ppo"] if group == "train" else ["train", "lm", "--loops", "1"]
    line = _one_line(run_asmopt(*args, "--config", str(config), "--print-config"))
    assert f"{config}: not valid YAML" in line, line


def test_huge_integer_in_a_config_file_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "big.yaml"
    config.write_text(f"train_seed: 1\ntotal_steps: {BIG}\n")
    line = _one_line(run_asmopt("train", "ppo", "--config", str(config), "--print-config"))
    assert f"{config}: line 2, total_steps: an integer of 5000 digits" in line, line
    assert "sys.set_int_max_str_digits" not in line


def test_huge_integer_in_a_study_config_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "big.yaml"
    config.write_text(f"train:\n  max_steps: {BIG}\n")
    line = _one_line(
        run_asmopt("train", "lm", "--config", str(config), "--loops", "1", "--print-config")
    )
    assert f"{config}: line 2, train.max_steps: an integer of 5000 digits" in line, line


@pytest.mark.parametrize("group", ["train", "study"])
def test_huge_integer_on_the_command_line_names_the_option(group: str) -> None:
    if group == "train":
        args = ["train", "ppo", "--config", "ppo_tiny", "--set", f"total_steps={BIG}"]
        key = "total_steps"
    else:
        args = ["train", "lm", "--config", "toy", "--loops", "1", "--set", f"train.init_seed={BIG}"]
        key = "train.init_seed"
    line = _one_line(run_asmopt(*args, "--print-config"))
    assert line.startswith(f"asmopt: error: --set {key}: an integer of 5000 digits"), line


def test_study_set_with_invalid_yaml_is_read_as_text() -> None:
    """As for the trainers, a --set value that is not YAML is taken as a string (and
    then refused by the field's type), never a traceback."""
    line = _one_line(
        run_asmopt("train", "lm", "--config", "toy", "--loops", "1", "--print-config",
                   "--set", "train.max_steps=[1")
    )  # fmt: skip
    assert line.startswith("asmopt: error: --set train.max_steps: "), line
    assert "expected an integer" in line, line


# --------------------------------------------------------------------------- study.json


def _report(study: Path, tmp_path: Path) -> str:
    return _one_line(run_asmopt("study", "report", str(study), "-o", str(tmp_path / "r.md")))


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"{not json", "not JSON"),
        (b"", "not JSON"),
        (b"[1, 2, 3]", "expected a JSON object"),
        (b'{"loops": [1], "models": {}}', "models"),
        (b'{"loops": "1 2", "models": {}}', "loops"),
        (b"\xff\xfe{}", "not UTF-8"),
        (f'{{"loops": [1], "seeds": {BIG}}}'.encode(), "seeds: an integer of 5000 digits"),
    ],
)
def test_unusable_study_json_is_one_line(tmp_path: Path, content: bytes, what: str) -> None:
    study = tmp_path / "study.json"
    study.write_bytes(content)
    line = _report(study, tmp_path)
    assert f"{study}: " in line and what in line, line
    assert not (tmp_path / "r.md").exists()


def test_study_json_damaged_deep_inside_is_one_line(tmp_path: Path) -> None:
    """The top level is right but a model's entry is not what a study run writes."""
    study = tmp_path / "study.json"
    real = Path(__file__).resolve().parents[2] / "docs" / "study" / "loops_cpu_seeds_study.json"
    data = json.loads(real.read_text())
    data["models"]["1"] = "lost"
    study.write_text(json.dumps(data))
    line = _report(study, tmp_path)
    assert f"{study}: " in line and "study" in line, line
