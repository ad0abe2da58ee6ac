"""Fault 14: a wait for the machine-wide timing-core lock says what it waits for and who
holds it (docs/faults.md)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from faultkit import env

from asmopt.measure.timing.cores import CoreLayout, CoreLock

LAYOUT = CoreLayout(timing=(0,), general=(0,), isolated=False)

HOLDER = """
import sys
from pathlib import Path
from asmopt.measure.timing.cores import CoreLayout, CoreLock
lock = CoreLock(CoreLayout(timing=(0,), general=(0,), isolated=False), Path(sys.argv[1]))
with lock.hold():
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin
"""


def test_fault14_long_wait_names_the_lock_and_its_holder(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), "--marker-for-the-holder"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env(),
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    notices: list[str] = []
    seen = threading.Event()
    got: list[int] = []

    def notify(message: str) -> None:
        notices.append(message)
        seen.set()

    def waiter() -> None:
        with CoreLock(LAYOUT, tmp_path).hold(notice_after_s=0.2, notify=notify) as cpu:
            got.append(cpu)

    thread = threading.Thread(target=waiter)
    thread.start()
    try:
        assert seen.wait(timeout=60), "no notice while waiting"
        assert not got  # still waiting
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    thread.join(timeout=60)
    assert got == [0]
    assert "waiting" in notices[0] and "timing core" in notices[0]
    assert str(tmp_path) in notices[0]
    assert f"pid {holder.pid}" in notices[0] and "--marker-for-the-holder" in notices[0]


def test_waiting_on_this_process_own_measurements_is_not_announced(tmp_path: Path) -> None:
    # eval's parallel jobs take turns on the timing core: that wait is expected, and a
    # notice naming our own pid as the holder would only read like a hang.
    lock = CoreLock(LAYOUT, tmp_path)
    notices: list[str] = []
    release = threading.Event()
    held = threading.Event()

    def holder() -> None:
        with lock.hold():
            held.set()
            release.wait(timeout=60)

    first = threading.Thread(target=holder)
    first.start()
    assert held.wait(timeout=60)
    got: list[int] = []

    def waiter() -> None:
        with lock.hold(notice_after_s=0.1, notify=notices.append) as cpu:
            got.append(cpu)

    second = threading.Thread(target=waiter)
    second.start()
    threading.Event().wait(0.6)  # several notice periods
    release.set()
    first.join(timeout=60)
    second.join(timeout=60)
    assert got == [0] and notices == []
