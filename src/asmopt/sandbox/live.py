"""The sandboxed processes this library has started and not yet reaped.

A cancelled evaluation must end its running work at once (a run being timed may otherwise
go on for its whole budget), and only its own: the host program (a notebook, a trainer, a
test runner) may have children of its own that are none of our business. Every sandboxed
run is started in a session of its own and registered here with the function that ends
that session, so `kill_all` reaches exactly what we started.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

_LOCK = threading.Lock()
_LIVE: dict[int, Callable[[], None]] = {}
# Set while a job is being stopped as a whole (`stopping`): every run started then is ended
# as soon as it is registered, so work in flight runs out at once instead of going on.
_STOPPING = threading.Event()


@contextlib.contextmanager
def registered(pid: int, kill: Callable[[], None]) -> Iterator[None]:
    """Keep `pid` killable by `kill_all` while the block runs (its start to its reaping)."""
    with _LOCK:
        _LIVE[pid] = kill
    if _STOPPING.is_set():
        with contextlib.suppress(OSError):
            kill()
    try:
        yield
    finally:
        with _LOCK:
            _LIVE.pop(pid, None)


def kill_all() -> int:
    """End every registered process (each by its own kill function); how many there were."""
    with _LOCK:
        kills = list(_LIVE.values())
    for kill in kills:
        with contextlib.suppress(OSError):
            kill()
    return len(kills)


def count() -> int:
    with _LOCK:
        return len(_LIVE)


def stop_all() -> int:
    """End every registered process, and from now on each one as soon as it is registered
    (until `resume`): for a job stopping as a whole (an import on SIGTERM), whose threads
    then run out of work at once and clean up after themselves. How many were running."""
    _STOPPING.set()
    return kill_all()


def resume() -> None:
    """Let runs live again after `stop_all` (the stopped job has wound down)."""
    _STOPPING.clear()
