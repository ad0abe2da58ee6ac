"""Timing cores: which CPUs time, and a machine-wide lock per physical core."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from asmopt.errors import InputError

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- cores
def _physical_core(cpu: int) -> str:
    """An id shared by SMT siblings (they share a core, so they share a timing lock)."""
    path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
    try:
        return path.read_text().strip()
    except OSError:
        return str(cpu)


@dataclass(frozen=True)
class CoreLayout:
    """Which CPUs time (one logical CPU per physical core) and which do everything else."""

    timing: tuple[int, ...]
    general: tuple[int, ...]
    isolated: bool

    @classmethod
    def detect(cls, spec: str | None = None) -> CoreLayout:
        """From ASMOPT_TIMING_CORES ("3" or "2,3") if set, else: all physical cores but the
        first (which takes interrupts and housekeeping), at most half of them."""
        allowed = sorted(os.sched_getaffinity(0))
        spec = spec if spec is not None else os.environ.get("ASMOPT_TIMING_CORES")
        by_core: dict[str, list[int]] = {}
        for cpu in allowed:
            by_core.setdefault(_physical_core(cpu), []).append(cpu)
        if spec:
            try:
                timing = tuple(int(x) for x in spec.replace(" ", "").split(",") if x)
            except ValueError:
                raise InputError(
                    f"ASMOPT_TIMING_CORES must be a comma-separated list of CPU numbers, "
                    f"got {spec!r}"
                ) from None
            bad = [c for c in timing if c not in allowed]
            if bad:
                raise InputError(
                    f"timing cores {bad} are not available to this process (allowed: {allowed})"
                )
        else:
            cores = list(by_core.values())
            if len(cores) < 2:
                return cls(timing=(allowed[0],), general=tuple(allowed), isolated=False)
            chosen = cores[1:][: max(1, len(cores) // 2)]
            timing = tuple(group[0] for group in chosen)
        taken = {c for t in timing for c in by_core.get(_physical_core(t), [t])}
        general = tuple(c for c in allowed if c not in taken)
        if not general:
            return cls(timing=timing, general=tuple(allowed), isolated=False)
        return cls(timing=timing, general=general, isolated=True)


# A wait for a timing core longer than this is reported (with who holds the cores).
WAIT_NOTICE_S = 5.0


class TimingCancelled(RuntimeError):
    """A timing that was asked to stop (`CoreLock.cancel`): ours, never the answer's."""


