"""A read-only build cache, empty or already holding builds: one line naming it when the job
starts, never a traceback or an infra_error per candidate (docs/faults.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import env, host_view


@pytest.mark.parametrize("holds_builds", [False, True], ids=["empty", "holding_builds"])
def test_a_read_only_build_cache_is_one_line(tmp_path: Path, holds_builds: bool) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    child_env = env()
    child_env["ASMOPT_CACHE_DIR"] = str(cache)
    args = ["-m", "asmopt.cli", "eval", "--only", "gcd_pairs", "--measure", "none"]
    if holds_builds:  # fill it first, writable
        warm = subprocess.run(
            [sys.executable, *args, "--run-dir", str(tmp_path / "warm")],
            capture_output=True, text=True, timeout=300, env=child_env,
        )
        assert warm.returncode == 0, warm.stderr
        assert any((cache / "builds").iterdir())
    ro = host_view("--ro-bind", str(cache), str(cache))  # fmt: skip
    proc = subprocess.run(
        [*ro, sys.executable, *args, "--policy", "compiler-search",
         "--run-dir", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300, env=child_env,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(errors) == 1, proc.stderr
    assert str(cache) in errors[0] and "ASMOPT_CACHE_DIR" in errors[0], errors[0]
