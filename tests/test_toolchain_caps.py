"""Size cap on candidate builds, the bounded LRU build cache, and timeouts kept out of it.

Real gcc in the real toolchain sandbox: the cap is enforced by the file-size rlimit the
assembler and linker run under, and a timeout is whatever the sandbox reports, so only
the real thing shows that they are caught.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from asmopt.cache import BoundedCache, env_bytes, format_bytes, parse_bytes
from asmopt.sandbox import Sandbox
from asmopt.sandbox.records import TOOLCHAIN_LIMITS
from asmopt.toolchain import (
    BUILD_CACHE_MAX_BYTES_ENV,
    DEFAULT_MAX_BINARY_BYTES,
    MAX_BINARY_BYTES_ENV,
    Toolchain,
)


def _candidate(data: str, ret: int = 0) -> str:
    return f".data\n{data}\n.text\n.globl main\nmain:\n\tmov ${ret}, %eax\n\tret\n"


def _largest_file(root: Path) -> int:
    sizes = [p.stat().st_size for p in root.rglob("*") if p.is_file()]
    return max(sizes, default=0)


def _build_dirs_bytes() -> int:
    """Bytes left in the toolchain's temporary build and output directories."""
    tmp = Path(tempfile.gettempdir())
    total = 0
    for pattern in ("asmopt-build-*", "asmopt-out-*"):
        for d in tmp.glob(pattern):
            total += sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    return total


# ---------------------------------------------------------------------- size cap
@pytest.mark.parametrize("directive", [".fill 200000000,1,0", ".zero 200000000"])
def test_fill_bomb_gets_the_cap_verdict_quickly(
    sandbox: Sandbox, tmp_path: Path, directive: str
) -> None:
    tc = Toolchain(sandbox=sandbox, cache_dir=tmp_path / "builds")
    assert tc.max_binary_bytes == DEFAULT_MAX_BINARY_BYTES
    tc.identity()
    leftover_before = _build_dirs_bytes()
    start = time.monotonic()
    result = tc.assemble_and_link(_candidate(directive))
    elapsed = time.monotonic() - start
    assert result.stage == "assemble", result.message
    assert "would be larger than the 32 MiB cap" in result.message
    assert "file size limit" in result.message
    assert result.output is None
    assert elapsed < 5.0  # before the cap: ~1.7 s and a 200 MB binary, cached
    # Nothing large left behind; the (small) refusal is cached.
    assert _largest_file(tmp_path / "builds") < 64 << 10
    assert _build_dirs_bytes() - leftover_before < 1 << 20
    again = tc.assemble_and_link(_candidate(directive))
    assert again.cached and again.message == result.message


def test_object_just_over_the_cap_names_its_size(sandbox: Sandbox, tmp_path: Path) -> None:
    # 2 MiB cap, 2.5 MiB of data: under the rlimit (cap + 1 MiB), so the object is written
    # whole and measured.
    tc = Toolchain(sandbox=sandbox, cache_dir=tmp_path, max_binary_bytes=2 << 20)
    result = tc.assemble_and_link(_candidate(".skip 2621440"))
    assert result.stage == "assemble"
    assert "the object file is 2.5 MiB, larger than the 2 MiB cap" in result.message
    assert _largest_file(tmp_path) < 64 << 10


def test_binary_over_the_cap_is_a_link_error(sandbox: Sandbox, tmp_path: Path) -> None:
    # The object (~11 KiB) is under a 20 KiB cap; linked, with the ELF headers and the
    # dynamic sections, the binary is not.
    cap = 20 << 10
    small = Toolchain(sandbox=sandbox, cache_dir=tmp_path, max_binary_bytes=cap)
    result = small.assemble_and_link(_candidate(".space 10000"))
    assert result.stage == "link", result.message
    assert "the binary is" in result.message and "than the 20 KiB cap" in result.message
    # The same text under the default cap builds: the cap is part of the cache key, so
    # neither answer is served for the other.
    big = Toolchain(sandbox=sandbox, cache_dir=tmp_path)
    ok = big.assemble_and_link(_candidate(".space 10000"))
    assert ok.ok and not ok.cached and ok.output is not None
    assert small.assemble_and_link(_candidate(".space 10000")).stage == "link"


def test_size_settings_from_the_environment(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_BINARY_BYTES_ENV, "20K")
    monkeypatch.setenv(BUILD_CACHE_MAX_BYTES_ENV, "3MiB")
    tc = Toolchain(sandbox=sandbox, cache_dir=tmp_path)
    assert tc.max_binary_bytes == 20 << 10
    assert tc.build_cache.max_bytes == 3 << 20
    assert tc.candidate_limits.file_size == (20 << 10) + (1 << 20)
    monkeypatch.setenv(MAX_BINARY_BYTES_ENV, "lots")
    with pytest.raises(ValueError, match=MAX_BINARY_BYTES_ENV):
        Toolchain(sandbox=sandbox, cache_dir=tmp_path)
    assert parse_bytes("33554432") == 32 << 20
    assert parse_bytes("2G") == parse_bytes("2GiB") == 2 << 30
    assert env_bytes("ASMOPT_TEST_UNSET_SIZE", 7) == 7
    assert format_bytes(32 << 20) == "32 MiB" and format_bytes(100) == "100 bytes"


