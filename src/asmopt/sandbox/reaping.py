"""The processes of one sandbox, found and ended without the cooperation of any of them.

A sandbox is ended from /proc: the process table, the processes whose command line names
a sandbox's run directory (still found once their parent is gone), the tree under a set
of roots, and whether any thread of a process still runs. A process is told apart from a
later one with the same pid by its start time, and SIGKILL goes through a pidfd, so only
the process that was checked is killed. `end_sandbox` (ending.py) puts these together;
they live apart because none of them knows bubblewrap or the launcher.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Process:
    """A process of this machine, told apart from a later one with the same pid by its start
    time (in clock ticks since boot)."""

    pid: int
    start: int
    name: str


def process_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, start time, name) of every process in /proc (empty without it)."""
    table: dict[int, tuple[int, int, str]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        head, _, tail = data.rpartition(b")")
        fields = tail.split()
        if len(fields) < 20:
            continue
        comm = head.partition(b"(")[2].decode("utf-8", "replace")
        table[int(name)] = (int(fields[1]), int(fields[19]), comm)
    return table


def processes_naming(marker: str, table: dict[int, tuple[int, int, str]]) -> set[Process]:
    """The processes whose command line contains `marker` (a sandbox's own directory: every
    bubblewrap process of that sandbox names it, even once its parent is gone)."""
    found: set[Process] = set()
    needle = marker.encode()
    for pid, (_, start, comm) in table.items():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline:
            found.add(Process(pid, start, comm))
    return found


def process_tree(roots: set[Process], table: dict[int, tuple[int, int, str]]) -> set[Process]:
    """`roots` that are still the same processes, and every descendant of them."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    todo = [r.pid for r in roots if r.pid in table and table[r.pid][1] == r.start]
    found: set[Process] = set()
    while todo:
        pid = todo.pop()
        _, start, comm = table[pid]
        if Process(pid, start, comm) in found:
            continue
        found.add(Process(pid, start, comm))
        todo += children.get(pid, [])
    return found


def child_processes(pid: int) -> set[Process]:
    """The child processes of `pid` now (empty if unknown: a kernel without the
    /proc/PID/task/TID/children file, or `pid` gone)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            pids = [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return set()
    found: set[Process] = set()
    for child in pids:
        try:
            with open(f"/proc/{child}/stat", "rb") as f:
                head, _, tail = f.read().rpartition(b")")
            name = head.partition(b"(")[2].decode("utf-8", "replace")
            found.add(Process(child, int(tail.split()[19]), name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def is_running(proc: Process) -> bool:
    """True while any thread of `proc` has not exited. Every thread is looked at: a thread
    group leader that called SYS_exit is a zombie while its other threads run on."""
    base = f"/proc/{proc.pid}"
    try:
        with open(f"{base}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        if len(fields) < 20 or int(fields[19]) != proc.start:
            return False  # gone; the pid is someone else's now
        tids = os.listdir(f"{base}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"{base}/task/{tid}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X", b"x"):
            return True
    return False


def exits_by_itself(proc: subprocess.Popen[bytes], inner: set[Process], timeout: float) -> bool:
    """Wait up to `timeout` seconds for bubblewrap (`proc`) and its child (`inner`) to exit
    by themselves; True if they did."""
    until = time.monotonic() + timeout
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    pause = 0.0005
    while any(is_running(p) for p in inner):
        if time.monotonic() > until:
            return False
        time.sleep(pause)
        pause = min(0.05, pause * 2)
    return True


def sigkill(proc: Process) -> None:
    """SIGKILL `proc` if it is still the same process (a pidfd pins the one we checked)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (OSError, AttributeError):
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGKILL)
        return
    try:
        if is_running(proc):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)
