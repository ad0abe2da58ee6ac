"""This machine's between-sandbox spread: measured by timing two copies of one binary in
the sandbox executor (A/A, several sandboxes, several run lengths, on every timing core),
estimated by `spread.spread_from_rounds`, and kept in the cache (`machine_spread`),
refreshed after a reboot, a day, or by `asmopt doctor --calibrate` (about 20 seconds; the
timing cores are measured at once)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import platform
import shutil
import stat
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.cache import cache_root
from asmopt.measure.timing.executor import SandboxExecutor
from asmopt.measure.timing.spread import (
    CALIBRATION_ROUNDS,
    DEFAULT_SPREAD,
    SandboxSpread,
    calibration_rounds_by_test,
    spread_from_rounds,
)
from asmopt.programs.model import Program, TestCase
from asmopt.toolchain import default_toolchain

if TYPE_CHECKING:
    from asmopt.measure.timing.cores import CoreLock
    from asmopt.sandbox.runner import Sandbox

log = logging.getLogger(__name__)

SPREAD_VERSION = 2  # 2: the memory-bound program joined the calibration
MAX_AGE_S = 24 * 3600.0  # a measurement older than a day is taken again
# The calibration program's inputs, by the kind of work they time (see CALIBRATION_SOURCE):
# `cache`, loop counts of about 1, 2.5 and 17 ms of CPU on a 3 GHz core; `memory`, about 5
# and 15 ms, most of the shorter one the page faults of its 8 MiB table.
CALIBRATION_INPUTS = {
    "cache": ("2\n", "25\n", "200\n"),
    "memory": ("0 m\n", "64 m\n"),
}


# The calibration program: an A/A pair of it is two copies of one binary. Its loop count
# comes on stdin. By default it mixes register work with a 256 KiB working set (the size
# where placement in memory matters); with `m` after the count it fills an 8 MiB table
# (page faults, where the kernel places each page) and follows a chain of dependent loads
# through it (cache and TLB misses), the work whose time moves most with placement. A test
# of either kind may be timed, so the spread kept is the larger of the two at each length.
CALIBRATION_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
static unsigned buf[1 << 16];
#define TABLE (1u << 21)
static unsigned chase(long n) {
    unsigned *table = malloc(TABLE * sizeof *table), h = 2166136261u, at = 0;
    if (!table) exit(1);
    for (unsigned i = 0; i < TABLE; i++) table[i] = i * 2654435761u;
    for (long r = 0; r < n * 65536; r++) {
        unsigned x = table[at];
        h = (h ^ x) * 16777619u;
        at = (at * 1103515245u + x + 12345u) & (TABLE - 1);
    }
    free(table);
    return h;
}
int main(void) {
    long n;
    char mode = 'c';
    if (scanf("%ld %c", &n, &mode) < 1 || n < 0) return 1;
    unsigned h = 2166136261u;
    if (mode == 'm') {
        h = chase(n);
    } else {
        for (long r = 0; r < n; r++)
            for (unsigned i = 0; i < (1u << 16); i++) {
                buf[i] = buf[i] * 31u + (i ^ (unsigned)r);
                h = (h ^ buf[(i * 7u) & 0xffffu]) * 16777619u;
            }
    }
    printf("%u\n", h);
    return 0;
}
"""


