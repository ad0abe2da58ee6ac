"""Which product `PLTLinear` uses for few-row CPU inputs, chosen by timing the model's own calls.

A decode step multiplies every weight by batch x loops rows (1 to a few dozen). For such
shapes the BLAS behind `F.linear` (`x @ W.T`), the transposed product `(W @ x.T).T`, for one
row the matrix-vector product `W @ x` and, for float32, our multi-row kernel (`native`, which
reads the weight once for up to 8 rows) can differ by up to ~3x, and which one wins depends
on the CPU, the BLAS build, the dtype, the row count and the weight shape: over cold 7B-sized
weights on a 2-core Intel Xeon (bench/results/few_row_products.md) the transposed product
took 1.7-2.4x the time of `F.linear` for 1-2 float32 rows and 0.31-0.93x for 1-4 bfloat16
rows, and for one bfloat16 row `torch.mv` beat it by 1-14% on three of four shapes. A
speedup of the transposed product for 1-4 float32 rows once noted on an AMD EPYC was never
kept as data, and a later run on an AMD EPYC did not reproduce it. So nothing is assumed:
the first products of each (dtype, rows, in, out) on the CPU take the candidate kernels in
turn and are timed as they run inside the model, and after `SAMPLES` timed calls of each
the fastest by median is kept (the library's `F.linear` unless another is at least `MARGIN`
faster; a near tie gets more rounds of samples).

Why in use and not in a separate calibration: a decode step streams every weight once, so
each product meets a cold weight, beside whatever the step's other work left in the caches
and on the memory bus. Timing one weight over and over measures it cached; timing copies
cycled to keep it cold still misses the rest of the step. Both were tried on an Intel Xeon
(not kept as data): for the bf16 16-row 768 x 768 product the isolated ratio was 0.93 in
one run and 1.07-1.11 in the next two, so the cached choice depended on the run. The
interleaved calls of one step share its conditions, so the comparison is fair under load
too.

The calls of a shape that is still being timed change kernels, whose sums differ in the
last bits: the first decode steps of the first process on a machine can differ from later
ones at rounding level. Later processes read the cached choice and do not change kernels;
force a kernel for bit-stable runs from the first token.

Choices are cached in memory and in a JSON file per CPU model, torch version, thread count
and timing method (`plt_kernels.json` under `$ASMOPT_CACHE_DIR`, else
`$XDG_CACHE_HOME/asmopt`, else `~/.cache/asmopt`), so a later process does not time again.

A cached choice lasts, so a timing is checked before it is stored (`timing_problems`):

- the per-row bound: with the best kernel of each row count, a product of more rows costs no
  less than one of fewer rows (the fewer rows could be padded to more) and at most
  ceil(more / fewer) times it (the more rows could be split), each with `ROW_TOLERANCE`
  (and `TIMER_FLOOR_US`); checked against every other row count of the same weight known in
  this process or the file. A single kernel may break it (the BLAS's one-row path is its own
  code: bfloat16 `F.linear` took 0.57-0.83x its one-row time for two rows in the committed
  measurements), the best one may not;
- the two repeated timings agree: the medians of the first and the second half of each
  kernel's samples within `REPEAT_FACTOR` (or `TIMER_FLOOR_US`);
- the machine was not contended: the median over the timed calls of the process's CPU time
  over wall time at least `MIN_CPU_OVER_WALL`, and the 1-minute load average at most
  `MAX_LOAD_PER_CPU` per CPU.

A timing that fails is retimed, at most `MAX_RETIMES` times; if it still fails, the shape
uses `F.linear` for the rest of the process, nothing is cached and the reason is logged
(and kept: `refusals()`); the stored row counts it broke the per-row bound against are timed
again when next met, since either side may be the one timed under load. Entries already in
the file that break the per-row bound against each other are not used (both are timed
again), so choices stored before these checks are read in the same format and re-checked.

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
import logging
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
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

# The sanity checks of a timed choice (module docstring). Tolerance of the per-row bound: in
# the committed measurements (bench/results/few_row_products.md, Intel Xeon) the best kernel
# at more rows is at most 7% below the best at one row (timer noise), so 25% leaves room
# without admitting a timing a few times off.
ROW_TOLERANCE = 0.25
# The two halves of a kernel's samples (in time order) may differ by this factor: on a
# shared 2-core machine the halves of tiny products differed by at most 1.9x in 600 trials,
# by more than 1.5x in 5 of them (a retime absorbs those).
REPEAT_FACTOR = 1.5
# Contended: the process ran less than half the wall time of its timed calls, or more
# runnable threads than CPUs on average over the last minute (the process's own included).
MIN_CPU_OVER_WALL = 0.5
MAX_LOAD_PER_CPU = 1.0
MAX_RETIMES = 2
# Differences below this many microseconds are the jitter of one Python-level call (a tiny
# product's halves differed by 2 us at 4-6 us per call on a shared machine), not evidence of
# load: the repeat check and the per-row bound both allow it on top of their factors.
TIMER_FLOOR_US = 10.0

log = logging.getLogger(__name__)
Clock = Callable[[], tuple[float, float]]  # (wall seconds, process CPU seconds)

_forced: KernelMode | None = None
ShapeKey = tuple[torch.dtype, int, int, int]  # dtype, rows, in_features, out_features
_choices: dict[ShapeKey, KernelChoice] = {}
_trials: dict[ShapeKey, Trial] = {}
_cached: dict[str, KernelChoice] = {}  # from the JSON file, by `_shape_key`
_refusals: dict[str, str] = {}  # by `_shape_key`: why a timing was not cached
_file_loaded = False


def _system_clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def machine_load() -> float | None:
    """The 1-minute load average per CPU of this machine (None where it is not known)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):
        return None


