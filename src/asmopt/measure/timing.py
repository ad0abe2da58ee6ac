"""Interleaved, adaptive timing of a candidate against its baseline, test by test.

Procedure (docs/measurement.md has the reasoning and the numbers behind the defaults):

1. Both binaries run in ONE sandbox, in adjacent pairs, counterbalanced (A B, B A, A B,
   ...), through the launcher, which executes each from the same descriptor with the same
   argv, environment, stdin and working directory and empties /tmp between runs (see
   sandbox/launcher.c). All tests of a program share the sandbox of a batch, their inputs
   passed as descriptors. Sandbox start-up is outside the timed region: the launcher times
   fork -> wait4.
2. The first `warmup_pairs` pairs of every test in every batch are discarded. The program
   cannot tell a warm-up from a timed run: they are the same in every respect it can
   observe.
3. Every run's output is checked against the expected output, so skipping work when timed
   is caught as a wrong answer.
4. The metric is user + system CPU time of the child from rusage. Unlike wall time it does
   not grow when another process shares the core, which is what broke the reference
   harness's numbers under load; wall time is recorded next to it.
5. After each batch every test's paired log-ratios give an interval (stats.py: trimmed
   means per batch, batches combined by a random-effects model). A test stops when its
   relative half-width is within `target_half_width`, or when its pair, round or time
   budget is spent (it is then flagged unreliable); the next batch gives each remaining
   test the pairs its spread so far says it needs.
6. The whole sandbox is pinned to a timing core held under a lock (`CoreLock`), at
   real-time priority when permitted, so no two timings share a core, here or in another
   process, and nothing of normal priority preempts a timed run; correctness runs and
   builds use the other cores.

The engine (`measure_tests`, `measure_pairs` for one test) only sees an executor that
returns paired samples, so its statistics are tested with a mock executor and no real
timing.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from asmopt.measure.speedup import MeasureMode, MeasureStatus, TestSpeedup, TimingWarning
from asmopt.measure.stats import (
    outlier_flags,
    random_effects,
    trimmed_interval,
    with_resolution,
)
from asmopt.programs.model import TestCase
from asmopt.sandbox.launcher import LaunchRecord
from asmopt.sandbox.runner import MAX_INPUTS, Limits, RunResult, Sandbox

TOO_FAST_S = 0.002  # below this, process start-up dominates a run
MAX_ROUND_OUTPUT = 256 << 20  # bytes of stdout one round may produce (all runs together)


@dataclass(frozen=True)
class TimingConfig:
    """Every knob of the timing procedure, with the reason for its default."""

    # Stop when the 95% interval of the ratio is within ±2%: the target, and well
    # below the 10% that separates a real optimisation from noise in PIE's %Opt.
    target_half_width: float = 0.02
    confidence: float = 0.95
    # One discarded pair per round warms the page cache and the branch predictors; more did
    # not change A/A results on the built-in suite.
    warmup_pairs: int = 1
    # With 4 pairs t(3) = 3.18: a 2% half-width needs a per-pair spread under ~1.3%, which
    # CPU time of a >= 5 ms program meets on an idle core.
    min_pairs: int = 4
    # Pairs are cheap for short programs (a 1 ms program costs ~3 ms a pair with the
    # sandbox's per-run work) and those are the noisiest relative to their length.
    max_pairs: int = 200
    # Rounds are separate sandboxes (fresh binary copies, fresh environment padding): at
    # most `round_pairs` pairs each, so a long measurement samples several layouts.
    max_rounds: int = 8
    round_pairs: int = 50
    # Seconds one test may spend timing (both binaries, warm-ups included; waiting for the
    # timing core does not count).
    budget_s: float = 20.0
    # The interval is never narrower than ±1%: the size of systematic effects (layout,
    # alignment, the machine's own drift) that pairing cannot remove, and the spread of A/A
    # estimates on shared machines. A "significant" speedup must exceed it.
    resolution: float = 0.01
    # The estimate is the 20% trimmed mean of the paired log-ratios (stats.trimmed_interval).
    trim: float = 0.2
    outlier_threshold: float = 3.5
    # More outliers than the trimmed share would reach the estimate: unreliable.
    max_outlier_share: float = 0.2
    metric: Literal["cpu", "wall"] = "cpu"
    # SCHED_FIFO on the timing core when permitted (else nice -20, else normal): nothing of
    # normal priority preempts the timed program, so it is not slowed by a neighbour's
    # cache footprint after every time slice. The achieved level is recorded.
    priority: Literal["normal", "high", "realtime"] = "realtime"

    def __post_init__(self) -> None:
        if not 0 < self.target_half_width < 1:
            raise ValueError(f"target_half_width must be in (0, 1), got {self.target_half_width}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.min_pairs < 2 or self.max_pairs < self.min_pairs:
            raise ValueError(
                f"need 2 <= min_pairs <= max_pairs, got {self.min_pairs} and {self.max_pairs}"
            )
        if self.warmup_pairs < 0 or self.max_rounds < 1 or self.budget_s <= 0:
            raise ValueError("warmup_pairs >= 0, max_rounds >= 1 and budget_s > 0 are required")
        if self.metric not in ("cpu", "wall"):
            raise ValueError(f"metric must be 'cpu' or 'wall', got {self.metric!r}")

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


# ---------------------------------------------------------------------------- samples
@dataclass(frozen=True)
class RunTiming:
    """One run of one binary: what rusage and the launcher's clock said."""

    cpu_s: float
    wall_s: float
    user_s: float = 0.0
    sys_s: float = 0.0
    involuntary_switches: int = 0
    minor_faults: int = 0

    @classmethod
    def from_record(cls, rec: LaunchRecord) -> RunTiming:
        return cls(
            cpu_s=rec.cpu_time_s,
            wall_s=rec.wall_time_s,
            user_s=rec.user_time_s,
            sys_s=rec.sys_time_s,
            involuntary_switches=rec.involuntary_switches,
            minor_faults=rec.minor_faults,
        )

    def value(self, metric: str) -> float:
        return self.cpu_s if metric == "cpu" else self.wall_s


