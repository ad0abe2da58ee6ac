"""The README's Python example runs as written (the public API is what users copy)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _readme_block(needle: str) -> str:
    """The README's first Python block that contains `needle`."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return next(b for b in blocks if needle in b)


def _run_as_a_user(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter, in an empty directory, with this checkout's sources."""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_the_readme_python_example_runs(tmp_path: Path) -> None:
    proc = _run_as_a_user(_readme_block("asmopt.run_eval(config).summary"), tmp_path)
    lines = proc.stdout.split()
    assert lines[:3] == ["pass", "0.0", "1.0"], proc.stdout
    assert (tmp_path / "runs" / "api-example" / "results.db").is_file()


def test_the_api_is_lazy_and_named() -> None:
    """`import asmopt` loads no sandbox, toolchain or model code, nor the optional libraries
    it registers with (Gymnasium, transformers), until they are used."""
    code = (
        "import sys, asmopt; "
        "heavy = [m for m in sys.modules if m.startswith(('asmopt.run', 'asmopt.sandbox', "
        "'asmopt.reward', 'asmopt.models', 'torch', 'transformers', 'gymnasium'))]; "
        "print(heavy); print(callable(asmopt.run_eval), callable(asmopt.check), "
        "callable(asmopt.score))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "True True True"]


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_the_readme_best_of_n_example_runs_in_under_15_lines(tmp_path: Path) -> None:
    """The README's Python best-of-N evaluation runs as written, on a real (tiny) model."""
    example = _readme_block("best_of_n")
    code_lines = [line for line in example.splitlines() if line.strip()]
    assert len(code_lines) < 15, example
    proc = _run_as_a_user(example, tmp_path)
    n, honest, oracle = proc.stdout.split()[-3:]
    assert n == "4" and 0.0 <= float(honest) <= float(oracle) <= 1.0
    assert (tmp_path / "runs" / "best-of-4" / "results.db").is_file()
    # The library printed nothing of its own: the three numbers are all of stdout.
    assert proc.stdout.split() == [n, honest, oracle]