_clock: Clock = _system_clock
_load: Callable[[], float | None] = machine_load


@contextlib.contextmanager
def timing_hooks(
    clock: Clock | None = None, load: Callable[[], float | None] | None = None
) -> Iterator[None]:
    """Replaces, inside the block, the clock the trials time with (wall and process CPU
    seconds) and the machine-load reading the contention check uses: a timing function
    with known answers, or a calm machine where the real one is shared."""
    global _clock, _load
    saved = _clock, _load
    _clock = clock or _clock
    _load = load or _load
    try:
        yield
    finally:
        _clock, _load = saved


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
    # "measured" (this process), "cache" (the JSON file) or "refused" (timed in this process,
    # failed the sanity checks: `F.linear` is used and nothing is stored; `refusals()`)
    source: str

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
    def best_us(self) -> float:
        """The fastest candidate's median: what the per-row bound compares."""
        return min(self.timings_us.values())

    @property
    def best_alternative(self) -> str | None:
        """The fastest kernel other than `F.linear` (what `F.linear` was weighed against)."""
        others = [k for k in self.timings_us if k != "linear"]
        return min(others, key=self.timings_us.__getitem__) if others else None

    def without(self, kernel: str) -> str:
        """The kernel the rule picks from these timings when `kernel` is not available."""
        return decide({k: v for k, v in self.timings_us.items() if k != kernel})[0]


def row_bound_conflicts(
    rows: int, best_us: float, others: dict[int, float], tolerance: float = ROW_TOLERANCE
) -> dict[int, str]:
    """The per-row bound between the best time of one row count and those of other row
    counts of the same weight and dtype: for fewer < more rows,
    time(fewer) / (1 + tolerance) - floor <= time(more) <= ceil(more / fewer) x time(fewer)
    x (1 + tolerance) + floor, since the fewer rows could be padded to more and the more
    rows split into products of the fewer (floor: `TIMER_FLOOR_US`, the jitter of one
    call). The other row counts that break it, each with the sentence that says how."""
    conflicts = {}
    for other, other_us in sorted(others.items()):
        if other == rows:
            continue
        (few, few_us), (many, many_us) = sorted([(rows, best_us), (other, other_us)])
        factor = math.ceil(many / few)
        low = few_us / (1 + tolerance) - TIMER_FLOOR_US
        high = factor * few_us * (1 + tolerance) + TIMER_FLOOR_US
        if not low <= many_us <= high:
            conflicts[other] = (
                f"{many} rows at {many_us:.1f} us against {few} at {few_us:.1f} us, outside "
                f"the per-row bound [{low:.1f}, {high:.1f}] us (no less than the fewer rows, "
                f"at most {factor}x them, {tolerance:.0%} tolerance)"
            )
    return conflicts


