"""Where asmopt keeps derived files (compiled launcher, build cache), and how much of them.

Everything under the cache root can be deleted at any time; it is rebuilt on demand. The
build cache is bounded in size (`BoundedCache`): in RL every sampled candidate is a new
entry, so an unbounded cache would fill the disk within a training run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from asmopt.errors import EnvironmentProblem, InputError


def cache_root() -> Path:
    """`$ASMOPT_CACHE_DIR`, else `$XDG_CACHE_HOME/asmopt`, else `~/.cache/asmopt`."""
    explicit = os.environ.get("ASMOPT_CACHE_DIR")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "asmopt"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(_unwritable(root, "the cache directory", exc)) from None
    return root


def require_writable(directory: Path, what: str) -> None:
    """Refuse, in one line naming `directory`, a cache directory nothing can be written
    to (a read-only mount, a directory of another user): found when the job starts, not
    as an error per candidate when the first new build is stored."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise EnvironmentProblem(_unwritable(directory, what, exc)) from None


def _unwritable(directory: Path, what: str, exc: OSError) -> str:
    return (
        f"{what} {directory} is not writable ({exc.strerror or exc}); point ASMOPT_CACHE_DIR "
        "at a writable directory (everything under it is rebuilt on demand)"
    )


_SIZE = re.compile(r"^\s*(\d+)\s*(?:([kmgt])(?:i?b)?|b)?\s*$", re.IGNORECASE)
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(text: str) -> int:
    """`"33554432"`, `"32M"`, `"32MiB"`, `"2G"` -> bytes (binary multiples).

    Sizes in environment variables are easier to get right with a unit than as a count of
    bytes; a value that is neither is refused rather than guessed at."""
    match = _SIZE.match(text)
    if match is None:
        raise InputError(f"not a size in bytes: {text!r} (examples: 33554432, 32M, 2GiB)")
    number, unit = match.groups()
    return int(number) * (_UNITS[unit.lower()] if unit else 1)


def env_bytes(name: str, default: int) -> int:
    """A size from environment variable `name`, else `default`; a bad value names the variable."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return parse_bytes(raw)
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from None


def format_bytes(n: int) -> str:
    """Sizes in messages: "32 MiB", "190.7 MiB", "512 bytes"."""
    if n < 1 << 10:
        return f"{n} bytes"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class CacheEntry:
    """One entry found by a scan: its directory, its bytes, when it was last used."""

    path: Path
    size: int
    last_used: float


class BoundedCache:
    """A directory of cache entries kept under `max_bytes` by evicting the least recently used.

    Layout: `root/<fan-out>/<entry>/<files>`, the fan-out a two-character prefix of the key.
    An entry's last use is its directory's modification time, set when the entry is written
    and again on every hit (`touch`), so recency survives restarts and is shared by every
    process using the directory without any index file to corrupt.

    Several processes may share the directory. Writers add their bytes to a running total in
    `root/.size` under an flock on `root/.lock`; when the total passes the bound, the writer
    holding the lock scans the directory, removes the oldest entries until the total is under
    `low_water` of the bound (so scans are rare, not one per write), and writes the scanned
    total back. Entries are removed by renaming them away first, so a reader sees a complete
    entry or none; readers treat a vanished entry as a miss.

    An entry used in the last `grace_seconds` is never removed, even over the bound: the
    caller it was handed to may still be running the binary inside it. Such entries age out
    at a later write.

    `max_bytes=0` turns the bound off (entries are still touched, nothing is evicted)."""

    LOCK_NAME = ".lock"
    TOTAL_NAME = ".size"
    # Staging or half-removed directories (names starting with a dot) older than this were
    # left by a process that died mid-write or mid-eviction.
    STALE_SECONDS = 3600.0

    def __init__(
        self,
        root: str | os.PathLike[str],
        max_bytes: int,
        *,
        grace_seconds: float = 60.0,
        low_water: float = 0.9,
    ) -> None:
        if max_bytes < 0:
            raise InputError(f"cache bound must be >= 0 bytes (0: unbounded), got {max_bytes}")
        if not 0.0 < low_water <= 1.0:
            raise InputError(f"low_water must be in (0, 1], got {low_water}")
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.grace_seconds = grace_seconds
        self.low_water = low_water

    # ------------------------------------------------------------------ recency
    @staticmethod
    def touch(entry: Path) -> None:
        """Record a use of `entry` (a hit), so eviction takes older entries first."""
        with contextlib.suppress(OSError):  # evicted by another process meanwhile: a miss later
            os.utime(entry)

    # ------------------------------------------------------------------ accounting
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self.root / self.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _read_total(self) -> int | None:
        try:
            return int((self.root / self.TOTAL_NAME).read_text().strip())
        except (OSError, ValueError):
            return None

    def _write_total(self, total: int) -> None:
        with contextlib.suppress(OSError):
            (self.root / self.TOTAL_NAME).write_text(f"{total}\n")

    def added(self, nbytes: int) -> None:
        """Account for an entry of `nbytes` just written; evict if that passes the bound.

        Without a running total yet (a fresh directory, or one written before the bound
        existed) the directory is scanned once to start it."""
        with self._locked():
            total = self._read_total()
            total = self.total_bytes() if total is None else total + nbytes
            if self.max_bytes and total > self.max_bytes:
                total = self._evict_locked()
            self._write_total(total)

    def evict(self) -> int:
        """Bring the directory under the bound now; returns the bytes left."""
        with self._locked():
            total = self._evict_locked() if self.max_bytes else self.total_bytes()
            self._write_total(total)
            return total

    # ------------------------------------------------------------------ scanning
    def entries(self) -> list[CacheEntry]:
        """Every complete entry, oldest use first. Removes long-dead staging directories."""
        found: list[CacheEntry] = []
        now = time.time()
        try:
            fans = list(os.scandir(self.root))
        except OSError:
            return found
        for fan in fans:
            if fan.name.startswith(".") or not _is_dir(fan):
                continue
            try:
                children = list(os.scandir(fan.path))
            except OSError:
                continue  # removed under us
            for child in children:
                try:
                    st = child.stat(follow_symlinks=False)
                except OSError:
                    continue
                if child.name.startswith("."):
                    if now - st.st_mtime > self.STALE_SECONDS:
                        shutil.rmtree(child.path, ignore_errors=True)
                    continue
                if not _is_dir(child):
                    continue
                found.append(CacheEntry(Path(child.path), _dir_bytes(child.path), st.st_mtime))
        found.sort(key=lambda e: e.last_used)
        return found

    def total_bytes(self) -> int:
        """Bytes in complete entries, by a scan (not the running total)."""
        return sum(e.size for e in self.entries())

    def _evict_locked(self) -> int:
        entries = self.entries()
        total = sum(e.size for e in entries)
        if total <= self.max_bytes:
            return total
        target = int(self.max_bytes * self.low_water)
        newest_allowed = time.time() - self.grace_seconds
        for entry in entries:  # oldest first
            if total <= target or entry.last_used > newest_allowed:
                break
            if _remove(entry.path):
                total -= entry.size
        return total


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _dir_bytes(path: str) -> int:
    total = 0
    try:
        with os.scandir(path) as it:
            for f in it:
                with contextlib.suppress(OSError):
                    total += f.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total


def _remove(path: Path) -> bool:
    """Remove an entry atomically for readers: rename it to a dot-name, then delete it.

    True when the entry's bytes are gone."""
    doomed = path.with_name(f".evict-{path.name}-{os.getpid()}")
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return True  # already gone (a manual clean-up): its bytes are gone too
    except OSError:
        return False
    shutil.rmtree(doomed, ignore_errors=True)
    return True
