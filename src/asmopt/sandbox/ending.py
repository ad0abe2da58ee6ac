"""Ending one sandbox: every process of it killed, with no cooperation from any of them,
and waited for until it is gone.

execution.py calls `end_sandbox` when a sandbox does not exit by itself (its deadline
passed, an output went over its cap, bubblewrap did not exit), and `kill_group` when an
evaluation is cancelled; the processes are found and killed with reaping.py.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time

from asmopt.sandbox.placement import leave_realtime_all
from asmopt.sandbox.reaping import (
    Process,
    is_running,
    process_table,
    process_tree,
    processes_naming,
    sigkill,
)

log = logging.getLogger(__name__)

# How long the grader keeps ending a sandbox (SIGKILL to every process of it, each thread
# demoted to SCHED_OTHER) before it says which processes are left.
END_TIMEOUT_S = 30.0


def end_sandbox(
    proc: subprocess.Popen[bytes], marker: str | None, known: set[Process]
) -> str | None:
    """End every process of the sandbox with no cooperation from any of them, and wait
    until they are gone. Returns None then, else one line naming those left.

    The sandbox's processes are bubblewrap (`proc`, and its child, the pid
    namespace's init) and every descendant of them: the launcher, each run's init, the
    program and its threads. Killing bubblewrap alone is not enough: its init then
    kills the namespace from the timing core, where a real-time task may keep it off
    the CPU, and its exit does not wait for that. So each process is found (from
    /proc: the tree under `proc` and `known`, and the processes naming `marker`, which
    are still found once their parent is gone), every thread of it is demoted to
    SCHED_OTHER (whatever reaps the others while they die must not be real-time:
    placement.py) and it gets SIGKILL, from this process on another core; then again,
    until none is left or END_TIMEOUT_S has passed."""
    start = time.monotonic()
    table = process_table()
    roots = set(known)
    if proc.returncode is None and proc.pid in table:  # not reaped: still our child
        roots.add(Process(proc.pid, table[proc.pid][1], table[proc.pid][2]))
    tracked = process_tree(roots, table)
    if marker is not None:
        tracked |= processes_naming(marker, table)
    left: list[Process] = []
    pause = 0.002
    while True:
        tracked |= process_tree(tracked, table)
        left = sorted((p for p in tracked if is_running(p)), key=lambda p: p.pid)
        if not left or time.monotonic() - start > END_TIMEOUT_S:
            break
        for p in left:
            leave_realtime_all(p.pid)
            sigkill(p)
        time.sleep(pause)
        pause = min(0.1, pause * 2)
        table = process_table()
    if left and proc.returncode is None:
        kill_group(proc)  # our own child at least, so that the caller does not hang
    stuck = reap(proc)
    if left:
        names = ", ".join(f"{p.pid} ({p.name})" for p in left)
        message = (
            f"the sandbox's processes {names} were still running {END_TIMEOUT_S:.0f} s "
            "after SIGKILL and demotion to SCHED_OTHER; the cores they run on are not free"
        )
        log.warning("%s", message)
        return message
    return stuck


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill bwrap's process group (`end_sandbox` ends every process of the sandbox)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def reap(proc: subprocess.Popen[bytes]) -> str | None:
    """Wait for the sandbox to be gone, killing it again while it is not.

    Returns None once it is gone, else a message (it would not die within a minute:
    ours to report, never a hang of the caller)."""
    for attempt in range(12):
        try:
            proc.wait(timeout=5 if attempt else 10)
            return None
        except subprocess.TimeoutExpired:
            kill_group(proc)
    return f"the sandbox (pid {proc.pid}) did not exit within a minute of being killed"
