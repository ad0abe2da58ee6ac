"""CPU placement of a sandbox: which cores it runs on and at what scheduling priority.

Linux keeps affinity, policy and nice per thread and copies them to a child at fork, so
the calling thread is placed around the spawn only: the sandbox inherits the placement and
the rest of this process does not.

Real time is for the launcher's supervision and the program only. Whatever reaps a
program's tasks or waits for their teardown (bubblewrap, each run's init once its program
has ended, this grader when it ends a sandbox) runs under SCHED_OTHER, below the program: a
real-time reaper on the program's core never yields to the program's last thread, preempted
half-way through its own exit, and spins in the kernel for as long as it stays real-time
(launcher.c, `leave_realtime`; docs/sandbox.md, "The timing core cannot be held hostage").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

Priority = Literal["normal", "high", "realtime"]


# Real-time level of the sandbox's supervisors; programs run one level below (launcher.c).
SUPERVISOR_RT_PRIORITY = 2


def raise_priority(priority: Priority) -> str:
    """Raise the calling thread's priority as far as `priority` asks and we are allowed.

    "realtime" is SCHED_FIFO level 2 for the sandbox's launcher, which runs the program
    itself one level lower, at 1. So nothing of normal priority preempts the timed program
    on its core, yet the launcher, which enforces its deadlines and sleeps in poll() between
    events, always preempts it (and the kernel's real-time throttling, when enabled, keeps a
    share of the core for everything else). bubblewrap and each run's init start at level 2
    too (it is inherited) and leave real time before they reap (module docstring). "high"
    is nice -20. Returns what was achieved, which timings record."""
    if priority == "realtime":
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(SUPERVISOR_RT_PRIORITY))
            return "realtime"
        except (PermissionError, OSError, AttributeError):
            priority = "high"
    if priority == "high":
        try:
            os.setpriority(os.PRIO_PROCESS, 0, -20)
            return "high"
        except (PermissionError, OSError):
            pass
    return "normal"


@contextlib.contextmanager
def thread_placement(cpus: Sequence[int] | None, priority: Priority) -> Iterator[str]:
    """Pin the calling thread (only) to `cpus` and raise its priority for the block.

    Linux keeps affinity, policy and nice per thread and copies them to a child at fork, so
    a process spawned inside the block inherits them while the rest of this process (other
    threads, and this thread afterwards) is unaffected."""
    before_cpus = os.sched_getaffinity(0) if cpus else None
    before_nice = os.getpriority(os.PRIO_PROCESS, 0)
    if cpus:
        os.sched_setaffinity(0, set(cpus))
    achieved = raise_priority(priority) if priority != "normal" else "normal"
    try:
        yield achieved
    finally:
        if achieved == "realtime":
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        elif achieved == "high":
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, before_nice)
        if before_cpus is not None:
            os.sched_setaffinity(0, before_cpus)


def leave_realtime(tid: int) -> bool:
    """Move thread `tid` from a real-time policy to SCHED_OTHER; True if it was real-time.

    Lowering a policy needs no privilege for a process of the same owner (and root may
    lower any), so this works on a sandbox's processes without their cooperation. A thread
    that is gone, or that we may not change, is left as it is (False)."""
    try:
        if os.sched_getscheduler(tid) not in (os.SCHED_FIFO, os.SCHED_RR):
            return False
        os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError):
        return False
    return True


def leave_realtime_all(pid: int) -> int:
    """`leave_realtime` for every thread of process `pid` (its policy is per thread).
    Returns how many threads were real-time."""
    try:
        tids = [int(t) for t in os.listdir(Path("/proc") / str(pid) / "task")]
    except (OSError, ValueError):
        tids = [pid]
    return sum(leave_realtime(tid) for tid in tids)
