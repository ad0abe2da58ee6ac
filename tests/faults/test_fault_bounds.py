"""Fault 11: numeric flags are bounded and inputs are size-checked before they are read whole
(docs/faults.md)."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest
from faultkit import asmopt_cmd, env, error_line, run_asmopt

from asmopt.programs import load_builtin_suite

PROGRAM = sorted(load_builtin_suite().programs)[0]


def _limit_memory() -> None:
    """2 GiB of address space: reading /dev/zero whole would fail with MemoryError."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_fault11_check_refuses_an_endless_input_before_reading_it() -> None:
    proc = subprocess.run(
        asmopt_cmd("check", PROGRAM, "/dev/zero"),
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
        preexec_fn=_limit_memory,
    )
    line = error_line(proc)
    assert "/dev/zero" in line and "larger than 16 MiB" in line


@pytest.mark.parametrize(
    "args, needle",
    [
        (("eval", "--samples", "1000000000"), "--samples must be at most"),
        (("eval", "--jobs", "100000"), "--jobs must be at most"),
        (("eval", "--timing-max-pairs", "0"), "--timing-max-pairs must be at least 1"),
        (("eval", "--timing-budget", "1e9"), "--timing-budget must be at most"),
        (("eval", "--timing-target", "nan"), "--timing-target must be greater than 0"),
        (("eval", "--temperature", "-1"), "--temperature must be at least 0"),
        (("eval", "--concurrency", "0"), "--concurrency must be at least 1"),
        (("eval", "--rounds", "100000"), "--rounds must be at most"),
        (("suite", "verify", "--mutants", "1000000"), "--mutants must be at most"),
        (("serve", "model", "--batch-size", "0"), "--batch-size must be at least 1"),
    ],
)
def test_fault11_numeric_flags_are_bounded(args: tuple[str, ...], needle: str) -> None:
    assert needle in error_line(
        run_asmopt(*args, "--measure", "none") if args[0] == "eval" else run_asmopt(*args)
    )


def test_an_invalid_hf_device_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    proc = run_asmopt(
        "eval", "--policy", "hf", "--model", str(tmp_path / "no-model"), "--device", "tpu9",
        "--only", "gcd_pairs", "--measure", "none", "--run-dir", str(tmp_path / "run"),
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert error_line(proc) == (
        "asmopt: error: --device 'tpu9' is not one of auto, cpu, cuda, cuda:N, mps"
    )


def test_an_invalid_serve_device_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    proc = run_asmopt("serve", str(tmp_path / "no-model"), "--device", "tpu9", "--port", "0")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--device 'tpu9' is not one of" in error_line(proc)
