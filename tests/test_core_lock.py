"""The timing-core lock is one per physical core per machine, whatever $TMPDIR says: two
processes with different temporary directories must still exclude each other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


DETECTED_HOLDER = """
import sys, time
from asmopt.measure.timing import CoreLock
lock = CoreLock()
with lock.hold() as cpu:
    print("held", cpu, flush=True)
    time.sleep(float(sys.argv[1]))
"""


def _doctor(env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "asmopt.cli", "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    return json.loads(out.stdout)


def test_doctor_names_the_lock_files_and_who_holds_them(tmp_path: Path) -> None:
    # A private lock directory on purpose (ASMOPT_TIMING_LOCK_DIR), so that the real
    # timing cores of this machine stay free while the test holds one.
    env = {
        **os.environ,
        "ASMOPT_TIMING_LOCK_DIR": str(tmp_path / "locks"),
        "PYTHONPATH": str(REPO / "src"),
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", DETECTED_HOLDER, "20"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()
        assert line.startswith("held"), line
        cpu = int(line.split()[1])
        timing = _doctor(env)["timing"]
        assert isinstance(timing, dict) and timing["lock_dir"] == str(tmp_path / "locks")
        (entry,) = [e for e in timing["locks"] if e["cpu"] == cpu]
        assert entry["held_by"] is not None and f"pid {holder.pid}" in entry["held_by"]
    finally:
        holder.kill()
        holder.wait(timeout=30)
    timing = _doctor(env)["timing"]
    assert isinstance(timing, dict) and all(e["held_by"] is None for e in timing["locks"])


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_doctor_shows_the_between_sandbox_spread_and_measures_it_on_request(
    tmp_path: Path,
) -> None:
    """Not measured in a fresh cache: doctor says so (it measures nothing unasked); with
    --calibrate it measures every timing core and shows the figure it stored."""
    env = {
        **os.environ,
        "ASMOPT_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO / "src"),
    }
    spread = _doctor(env)["timing"]["spread"]  # type: ignore[index]
    assert spread["measured"] is False and "--calibrate" in spread["detail"]
    out = subprocess.run(
        [sys.executable, "-m", "asmopt.cli", "doctor", "--json", "--calibrate"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    spread = json.loads(out.stdout)["timing"]["spread"]
    assert spread["measured"] is True and spread["df"] == 23
    assert [p["run_ms"] for p in spread["points"]] == sorted(p["run_ms"] for p in spread["points"])
    assert (tmp_path / "cache" / "timing_spread.json").exists()
    assert _doctor(env)["timing"]["spread"] == spread  # type: ignore[index]  # read back