@dataclass(frozen=True)
class RunFailure:
    """A run that did not behave: the candidate's fault, or (baseline, sandbox) ours."""

    candidate_fault: bool
    message: str
    run_result: RunResult | None = None
    run_index: int = 0
    verdict: str = "infra_error"  # an evaluate.Verdict value, for the candidate's record


@dataclass
class Round:
    """What one sandbox session returned: timed pairs (warm-ups already removed)."""

    pairs: list[tuple[RunTiming, RunTiming]]
    warmups: list[tuple[RunTiming, RunTiming]] = field(default_factory=list)
    seconds: float = 0.0
    env_pad: int = 0
    cpus: tuple[int, ...] = ()
    load_before: float | None = None
    load_after: float | None = None
    priority: str = "normal"
    failure: RunFailure | None = None


class PairExecutor(Protocol):
    """Runs `warmup + pairs` alternating pairs of baseline and candidate on one test."""

    def run_round(self, pairs: int, warmup_pairs: int) -> Round: ...


class BatchExecutor(Protocol):
    """Runs rounds for several tests at once (one sandbox): `requests` are
    (test index, pairs, warm-up pairs); the answer maps each test index to its Round. A
    failure ends the batch: the failing test's Round carries it and later tests may be
    missing from the answer."""

    def run_batch(self, requests: Sequence[tuple[int, int, int]]) -> dict[int, Round]: ...


class _OneTest:
    """A PairExecutor seen as a BatchExecutor of a single test."""

    def __init__(self, executor: PairExecutor) -> None:
        self.executor = executor

    def run_batch(self, requests: Sequence[tuple[int, int, int]]) -> dict[int, Round]:
        (index, pairs, warmup), *_ = requests
        return {index: self.executor.run_round(pairs, warmup)}


@dataclass
class TimingOutcome:
    """The engine's answer: a speedup, or the failure that stopped the measurement."""

    speedup: TestSpeedup
    failure: RunFailure | None = None


