"""The timing-core lock is one per physical core per machine, whatever $TMPDIR says: two
processes with different temporary directories must still exclude each other."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

HOLDER = """
import sys, time
from asmopt.measure.timing import CoreLayout, CoreLock
lock = CoreLock(CoreLayout(timing=(0,), general=(0,), isolated=False))
with lock.hold() as cpu:
    print("held", lock.lock_dir, flush=True)
    time.sleep(float(sys.argv[1]))
"""


def _start(tmp: Path, hold_s: float) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO / "src")}
    env.pop("ASMOPT_TIMING_LOCK_DIR", None)
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(hold_s)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_processes_with_different_tmpdirs_share_the_core_lock(tmp_path: Path) -> None:
    a_tmp, b_tmp = tmp_path / "a", tmp_path / "b"
    a_tmp.mkdir()
    b_tmp.mkdir()
    first = _start(a_tmp, 3.0)
    assert first.stdout is not None
    line_a = first.stdout.readline()
    assert line_a.startswith("held"), line_a
    start = time.monotonic()
    second = _start(b_tmp, 0.0)
    assert second.stdout is not None
    line_b = second.stdout.readline()
    waited = time.monotonic() - start
    first.wait(timeout=30)
    second.wait(timeout=30)
    assert line_b.split()[1] == line_a.split()[1]  # the same lock directory
    assert not line_a.split()[1].startswith(str(tmp_path))  # not derived from TMPDIR
    assert waited >= 2.0, f"the second process got the core after {waited:.2f}s"
