"""Finding a reward worker process of ours while it runs a task (tests that kill one)."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path


def worker_with_children(timeout_s: float) -> int:
    """The pid of a worker process of ours that has started children (its sandbox or the
    compiler: so it is running a task), waiting up to `timeout_s` for one."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        for proc in multiprocessing.active_children():
            path = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
            try:
                if proc.pid and path.read_text().split():
                    return proc.pid
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError(f"no worker process started a child within {timeout_s}s")
