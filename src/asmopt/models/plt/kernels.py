"""Which product `PLTLinear` uses for few-row CPU inputs, chosen by timing the model's own calls.

A decode step multiplies every weight by batch x loops rows (1 to a few dozen). For such
shapes the BLAS behind `F.linear` (`x @ W.T`), the transposed product `(W @ x.T).T`, for one
row the matrix-vector product `W @ x` and, for float32, our multi-row kernel (`native`, which
reads the weight once for up to 8 rows) can differ by 2-5x, and which one wins depends on
the CPU, the BLAS build, the dtype, the row count and the weight shape: on one AMD EPYC the
transposed product was ~2.5x faster for 1-4 float32 rows, on an Intel Xeon it is ~2.5x slower
there but faster for bfloat16 rows, and for one bfloat16 row `torch.mv` beat it by 1-14% on
three of four 7B weight shapes. So nothing is assumed: the first products of each (dtype,
rows, in, out) on the CPU take the candidate kernels in turn and are timed as they run inside
the model, and after `SAMPLES` timed calls of each the fastest by median is kept (the
library's `F.linear` unless another is at least `MARGIN` faster; a near tie gets more rounds
of samples).

Why in use and not in a separate calibration: a decode step streams every weight once, so
each product meets a cold weight, beside whatever the step's other work left in the caches
and on the memory bus. Timing one weight over and over measures it cached; timing copies
cycled to keep it cold still misses the rest of the step. Both were tried on an Intel Xeon:
for the bf16 16-row 768 x 768 product the isolated ratio was 0.93 in one run and 1.07-1.11
in the next two, so the cached choice depended on the run. The interleaved calls of one step
share its conditions, so the comparison is fair under load too.

The calls of a shape that is still being timed change kernels, whose sums differ in the
last bits: the first decode steps of the first process on a machine can differ from later
ones at rounding level. Later processes read the cached choice and do not change kernels;
force a kernel for bit-stable runs from the first token.

Choices are cached in memory and in a JSON file per CPU model, torch version, thread count
and timing method (`plt_kernels.json` under `$ASMOPT_CACHE_DIR`, else
`$XDG_CACHE_HOME/asmopt`, else `~/.cache/asmopt`), so a later process does not time again.

Forcing: `set_linear_kernel("linear" | "few_row" | "mv" | "rows" | "auto")`, or the
environment variable `ASMOPT_PLT_LINEAR_KERNEL` with the same values (read when nothing was
set in code). A forced kernel that does not apply to a shape (`mv` for more than one row,
`rows` for other dtypes than float32 or when it cannot be built) leaves that shape to
`F.linear`. Products that need a gradient use only differentiable kernels (not `rows`) and
are never timed. `kernel_report()` lists every choice made in this process with every
candidate's timing (the benchmark prints it); `calibrating()` says whether some shape is
still being timed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch
import torch.nn.functional as F

from asmopt.cache import cache_root
from asmopt.provenance import cpu_model

from . import native

KernelMode = Literal["auto", "linear", "few_row", "mv", "rows"]
KERNEL_MODES: tuple[str, ...] = ("auto", "linear", "few_row", "mv", "rows")
# The library default first: it is what a choice falls back to.
KERNELS: tuple[str, ...] = ("linear", "few_row", "mv", "rows")
DIFFERENTIABLE: tuple[str, ...] = ("linear", "few_row", "mv")
ENV_VAR = "ASMOPT_PLT_LINEAR_KERNEL"
# Products with more rows than this are prefill-sized; `F.linear` is used without measuring.
MAX_ROWS = 32
# Another kernel must beat `F.linear` by this fraction to be chosen (timer noise on a busy
# machine is a few per cent; the library default wins ties).
MARGIN = 0.05
# Timed calls per kernel and round, after one untimed call of each (first calls allocate and
# build the BLAS's kernels). A decode step makes (layers x products of that shape) calls, so
# most shapes are decided within the first step; the LM head (one call a step) takes ~20-30.
SAMPLES = 8
# A median ratio within this distance of the threshold is a near tie: another round of
# samples, up to `_MAX_ROUNDS`, decides on all of them pooled.
_NEAR_TIE = 0.04
_MAX_ROUNDS = 3
TIMING_VERSION = 4  # part of the cache key: bump when the way choices are timed changes

_forced: KernelMode | None = None
ShapeKey = tuple[torch.dtype, int, int, int]  # dtype, rows, in_features, out_features
_choices: dict[ShapeKey, KernelChoice] = {}
_trials: dict[ShapeKey, Trial] = {}
_cached: dict[str, KernelChoice] = {}  # from the JSON file, by `_shape_key`
_file_loaded = False


def _dtype_name(dtype: torch.dtype | str) -> str:
    return dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")


def applicable(rows: int, dtype: torch.dtype | str) -> tuple[str, ...]:
    """The kernels that compute a `rows`-row product of this dtype: the matrix-vector product
    only for one row, the multi-row kernel only for float32."""
    return tuple(
        k
        for k in KERNELS
        if (k != "mv" or rows == 1) and (k != "rows" or _dtype_name(dtype) == "float32")
    )


def candidates(rows: int, dtype: torch.dtype | str) -> tuple[str, ...]:
    """The applicable kernels available in this process (the multi-row kernel only once it is
    built; asking builds it)."""
    return tuple(k for k in applicable(rows, dtype) if k != "rows" or native.load() is not None)


def decide(medians: dict[str, float]) -> tuple[str, float]:
    """The rule: the fastest alternative if it beats `F.linear` by `MARGIN`, else `F.linear`.
    Returns (kernel, the fastest alternative's median over F.linear's; inf without one)."""
    others = [k for k in medians if k != "linear"]
    if not others:
        return "linear", math.inf
    best = min(others, key=medians.__getitem__)
    ratio = medians[best] / medians["linear"]
    return (best if ratio < 1.0 - MARGIN else "linear"), ratio


@dataclass(frozen=True)
class KernelChoice:
    """One decision: median microseconds of one call of each candidate, timed in use."""

    dtype: str
    rows: int
    in_features: int
    out_features: int
    timings_us: dict[str, float]
    kernel: str
    source: str  # "measured" (this process) or "cache" (the JSON file)

    def __post_init__(self) -> None:
        allowed = applicable(self.rows, self.dtype)
        timed = set(self.timings_us)
        if (
            not timed <= set(allowed)
            or "linear" not in timed
            or self.kernel not in timed
            or not all(isinstance(v, int | float) and v > 0 for v in self.timings_us.values())
        ):
            raise ValueError(
                f"a {self.dtype} kernel choice for {self.rows} rows must time F.linear and "
                f"pick one of the kernels it timed (of {allowed}); got {self.kernel!r} with "
                f"timings {self.timings_us}"
            )

    @property
    def best_alternative(self) -> str | None:
        """The fastest kernel other than `F.linear` (what `F.linear` was weighed against)."""
        others = [k for k in self.timings_us if k != "linear"]
        return min(others, key=self.timings_us.__getitem__) if others else None

    def without(self, kernel: str) -> str:
        """The kernel the rule picks from these timings when `kernel` is not available."""
        return decide({k: v for k, v in self.timings_us.items() if k != kernel})[0]


def set_linear_kernel(mode: KernelMode | None) -> None:
    """Forces `"linear"`, `"few_row"`, `"mv"` or `"rows"` for few-row CPU products, or
    `"auto"` to measure; None goes back to the environment variable (default auto). Process-wide."""
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


def machine_key() -> str:
    """What a cached choice is valid for: CPU model, torch version, intra-op threads and the
    timing method (choices timed another way are not reused)."""
    return (
        f"{cpu_model()} | torch {torch.__version__} | {torch.get_num_threads()} threads"
        f" | timing v{TIMING_VERSION}"
    )


def cache_path() -> Path:
    """`plt_kernels.json` under the asmopt cache root (`asmopt.cache.cache_root`)."""
    return cache_root() / "plt_kernels.json"


def _shape_key(dtype: torch.dtype, rows: int, in_features: int, out_features: int) -> str:
    return f"{str(dtype).removeprefix('torch.')} rows={rows} {in_features}x{out_features}"


def _load_file() -> None:
    """Reads this machine's entries; a malformed entry (hand-edited, or written by another
    version under the same key) is skipped, so its shape is timed again."""
    global _file_loaded
    _file_loaded = True
    try:
        stored = json.loads(cache_path().read_text()).get(machine_key(), {})
    except (OSError, ValueError, AttributeError):
        return
    for key, entry in stored.items():
        with contextlib.suppress(TypeError, KeyError, ValueError, AttributeError):
            _cached[key] = KernelChoice(**{**entry, "source": "cache"})


def _save(key: str, choice: KernelChoice) -> None:
    """Adds one choice to the JSON file (read-modify-write; losing a race only costs a
    re-measurement in some later process)."""
    with contextlib.suppress(OSError, ValueError):
        path = cache_path()  # creates the cache root; an unwritable one only skips the save
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
    """`x2d @ weight.T` computed as `(weight @ x2d.T).T`, a single row padded to two (so that
    this candidate stays a matrix-matrix product; the matrix-vector path is its own
    candidate, `mv`). Returns `[rows, out]`, contiguous unless `contiguous=False`: then the
    transposed view of the product, which element-wise consumers take as it is and whose
    transpose is the contiguous right operand the next few-row product wants (the MLP's gate
    and up products feed its down product so, skipping two copies per layer)."""
    rows = x2d.shape[0]
    if rows == 1:
        x2d = torch.cat([x2d, x2d.new_zeros(1, x2d.shape[1])])
    # F.linear(weight, x2d) is `weight @ x2d.T` as one call (the same `mm` inside).
    product = F.linear(weight, x2d).t()
    if rows == 1:
        product = product[:1]
    return product.contiguous() if contiguous else product


@dataclass
class Trial:
    """The timed calls of one shape while its kernel is being chosen.

    Calls take the candidates in turn (`F.linear` first); the first call of each is not
    timed. `decision()` is None until every candidate has `SAMPLES` timed calls per round,
    then the choice by median (with another round for a near tie, at most `_MAX_ROUNDS`)."""

    candidates: tuple[str, ...] = ("linear", "few_row")
    samples_us: dict[str, list[float]] = field(default_factory=dict)
    calls: int = 0
    rounds: int = 1

    def __post_init__(self) -> None:
        if not self.candidates or self.candidates[0] != "linear":
            raise ValueError(f"a trial weighs kernels against 'linear' first: {self.candidates}")
        for kernel in self.candidates:
            self.samples_us.setdefault(kernel, [])

    def next_kernel(self) -> str:
        return self.candidates[self.calls % len(self.candidates)]

    def record(self, kernel: str, microseconds: float) -> None:
        self.calls += 1
        if self.calls > len(self.candidates):  # the first call of each kernel is untimed
            self.samples_us[kernel].append(microseconds)

    def decision(self) -> tuple[dict[str, float], str] | None:
        """(median us per kernel, chosen kernel), or None: keep timing."""
        wanted = SAMPLES * self.rounds
        if any(len(self.samples_us[k]) < wanted for k in self.candidates):
            return None
        medians = {k: statistics.median(self.samples_us[k]) for k in self.candidates}
        kernel, ratio = decide(medians)
        if abs(ratio - (1.0 - MARGIN)) < _NEAR_TIE and self.rounds < _MAX_ROUNDS:
            self.rounds += 1
            return None
        return medians, kernel


def _run(
    kernel: str,
    x2d: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    contiguous: bool,
) -> torch.Tensor:
    """`x2d @ weight.T + bias` with `kernel` (one of `applicable(rows, dtype)`)."""
    if kernel == "linear":
        return F.linear(x2d, weight, bias)
    if kernel == "mv":
        out = torch.mv(weight, x2d[0]).unsqueeze(0)
    elif kernel == "rows":
        out = native.rows_product(x2d, weight)
    else:
        out = few_row_product(x2d, weight, contiguous)
    return out if bias is None else out + bias


def product(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    contiguous: bool = True,
) -> torch.Tensor:
    """`x2d @ weight.T + bias` (`[rows, out]`) with the kernel chosen for this shape on this
    machine, timing this call if the shape is still being chosen. `contiguous=False` allows
    the transposed product's view (see `few_row_product`)."""
    rows = x2d.shape[0]
    decided = chosen_kernel(weight, rows)
    if torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (x2d, weight, bias)
    ):
        # Never timed, and never the multi-row kernel (it has no backward).
        kernel = decided if decided in DIFFERENTIABLE else "linear"
        return _run(kernel, x2d, weight, bias, contiguous)
    if decided is not None:
        return _run(decided, x2d, weight, bias, contiguous)
    out_features, in_features = weight.shape
    key = (weight.dtype, rows, in_features, out_features)
    trial = _trials.get(key)
    if trial is None:
        trial = _trials.setdefault(key, Trial(candidates(rows, weight.dtype)))
    kernel = trial.next_kernel()
    start = time.perf_counter()
    out = _run(kernel, x2d, weight, bias, contiguous)
    trial.record(kernel, (time.perf_counter() - start) * 1e6)
    timed = trial.decision()
    if timed is not None:
        medians, chosen = timed
        choice = KernelChoice(
            dtype=str(weight.dtype).removeprefix("torch."),
            rows=rows,
            in_features=in_features,
            out_features=out_features,
            timings_us={k: round(us, 2) for k, us in medians.items()},
            kernel=chosen,
            source="measured",
        )
        _choices[key] = choice
        _trials.pop(key, None)  # another thread may have decided the same shape
        _save(_shape_key(*key), choice)
    return out