class CoreLock:
    """At most one timing per physical core, across threads and processes (flock).

    flock locks belong to open file descriptions, so two threads of one process that open
    the lock file separately exclude each other just as two processes do."""

    def __init__(
        self,
        layout: CoreLayout | None = None,
        lock_dir: Path | None = None,
        *,
        cancel: threading.Event | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.layout = layout or CoreLayout.detect()
        # Where a long wait for a core is reported (`hold`): the caller's channel (an
        # evaluation's `notify`), else an INFO record of this module's logger. A library
        # never prints: a reward worker waiting its turn behind the others is no news.
        self.notify = notify
        self.lock_dir = lock_dir or default_lock_dir()
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        # Set when the work that takes turns on these cores is being cancelled (an
        # interrupted evaluation): a wait for a core then ends at once, and so does every
        # later timing round, instead of timing on after the user asked to stop.
        self.cancel = cancel

    def only(self, cpu: int) -> CoreLock:
        """The same lock restricted to one of its timing cores (to measure that core)."""
        if cpu not in self.layout.timing:
            raise InputError(f"CPU {cpu} is not a timing core of this lock")
        layout = CoreLayout((cpu,), self.layout.general, self.layout.isolated)
        return CoreLock(layout, self.lock_dir, cancel=self.cancel, notify=self.notify)

    def _check_cancelled(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise TimingCancelled("timing cancelled: the evaluation is being interrupted")

    @contextlib.contextmanager
    def hold(
        self,
        poll_s: float = 0.005,
        *,
        notice_after_s: float = WAIT_NOTICE_S,
        notify: Callable[[str], None] | None = None,
    ) -> Iterator[int]:
        """Wait for a free timing core; yield its CPU number while holding its lock.

        The holder writes its pid and command line into the lock file. A wait longer than
        `notice_after_s` is reported (to `notify`, else the lock's own `notify`, else
        logged at INFO) with what is awaited and who holds it, then again every minute: a
        silent wait on other processes' timings looked like a hang."""
        handles = []
        for cpu in self.layout.timing:
            name = _physical_core(cpu).replace(",", "_").replace("-", "_")
            handles.append((cpu, self.lock_dir / f"core-{name}.lock"))
        started = time.monotonic()
        next_notice = notice_after_s
        while True:
            self._check_cancelled()
            for cpu, path in handles:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
                with contextlib.suppress(OSError):  # other users must be able to lock it too
                    os.fchmod(fd, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, _holder_record().encode(), 0)
                try:
                    yield cpu
                finally:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, 0)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                return
            waited = time.monotonic() - started
            if waited >= next_notice:
                holders = sorted({_read_holder(path) for _, path in handles})
                mine = f"pid {os.getpid()}:"
                if all(h.startswith(mine) for h in holders):
                    # Other measurements of this very process (eval's parallel jobs take
                    # turns on the core): expected, and no news to the user.
                    next_notice = waited + 60.0
                    time.sleep(poll_s)
                    continue
                message = (
                    f"waiting {waited:.0f}s for a timing core (machine-wide lock in "
                    f"{self.lock_dir}); held by: {'; '.join(holders)}"
                )
                (notify or self.notify or log.info)(message)
                next_notice = waited + 60.0
            time.sleep(poll_s)


def lock_states(lock: CoreLock) -> list[tuple[int, Path, str | None]]:
    """Each timing core's lock file and who holds it now (None: free), without waiting.

    `asmopt doctor` shows this, so a user can see which file every asmopt process on the
    machine contends for and what is timing at the moment."""
    out: list[tuple[int, Path, str | None]] = []
    for cpu in lock.layout.timing:
        name = _physical_core(cpu).replace(",", "_").replace("-", "_")
        path = lock.lock_dir / f"core-{name}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            out.append((cpu, path, f"cannot open ({exc.strerror})"))
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            out.append((cpu, path, _read_holder(path)))
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            out.append((cpu, path, None))
        finally:
            os.close(fd)
    return out


def _holder_record() -> str:
    command = " ".join(" ".join(sys.argv).split())  # one line, whatever the arguments hold
    return f"pid {os.getpid()}: {command[:200]}"


def _read_holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "a process that did not say"
    except OSError:
        return "unknown"


_LOCK_PARENTS = ("/run/lock", "/var/lock", "/dev/shm", "/tmp")


def default_lock_dir() -> Path:
    """One directory for the whole machine (`ASMOPT_TIMING_LOCK_DIR` overrides it).

    A fixed system location, never derived from $TMPDIR or the cache directory: two
    processes with different temporary directories or caches (a test suite with private
    ones next to a long evaluation) still time on the same cores, so they must see the same
    locks. The first of /run/lock, /var/lock, /dev/shm and /tmp where a sticky,
    world-writable `asmopt-timing-locks` directory exists or can be made lets every user's
    asmopt take part."""
    explicit = os.environ.get("ASMOPT_TIMING_LOCK_DIR")
    if explicit:
        return Path(explicit)
    for parent in _LOCK_PARENTS:
        path = Path(parent) / "asmopt-timing-locks"
        if not path.is_dir():
            with contextlib.suppress(OSError):
                path.mkdir(mode=0o1777)
            with contextlib.suppress(OSError):
                os.chmod(path, 0o1777)
        if path.is_dir() and os.access(path, os.W_OK | os.X_OK):
            return path
    raise OSError(
        "no machine-wide directory for the timing-core locks could be created under "
        f"{', '.join(_LOCK_PARENTS)}; set ASMOPT_TIMING_LOCK_DIR to one every asmopt process "
        "on this machine can write"
    )


_default_lock: CoreLock | None = None


def default_core_lock() -> CoreLock:
    global _default_lock
    if _default_lock is None:
        _default_lock = CoreLock()
    return _default_lock


@contextlib.contextmanager
def general_affinity(layout: CoreLayout | None = None) -> Iterator[tuple[int, ...]]:
    """Keep the calling thread (and the threads and processes it starts) off the timing cores.

    Linux affinity is per thread and inherited at creation, so worker pools created inside
    this block, and every build and correctness sandbox they spawn, stay on the general
    cores; the timing executor pins its own sandbox to the timing core."""
    layout = layout or default_core_lock().layout
    if not layout.isolated:
        yield tuple(sorted(os.sched_getaffinity(0)))
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(layout.general))
    try:
        yield layout.general
    finally:
        os.sched_setaffinity(0, before)
