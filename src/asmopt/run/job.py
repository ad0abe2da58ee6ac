"""The main job: `run_eval(EvalConfig)` is everything `asmopt eval` does, as a library call.

Every `eval` option is a typed field of `EvalConfig`; the policy is built from its spec, an
answers file is checked against the selection, valgrind probed, best-of-N summarized. It
prints nothing unless asked, installs no signal handler, and is stopped through an
`Interrupt` (stop, or cancel: the sandboxes it started are killed, no other process).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.best_of_n import best_of_n_metrics
from asmopt.errors import InputError
from asmopt.evaluate import (
    MeasureOptions,
    SampleOutcome,
)
from asmopt.fresh import FreshInputs
from asmopt.measure.speedup import MeasureMode
from asmopt.measure.timing import (
    CoreLock,
    TimingConfig,
    default_core_lock,
)
from asmopt.policies.base import Policy
from asmopt.policies.factory import PolicySpec, make_policy
from asmopt.programs.model import Program, Suite
from asmopt.run.judging import RunHooks, evaluate_programs
from asmopt.run.summary import summarize
from asmopt.sandbox import live as live_processes
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import Sandbox, default_sandbox
from asmopt.store import RunLock
from asmopt.toolchain import Toolchain, default_toolchain
from asmopt.typed_config import check_fields

if TYPE_CHECKING:
    from asmopt.measure.timing.cores import CoreLayout


log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------- the main job
@dataclass
class EvalConfig:
    """One evaluation, every option of `asmopt eval` as a typed field (the command line
    builds this and nothing else): which programs, which policy, how answers are measured
    and on which inputs, where the results go. Checked when it is made."""

    # A policy object, or a spec of one (`PolicySpec`, or just its name) built at the start.
    policy: Policy | PolicySpec | str = "identity"
    suite: Suite | Path | str | None = None  # a loaded suite or its directory; None: built-in
    split: str = "test"
    only: Sequence[str] | None = None  # program ids (None: every program of the split)
    samples: int = 1  # answers per program; more than 1 adds best-of-N to the summary
    jobs: int = 2  # programs judged at once
    measure: MeasureMode | str = MeasureMode.TIME
    timing: TimingConfig = field(default_factory=TimingConfig)
    time_copies: bool = False  # also time answers that are copies (an A/A check)
    # How inputs are drawn (fresh.py): None draws from a new secret seed for this
    # evaluation; `FreshInputs(seed=S)` replays one; `FreshInputs.off()` is fixed tests only.
    fresh_inputs: FreshInputs | None = None
    run_dir: Path | str | None = None  # None: runs/SUITE-HASH-POLICY-SPLIT-MEASURE (resumes)
    restart: bool = False  # forget the stored results of `run_dir` first
    # The old name of `restart`, beside `fresh_inputs` it read as a second input setting:
    # refused, naming the new one.
    fresh: bool | None = None
    wait: bool = False  # wait for another evaluation of `run_dir` to finish instead of refusing
    progress: bool = False  # a progress bar on stderr
    limits: Limits | None = None  # per-run sandbox limits (None: the defaults)
    # Where notices go (another evaluation holds the run directory, ...); None: logging.
    notify: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        if self.fresh is not None:
            raise InputError(
                "EvalConfig.fresh: use restart (forget the stored results of run_dir first); "
                "how inputs are drawn is fresh_inputs"
            )
        if isinstance(self.only, str):  # a lone id would be read as its characters
            self.only = [self.only]
        check_fields(self)  # the types; the ranges below
        try:
            self.measure = MeasureMode(self.measure)
        except ValueError:
            modes = ", ".join(m.value for m in MeasureMode)
            raise InputError(f"measure must be one of {modes}, got {self.measure!r}") from None
        if isinstance(self.policy, str):
            self.policy = PolicySpec(name=self.policy)
        for name, low, high in (("samples", 1, 10_000), ("jobs", 1, 256)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InputError(f"{name} must be an integer in {low}..{high}, got {value!r}")
        if self.run_dir is not None:
            self.run_dir = Path(self.run_dir)


@dataclass
class Interrupt:
    """A caller's hold on a running evaluation (a signal handler, a UI, a test).

    `stop`: start no new sample; the running ones finish and are stored, the rest are left
    for a rerun. `cancel`: also end the running ones at once (the sandboxed processes this
    evaluation started are killed; their samples are not stored). The library installs no
    signal handler of its own: the command line maps Ctrl-C and SIGTERM onto these."""

    stop: threading.Event = field(default_factory=threading.Event)
    cancel: threading.Event = field(default_factory=threading.Event)

    def request_cancel(self) -> None:
        self.stop.set()
        self.cancel.set()


@dataclass
class EvalRun:
    """What an evaluation produced: every judged sample, its summary, and where it lives."""

    outcomes: list[SampleOutcome]
    summary: dict[str, Any]
    run_dir: Path
    notes: list[str] = field(default_factory=list)  # warnings about the stored run
    unfit: dict[str, str] = field(default_factory=dict)  # program id -> why its tests fail
    interrupted: bool = False  # stopped early: what finished is stored, the rest is not


class NothingSelected(InputError):
    """The split and `only` select no program (or programs without tests)."""


def suite_identity(suite: Suite) -> str:
    """`NAME@HASH`, HASH a short digest of the suite's program ids: two suites that share a
    name (two imports of different directories) differ, one suite re-run keeps its value."""
    digest = hashlib.sha256("\0".join(sorted(suite.programs)).encode()).hexdigest()[:8]
    return f"{suite.name}@{digest}"


def default_run_dir(suite: str, policy: str, split: str, measure: str) -> Path:
    """Deterministic, so that re-running the same evaluation resumes the same run; `suite`
    is `suite_identity` (its program-set digest keeps same-named suites apart)."""
    return Path("runs") / f"{suite.replace('@', '-')}-{policy}-{split}-{measure}"


def run_eval(
    config: EvalConfig,
    *,
    toolchain: Toolchain | None = None,
    sandbox: Sandbox | None = None,
    interrupt: Interrupt | None = None,
) -> EvalRun:
    """Judge `config.samples` answers of the policy per selected program, measure the correct
    ones, store everything in the run directory as it goes, and summarize (best-of-N too,
    with more than one sample). This is the whole of `asmopt eval`.

    Resumable: samples already finished in the run directory's store are loaded, not judged
    again. Raises an `AsmoptError` for what the user can fix: `NothingSelected`, a policy
    spec or answers file that cannot serve the selection (`PolicyError`, `InputError`), a
    policy that fails for the user's own reasons mid-run (`PolicyError`: a request the
    model server refuses, a prompt longer than the model's context; what finished is
    stored), `ValgrindUnavailable` for instruction counts without valgrind,
    `SandboxUnavailable` without a working sandbox, `StoreError` when the run directory is
    not usable."""
    suite = _load_suite(config.suite)
    programs = _select_programs(suite, config)
    sandbox = sandbox or default_sandbox()
    sandbox.check()
    toolchain = toolchain or default_toolchain()
    mode = MeasureMode(config.measure)
    valgrind_version = None
    if mode == MeasureMode.INSTRUCTIONS:  # before the policy spends anything
        from asmopt.measure.valgrind import Valgrind

        valgrind_version = Valgrind.locate().version
    policy = config.policy
    if isinstance(policy, PolicySpec | str):
        policy = make_policy(policy, toolchain, sandbox)
    _check_answers_cover(policy, programs, config.samples)
    run_dir = Path(config.run_dir or default_run_dir(
        suite_identity(suite), policy.name, config.split, mode.value
    ))  # fmt: skip
    notify = config.notify or log.warning
    lock = RunLock(run_dir).acquire(
        wait=config.wait,
        on_wait=lambda holder: notify(
            f"waiting for {run_dir}: another evaluation holds it ({holder})"
        ),
    )
    try:
        return _run_locked(
            _Job(config, suite, programs, policy, run_dir, toolchain, sandbox, mode),
            valgrind_version,
            interrupt or Interrupt(),
        )
    finally:
        lock.release()


def _load_suite(suite: Suite | Path | str | None) -> Suite:
    from asmopt.programs import load_builtin_suite
    from asmopt.programs.suite_io import load_suite

    if suite is None:
        return load_builtin_suite()
    return suite if isinstance(suite, Suite) else load_suite(Path(suite))


def _select_programs(suite: Suite, config: EvalConfig) -> list[Program]:
    programs = suite.select(split=config.split, ids=config.only)
    if not programs:
        raise NothingSelected(f"no programs selected (split {config.split!r})")
    untested = [p.id for p in programs if not p.tests]
    if untested:  # every candidate would pass: a benchmark of nothing
        raise NothingSelected(
            f"program(s) without tests: {', '.join(untested[:5])}; every candidate would "
            "pass (0/0): add tests or leave them out with --only"
        )
    return programs


def _check_answers_cover(policy: Policy, programs: Sequence[Program], samples: int) -> None:
    """Answers from a file must all be there before anything is judged: a run that finds a
    gap halfway has spent its time on a selection it cannot finish."""
    missing_answers = getattr(policy, "missing", None)
    if not callable(missing_answers):
        return
    missing = missing_answers([p.id for p in programs], samples)
    if missing:
        shown = ", ".join(f"{p} sample {i}" for p, i in missing[:5])
        source = getattr(policy, "path", "the answers file")
        raise InputError(
            f"{source} has no answer for {len(missing)} of the "
            f"{len(programs) * samples} samples asked for ({shown}"
            f"{', ...' if len(missing) > 5 else ''}); add them, or lower --samples, or "
            "narrow --only/--split"
        )


@dataclass
class _Job:
    """An evaluation once its inputs are resolved: what `_run_locked` works from."""

    config: EvalConfig
    suite: Suite
    programs: list[Program]
    policy: Policy
    run_dir: Path
    toolchain: Toolchain
    sandbox: Sandbox
    mode: MeasureMode


def _fingerprint(
    job: _Job, layout: CoreLayout | None, valgrind_version: str | None
) -> dict[str, Any]:
    """The environment a run was measured in, stored with it (and compared on resume)."""
    from asmopt.provenance import environment_fingerprint

    timing = None
    if layout is not None:
        timing = {
            **job.config.timing.to_dict(),
            "timing_cores": list(layout.timing),
            "general_cores": list(layout.general),
            "isolated": layout.isolated,
        }
    return environment_fingerprint(
        compiler=job.toolchain.identity(),
        sandbox=job.sandbox.describe(),
        measure=job.mode.value,
        timing=timing,
        valgrind=valgrind_version,
    )


def _run_record(job: _Job) -> dict[str, Any]:
    """What a stored run says it is (shown by `results show`, checked on resume)."""
    return {
        "suite": job.suite.name,
        "suite_id": suite_identity(job.suite),
        "policy": job.policy.name,
        "split": job.config.split,
        "measure": job.mode.value,
        "samples": job.config.samples,
        "time_copies": job.config.time_copies,
    }


def _run_locked(job: _Job, valgrind_version: str | None, interrupt: Interrupt) -> EvalRun:
    from asmopt.adequacy import unfit_programs
    from asmopt.store import DB_NAME, ResultStore

    config = job.config
    if config.restart and (job.run_dir / DB_NAME).exists():
        for suffix in ("", "-wal", "-shm"):
            (job.run_dir / (DB_NAME + suffix)).unlink(missing_ok=True)
    machine_lock = default_core_lock()
    layout = machine_lock.layout if job.mode == MeasureMode.TIME else None
    fingerprint = _fingerprint(job, layout, valgrind_version)
    store = ResultStore(job.run_dir)
    try:
        notes = store.begin_run(_run_record(job), fingerprint)
        # This evaluation's own handle on the timing cores: cancelling it ends its waits
        # for a core and its timing rounds at once.
        # A long wait for a core is told where the evaluation's other notices go.
        lock = CoreLock(
            machine_lock.layout,
            machine_lock.lock_dir,
            cancel=interrupt.cancel,
            notify=config.notify or log.warning,
        )
        with _ends_its_processes_on_cancel(interrupt.cancel):
            outcomes = evaluate_programs(
                job.programs,
                job.policy,
                job.toolchain,
                job.sandbox,
                samples=config.samples,
                jobs=config.jobs,
                limits=config.limits,
                progress=config.progress,
                measure=MeasureOptions(
                    mode=job.mode, timing=config.timing, time_copies=config.time_copies, lock=lock
                ),
                fresh_inputs=config.fresh_inputs,
                hooks=RunHooks(
                    store=store,
                    splits=job.suite.splits,
                    stop=interrupt.stop,
                    abort=interrupt.cancel,
                    notes=notes,
                ),
            )
    finally:
        store.close()
    return EvalRun(
        outcomes,
        _eval_summary(job, outcomes, interrupt),
        job.run_dir,
        list(notes),
        unfit_programs(job.programs),
        interrupt.stop.is_set(),
    )


def _eval_summary(job: _Job, outcomes: list[SampleOutcome], interrupt: Interrupt) -> dict:
    summary = summarize(outcomes)
    summary["fixed_inputs"] = sorted(p.id for p in job.programs if p.fixed_inputs)
    summary.update(
        suite=job.suite.name,
        policy=job.policy.name,
        split=job.config.split,
        measure=job.mode.value,
        run_dir=str(job.run_dir),
    )
    if job.config.samples > 1:
        summary["best_of_n"] = best_of_n_metrics(outcomes, {p.id: p for p in job.programs})
    summary["interrupted"] = interrupt.stop.is_set()
    return summary


@contextlib.contextmanager
def _ends_its_processes_on_cancel(cancel: threading.Event) -> Iterator[None]:
    """Once `cancel` is set, kill the sandboxed processes this library started, and keep
    killing what the workers start until they see it (a sample's remaining tests would each
    start a new run). Processes the host started itself are never touched."""
    finished = threading.Event()

    def reaper() -> None:
        while not finished.is_set():
            if cancel.wait(0.1):
                live_processes.kill_all()
                finished.wait(0.1)

    thread = threading.Thread(target=reaper, daemon=True, name="asmopt-cancel")
    thread.start()
    try:
        yield
    finally:
        finished.set()
        thread.join()
