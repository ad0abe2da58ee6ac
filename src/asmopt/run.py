"""Run a policy over a suite: baseline -> candidates -> checks -> speedups, with progress.

This is the loop behind `asmopt eval` and `asmopt suite verify`. It never drops a sample:
every (program, sample) pair ends with a recorded verdict, `infra_error` included.

Answers that pass every test are then measured against the baseline binary built from the
-O3 assembly (`MeasureOptions`): timed (measure/timing.py), counted under valgrind
(measure/valgrind.py), or not at all. An answer that is the baseline after
canonicalisation (measure/canonical.py) is a copy: its speedup is 1.0 by rule and it is
not timed, which would only spend time measuring noise. With a results store, every
finished sample is committed at once and finished samples are skipped on the next run.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from asmopt.evaluate import (
    CheckResult,
    MeasureOptions,
    Measurer,
    SampleOutcome,
    check_binary,
    check_candidate,
)
from asmopt.judge import Verdict
from asmopt.measure.canonical import canonical_statements, content_hash
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup
from asmopt.measure.timing import TimingConfig, default_core_lock, general_affinity
from asmopt.metrics import compute_metrics, verdict_rates
from asmopt.policies.base import Policy, PolicyRequest
from asmopt.programs.model import Program, Suite
from asmopt.sandbox.runner import Limits, Sandbox
from asmopt.toolchain import Toolchain, ToolchainError

if TYPE_CHECKING:
    from asmopt.measure.valgrind import Valgrind
    from asmopt.store import ResultStore

log = logging.getLogger(__name__)

# Run metadata key: program id -> why its tests are inadequate (see record_unfit).
UNFIT_META_KEY = "unfit_programs"


# ---------------------------------------------------------------------------- judging
def _judge_program(
    program: Program,
    policy: Policy,
    toolchain: Toolchain,
    sandbox: Sandbox,
    todo: Sequence[int],
    limits: Limits | None,
    options: MeasureOptions,
    sink: Callable[[SampleOutcome], None],
    store: ResultStore | None = None,
    split: str | None = None,
    valgrind: Valgrind | None = None,
) -> list[SampleOutcome]:
    outcomes: list[SampleOutcome] = []

    def finish(outcome: SampleOutcome) -> None:
        outcomes.append(outcome)
        sink(outcome)

    try:
        baseline = toolchain.baseline_assembly(program)
    except ToolchainError as exc:
        for i in todo:
            finish(
                SampleOutcome(
                    program.id, i, CheckResult(program.id, Verdict.INFRA_ERROR, f"baseline: {exc}")
                )
            )
        return outcomes
    if store is not None:
        store.put_program(program, split, baseline)
    try:
        candidates = policy.propose(
            PolicyRequest(program=program, baseline_asm=baseline, num_samples=len(todo))
        )
    except Exception as exc:
        log.error("policy %s failed on %s: %s", policy.name, program.id, traceback.format_exc())
        for i in todo:
            finish(
                SampleOutcome(
                    program.id,
                    i,
                    CheckResult(
                        program.id,
                        Verdict.INFRA_ERROR,
                        f"policy error: {type(exc).__name__}: {exc}",
                    ),
                )
            )
        return outcomes
    measurer = Measurer(program, baseline, toolchain, sandbox, options, limits, valgrind)
    baseline_canon = canonical_statements(baseline)
    seen: dict[str, tuple[CheckResult, bool]] = {}
    # Every sample is checked first; the correct, distinct ones are then measured together
    # (their timing shares the baseline's runs), and the outcomes finished in sample order.
    judged: list[SampleOutcome] = []
    to_measure: list[SampleOutcome] = []
    for k, i in enumerate(todo):
        start = time.monotonic()
        if k >= len(candidates):
            check = CheckResult(
                program.id,
                Verdict.INFRA_ERROR,
                f"policy returned {len(candidates)} of {len(todo)} samples",
            )
            judged.append(SampleOutcome(program.id, i, check))
            continue
        cand = candidates[k]
        info = {
            "prompt_tokens": cand.prompt_tokens,
            "completion_tokens": cand.completion_tokens,
            "latency_s": cand.latency_s,
        }
        is_copy = False
        first = False
        if cand.assembly is None:
            check = CheckResult(
                program.id, Verdict.EXTRACTION_ERROR, "the response contains no assembly"
            )
        else:
            key = content_hash(cand.assembly)
            if key in seen:  # the same text again: same verdict, same measurement (shared
                # even where that measurement ends as infra_error: the store retries both)
                check, is_copy = seen[key]
            else:
                check = check_candidate(program, cand.assembly, toolchain, sandbox, limits)
                is_copy = canonical_statements(cand.assembly) == baseline_canon
                first = check.correct
                if check.verdict != Verdict.INFRA_ERROR:
                    seen[key] = (check, is_copy)
        judged.append(
            SampleOutcome(
                program.id,
                i,
                check,
                cand.assembly,
                info,
                is_copy=is_copy,
                seconds=time.monotonic() - start,
            )
        )
        if first:
            to_measure.append(judged[-1])
    if to_measure:
        start = time.monotonic()
        try:
            measurer.measure_many([(o.check, o.is_copy) for o in to_measure])
        except Exception as exc:  # ours, not the candidates'
            log.error("measuring %s: %s", program.id, traceback.format_exc())
            for o in to_measure:
                if o.check.speedup is None:  # not measured yet (a copy's 1.0 by rule stands)
                    o.check.speedup = ProgramSpeedup(
                        options.mode,
                        MeasureStatus.INFRA_ERROR,
                        reliable=False,
                        message=f"measurement error: {type(exc).__name__}: {exc}",
                    )
        # Each measured sample is charged an equal share of the measurement's time.
        share = (time.monotonic() - start) / len(to_measure)
        for o in to_measure:
            o.seconds += share
    for o in judged:
        finish(o)
    return outcomes


def evaluate_programs(
    programs: Sequence[Program],
    policy: Policy,
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    samples: int = 1,
    jobs: int = 2,
    limits: Limits | None = None,
    progress: bool = True,
    on_result: Callable[[SampleOutcome], None] | None = None,
    measure: MeasureOptions | None = None,
    store: ResultStore | None = None,
    splits: dict[str, str] | None = None,
) -> list[SampleOutcome]:
    """Judge `samples` candidates per program; results come back in program order.

    `measure` defaults to no measurement (correctness only). With a `store`, samples it
    already holds (finished, not infra errors) are not judged again: they are loaded and
    returned with `resumed=True`, and every newly finished sample is committed at once."""
    options = measure or MeasureOptions(mode=MeasureMode.NONE)
    if options.mode == MeasureMode.TIME and options.lock is None:
        options.lock = default_core_lock()
    valgrind = None
    if options.mode == MeasureMode.INSTRUCTIONS:
        from asmopt.measure.valgrind import Valgrind

        valgrind = Valgrind.locate()
    if store is not None:
        record_unfit(store, programs)
    done = store.finished() if store is not None else set()
    resumed = {
        (o.program_id, o.sample): o
        for o in (store.load_outcomes() if store is not None else [])
        if (o.program_id, o.sample) in done
    }
    todo = {p.id: [i for i in range(samples) if (p.id, i) not in done] for p in programs}
    total = sum(len(v) for v in todo.values())
    results: dict[tuple[str, int], SampleOutcome] = dict(resumed)
    bar = tqdm(
        total=total,
        desc=f"eval {policy.name}",
        unit="sample",
        disable=not progress or total == 0,
        leave=False,
        dynamic_ncols=True,
    )
    sink_lock = threading.Lock()

    def sink(outcome: SampleOutcome) -> None:
        if store is not None:
            store.record(outcome)
        with sink_lock:
            results[(outcome.program_id, outcome.sample)] = outcome
            if on_result is not None:
                on_result(outcome)
            bar.update(1)

    # Builds and correctness runs stay off the timing cores (worker threads inherit this).
    layout = options.lock.layout if options.lock is not None else None
    placement = (
        general_affinity(layout) if options.mode == MeasureMode.TIME else contextlib.nullcontext()
    )
    with placement, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {
            pool.submit(
                _judge_program,
                p,
                policy,
                toolchain,
                sandbox,
                todo[p.id],
                limits,
                options,
                sink,
                store,
                (splits or {}).get(p.id),
                valgrind,
            ): p
            for p in programs
            if todo[p.id]
        }
        for fut in as_completed(futures):
            program = futures[fut]
            try:
                fut.result()
            except Exception as exc:  # a bug of ours: record it, never drop the sample
                log.error("evaluation of %s raised: %s", program.id, traceback.format_exc())
                for i in todo[program.id]:
                    if (program.id, i) not in results:
                        sink(
                            SampleOutcome(
                                program.id,
                                i,
                                CheckResult(
                                    program.id,
                                    Verdict.INFRA_ERROR,
                                    f"grader error: {type(exc).__name__}: {exc}",
                                ),
                            )
                        )
    bar.close()
    return [results[(p.id, i)] for p in programs for i in range(samples) if (p.id, i) in results]


def record_unfit(store: ResultStore, programs: Iterable[Program]) -> dict[str, str]:
    """Keep the evaluated programs marked unfit (docs/adequacy.md) in the run's metadata.

    Reports are built from the store alone, and a speedup or pass rate on tests that accept
    wrong answers must not be read without that warning beside it. Kept over sessions: a
    resumed run keeps what earlier sessions saw, and the programs of this session replace
    their earlier entries."""
    from asmopt.adequacy import unfit_programs

    programs = list(programs)
    found = unfit_programs(programs)
    now = {p.id for p in programs}
    stored = store.get_meta(UNFIT_META_KEY) or {}
    merged = {**{k: v for k, v in stored.items() if k not in now}, **found}
    if merged != stored:
        store.set_meta(UNFIT_META_KEY, merged)
    return found


@dataclass
class VerifyOutcome:
    program_id: str
    o0: CheckResult
    o3: CheckResult

    @property
    def ok(self) -> bool:
        return self.o0.correct and self.o3.correct


def verify_programs(
    programs: Iterable[Program],
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int = 2,
    progress: bool = True,
    limits: Limits | None = None,
) -> list[VerifyOutcome]:
    """Rebuild each program at -O0 and -O3 and check both pass every test."""
    programs = list(programs)

    def one(program: Program) -> VerifyOutcome:
        checks = []
        for flags in (("-O0",), ("-O3",)):
            build = toolchain.compile_binary(program, flags)
            if not build.ok or build.output is None:
                verdict = Verdict.INFRA_ERROR if build.stage == "infra" else Verdict.ASSEMBLE_ERROR
                checks.append(CheckResult(program.id, verdict, f"gcc {flags[0]}: {build.message}"))
            else:
                checks.append(check_binary(program, build.output, sandbox, limits))
        return VerifyOutcome(program.id, checks[0], checks[1])

    out: dict[str, VerifyOutcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(one, p): p for p in programs}
        bar = tqdm(
            total=len(futures), desc="verify", unit="prog", disable=not progress, leave=False
        )
        for fut in as_completed(futures):
            out[futures[fut].id] = fut.result()
            bar.update(1)
        bar.close()
    return [out[p.id] for p in programs]


def summarize(outcomes: Sequence[SampleOutcome]) -> dict[str, Any]:
    """Counts, rates and metrics; infra errors are excluded from the denominators and
    reported apart (metrics.py defines every number)."""
    verdicts = Counter(str(o.check.verdict) for o in outcomes)
    infra_errors = verdicts.get(str(Verdict.INFRA_ERROR), 0)
    rates = verdict_rates(str(o.check.verdict) for o in outcomes)
    metrics = compute_metrics([o.answer() for o in outcomes])
    measure_status = Counter(
        str(o.check.speedup.status) for o in outcomes if o.check.speedup is not None
    )
    return {
        "samples": len(outcomes),
        "programs": len({o.program_id for o in outcomes}),
        "judged": len(outcomes) - infra_errors,
        "infra_errors": infra_errors,
        "measure_infra_errors": measure_status.get(str(MeasureStatus.INFRA_ERROR), 0),
        "build_rate": rates["build_rate"],
        "pass_rate": rates["pass_rate"],
        "verdicts": dict(sorted(verdicts.items())),
        "measurements": dict(sorted(measure_status.items())),
        "copies": sum(o.is_copy for o in outcomes),
        "resumed": sum(o.resumed for o in outcomes),
        "metrics": metrics.to_dict(),
    }


# ---------------------------------------------------------------------------- the main job
@dataclass
class EvalConfig:
    """One evaluation: which programs, which policy, how answers are measured, where the
    results go. What `asmopt eval` builds from its options, usable without argparse."""

    policy: Policy
    suite: Suite | None = None  # None: the built-in suite
    split: str = "test"
    only: Sequence[str] | None = None
    samples: int = 1
    jobs: int = 2
    measure: MeasureMode = MeasureMode.TIME
    timing: TimingConfig = field(default_factory=TimingConfig)
    time_copies: bool = False
    run_dir: Path | None = None  # None: runs/SUITE-POLICY-SPLIT-MEASURE (resumes the same run)
    fresh: bool = False  # forget the stored results of `run_dir` first
    progress: bool = True
    limits: Limits | None = None


@dataclass
class EvalRun:
    """What an evaluation produced: every judged sample, its summary, and where it lives."""

    outcomes: list[SampleOutcome]
    summary: dict[str, Any]
    run_dir: Path
    notes: list[str] = field(default_factory=list)  # warnings about the stored run
    unfit: dict[str, str] = field(default_factory=dict)  # program id -> why its tests fail


def default_run_dir(suite: str, policy: str, split: str, measure: str) -> Path:
    """Deterministic, so that re-running the same evaluation resumes the same run."""
    return Path("runs") / f"{suite}-{policy}-{split}-{measure}"


def run_eval(
    config: EvalConfig,
    *,
    toolchain: Toolchain | None = None,
    sandbox: Sandbox | None = None,
) -> EvalRun:
    """Judge `config.samples` answers of the policy per selected program, measure the correct
    ones, store everything in the run directory as it goes, and summarize.

    Resumable: samples already finished in the run directory's store are loaded, not judged
    again. Raises ValueError when nothing is selected, ValgrindUnavailable for instruction
    counts without valgrind, SandboxUnavailable without a working sandbox."""
    from asmopt.adequacy import unfit_programs
    from asmopt.programs import load_builtin_suite
    from asmopt.provenance import environment_fingerprint
    from asmopt.sandbox.runner import default_sandbox
    from asmopt.store import DB_NAME, ResultStore
    from asmopt.toolchain import default_toolchain

    suite = config.suite or load_builtin_suite()
    programs = suite.select(split=config.split, ids=config.only)
    if not programs:
        raise ValueError(f"no programs selected (split {config.split!r})")
    sandbox = sandbox or default_sandbox()
    sandbox.check()
    toolchain = toolchain or default_toolchain()
    mode = MeasureMode(config.measure)
    valgrind_version = None
    if mode == MeasureMode.INSTRUCTIONS:
        from asmopt.measure.valgrind import Valgrind

        valgrind_version = Valgrind.locate().version
    run_dir = config.run_dir or default_run_dir(
        suite.name, config.policy.name, config.split, mode.value
    )
    if config.fresh and (run_dir / DB_NAME).exists():
        for suffix in ("", "-wal", "-shm"):
            (run_dir / (DB_NAME + suffix)).unlink(missing_ok=True)
    layout = default_core_lock().layout if mode == MeasureMode.TIME else None
    fingerprint = environment_fingerprint(
        compiler=toolchain.identity(),
        sandbox=sandbox.describe(),
        measure=mode.value,
        timing={
            **config.timing.to_dict(),
            "timing_cores": list(layout.timing),
            "general_cores": list(layout.general),
            "isolated": layout.isolated,
        }
        if layout
        else None,
        valgrind=valgrind_version,
    )
    store = ResultStore(run_dir)
    try:
        notes = store.begin_run(
            {
                "suite": suite.name,
                "policy": config.policy.name,
                "split": config.split,
                "measure": mode.value,
                "samples": config.samples,
                "time_copies": config.time_copies,
            },
            fingerprint,
        )
        outcomes = evaluate_programs(
            programs,
            config.policy,
            toolchain,
            sandbox,
            samples=config.samples,
            jobs=config.jobs,
            limits=config.limits,
            progress=config.progress,
            measure=MeasureOptions(mode=mode, timing=config.timing, time_copies=config.time_copies),
            store=store,
            splits=suite.splits,
        )
    finally:
        store.close()
    summary = summarize(outcomes)
    summary.update(
        suite=suite.name,
        policy=config.policy.name,
        split=config.split,
        measure=mode.value,
        run_dir=str(run_dir),
    )
    return EvalRun(outcomes, summary, run_dir, list(notes), unfit_programs(programs))
