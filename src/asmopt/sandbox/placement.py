"""CPU placement of a sandbox: which cores it runs on and at what scheduling priority.

Linux keeps affinity, policy and nice per thread and copies them to a child at fork, so
the calling thread is placed around the spawn only: the sandbox inherits the placement and
the rest of this process does not.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Literal

Priority = Literal["normal", "high", "realtime"]


# Real-time level of the sandbox's supervisors; programs run one level below (launcher.c).
SUPERVISOR_RT_PRIORITY = 2


def raise_priority(priority: Priority) -> str:
    """Raise the calling thread's priority as far as `priority` asks and we are allowed.

    "realtime" is SCHED_FIFO level 2 for the sandbox's supervisors (bubblewrap, the
    launcher, each run's init); the launcher runs the program itself one level lower, at 1.
    So nothing of normal priority preempts the timed program on its core, yet the processes
    that enforce its deadlines always preempt it (and the kernel's real-time throttling, when
    enabled, keeps a share of the core for everything else). "high" is nice -20. Returns
    what was achieved, which timings record."""
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
