"""Which product `PLTLinear` uses for few-row CPU inputs, chosen by measurement on this machine.

A decode step multiplies every weight by batch x loops rows (1 to a few dozen). For such
shapes the BLAS behind `F.linear` (`x @ W.T`) and the transposed product `(W @ x.T).T` can
differ by 2-5x, and which one wins depends on the CPU, the BLAS build, the dtype, the row count
and the weight shape: on one AMD EPYC the transposed product was ~2.5x faster for 1-4 float32
rows, on an Intel Xeon it is ~2.5x slower there but faster for bfloat16 rows. So nothing is
assumed: the first time a (dtype, rows, in, out) product is met on the CPU, both are timed on
that layer's own weight and the faster is kept (the library's `F.linear` unless the other is at
least `MARGIN` faster). Choices are cached in memory and in a JSON file per CPU model, torch
version and thread count (`plt_kernels.json` under `$ASMOPT_CACHE_DIR`, else
`$XDG_CACHE_HOME/asmopt`, else `~/.cache/asmopt`), so a later process does not measure again.

Forcing: `set_linear_kernel("linear" | "few_row" | "auto")`, or the environment variable
`ASMOPT_PLT_LINEAR_KERNEL` with the same values (read when nothing was set in code).
`kernel_report()` lists every choice made in this process with both timings (the benchmark
prints it).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F

KernelMode = Literal["auto", "linear", "few_row"]
KERNEL_MODES: tuple[str, ...] = ("auto", "linear", "few_row")
ENV_VAR = "ASMOPT_PLT_LINEAR_KERNEL"
# Products with more rows than this are prefill-sized; `F.linear` is used without measuring.
MAX_ROWS = 32
# The transposed product must beat `F.linear` by this fraction to be chosen (timer noise on
# a busy machine is a few per cent; the library default wins ties).
MARGIN = 0.05
# Calls timed per candidate: enough for about `_BUDGET_SECONDS` each, within these bounds.
# The fastest single call counts: on a shared machine a call is only ever slowed down
# (preempted threads, a second intra-op thread waiting for a core, other jobs' cache traffic),
# never sped up, so the minimum estimates the kernel's own cost.
_BUDGET_SECONDS = 0.03
_MIN_CALLS, _MAX_CALLS = 9, 60
# A decode step streams every weight of the model once, so a weight is cold (not in any cache)
# when its product runs; timing one weight over and over measures it warm instead, and the two
# regimes can pick different kernels (bf16, 16 rows, 768 x 768 on an Intel Xeon: warm 64 vs
# 67 us, cold 105 vs 127 us). Weights of at least this size are timed cold: each call reads
# a copy last touched more than twice the last-level cache ago. Smaller ones (tiny models,
# whose weights all stay cached) are timed warm.
COLD_MIN_BYTES = 1 << 20
_COLD_FALLBACK_CACHE_BYTES = 64 << 20
TIMING_VERSION = 2  # part of the cache key: bump when the way choices are timed changes
# A choice whose two timings are within this fraction of the margin's threshold is measured
# again and decided on both measurements pooled (a near-tie is otherwise decided by noise).
_NEAR_TIE = 0.04

_forced: KernelMode | None = None
ShapeKey = tuple[torch.dtype, int, int, int]  # dtype, rows, in_features, out_features
_choices: dict[ShapeKey, KernelChoice] = {}
_cached: dict[str, KernelChoice] = {}  # from the JSON file, by `_shape_key`
_file_loaded = False


@dataclass(frozen=True)
class KernelChoice:
    """One measured decision: microseconds of one call of each candidate (fastest call)."""

    dtype: str
    rows: int
    in_features: int
    out_features: int
    linear_us: float
    few_row_us: float
    use_few_row: bool
    source: str  # "measured" (this process) or "cache" (the JSON file)

    @property
    def kernel(self) -> str:
        return "few_row" if self.use_few_row else "linear"


def set_linear_kernel(mode: KernelMode | None) -> None:
    """Forces `"linear"` or `"few_row"` for few-row CPU products, or `"auto"` to measure;
    None goes back to the environment variable (default auto). Process-wide."""
    global _forced
    if mode is not None and mode not in KERNEL_MODES:
        raise ValueError(f"linear kernel must be one of {KERNEL_MODES}, got {mode!r}.")
    _forced = mode


def kernel_mode() -> KernelMode:
    """The mode in force: set in code, else `$ASMOPT_PLT_LINEAR_KERNEL`, else auto."""
    if _forced is not None:
        return _forced
    value = os.environ.get(ENV_VAR, "auto").strip().lower().replace("-", "_") or "auto"
    if value not in KERNEL_MODES:
        raise ValueError(f"${ENV_VAR} must be one of {KERNEL_MODES}, got {value!r}.")
    return value  # type: ignore[return-value]


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo on Linux), for keying cached choices."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def machine_key() -> str:
    """What a cached choice is valid for: CPU model, torch version, intra-op threads and the
    timing method (choices timed before weights were timed cold are not reused)."""
    return (
        f"{cpu_model()} | torch {torch.__version__} | {torch.get_num_threads()} threads"
        f" | timing v{TIMING_VERSION}"
    )


def cache_path() -> Path:
    explicit = os.environ.get("ASMOPT_CACHE_DIR")
    if explicit:
        return Path(explicit) / "plt_kernels.json"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "asmopt" / "plt_kernels.json"


def _shape_key(dtype: torch.dtype, rows: int, in_features: int, out_features: int) -> str:
    return f"{str(dtype).removeprefix('torch.')} rows={rows} {in_features}x{out_features}"


def _load_file() -> None:
    global _file_loaded
    _file_loaded = True
    try:
        stored = json.loads(cache_path().read_text()).get(machine_key(), {})
    except (OSError, ValueError, AttributeError):
        return
    for key, entry in stored.items():
        with contextlib.suppress(TypeError, KeyError):
            _cached[key] = KernelChoice(**{**entry, "source": "cache"})


def _save(key: str, choice: KernelChoice) -> None:
    """Adds one choice to the JSON file (read-modify-write; losing a race only costs a
    re-measurement in some later process)."""
    path = cache_path()
    with contextlib.suppress(OSError, ValueError):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        entry = asdict(choice)
        entry.pop("source")
        data.setdefault(machine_key(), {})[key] = entry
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)


def few_row_product(
    x2d: torch.Tensor, weight: torch.Tensor, contiguous: bool = True
) -> torch.Tensor:
    """`x2d @ weight.T` computed as `(weight @ x2d.T).T`, a single row padded to two (the
    one-row case would otherwise take the matrix-vector path). Returns `[rows, out]`,
    contiguous unless `contiguous=False`: then the transposed view of the product, which
    element-wise consumers take as it is and whose transpose is the contiguous right operand
    the next few-row product wants (the MLP's gate and up products feed its down product so,
    skipping two copies per layer)."""
    rows = x2d.shape[0]
    if rows == 1:
        x2d = torch.cat([x2d, x2d.new_zeros(1, x2d.shape[1])])
    # F.linear(weight, x2d) is `weight @ x2d.T` as one call (the same `mm` inside).
    product = F.linear(weight, x2d).t()
    if rows == 1:
        product = product[:1]
    return product.contiguous() if contiguous else product


def _call_us(fn: Callable[[torch.Tensor], object], weight: torch.Tensor) -> float:
    start = time.perf_counter()
    fn(weight)
    return (time.perf_counter() - start) * 1e6


def last_level_cache_bytes() -> int:
    """Size of the largest CPU cache (Linux sysfs), or 64 MiB where it cannot be read."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        with contextlib.suppress(OSError, ValueError):
            text = entry.read_text().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            sizes.append(int(text.rstrip("KMG")) * scale)
    return max(sizes, default=_COLD_FALLBACK_CACHE_BYTES)


