"""The multi-row float32 product (`rows_product.cpp`), built for this CPU at first use.

Why a kernel of our own: with few rows a product is bound by streaming the weight, so a
decode step that sends 2 rows through every weight (PLT-2 at batch 1) should cost what one
row costs. The float32 BLAS behind `F.linear` does not manage that on every CPU (on an Intel
Xeon, 1.1-1.4x for 2 rows and 2-2.9x for 8 rows of a 7B-sized weight;
`bench/results/few_row_products.md`), and none of the other products torch offers streams
the weight once for several float32 rows. The kernel is one candidate among those that
`kernels` times in use; it is chosen only where it measures faster.

Built with torch's C++ extension loader (a C++ compiler, ninja and the Python headers are
needed) with `-march=native` and torch's own OpenMP, so its threads are torch's intra-op
threads: a kernel with threads of its own would wait for torch's just-finished workers,
which spin for milliseconds after each parallel region. The build (one compile of torch's
headers: a minute or more, 2-3 minutes on a 2-core machine) happens once per machine, CPU
model and feature set and torch version, under the asmopt cache root (`native/`); later
processes load it in well under a second. If it cannot be built, the reason is kept
(`status()`) and the other kernels are used.

`ASMOPT_PLT_NATIVE=off` never builds or uses it; `auto` (the default) builds it when a
float32 few-row product first needs it.

Nothing here prints: that a build starts, how long it took and why the kernel is
unavailable are INFO records of this module's logger (`NOTICE_LOGGER`), shown by the
`asmopt` command and by whatever logging configuration a Python caller sets up.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Literal

import torch

from asmopt.cache import cache_root
from asmopt.provenance import cpu_flags, cpu_model

ENV_VAR = "ASMOPT_PLT_NATIVE"
NATIVE_MODES: tuple[str, ...] = ("auto", "off")
SOURCE = Path(__file__).with_name("rows_product.cpp")
CFLAGS = ("-O3", "-march=native", "-fopenmp")
# A build takes about a minute; a lock file older than this was left by a killed build.
STALE_LOCK_S = 600

NOTICE_LOGGER = __name__
log = logging.getLogger(__name__)
_lock = threading.Lock()
_module: ModuleType | None = None
_failure: str | None = None


def native_mode() -> Literal["auto", "off"]:
    """`$ASMOPT_PLT_NATIVE` (default auto); anything else is refused by name."""
    value = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if value not in NATIVE_MODES:
        raise ValueError(f"${ENV_VAR} must be one of {NATIVE_MODES}, got {value!r}.")
    return value  # type: ignore[return-value]


def build_dir() -> Path:
    """One directory per source, compiler flags, torch and Python version, CPU model and CPU
    feature flags: `-march=native` code is only valid where the CPU has every instruction it
    was built with, and virtual machines of one CPU model can hide different features."""
    key = "\n".join(
        [
            SOURCE.read_text(),
            " ".join(CFLAGS),
            torch.__version__,
            sys.version,
            cpu_model(),
            cpu_flags(),
        ]
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_root() / "native" / f"plt_rows_{digest}"


def load() -> ModuleType | None:
    """The built extension, or None when it is switched off or could not be built (the
    reason is in `status()`). Builds it on the first call of the process; later calls are a
    lookup."""
    global _module, _failure
    if native_mode() == "off":
        return None
    if _module is not None or _failure is not None:
        return _module
    with _lock:
        if _module is None and _failure is None:
            try:
                _module = _build()
            except Exception as exc:  # a missing compiler, ninja or header: say which
                lines = str(exc).strip().splitlines() or [""]
                _failure = f"{type(exc).__name__}: {lines[-1][:300]}"
                log.info("the multi-row float32 kernel is unavailable (%s)", _failure)
    return _module


def _build() -> ModuleType:
    from torch.utils import cpp_extension

    directory = build_dir()
    directory.mkdir(parents=True, exist_ok=True)
    lock = directory / "lock"
    with contextlib.suppress(OSError):
        if time.time() - lock.stat().st_mtime > STALE_LOCK_S:
            # Left by a process killed while building: torch's loader would wait for it forever.
            log.info("removing a stale build lock %s", lock)
            lock.unlink()
    built = any(directory.glob("*.so"))
    if not built:
        log.info(
            "building the multi-row float32 product for this CPU in %s (once per "
            "machine, CPU and torch version; a minute or more, 2-3 on 2 cores; "
            "ASMOPT_PLT_NATIVE=off skips it)",
            directory,
        )
    start = time.monotonic()
    path = os.environ.get("PATH", "")
    if shutil.which("ninja") is None:
        # The `ninja` wheel puts its binary beside this interpreter, which need not be on PATH;
        # torch's loader runs `ninja` from PATH.
        os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + path
    try:
        module = cpp_extension.load(
            name="asmopt_plt_rows",
            sources=[str(SOURCE)],
            extra_cflags=list(CFLAGS),
            build_directory=str(directory),
            verbose=False,
        )
    finally:
        os.environ["PATH"] = path
    if not built:
        log.info("built in %.0f s", time.monotonic() - start)
    return module


def rows_product(x2d: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """`x2d @ weight.T` (float32, CPU, `[rows, out]`) with the weight read once for up to 8
    rows. Not differentiable: `kernels` offers it only where no gradient is needed."""
    module = load()
    if module is None:
        raise RuntimeError(f"the multi-row float32 kernel is not available: {status()}")
    return module.rows_product(x2d, weight)


def status() -> str:
    """Whether the kernel is in use, off, not built yet or unavailable (and why)."""
    if native_mode() == "off":
        return "off"
    if _module is not None:
        return f"loaded ({Path(_module.__file__ or '').parent.name})"
    if _failure is not None:
        return f"unavailable: {_failure}"
    return "not loaded yet"


__all__ = [
    "ENV_VAR",
    "NATIVE_MODES",
    "build_dir",
    "cpu_flags",
    "load",
    "native_mode",
    "rows_product",
    "status",
]