def row_bound_problems(
    rows: int, best_us: float, others: dict[int, float], tolerance: float = ROW_TOLERANCE
) -> list[str]:
    """`row_bound_conflicts` as sentences only: one per other row count that breaks it."""
    return list(row_bound_conflicts(rows, best_us, others, tolerance).values())


def repeat_problems(samples_us: dict[str, list[float]], factor: float = REPEAT_FACTOR) -> list[str]:
    """Kernels whose two repeated timings, the medians of the first and the second half of
    their samples in time order, differ by more than `factor` and by more than
    `TIMER_FLOOR_US` (the load changed while they were timed)."""
    problems = []
    for kernel, samples in samples_us.items():
        half = len(samples) // 2
        if half == 0:
            continue
        first, second = statistics.median(samples[:half]), statistics.median(samples[half:])
        low, high = sorted((first, second))
        ratio = high / low if low > 0 else (1.0 if high <= 0 else math.inf)
        if ratio > factor and high - low > TIMER_FLOOR_US:
            problems.append(
                f"{kernel}: repeated timings {first:.1f} and {second:.1f} us differ by "
                f"{ratio:.2f}x (more than {factor}x)"
            )
    return problems


def contention_problems(cpu_over_wall: float | None, load_per_cpu: float | None) -> list[str]:
    """Signs that the machine was contended while a choice was timed (None: not known)."""
    problems = []
    if cpu_over_wall is not None and cpu_over_wall < MIN_CPU_OVER_WALL:
        problems.append(
            f"the process ran {cpu_over_wall:.2f} of the wall time of its timed calls "
            f"(below {MIN_CPU_OVER_WALL})"
        )
    if load_per_cpu is not None and load_per_cpu > MAX_LOAD_PER_CPU:
        problems.append(
            f"load average {load_per_cpu:.2f} per CPU (above {MAX_LOAD_PER_CPU}) while timing"
        )
    return problems


def timing_problems(
    rows: int,
    medians: dict[str, float],
    samples_us: dict[str, list[float]],
    others: dict[int, float],
    cpu_over_wall: float | None = None,
    load_per_cpu: float | None = None,
) -> list[str]:
    """Why a timed choice must not be stored (empty: it may): the per-row bound against the
    other row counts of its weight (`others`: rows -> best median us), the repeated timings
    and the contention signs. A pure function of the timings, so made-up ones test it."""
    return [
        *row_bound_problems(rows, min(medians.values()), others),
        *repeat_problems(samples_us),
        *contention_problems(cpu_over_wall, load_per_cpu),
    ]


def inconsistent_entries(entries: dict[str, KernelChoice]) -> dict[str, str]:
    """Stored choices that break the per-row bound against another stored row count of the
    same weight and dtype (both members of a breaking pair: which one was timed under load
    cannot be told), with the reason; the others are consistent."""
    bad = {}
    for key, choice in entries.items():
        others = {
            c.rows: c.best_us
            for c in entries.values()
            if (c.dtype, c.in_features, c.out_features)
            == (choice.dtype, choice.in_features, choice.out_features)
        }
        problems = row_bound_problems(choice.rows, choice.best_us, others)
        if problems:
            bad[key] = "; ".join(problems)
    return bad


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
    for key, reason in inconsistent_entries(_cached).items():
        log.info("cached kernel choice %s not used (timed again): %s", key, reason)
        del _cached[key]


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
    cpu_ratios: list[float] = field(default_factory=list)  # process CPU / wall per timed call
    attempt: int = 0  # retimes so far

    def __post_init__(self) -> None:
        if not self.candidates or self.candidates[0] != "linear":
            raise ValueError(f"a trial weighs kernels against 'linear' first: {self.candidates}")
        for kernel in self.candidates:
            self.samples_us.setdefault(kernel, [])

    def next_kernel(self) -> str:
        return self.candidates[self.calls % len(self.candidates)]

    def record(self, kernel: str, microseconds: float, cpu_us: float | None = None) -> None:
        """One call's wall time (and the process's CPU time during it, where measured)."""
        self.calls += 1
        if self.calls > len(self.candidates):  # the first call of each kernel is untimed
            self.samples_us[kernel].append(microseconds)
            if cpu_us is not None and microseconds > 0:
                self.cpu_ratios.append(cpu_us / microseconds)

    def cpu_over_wall(self) -> float | None:
        """Median over the timed calls of the process's CPU time over wall time."""
        return statistics.median(self.cpu_ratios) if self.cpu_ratios else None

    def retime(self) -> None:
        """Starts the samples over (the kernels are warm: no untimed calls again)."""
        self.attempt += 1
        self.rounds = 1
        self.cpu_ratios.clear()
        for samples in self.samples_us.values():
            samples.clear()

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
    wall, cpu = _clock()
    out = _run(kernel, x2d, weight, bias, contiguous)
    wall_end, cpu_end = _clock()
    trial.record(kernel, (wall_end - wall) * 1e6, (cpu_end - cpu) * 1e6)
    timed = trial.decision()
    if timed is not None:
        _settle(key, trial, *timed)
    return out