# ---------------------------------------------------------------------------- engine
def _summarise(
    test: str,
    pairs: list[tuple[RunTiming, RunTiming, int]],
    rounds: list[Round],
    config: TimingConfig,
    spent: float,
    extra_warnings: Sequence[TimingWarning],
) -> tuple[TestSpeedup, float]:
    """The interval over non-outlier pairs; returns the speedup and the raw half-width."""
    metric = config.metric
    logs = [math.log(b.value(metric) / c.value(metric)) for b, c, _ in pairs]
    flags = outlier_flags(logs, config.outlier_threshold)
    by_round: dict[int, list[float]] = {}
    for x, (_, _, r) in zip(logs, pairs, strict=True):
        by_round.setdefault(r, []).append(x)
    per_round = [
        trimmed_interval(xs, config.confidence, config.trim)
        for xs in by_round.values()
        if len(xs) >= 2
    ]
    stat = (
        random_effects(per_round, config.confidence)
        if per_round
        else trimmed_interval(logs, config.confidence, config.trim)
    )
    shown = with_resolution(stat, config.resolution)
    n_out = sum(flags)
    warnings: list[TimingWarning] = list(extra_warnings)
    if stat.half_width > config.target_half_width:
        warnings.append(TimingWarning.TARGET_NOT_MET)
    if n_out > config.max_outlier_share * len(logs):
        warnings.append(TimingWarning.MANY_OUTLIERS)
    base_vals = [b.value(metric) for b, _, _ in pairs]
    cand_vals = [c.value(metric) for _, c, _ in pairs]
    if min(sorted(base_vals)[len(base_vals) // 2], sorted(cand_vals)[len(cand_vals) // 2]) < (
        TOO_FAST_S
    ):
        warnings.append(TimingWarning.TOO_FAST)
    cores = sorted({c for r in rounds for c in r.cpus})
    loads = [x for r in rounds for x in (r.load_before, r.load_after) if x is not None]
    if loads and max(loads) > (os.cpu_count() or 1):
        warnings.append(TimingWarning.HIGH_LOAD)
    unreliable = {TimingWarning.TARGET_NOT_MET, TimingWarning.MANY_OUTLIERS}
    raw = {
        "metric": metric,
        "round": [r for _, _, r in pairs],
        "base_cpu": [b.cpu_s for b, _, _ in pairs],
        "cand_cpu": [c.cpu_s for _, c, _ in pairs],
        "base_wall": [b.wall_s for b, _, _ in pairs],
        "cand_wall": [c.wall_s for _, c, _ in pairs],
        "base_nivcsw": [b.involuntary_switches for b, _, _ in pairs],
        "cand_nivcsw": [c.involuntary_switches for _, c, _ in pairs],
        "outlier": flags,
        "estimator": (
            f"{config.trim:.0%} trimmed mean of log-ratios (Yuen) per round, rounds combined "
            "by random effects (DerSimonian-Laird)"
        ),
        "order": "AB and BA pairs alternate",
        "warmup_base_cpu": [b.cpu_s for r in rounds for b, _ in r.warmups],
        "warmup_cand_cpu": [c.cpu_s for r in rounds for _, c in r.warmups],
    }
    context = {
        "rounds": len(rounds),
        "env_pad": [r.env_pad for r in rounds],
        "cores": cores,
        "priority": sorted({r.priority for r in rounds}),
        "load": [round(x, 2) for x in loads],
        "seconds": round(spent, 4),
        "runs": 2 * sum(len(r.pairs) + len(r.warmups) for r in rounds),
        "config": {
            "target_half_width": config.target_half_width,
            "resolution": config.resolution,
            "metric": metric,
        },
    }
    # Order-preserving de-duplication of the warning codes.
    codes = list(dict.fromkeys(str(w) for w in warnings))
    speedup = TestSpeedup(
        test=test,
        mode=MeasureMode.TIME,
        status=MeasureStatus.MEASURED,
        ratio=shown.ratio,
        low=shown.low,
        high=shown.high,
        n=len(logs),
        n_outliers=n_out,
        reliable=not any(w in unreliable for w in warnings),
        warnings=codes,
        message="; ".join(TimingWarning(c).advice for c in codes),
        base_mean=sum(base_vals) / len(base_vals),
        cand_mean=sum(cand_vals) / len(cand_vals),
        log_mean=stat.log_mean,
        log_se=stat.log_se,
        df=stat.df,
        raw=raw,
        context=context,
    )
    return speedup, stat.half_width


@dataclass
class _TestState:
    name: str
    pairs: list[tuple[RunTiming, RunTiming, int]] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    spent: float = 0.0
    want: int = 0
    speedup: TestSpeedup | None = None
    done: bool = False
    retries: int = 0
    target: float | None = None  # this test's own target half-width, if it has one


def _advance(state: _TestState, config: TimingConfig, warnings: Sequence[TimingWarning]) -> None:
    if state.target is not None:
        config = replace(config, target_half_width=state.target)
    """Recompute the test's interval; decide whether it is done or how many pairs it needs."""
    speedup, half_width = _summarise(
        state.name, state.pairs, state.rounds, config, state.spent, warnings
    )
    state.speedup = speedup
    n = len(state.pairs)
    settled = (
        speedup.n >= config.min_pairs
        and half_width <= config.target_half_width
        and str(TimingWarning.MANY_OUTLIERS) not in speedup.warnings
    )
    spent_out = (
        len(state.rounds) >= config.max_rounds
        or n >= config.max_pairs
        or state.spent >= config.budget_s
    )
    if settled or spent_out:
        state.done = True
        return
    # Pairs needed for the target, from the spread so far (half-width ~ 1/sqrt(n)),
    # with 20% to spare, within the pair and time budgets.
    if math.isfinite(half_width) and half_width > config.target_half_width:
        needed = math.ceil(n * (half_width / config.target_half_width) ** 2 * 1.2) - n
    else:
        needed = max(config.min_pairs - speedup.n, n // 2)
    per_pair = state.spent / max(1, sum(len(r.pairs) + len(r.warmups) for r in state.rounds))
    by_time = (
        int((config.budget_s - state.spent) / per_pair) - config.warmup_pairs
        if per_pair > 0
        else config.round_pairs
    )
    if by_time < 2:
        state.done = True
        return
    state.want = max(2, min(needed, config.max_pairs - n, by_time, config.round_pairs))


def measure_tests(
    executor: BatchExecutor,
    names: Sequence[str],
    config: TimingConfig | None = None,
    *,
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
    targets: Sequence[float] | None = None,
) -> tuple[list[TestSpeedup], RunFailure | None, str | None]:
    """Measure several tests together: every batch runs the tests that still need pairs.

    `targets` optionally gives each test its own target half-width. Returns the speedups
    (in `names` order), and the failure that stopped the measurement with the name of its
    test (None, None when every run behaved)."""
    config = config or TimingConfig()
    if targets is not None and len(targets) != len(names):
        raise ValueError("one target per test")
    states = [
        _TestState(name, want=config.min_pairs, target=targets[k] if targets else None)
        for k, name in enumerate(names)
    ]
    while True:
        active = [i for i, st in enumerate(states) if not st.done]
        if not active:
            break
        start = clock()
        rounds = executor.run_batch([(i, states[i].want, config.warmup_pairs) for i in active])
        elapsed = clock() - start
        for i, rnd in rounds.items():
            if rnd.failure is not None:
                st = states[i]
                st.speedup = TestSpeedup(
                    st.name,
                    MeasureMode.TIME,
                    MeasureStatus.INFRA_ERROR,
                    reliable=False,
                    message=rnd.failure.message,
                )
                return [_final(x) for x in states], rnd.failure, st.name
        for i in active:
            rnd = rounds.get(i)
            st = states[i]
            if rnd is None or not rnd.pairs:  # not run: the next batch retries it
                st.retries += 1
                if st.retries > 3:
                    st.done = True
                continue
            st.rounds.append(rnd)
            st.pairs += [(b, c, len(st.rounds) - 1) for b, c in rnd.pairs]
            # The budget counts time spent timing (the executor's share for this test),
            # not time spent waiting for the core lock.
            st.spent += rnd.seconds if rnd.seconds > 0 else elapsed / len(active)
            _advance(st, config, warnings)
    return [_final(x) for x in states], None, None


def _final(state: _TestState) -> TestSpeedup:
    if state.speedup is not None:
        return state.speedup
    return TestSpeedup(
        state.name,
        MeasureMode.TIME,
        MeasureStatus.INFRA_ERROR,
        reliable=False,
        message="not measured: the measurement stopped on another test",
    )


def measure_pairs(
    executor: PairExecutor,
    config: TimingConfig | None = None,
    *,
    test: str = "test",
    warnings: Sequence[TimingWarning] = (),
    clock: Any = time.monotonic,
) -> TimingOutcome:
    """One test: run rounds until the interval is narrow enough or the budget is spent."""
    speedups, failure, _ = measure_tests(
        _OneTest(executor), [test], config, warnings=warnings, clock=clock
    )
    return TimingOutcome(speedups[0], failure)


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
                raise ValueError(
                    f"ASMOPT_TIMING_CORES must be a comma-separated list of CPU numbers, "
                    f"got {spec!r}"
                ) from None
            bad = [c for c in timing if c not in allowed]
            if bad:
                raise ValueError(
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


class CoreLock:
    """At most one timing per physical core, across threads and processes (flock).

    flock locks belong to open file descriptions, so two threads of one process that open
    the lock file separately exclude each other just as two processes do."""

    def __init__(self, layout: CoreLayout | None = None, lock_dir: Path | None = None) -> None:
        self.layout = layout or CoreLayout.detect()
        self.lock_dir = lock_dir or default_lock_dir()
        self.lock_dir.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def hold(self, poll_s: float = 0.005) -> Iterator[int]:
        """Wait for a free timing core; yield its CPU number while holding its lock."""
        handles = []
        for cpu in self.layout.timing:
            name = _physical_core(cpu).replace(",", "_").replace("-", "_")
            handles.append((cpu, self.lock_dir / f"core-{name}.lock"))
        while True:
            for cpu, path in handles:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
                with contextlib.suppress(OSError):  # other users must be able to lock it too
                    os.fchmod(fd, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                try:
                    yield cpu
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                return
            time.sleep(poll_s)


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


# ---------------------------------------------------------------------------- sandbox executor
class SandboxExecutor:
    """Runs baseline (A) and candidate (B) alternately in the sandbox on a locked core.

    A batch puts every requested test in ONE sandbox (their inputs as descriptors, one
    after another, each test's pairs counterbalanced AB, BA, ...), so a program's tests
    pay for one sandbox start-up instead of one each. Tests whose argv differ go to
    separate sandboxes, as do batches of more than the launcher's 36 inputs."""

    def __init__(
        self,
        sandbox: Sandbox,
        baseline: str | os.PathLike[str],
        candidate: str | os.PathLike[str],
        tests: Sequence[TestCase],
        limits: Limits | None = None,
        lock: CoreLock | None = None,
        check_output: bool = True,
        priority: Literal["normal", "high", "realtime"] = "realtime",
        candidate_wall_s: float | None = None,
    ) -> None:
        self.priority = priority
        self.sandbox = sandbox
        self.binaries = [baseline, candidate]
        self.tests = list(tests)
        self.limits = limits or sandbox.limits
        self.lock = lock or default_core_lock()
        self.check_output = check_output
        # Each candidate run's own deadline (the baseline keeps the limits' wall time): a
        # candidate that idles only when timed is stopped early and charged a timeout.
        self.candidate_wall_s = candidate_wall_s
        # sha256 of every run's stdout, per test: (baseline digests, candidate digests).
        self.outputs: dict[int, tuple[set[str], set[str]]] = {}

    def _max_pairs_for_output(self, test: TestCase) -> int:
        per_run = len(test.expected_stdout) + 64
        return max(2, MAX_ROUND_OUTPUT // (2 * 2 * per_run))

    def run_batch(self, requests: Sequence[tuple[int, int, int]]) -> dict[int, Round]:
        groups: list[list[tuple[int, int, int]]] = []
        for req in requests:
            argv = self.tests[req[0]].argv
            for g in groups:
                if self.tests[g[0][0]].argv == argv and len(g) < MAX_INPUTS:
                    g.append(req)
                    break
            else:
                groups.append([req])
        out: dict[int, Round] = {}
        for group in groups:
            rounds = self._run_group(group)
            out.update(rounds)
            if any(r.failure is not None for r in rounds.values()):
                break
        return out

    def run_round(self, pairs: int, warmup_pairs: int) -> Round:
        """One test (the first): a PairExecutor for single-test callers."""
        return self.run_batch([(0, pairs, warmup_pairs)])[0]

    def _run_group(self, group: Sequence[tuple[int, int, int]]) -> dict[int, Round]:
        from asmopt.evaluate import Verdict, classify_run

        order: list[int] = []
        feed: list[int] = []
        owner: list[int] = []  # test index of each run
        plan: list[tuple[int, int, int, int]] = []  # (test, first run, pairs, warm-ups)
        out_bytes = 0
        for slot, (index, pairs, warmup) in enumerate(group):
            test = self.tests[index]
            total = min(pairs + warmup, self._max_pairs_for_output(test))
            plan.append((index, len(order), total - min(warmup, total - 1), min(warmup, total - 1)))
            # Counterbalanced: AB, BA, AB, ... so that whatever favours the first (or
            # second) run of a pair cancels out; a pair is always two adjacent runs.
            for i in range(total):
                order += [0, 1] if i % 2 == 0 else [1, 0]
            feed += [slot] * (2 * total)
            owner += [index] * (2 * total)
            out_bytes += 2 * total * (len(test.expected_stdout) + 64)
        marker = secrets.token_hex(16)
        limits = self.limits
        walls = [limits.wall_seconds, self.candidate_wall_s or limits.wall_seconds]
        load_before = os.getloadavg()[0]
        with self.lock.hold() as cpu:
            start = time.monotonic()
            result = self.sandbox.run_binaries(
                self.binaries,
                order,
                argv=self.tests[group[0][0]].argv,
                stdin=[self.tests[index].stdin for index, _, _ in group],
                feed=feed,
                limits=limits,
                marker=marker,
                cpus=[cpu],
                priority=self.priority,
                run_wall_s=walls,
                max_total_output=min(MAX_ROUND_OUTPUT, max(limits.stdout_cap, 2 * out_bytes)),
            )
            seconds = time.monotonic() - start
        load_after = os.getloadavg()[0]

        def blank(index: int) -> Round:
            return Round(
                pairs=[],
                env_pad=result.env_pad,
                cpus=result.cpus,
                load_before=load_before,
                load_after=load_after,
                priority=result.priority,
            )

        rounds = {index: blank(index) for index, _, _ in group}
        first_index = group[0][0]
        if result.infra_error:
            rounds[first_index].failure = RunFailure(
                False, f"timing sandbox: {result.infra_error}", result
            )
            return rounds
        records = list(result.records)
        segments = list(result.segments or ())

        def who(i: int) -> str:
            return "baseline" if order[i] == 0 else "candidate"

        if result.stdout_truncated or result.stderr_truncated:
            i = min(len(segments), len(order) - 1)
            rounds[owner[i]].failure = RunFailure(
                order[i] == 1,
                f"{who(i)} failed in timing run {i + 1} of {len(order)}: output_limit: it wrote "
                "more than its share of the batch's output cap",
                None,
                i,
                "output_limit",
            )
            return rounds
        # Judge every run (the output included): a failure in any run stops the measurement.
        for i, rec in enumerate(records):
            test = self.tests[owner[i]]
            single = RunResult.from_record(rec, segments[i] if i < len(segments) else b"")
            digests = self.outputs.setdefault(owner[i], (set(), set()))
            digests[order[i]].add(hashlib.sha256(single.stdout).hexdigest())
            if not self.check_output:
                single.stdout = test.expected_stdout
            run_limits = replace(limits, wall_seconds=walls[order[i]])
            verdict = classify_run(test, single, run_limits)
            if verdict.verdict != Verdict.PASS:
                rounds[owner[i]].failure = RunFailure(
                    order[i] == 1,
                    f"{who(i)} failed in timing run {i + 1} of {len(order)}: "
                    f"{verdict.verdict}: {verdict.message}",
                    single,
                    i,
                    str(verdict.verdict),
                )
                return rounds
        if len(records) < len(order):
            # The run that did not finish.
            i = len(records)
            if result.timed_out:
                why, verdict_name = (
                    "exceeded the whole batch's wall-clock limit",
                    "timeout",
                )
            elif result.launcher_lost:
                why, verdict_name = "the program interfered with the launcher", "sandbox_violation"
            else:
                why, verdict_name = "the sandbox stopped early", "infra_error"
            rounds[owner[i]].failure = RunFailure(
                order[i] == 1 and verdict_name != "infra_error",
                f"{who(i)} failed in timing run {i + 1} of {len(order)}: {verdict_name}: {why}",
                None,
                i,
                verdict_name,
            )
            return rounds
        # Each test's share of the batch: its own runs plus an equal part of the rest
        # (sandbox start-up, the launcher's work between runs).
        overhead = max(0.0, seconds - sum(r.wall_time_s for r in records)) / len(group)
        for index, first, pairs, warmup in plan:
            timed = []
            for k in range(pairs + warmup):
                a, b = records[first + 2 * k], records[first + 2 * k + 1]
                base, cand = (a, b) if order[first + 2 * k] == 0 else (b, a)
                timed.append((RunTiming.from_record(base), RunTiming.from_record(cand)))
            rnd = rounds[index]
            rnd.warmups = timed[:warmup]
            rnd.pairs = timed[warmup:]
            rnd.seconds = overhead + sum(
                records[j].wall_time_s for j in range(first, first + 2 * (pairs + warmup))
            )
        return rounds


# Kept for callers that time one test at a time.
SandboxPairExecutor = SandboxExecutor


@dataclass(frozen=True)
class ReferenceRun:
    """What the candidate did in its own correctness run of a test (evaluate.check_binary):
    the yardstick its timed runs must be consistent with."""

    cpu_s: float
    wall_s: float
    stdout_sha256: str | None = None


# A timed run may take this many times its correctness run's wall time (and at least
# CANDIDATE_WALL_MIN_S, so a busy machine does not turn a slow start into a timeout) before
# it is stopped; a timed run's median CPU time below 1/INCONSISTENT_CPU_FACTOR of the
# correctness run's (and INCONSISTENT_CPU_FLOOR_S less) means it skipped work it did then.
CANDIDATE_WALL_FACTOR = 10.0
CANDIDATE_WALL_MIN_S = 5.0
INCONSISTENT_CPU_FACTOR = 4.0
INCONSISTENT_CPU_FLOOR_S = 0.005


def time_tests(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    tests: Sequence[TestCase],
    config: TimingConfig | None = None,
    *,
    limits: Limits | None = None,
    lock: CoreLock | None = None,
    targets: Sequence[float] | None = None,
    reference: Sequence[ReferenceRun] | None = None,
) -> tuple[list[TestSpeedup], RunFailure | None, str | None]:
    """Measure the speedup of `candidate` over `baseline` on every test (see measure_tests).

    With `reference` (the candidate's correctness run of each test), each candidate run gets
    a deadline of CANDIDATE_WALL_FACTOR times its correctness run's wall time, and the
    timed runs must be consistent with that run: the same output wherever the baseline's
    output is stable, and no far smaller CPU time. Inconsistency is the candidate's failure
    (verdict sandbox_violation): it behaved differently when it could have been timed.

    Blame: a failure that is not plainly the candidate's (the baseline failed, the sandbox
    broke) is charged to the candidate unless the baseline alone, in a fresh sandbox, fails
    the same test too; only then is it `infra_error`."""
    lock = lock or default_core_lock()
    config = config or TimingConfig()
    limits = limits or sandbox.limits
    if reference is not None and len(reference) != len(tests):
        raise ValueError("one reference run per test")
    cand_wall = None
    if reference:
        longest = max(r.wall_s for r in reference)
        cand_wall = min(
            limits.wall_seconds, max(CANDIDATE_WALL_MIN_S, CANDIDATE_WALL_FACTOR * longest)
        )
    executor = SandboxExecutor(
        sandbox,
        baseline,
        candidate,
        tests,
        limits,
        lock,
        priority=config.priority,
        candidate_wall_s=cand_wall,
    )
    warnings = [] if lock.layout.isolated else [TimingWarning.NOT_ISOLATED]
    speedups, failure, failed = measure_tests(
        executor, [t.name for t in tests], config, warnings=warnings, targets=targets
    )
    if failure is not None and not failure.candidate_fault and failed is not None:
        failure = _blame(
            sandbox, baseline, tests[[t.name for t in tests].index(failed)], limits, failure
        )
    if failure is None and reference is not None:
        found = _inconsistency(speedups, reference, executor.outputs)
        if found is not None:
            index, why = found
            failure = RunFailure(True, why, None, 0, "sandbox_violation")
            failed = tests[index].name
    return speedups, failure, failed


def _blame(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    test: TestCase,
    limits: Limits,
    failure: RunFailure,
) -> RunFailure:
    """Decide who a non-candidate failure belongs to: rerun the baseline alone, fresh."""
    from asmopt.evaluate import Verdict, classify_run

    rerun = sandbox.run_program(baseline, argv=test.argv, stdin=test.stdin, limits=limits)
    verdict = classify_run(test, rerun, limits)
    if verdict.verdict == Verdict.PASS:
        return RunFailure(
            True,
            f"{failure.message}; the baseline alone passes this test in a fresh sandbox, so "
            "the failure is charged to the candidate that ran beside it",
            failure.run_result,
            failure.run_index,
            "sandbox_violation",
        )
    return RunFailure(
        False,
        f"{failure.message}; the baseline alone fails too in a fresh sandbox "
        f"({verdict.verdict}: {verdict.message})",
        failure.run_result,
        failure.run_index,
        "infra_error",
    )


def _inconsistency(
    speedups: Sequence[TestSpeedup],
    reference: Sequence[ReferenceRun],
    outputs: dict[int, tuple[set[str], set[str]]],
) -> tuple[int, str] | None:
    """The first test whose timed candidate runs disagree with its correctness run."""
    for index, (sp, ref) in enumerate(zip(speedups, reference, strict=True)):
        base_out, cand_out = outputs.get(index, (set(), set()))
        stable = ref.stdout_sha256 is not None and len(base_out) == 1
        if stable and cand_out and cand_out != {ref.stdout_sha256}:
            return index, (
                f"test {sp.test}: its timed runs wrote {len(cand_out - {ref.stdout_sha256})} "
                "output(s) different from its own correctness run, while the baseline's "
                "output never changed: a program must not behave differently when timed"
            )
        cpus = sorted(sp.raw.get("cand_cpu", []) + sp.raw.get("warmup_cand_cpu", []))
        if not cpus:
            continue
        median = cpus[len(cpus) // 2]
        if (
            ref.cpu_s > INCONSISTENT_CPU_FACTOR * median
            and ref.cpu_s - median > INCONSISTENT_CPU_FLOOR_S
        ):
            return index, (
                f"test {sp.test}: its timed runs used {median * 1e3:.3g} ms of CPU (median) "
                f"against {ref.cpu_s * 1e3:.3g} ms in its own correctness run on the same "
                "input: it skipped work when it could have been timed"
            )
    return None


def time_test(
    sandbox: Sandbox,
    baseline: str | os.PathLike[str],
    candidate: str | os.PathLike[str],
    test: TestCase,
    config: TimingConfig | None = None,
    *,
    limits: Limits | None = None,
    lock: CoreLock | None = None,
) -> TimingOutcome:
    """Measure the speedup of `candidate` over `baseline` on one test."""
    speedups, failure, _ = time_tests(
        sandbox, baseline, candidate, [test], config, limits=limits, lock=lock
    )
    return TimingOutcome(speedups[0], failure)