def _machine_key(cores: Sequence[int]) -> dict[str, Any]:
    """What must not change for a stored spread to stand: this boot, this CPU, these cores."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "version": SPREAD_VERSION,
        "boot_id": boot,
        "cpu": model,
        "kernel": platform.release(),
        "cores": list(cores),
    }


def spread_path() -> Path:

    return cache_root() / "timing_spread.json"


def _read_stored(path: Path, key: dict[str, Any]) -> SandboxSpread | None:
    """The stored spread, or None (then it is measured again): a cache file is data, never
    trusted. Anything but a regular file (a FIFO would block the read, a directory or a
    link loop fails it) and anything but the expected JSON object is ignored, with a
    warning where it is damaged rather than merely stale."""
    try:
        if not os.path.lexists(path):
            return None
        if not stat.S_ISREG(path.stat().st_mode):
            log.warning("%s is not a regular file: ignored, the spread is measured again", path)
            return None
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("cores"), dict):
            raise TypeError("not a stored spread")
        if data.get("key") != key or time.time() - float(data["measured_at"]) > MAX_AGE_S:
            return None
        per_core = [SandboxSpread.from_dict(d) for d in data["cores"].values()]
        return SandboxSpread.worst_of(per_core, str(data["source"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("%s is damaged (%s): ignored, the spread is measured again", path, exc)
        return None


def _store(path: Path, data: dict[str, Any]) -> None:
    """Write the spread beside its place and move it there (a FIFO or a file in the way is
    replaced); where that cannot be done (a directory in the way, a read-only cache) the
    measurement is only kept in memory, with a warning."""
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("timing spread not stored in %s (%s); measured again next time", path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()


def calibration_rounds_per_core(
    sandbox: Any, lock: Any, toolchain: Any = None, rounds: int | None = None
) -> dict[int, dict[str, dict[float, list[list[float]]]]]:
    """The raw A/A rounds of a calibration on every timing core of `lock`, all at once:
    per core and kind of work (CALIBRATION_INPUTS), each run length's log-ratios by round
    (what `spread_from_rounds` reads). Both kinds run in the same sandboxes."""
    toolchain = toolchain or default_toolchain()
    kinds = [(kind, stdin) for kind, inputs in CALIBRATION_INPUTS.items() for stdin in inputs]
    tests = tuple(
        TestCase(f"{kind}{k}", stdin.encode(), b"") for k, (kind, stdin) in enumerate(kinds)
    )
    program = Program("timing_spread", CALIBRATION_SOURCE, tests)
    build = toolchain.compile_binary(program, ("-O2",))
    if not build.ok or build.output is None:
        raise RuntimeError(f"calibration program did not build: {build.message}")
    work = Path(tempfile.mkdtemp(prefix="asmopt-spread-"))
    try:
        a, b = work / "a", work / "b"
        shutil.copy2(build.output, a)
        shutil.copy2(build.output, b)

        def measure(core: int) -> dict[str, dict[float, list[list[float]]]]:
            executor = SandboxExecutor(
                sandbox, a, b, list(tests), lock=lock.only(core), check_output=False
            )
            by_test = calibration_rounds_by_test(
                executor.run_batch, len(tests), rounds=rounds or CALIBRATION_ROUNDS
            )
            by_kind: dict[str, dict[float, list[list[float]]]] = {}
            for (kind, _), (length, logs) in zip(kinds, by_test, strict=True):
                by_kind.setdefault(kind, {})[length] = logs
            return by_kind

        # Every core at once (each holds its own timing lock): a machine with many timing
        # cores waits for one calibration, not one per core.
        cores = list(lock.layout.timing)
        with ThreadPoolExecutor(max_workers=len(cores)) as pool:
            return dict(zip(cores, pool.map(measure, cores), strict=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def calibrate(
    sandbox: Any, lock: Any, toolchain: Any = None, rounds: int | None = None
) -> dict[int, SandboxSpread]:
    """Measure the spread on every timing core of `lock`, all at once (about 20 seconds):
    per core, the larger of the two kinds' spreads at each run length."""
    per_core = calibration_rounds_per_core(sandbox, lock, toolchain, rounds)
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime())
    return {
        core: SandboxSpread.worst_of(
            [spread_from_rounds(rounds, f"{kind} work") for kind, rounds in by_kind.items()],
            f"measured on core {core} at {stamp}",
        )
        for core, by_kind in per_core.items()
    }


def stored_spread(lock: CoreLock) -> SandboxSpread | None:
    """The spread stored for `lock`'s timing cores on this boot, or None (nothing measured)."""
    return _read_stored(spread_path(), _machine_key(tuple(lock.layout.timing)))


_MEMO: dict[tuple[Any, ...], SandboxSpread] = {}


def machine_spread(sandbox: Sandbox, lock: CoreLock, *, refresh: bool = False) -> SandboxSpread:
    """This machine's spread for `lock`'s timing cores: from memory, else the cache file
    (same boot, CPU, kernel and cores, under a day old), else measured now and stored.

    `ASMOPT_TIMING_SPREAD=default` uses DEFAULT_SPREAD without measuring. A calibration
    that fails (no compiler, a broken sandbox) falls back to DEFAULT_SPREAD with a logged
    warning: timing then still works, with the default's wider allowance."""
    if os.environ.get("ASMOPT_TIMING_SPREAD", "").strip().lower() == "default":
        return DEFAULT_SPREAD
    cores = tuple(lock.layout.timing)
    key = _machine_key(cores)
    memo_key = (str(spread_path()), cores)
    if not refresh and memo_key in _MEMO:
        return _MEMO[memo_key]
    path = spread_path()
    with open(path.with_suffix(".lock"), "a+") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # one process measures; the others read its file
        stored = None if refresh else _read_stored(path, key)
        if stored is None:
            try:
                per_core = calibrate(sandbox, lock)
            except Exception as exc:
                log.warning("timing spread not measured (%s); using the default", exc)
                return DEFAULT_SPREAD
            stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime())
            data = {
                "key": key,
                "measured_at": time.time(),
                "source": f"measured on cores {list(cores)} at {stamp}",
                "cores": {str(c): sp.to_dict() for c, sp in per_core.items()},
            }
            _store(path, data)
            stored = SandboxSpread.worst_of(list(per_core.values()), data["source"])
    _MEMO[memo_key] = stored
    return stored