def _from_file(key: ShapeKey) -> KernelChoice | None:
    """This machine's cached choice for the shape (kept in memory once read), or None; also
    None when the choice was made without a kernel that is available now (it is timed
    again with it)."""
    if not _file_loaded:
        _load_file()
    cached = _cached.get(_shape_key(*key))
    if cached is None:
        return None
    missing = set(candidates(key[1], key[0])) - set(cached.timings_us)
    if missing:
        return None
    _choices[key] = cached
    return cached


def chosen_kernel(weight: torch.Tensor, rows: int) -> str | None:
    """The kernel decided for `rows` rows of this weight (`"linear"`, `"few_row"` or `"mv"`),
    or None while it is still being timed (or nothing has run yet)."""
    if rows > MAX_ROWS or weight.device.type != "cpu" or weight.dtype == torch.float64:
        return "linear"
    mode = kernel_mode()
    if mode != "auto":  # forcing another kernel never builds the multi-row one
        if mode not in applicable(rows, weight.dtype) or (mode == "rows" and not native.load()):
            return "linear"
        return mode
    out_features, in_features = weight.shape
    key = (weight.dtype, rows, in_features, out_features)
    choice = _choices.get(key) or _from_file(key)
    if choice is None:
        return None
    if choice.kernel == "rows" and native.load() is None:  # switched off since it was chosen
        return choice.without("rows")
    return choice.kernel


def calibrating() -> bool:
    """Whether some shape met in this process is still being timed."""
    return bool(_trials)


def kernel_report() -> list[KernelChoice]:
    """Every choice used in this process (measured or from the file), sorted by dtype, rows
    and shape."""
    return sorted(_choices.values(), key=lambda c: (c.dtype, c.rows, c.in_features, c.out_features))


def forget_choices() -> None:
    """Drops the in-memory choices and trials (the file stays); the next product reloads or
    times again."""
    global _file_loaded
    _choices.clear()
    _trials.clear()
    _cached.clear()
    _file_loaded = False


__all__ = [
    "DIFFERENTIABLE",
    "ENV_VAR",
    "KERNELS",
    "KERNEL_MODES",
    "KernelChoice",
    "Trial",
    "applicable",
    "cache_path",
    "calibrating",
    "candidates",
    "chosen_kernel",
    "decide",
    "few_row_product",
    "forget_choices",
    "kernel_mode",
    "kernel_report",
    "machine_key",
    "product",
    "set_linear_kernel",
]
