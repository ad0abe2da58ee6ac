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
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from asmopt.evaluate import CheckResult, TestVerdict, Verdict, check_binary, check_candidate
from asmopt.measure.canonical import canonical_statements, content_hash
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup, TestSpeedup
from asmopt.measure.timing import (
    CoreLock,
    ReferenceRun,
    TimingConfig,
    default_core_lock,
    general_affinity,
    time_tests,
)
from asmopt.metrics import Answer, compute_metrics
from asmopt.policies.base import Policy, PolicyRequest
from asmopt.programs.model import Program
from asmopt.sandbox.runner import Limits, Sandbox
from asmopt.toolchain import Toolchain, ToolchainError

if TYPE_CHECKING:
    from asmopt.measure.valgrind import CountResult, Valgrind
    from asmopt.store import ResultStore

log = logging.getLogger(__name__)

# Run metadata key: program id -> why its tests are inadequate (see record_unfit).
UNFIT_META_KEY = "unfit_programs"


@dataclass
class MeasureOptions:
    """How correct answers are measured against the baseline."""

    mode: MeasureMode = MeasureMode.TIME
    timing: TimingConfig = field(default_factory=TimingConfig)
    # Timing a copy measures the instrument, not the answer; on for A/A checks only.
    time_copies: bool = False
    lock: CoreLock | None = None


@dataclass
class SampleOutcome:
    """One candidate for one program, judged (and measured when it is correct)."""

    program_id: str
    sample: int
    check: CheckResult
    assembly: str | None = None
    policy_info: dict[str, Any] = field(default_factory=dict)
    is_copy: bool = False
    seconds: float = 0.0
    resumed: bool = False  # loaded from the results store, not judged in this session

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program_id,
            "sample": self.sample,
            **self.check.to_dict(),
            "is_copy": self.is_copy,
            "seconds": self.seconds,
            "policy": self.policy_info,
        }

    def answer(self) -> Answer:
        """The metrics view of this outcome."""
        sp = self.check.speedup
        measured = sp is not None and sp.status == MeasureStatus.MEASURED
        return Answer(
            program_id=self.program_id,
            sample=self.sample,
            verdict=str(self.check.verdict),
            built=self.check.built,
            correct=self.check.correct,
            is_copy=self.is_copy,
            measure_status=str(sp.status) if sp else "not_measured",
            speedup=sp.ratio if sp and sp.has_ratio else None,
            low=sp.low if sp and sp.has_ratio else None,
            high=sp.high if sp and sp.has_ratio else None,
            test_speedups=tuple(t.ratio for t in sp.tests if t.status == MeasureStatus.MEASURED)
            if sp and measured
            else (),
            reliable=sp.reliable if sp else True,
        )