def timing_weights(weight: torch.Tensor) -> list[torch.Tensor]:
    """The weights the timed calls cycle through: `weight` alone (warm), or for a weight of at
    least `COLD_MIN_BYTES` enough copies that each is read again only after more than twice
    the last-level cache has been touched (created in order, so the first copies are cold
    first)."""
    size = weight.numel() * weight.element_size()
    reuse_bytes = 2 * last_level_cache_bytes()
    if size < COLD_MIN_BYTES or size >= reuse_bytes:
        return [weight]
    return [weight.clone() for _ in range(-(-reuse_bytes // size))]


@torch.no_grad()
def measure(weight: torch.Tensor, rows: int) -> tuple[float, float]:
    """Microseconds of one call of `F.linear` and of the few-row product on `weight` (rows
    of random input): the fastest of many single calls each, the two alternating call by call
    so that a change of load hits both, each call on a cold copy of the weight when the
    weight is large enough to be streamed from memory in a decode step (`COLD_MIN_BYTES`)."""
    x = torch.randn(rows, weight.shape[1], dtype=weight.dtype)

    def linear(w: torch.Tensor) -> torch.Tensor:
        return F.linear(x, w)

    def few(w: torch.Tensor) -> torch.Tensor:
        return few_row_product(x, w)

    linear(weight), few(weight)  # first calls allocate
    copies = timing_weights(weight)
    turn = iter(range(1 << 62))

    def next_copy() -> torch.Tensor:
        return copies[next(turn) % len(copies)]

    linear_us = min(_call_us(linear, next_copy()) for _ in range(2))
    few_us = min(_call_us(few, next_copy()) for _ in range(2))
    calls = int(_BUDGET_SECONDS * 1e6 / max(min(linear_us, few_us), 1.0))
    for _ in range(max(_MIN_CALLS, min(_MAX_CALLS, calls))):
        linear_us = min(linear_us, _call_us(linear, next_copy()))
        few_us = min(few_us, _call_us(few, next_copy()))
    return linear_us, few_us


def use_few_row(weight: torch.Tensor, rows: int) -> bool:
    """Whether `PLTLinear` should compute `rows` rows against this CPU weight transposed."""
    if rows > MAX_ROWS or weight.device.type != "cpu" or weight.dtype == torch.float64:
        return False
    mode = kernel_mode()
    if mode != "auto":
        return mode == "few_row"
    out_features, in_features = weight.shape
    key = (weight.dtype, rows, in_features, out_features)
    choice = _choices.get(key)
    if choice is None:
        choice = _choose(weight, rows)
        _choices[key] = choice
    return choice.use_few_row


def _choose(weight: torch.Tensor, rows: int) -> KernelChoice:
    """The cached choice of this machine for the shape, else a new measurement (saved)."""
    out_features, in_features = weight.shape
    name = _shape_key(weight.dtype, rows, in_features, out_features)
    if not _file_loaded:
        _load_file()
    if name in _cached:
        return _cached[name]
    linear_us, few_us = measure(weight.detach(), rows)
    if abs(few_us / linear_us - (1.0 - MARGIN)) < _NEAR_TIE:
        again_linear, again_few = measure(weight.detach(), rows)
        linear_us, few_us = min(linear_us, again_linear), min(few_us, again_few)
    choice = KernelChoice(
        dtype=str(weight.dtype).removeprefix("torch."),
        rows=rows,
        in_features=in_features,
        out_features=out_features,
        linear_us=round(linear_us, 2),
        few_row_us=round(few_us, 2),
        use_few_row=few_us < (1.0 - MARGIN) * linear_us,
        source="measured",
    )
    _save(name, choice)
    return choice


def kernel_report() -> list[KernelChoice]:
    """Every choice used in this process (measured or from the file), sorted by dtype, rows
    and shape."""
    return sorted(_choices.values(), key=lambda c: (c.dtype, c.rows, c.in_features, c.out_features))


def forget_choices() -> None:
    """Drops the in-memory choices (the file stays); the next product reloads or measures."""
    global _file_loaded
    _choices.clear()
    _cached.clear()
    _file_loaded = False


__all__ = [
    "ENV_VAR",
    "KERNEL_MODES",
    "KernelChoice",
    "cache_path",
    "cpu_model",
    "few_row_product",
    "forget_choices",
    "kernel_mode",
    "kernel_report",
    "machine_key",
    "measure",
    "set_linear_kernel",
    "use_few_row",
]