def _settle(key: ShapeKey, trial: Trial, medians: dict[str, float], kernel: str) -> None:
    """Stores a timed choice that passes the sanity checks (`timing_problems`); retimes one
    that does not, at most `MAX_RETIMES` times, then refuses it: `F.linear` for the rest of
    the process, nothing cached, the reason logged and kept (`refusals()`)."""
    dtype, rows, in_features, out_features = key
    shape = _shape_key(*key)
    problems = timing_problems(
        rows, medians, trial.samples_us, _other_rows(key), trial.cpu_over_wall(), _load()
    )
    if problems and trial.attempt < MAX_RETIMES:
        log.info(
            "kernel timing of %s retimed (%d of %d): %s",
            shape,
            trial.attempt + 1,
            MAX_RETIMES,
            "; ".join(problems),
        )
        trial.retime()
        return
    choice = KernelChoice(
        dtype=_dtype_name(dtype),
        rows=rows,
        in_features=in_features,
        out_features=out_features,
        timings_us={k: round(us, 2) for k, us in medians.items()},
        kernel="linear" if problems else kernel,
        source="refused" if problems else "measured",
    )
    _choices[key] = choice
    _trials.pop(key, None)  # another thread may have decided the same shape
    if problems:
        _refusals[shape] = "; ".join(problems)
        log.info("kernel choice for %s not cached, F.linear used: %s", shape, _refusals[shape])
        _distrust(key, row_bound_conflicts(rows, choice.best_us, _other_rows(key)))
    else:
        _save(shape, choice)


def _distrust(key: ShapeKey, conflicts: dict[int, str]) -> None:
    """Drops from memory the other row counts of a refused shape's weight that it broke the
    per-row bound against: which side of the pair was timed under load cannot be told, so
    those are timed again when next met (and stored again if they pass), rather than
    refusing every later timing of their neighbours."""
    dtype, _, in_features, out_features = key
    for rows in conflicts:
        other = (dtype, rows, in_features, out_features)
        _choices.pop(other, None)
        if _cached.pop(_shape_key(*other), None) is not None:
            log.info("cached kernel choice %s timed again: %s", _shape_key(*other), conflicts[rows])


def _other_rows(key: ShapeKey) -> dict[int, float]:
    """Best median us of the other row counts of the same weight and dtype known here: this
    machine's file entries and this process's choices (refused ones are no evidence)."""
    if not _file_loaded:
        _load_file()
    dtype, rows, in_features, out_features = key
    weight = (_dtype_name(dtype), in_features, out_features)
    known = [*_cached.values(), *(c for c in _choices.values() if c.source != "refused")]
    return {
        c.rows: c.best_us
        for c in known
        if (c.dtype, c.in_features, c.out_features) == weight and c.rows != rows
    }


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


def refusals() -> dict[str, str]:
    """Shapes whose timing failed the sanity checks in this process, with the reasons (they
    use `F.linear`; nothing was cached for them)."""
    return dict(_refusals)


def forget_choices() -> None:
    """Drops the in-memory choices, trials and refusals (the file stays); the next product
    reloads or times again."""
    global _file_loaded
    _choices.clear()
    _trials.clear()
    _cached.clear()
    _refusals.clear()
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
    "contention_problems",
    "decide",
    "few_row_product",
    "forget_choices",
    "inconsistent_entries",
    "kernel_mode",
    "kernel_report",
    "machine_key",
    "machine_load",
    "product",
    "refusals",
    "repeat_problems",
    "row_bound_conflicts",
    "row_bound_problems",
    "set_linear_kernel",
    "timing_hooks",
    "timing_problems",
]