# ---------------------------------------------------------------------------- measurement
class Measurer:
    """Measures correct answers of one program against its baseline binary.

    The baseline is built once (lazily: programs whose answers all fail never need it) and,
    in instruction mode, its counts are computed once per test."""

    def __init__(
        self,
        program: Program,
        baseline_asm: str,
        toolchain: Toolchain,
        sandbox: Sandbox,
        options: MeasureOptions,
        limits: Limits | None,
        valgrind: Valgrind | None = None,
    ) -> None:
        self.program = program
        self.baseline_asm = baseline_asm
        self.toolchain = toolchain
        self.sandbox = sandbox
        self.options = options
        self.limits = limits
        self.valgrind = valgrind
        self._baseline_binary: Any = None
        self._baseline_error: str | None = None
        self._base_counts: dict[str, CountResult] = {}
        self._lock = threading.Lock()

    def baseline_binary(self) -> Any:
        with self._lock:
            if self._baseline_binary is None and self._baseline_error is None:
                build = self.toolchain.assemble_and_link(self.baseline_asm, self.program.ldflags)
                if build.ok and build.output is not None:
                    self._baseline_binary = build.output
                else:
                    self._baseline_error = f"the baseline assembly did not build: {build.message}"
            if self._baseline_error:
                raise ToolchainError(self._baseline_error)
            return self._baseline_binary

    def measure(self, check: CheckResult, is_copy: bool) -> None:
        """Attach a ProgramSpeedup to a correct `check` (or turn it into a failure when the
        candidate misbehaves during timing runs)."""
        mode = self.options.mode
        names = [t.name for t in self.program.tests]
        if mode == MeasureMode.NONE:
            check.speedup = ProgramSpeedup.not_measured()
            return
        if is_copy and not self.options.time_copies:
            check.speedup = ProgramSpeedup.copy_of_baseline(mode, names)
            self._attach(check)
            return
        try:
            baseline = self.baseline_binary()
        except ToolchainError as exc:
            check.speedup = ProgramSpeedup(
                mode, MeasureStatus.INFRA_ERROR, reliable=False, message=str(exc)
            )
            return
        if check.binary is None:
            check.speedup = ProgramSpeedup(
                mode, MeasureStatus.INFRA_ERROR, reliable=False, message="no candidate binary"
            )
            return
        per_test: list[TestSpeedup] = []
        if mode == MeasureMode.TIME:
            # All tests of the program share each timing sandbox (time_tests batches them).
            by_name = {t.test: t for t in check.tests}
            reference = None
            if all(t.name in by_name for t in self.program.tests):
                reference = [
                    ReferenceRun(
                        cpu_s=by_name[t.name].user_time_s + by_name[t.name].sys_time_s,
                        wall_s=by_name[t.name].wall_time_s,
                        stdout_sha256=by_name[t.name].stdout_sha256,
                    )
                    for t in self.program.tests
                ]
            speedups, failure, failed_test = time_tests(
                self.sandbox,
                baseline,
                check.binary,
                self.program.tests,
                self.options.timing,
                limits=self.limits,
                lock=self.options.lock,
                reference=reference,
            )
            if failure is not None and failure.candidate_fault and failed_test is not None:
                self._fail(check, failed_test, failure.verdict, failure.message)
                return
            per_test = speedups
        else:
            for test in self.program.tests:
                per_test.append(self._count(test, check.binary))
                if per_test[-1].status == MeasureStatus.INFRA_ERROR:
                    break
        resolution = self.options.timing.resolution if mode == MeasureMode.TIME else 0.0
        check.speedup = ProgramSpeedup.from_tests(mode, per_test, resolution)
        self._attach(check)

    def _count(self, test: Any, binary: Any) -> TestSpeedup:
        from asmopt.measure.valgrind import count_instructions, instruction_speedup

        with self._lock:
            base = self._base_counts.get(test.name)
        if base is None:
            base = count_instructions(
                self.sandbox, self._baseline_binary, test, self.limits, self.valgrind
            )
            if base.candidate_fault:  # the baseline misbehaves under valgrind: not measurable
                base.status = MeasureStatus.UNMEASURABLE
            with self._lock:
                self._base_counts[test.name] = base
        cand = count_instructions(self.sandbox, binary, test, self.limits, self.valgrind)
        if cand.candidate_fault:
            # Correct natively, different under valgrind's emulation (x87 precision, timing,
            # uninitialised memory): no count, but no verdict on correctness either.
            cand.status = MeasureStatus.UNMEASURABLE
        return instruction_speedup(test.name, base, cand)

    @staticmethod
    def _attach(check: CheckResult) -> None:
        if check.speedup is None:
            return
        by_name = {t.test: t for t in check.speedup.tests}
        for tv in check.tests:
            tv.speedup = by_name.get(tv.test)

    @staticmethod
    def _fail(check: CheckResult, test: str, verdict: str, message: str) -> None:
        """A run during timing failed: the answer is not correct after all (a flaky answer,
        or one that behaves differently when run repeatedly)."""
        v = Verdict(verdict)
        for i, tv in enumerate(check.tests):
            if tv.test == test:
                check.tests[i] = TestVerdict(test=test, verdict=v, message=message)
        check.verdict = v
        check.message = f"test {test}: {message}"
        check.speedup = None


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
    for k, i in enumerate(todo):
        start = time.monotonic()
        if k >= len(candidates):
            check = CheckResult(
                program.id,
                Verdict.INFRA_ERROR,
                f"policy returned {len(candidates)} of {len(todo)} samples",
            )
            finish(SampleOutcome(program.id, i, check))
            continue
        cand = candidates[k]
        info = {
            "prompt_tokens": cand.prompt_tokens,
            "completion_tokens": cand.completion_tokens,
            "latency_s": cand.latency_s,
        }
        is_copy = False
        if cand.assembly is None:
            check = CheckResult(
                program.id, Verdict.EXTRACTION_ERROR, "the response contains no assembly"
            )
        else:
            key = content_hash(cand.assembly)
            if key in seen:  # the same text again: same verdict, same measurement
                check, is_copy = seen[key]
            else:
                check = check_candidate(program, cand.assembly, toolchain, sandbox, limits)
                is_copy = canonical_statements(cand.assembly) == baseline_canon
                if check.correct:
                    try:
                        measurer.measure(check, is_copy)
                    except Exception as exc:  # ours, not the candidate's
                        log.error("measuring %s: %s", program.id, traceback.format_exc())
                        check.speedup = ProgramSpeedup(
                            options.mode,
                            MeasureStatus.INFRA_ERROR,
                            reliable=False,
                            message=f"measurement error: {type(exc).__name__}: {exc}",
                        )
                if check.verdict != Verdict.INFRA_ERROR and (
                    check.speedup is None or check.speedup.status != MeasureStatus.INFRA_ERROR
                ):
                    seen[key] = (check, is_copy)
        finish(
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
    judged = [o for o in outcomes if o.check.verdict != Verdict.INFRA_ERROR]
    n = len(judged)
    built = sum(o.check.verdict.built for o in judged)
    passed = sum(o.check.correct for o in judged)
    metrics = compute_metrics([o.answer() for o in outcomes])
    measure_status = Counter(
        str(o.check.speedup.status) for o in outcomes if o.check.speedup is not None
    )
    return {
        "samples": len(outcomes),
        "programs": len({o.program_id for o in outcomes}),
        "judged": n,
        "infra_errors": verdicts.get(str(Verdict.INFRA_ERROR), 0),
        "measure_infra_errors": measure_status.get(str(MeasureStatus.INFRA_ERROR), 0),
        "build_rate": built / n if n else None,
        "pass_rate": passed / n if n else None,
        "verdicts": dict(sorted(verdicts.items())),
        "measurements": dict(sorted(measure_status.items())),
        "copies": sum(o.is_copy for o in outcomes),
        "resumed": sum(o.resumed for o in outcomes),
        "metrics": metrics.to_dict(),
    }