# ---------------------------------------------------------------------- timeouts
def test_build_timeout_is_not_cached(sandbox: Sandbox, tmp_path: Path) -> None:
    # ~3 s of assembler work here; the wall-clock limit stops it at 0.5 s.
    bomb = ".set x, 0\n.rept 20000000\n.set x, x + 1\n.endr\n" + _candidate("")
    tc = Toolchain(
        sandbox=sandbox,
        cache_dir=tmp_path,
        limits=replace(TOOLCHAIN_LIMITS, wall_seconds=0.5),
    )
    first = tc.assemble_and_link(bomb)
    assert first.stage == "assemble" and "timed out" in first.message
    assert first.transient
    assert tc.build_cache.entries() == []
    second = tc.assemble_and_link(bomb)
    assert not second.cached and "timed out" in second.message
    assert tc.build_cache.entries() == []


def test_cpu_limit_reported_by_the_driver_is_not_cached(sandbox: Sandbox, tmp_path: Path) -> None:
    # The CPU rlimit kills `as`, not gcc: gcc exits 4 and says so on stderr.
    bomb = ".set x, 0\n.rept 50000000\n.set x, x + 1\n.endr\n" + _candidate("")
    tc = Toolchain(
        sandbox=sandbox,
        cache_dir=tmp_path,
        limits=replace(TOOLCHAIN_LIMITS, cpu_seconds=1, wall_seconds=30.0),
    )
    result = tc.assemble_and_link(bomb)
    assert result.stage == "assemble" and "timed out" in result.message, result.message
    assert result.transient
    assert tc.build_cache.entries() == []


def test_deterministic_failures_are_still_cached(sandbox: Sandbox, tmp_path: Path) -> None:
    tc = Toolchain(sandbox=sandbox, cache_dir=tmp_path)
    first = tc.assemble_and_link(".text\n\tnot_an_instruction\n")
    assert first.stage == "assemble" and not first.transient
    assert tc.assemble_and_link(".text\n\tnot_an_instruction\n").cached
    assert len(tc.build_cache.entries()) == 1


# ---------------------------------------------------------------------- LRU bound
def test_cache_evicts_least_recently_used(sandbox: Sandbox, tmp_path: Path) -> None:
    tc = Toolchain(sandbox=sandbox, cache_dir=tmp_path)
    tc.build_cache.grace_seconds = 0.0  # no caller is still holding these binaries
    a, b, c, d = (_candidate("", ret=i) for i in range(4))
    assert tc.assemble_and_link(a).ok
    size = tc.build_cache.total_bytes()
    assert 1000 < size < 64 << 10
    tc.build_cache.max_bytes = int(3.5 * size)  # room for three entries, not four
    assert tc.assemble_and_link(b).ok
    assert tc.assemble_and_link(c).ok
    hit = tc.assemble_and_link(a)
    assert hit.cached  # and now the most recently used
    assert tc.assemble_and_link(d).ok
    assert len(tc.build_cache.entries()) == 3
    assert tc.build_cache.total_bytes() <= tc.build_cache.max_bytes
    assert tc.assemble_and_link(a).cached
    assert tc.assemble_and_link(c).cached
    assert tc.assemble_and_link(d).cached
    assert not tc.assemble_and_link(b).cached  # b was the least recently used


def _entry(root: Path, name: str, nbytes: int, age: float = 0.0) -> Path:
    entry = root / name[:2] / name
    entry.mkdir(parents=True)
    (entry / "meta.json").write_bytes(b"x" * nbytes)
    when = time.time() - age
    os.utime(entry, (when, when))
    return entry


def test_recently_used_entries_survive_eviction(tmp_path: Path) -> None:
    # Eviction stops at 90% of the bound (3150 bytes), so one old entry goes per pass.
    cache = BoundedCache(tmp_path, 3500, grace_seconds=60.0)
    old = [_entry(tmp_path, f"o{i}", 1000, age=3600 - i) for i in range(3)]
    fresh = _entry(tmp_path, "ff", 1000)
    cache.added(1000)  # first write: no running total yet, so the directory is scanned
    assert not old[0].exists() and old[1].exists() and old[2].exists()
    assert fresh.exists()
    # Only entries inside the grace period are left: kept, over the bound.
    newer = [_entry(tmp_path, f"n{i}", 1000) for i in range(3)]
    cache.added(3000)
    assert all(e.exists() for e in [fresh, *newer])
    assert not old[1].exists() and not old[2].exists()
    assert cache.total_bytes() == 4000


def test_stale_staging_directories_are_removed(tmp_path: Path) -> None:
    cache = BoundedCache(tmp_path, 10**6)
    dead = tmp_path / "ab" / ".tmp-dead"
    dead.mkdir(parents=True)
    os.utime(dead, (0, 0))
    live = tmp_path / "ab" / ".tmp-live"
    live.mkdir()
    assert cache.entries() == []
    assert not dead.exists() and live.exists()


def _writer(root: str, worker: int, count: int) -> None:
    cache = BoundedCache(root, 20_000, grace_seconds=0.0)
    for i in range(count):
        entry = Path(root) / f"{worker:02d}" / f"{worker:02d}-{i:04d}"
        staging = Path(root) / f"{worker:02d}" / f".tmp-{i}"
        staging.mkdir(parents=True, exist_ok=True)
        (staging / "meta.json").write_bytes(b"x" * 1000)
        os.rename(staging, entry)
        cache.added(1000)
        BoundedCache.touch(Path(root) / "00" / "00-0000")  # may have been evicted: no error


def test_several_processes_share_the_bound(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    cache = BoundedCache(tmp_path, 20_000)
    assert 0 < cache.total_bytes() <= 20_000
    assert int((tmp_path / BoundedCache.TOTAL_NAME).read_text()) >= cache.total_bytes()
