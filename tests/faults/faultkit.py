"""Helpers for the fault-injection tests: a tiny suite on disk and `asmopt` as a process.

Each test in this directory reproduces one numbered fault of docs/faults.md with real parts
(gcc, the sandbox, SQLite files, signals, loopback HTTP) and asserts what asmopt does now.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import asmopt

SRC = str(Path(asmopt.__file__).resolve().parents[1])

ECHO_C = """#include <stdio.h>
int main(void) {
    long x = 0;
    if (scanf("%ld", &x) != 1) return 1;
    printf("%ld\\n", x * WORK);
    return 0;
}
"""


def env() -> dict[str, str]:
    """The environment of a child `asmopt`: this checkout's sources first."""
    out = os.environ.copy()
    out["PYTHONPATH"] = SRC + os.pathsep + out.get("PYTHONPATH", "")
    return out


def asmopt_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "asmopt.cli", *args]


def run_asmopt(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        asmopt_cmd(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env()
    )


def eval_args(suite: Path, run_dir: Path, *extra: str) -> tuple[str, ...]:
    """The arguments of `asmopt eval` of `suite` into `run_dir`, correctness only (no
    measurement), then `extra`."""
    return ("eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run_dir), *extra)


def write_program(
    root: Path,
    pid: str,
    *,
    source: str = ECHO_C.replace("WORK", "1"),
    tests: dict[str, tuple[str, str]] | None = None,
    spec: dict[str, Any] | None = None,
) -> Path:
    pdir = root / "programs" / pid
    (pdir / "tests").mkdir(parents=True, exist_ok=True)
    (pdir / "main.c").write_text(source)
    for name, (stdin, stdout) in (tests if tests is not None else {"t1": ("3\n", "3\n")}).items():
        (pdir / "tests" / f"{name}.in").write_text(stdin)
        (pdir / "tests" / f"{name}.out").write_text(stdout)
    if spec is not None:
        (pdir / "program.json").write_text(json.dumps(spec))
    return pdir


def write_suite(root: Path, ids: list[str], **program: Any) -> Path:
    """A suite of `ids`, each the echo program unless a program directory already exists."""
    root.mkdir(parents=True, exist_ok=True)
    for pid in ids:
        if not (root / "programs" / pid).exists():
            write_program(root, pid, **program)
    index = {
        "format": "asmopt-suite",
        "version": 1,
        "name": root.name,
        "programs": [{"id": pid, "split": "test"} for pid in ids],
    }
    (root / "suite.json").write_text(json.dumps(index))
    return root


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one `asmopt: error:` line, after checking there is no traceback and exit code 2."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def host_view(*mounts: str) -> list[str]:
    """A bubblewrap command prefix that shows the whole host as it is (the host's /proc
    too, so a sandbox can start inside it) with `mounts` on top: a small tmpfs, a
    read-only bind."""
    import shutil

    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    return [bwrap, "--bind", "/", "/", "--dev", "/dev", "--bind", "/proc", "/proc", *mounts]
