"""Judge a policy's samples over programs: candidates, checks, speedups, stored as they go.

`evaluate_programs` is the loop behind `asmopt eval`: every (program, sample) pair ends
with a recorded verdict, `infra_error` included, and never is dropped. Answers that pass
every test are then measured against the baseline binary built from the -O3 assembly
(`MeasureOptions`): timed (measure/timing), counted under valgrind (measure/valgrind.py),
or not at all. An answer that is the baseline after canonicalisation
(measure/canonical.py) is a copy: its speedup is 1.0 by rule and it is not timed, which
would only spend time measuring noise. With a results store, every finished sample is
committed at once and finished samples are skipped on the next run (`sample_inputs`: a
sample judged under other inputs is judged again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from asmopt.evaluate import (
    CheckResult,
    MeasureOptions,
    Measurer,
    SampleOutcome,
    check_candidate,
)
from asmopt.fresh import FreshInputs
from asmopt.judge import Verdict
from asmopt.measure.canonical import canonical_statements, content_hash
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup
from asmopt.measure.timing import (
    TimingCancelled,
    default_core_lock,
    general_affinity,
)
from asmopt.parallel import completed
from asmopt.policies.base import Candidate, Policy, PolicyRequest
from asmopt.policies.llm import PolicyError
from asmopt.programs.model import Program
from asmopt.run.summary import record_unfit
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import Sandbox
from asmopt.store import StoreError
from asmopt.toolchain import Toolchain, ToolchainError

if TYPE_CHECKING:
    from asmopt.measure.valgrind import Valgrind
    from asmopt.store import ResultStore


log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------- judging
@dataclass
class _ProgramJob:
    """What judging one program's samples needs: the program, where it runs, how answers
    are measured, and where finished samples go (`sink`, which stores and counts them)."""

    program: Program
    policy: Policy
    toolchain: Toolchain
    sandbox: Sandbox
    limits: Limits | None
    options: MeasureOptions
    sink: Callable[[SampleOutcome], None]
    store: ResultStore | None = None
    split: str | None = None
    valgrind: Valgrind | None = None
    stop: threading.Event | None = None
    fresh: FreshInputs | None = None

    def stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()


def _judge_program(job: _ProgramJob, todo: Sequence[int]) -> list[SampleOutcome]:
    """Ask the policy for the program's unfinished samples, check each, measure the correct
    distinct ones together (their timing shares the baseline's runs), and hand every sample
    to the sink in sample order. A failure of ours is an infra_error sample, never a gap."""
    program = job.program
    if job.stopping():
        return []
    try:
        baseline = job.toolchain.baseline_assembly(program)
    except ToolchainError as exc:
        return _finish(job, [SampleOutcome.infra_error(program.id, i, f"baseline: {exc}")
                             for i in todo])  # fmt: skip
    if job.store is not None:
        job.store.put_program(program, job.split, baseline)
    propose_start = time.monotonic()
    try:
        candidates = job.policy.propose(
            PolicyRequest(program=program, baseline_asm=baseline, num_samples=len(todo),
                          samples=tuple(todo))
        )  # fmt: skip
    except PolicyError as exc:
        # The user's to fix (a request the model server refuses for its own reasons, a
        # prompt longer than the model's context): no rerun changes it, so it is no
        # infra_error; it stops the run (`_judge_all`), naming the program.
        raise PolicyError(f"{program.id}: {exc}") from exc
    except Exception as exc:
        log.error("policy %s failed on %s: %s: %s", job.policy.name, program.id,
                  type(exc).__name__, exc)  # fmt: skip
        log.debug("policy %s failed on %s: %s", job.policy.name, program.id,
                  traceback.format_exc())  # fmt: skip
        why = f"policy error: {type(exc).__name__}: {exc}"
        return _finish(job, [SampleOutcome.infra_error(program.id, i, why) for i in todo])
    # The policy's own wall time for this program (a compiler search can take minutes).
    policy_s = round(time.monotonic() - propose_start, 3)
    judged, to_measure = _check_samples(job, baseline, candidates, todo, policy_s)
    if to_measure:
        _measure_samples(job, baseline, to_measure)
    return _finish(job, judged)


def _finish(job: _ProgramJob, outcomes: list[SampleOutcome]) -> list[SampleOutcome]:
    for outcome in outcomes:
        job.sink(outcome)
    return outcomes


def _policy_info(cand: Candidate, policy_s: float) -> dict[str, Any]:
    info: dict[str, Any] = {
        "prompt_tokens": cand.prompt_tokens,
        "completion_tokens": cand.completion_tokens,
        "latency_s": cand.latency_s,
        "policy_s": policy_s,
    }
    if isinstance(cand.extra.get("search"), dict):  # what a search tried, kept with the run
        info["search"] = cand.extra["search"]
    return info


def _check_samples(
    job: _ProgramJob,
    baseline: str,
    candidates: Sequence[Candidate],
    todo: Sequence[int],
    policy_s: float,
) -> tuple[list[SampleOutcome], list[SampleOutcome]]:
    """Every sample checked; returns (all judged, the correct first-seen ones to measure).

    The same text twice gets the same verdict and measurement (shared even where that ends
    as infra_error: the store retries both). Interrupted: samples not started stay unjudged
    and a rerun does them."""
    program = job.program
    baseline_canon = canonical_statements(baseline)
    seen: dict[str, tuple[CheckResult, bool]] = {}
    judged: list[SampleOutcome] = []
    to_measure: list[SampleOutcome] = []
    for k, i in enumerate(todo):
        if job.stopping():
            break
        if k >= len(candidates):
            why = f"policy returned {len(candidates)} of {len(todo)} samples"
            judged.append(SampleOutcome.infra_error(program.id, i, why))
            continue
        start = time.monotonic()
        cand = candidates[k]
        first, is_copy = False, False
        if cand.assembly is None:
            check = CheckResult(
                program.id, Verdict.EXTRACTION_ERROR, "the response contains no assembly"
            )
        elif (key := content_hash(cand.assembly)) in seen:
            check, is_copy = seen[key]
        else:
            check = check_candidate(program, cand.assembly, job.toolchain, job.sandbox,
                                    job.limits, fresh=job.fresh, label=i)  # fmt: skip
            is_copy = canonical_statements(cand.assembly) == baseline_canon
            first = check.correct
            if check.verdict != Verdict.INFRA_ERROR:
                seen[key] = (check, is_copy)
        outcome = SampleOutcome(program.id, i, check, cand.assembly,
                                _policy_info(cand, policy_s), is_copy=is_copy,
                                seconds=time.monotonic() - start)  # fmt: skip
        judged.append(outcome)
        if first:
            to_measure.append(outcome)
    return judged, to_measure


def _measure_samples(job: _ProgramJob, baseline: str, to_measure: list[SampleOutcome]) -> None:
    """Measure the correct samples together; a failure of ours marks each unmeasured one as
    a measurement infra_error. Each is charged an equal share of the measurement's time."""
    measurer = Measurer(job.program, baseline, job.toolchain, job.sandbox, job.options,
                        job.limits, job.valgrind)  # fmt: skip
    start = time.monotonic()
    try:
        measurer.measure_many([(o.check, o.is_copy) for o in to_measure])
    except Exception as exc:  # ours, not the candidates'
        if not isinstance(exc, TimingCancelled):  # an interrupt: expected, not logged
            log.error("measuring %s: %s", job.program.id, traceback.format_exc())
        for o in to_measure:
            if o.check.speedup is None:  # not measured yet (a copy's 1.0 by rule stands)
                o.check.speedup = ProgramSpeedup(
                    job.options.mode,
                    MeasureStatus.INFRA_ERROR,
                    reliable=False,
                    message=f"measurement error: {type(exc).__name__}: {exc}",
                )
    share = (time.monotonic() - start) / len(to_measure)
    for o in to_measure:
        o.seconds += share


_INPUT_NAMES = {
    "program": "the program or its tests changed",
    "toolchain": "the compiler or assembler changed",
    "measure": "the measurement settings changed",
    "policy": "the policy's answers changed",
}


def sample_inputs(
    program: Program,
    toolchain: Toolchain,
    options: MeasureOptions,
    policy: Policy | None = None,
    fresh: FreshInputs | None = None,
) -> dict[str, str]:
    """Hashes of everything a stored sample's verdict and speedup depend on besides the answer
    itself: the program with its tests, the toolchain, and how it was measured. Resume reuses
    a sample only when all three still match (an edited expected output must not keep an old
    pass)."""

    def digest(data: Any) -> str:
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()

    measure: dict[str, Any] = {"mode": str(options.mode)}
    if fresh is not None:  # how many inputs are drawn, never the secret seed itself
        measure.update(drawn_per_class=fresh.per_class, fresh_timed=fresh.timed)
    if options.mode == MeasureMode.TIME:
        measure.update(timing=options.timing.to_dict(), time_copies=options.time_copies)
    inputs = {
        "program": program.content_hash(),
        "toolchain": digest(toolchain.identity()),
        "measure": digest(measure),
    }
    # A policy whose answers are fixed in a file says which of them a program's samples use.
    answers_digest = getattr(policy, "inputs_digest", None)
    if callable(answers_digest):
        inputs["policy"] = answers_digest(program.id)
    return inputs


@dataclass
class RunHooks:
    """What the caller of `evaluate_programs` keeps and steers: the store samples are
    committed to and resumed from (and the splits they are stored under), a callback per
    finished sample, the events that stop the run (`stop`: start no new sample; `abort`:
    also drop what the running ones finish), and a list that collects notes (stored samples
    judged again, and why)."""

    store: ResultStore | None = None
    splits: dict[str, str] | None = None
    on_result: Callable[[SampleOutcome], None] | None = None
    stop: threading.Event | None = None
    abort: threading.Event | None = None
    notes: list[str] | None = None


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
    measure: MeasureOptions | None = None,
    fresh_inputs: FreshInputs | None = None,
    hooks: RunHooks | None = None,
) -> list[SampleOutcome]:
    """Judge `samples` candidates per program; results come back in program order.

    `fresh_inputs` is how inputs are drawn (fresh.py): one secret seed for the whole evaluation
    unless given, each sample's draws labelled by its program and number, and recorded in
    its verdict so that it can be drawn again.

    `measure` defaults to no measurement (correctness only). With a store (`hooks`), samples it
    already holds (finished, not infra errors) are not judged again when they were judged
    under the same inputs (`sample_inputs`: program and tests, toolchain, measurement
    settings): they are loaded and returned with `resumed=True`. Stored samples whose inputs
    changed are judged again, and `notes` says how many and why. Every newly finished
    sample is committed at once. Setting `stop` (Ctrl-C) stops starting new samples; the
    running ones finish and are stored, the rest are left for a rerun; setting `abort` also
    drops what the running ones finish (their processes were killed under them). A store
    that cannot be written (disk full, read-only) stops the run the same way and its
    StoreError is raised once the running samples are done.

    Wide because an evaluation's settings (samples, jobs, limits, progress, measurement, fresh
    inputs) are independent keywords with defaults; what the caller keeps and steers is already
    one object (RunHooks)."""
    hooks = hooks or RunHooks()
    store, notes = hooks.store, hooks.notes
    options = measure or MeasureOptions(mode=MeasureMode.NONE)
    if options.mode == MeasureMode.TIME and options.lock is None:
        options.lock = default_core_lock()
    valgrind = None
    if options.mode == MeasureMode.INSTRUCTIONS:
        from asmopt.measure.valgrind import Valgrind

        valgrind = Valgrind.locate()
    if store is not None:
        record_unfit(store, programs)
    fresh = fresh_inputs if fresh_inputs is not None else FreshInputs()
    inputs = {p.id: sample_inputs(p, toolchain, options, policy, fresh) for p in programs}
    done = _resumable(store, programs, inputs, samples, notes)
    todo = {p.id: [i for i in range(samples) if (p.id, i) not in done] for p in programs}
    sink = _Sink(store, inputs, hooks.on_result, hooks.abort)
    sink.results.update(
        {k: o for o in (store.load_outcomes() if store else []) if (k := o.key) in done}
    )
    stop = hooks.stop or threading.Event()

    def job(p: Program) -> _ProgramJob:
        return _ProgramJob(p, policy, toolchain, sandbox, limits, options, sink, store,
                           (hooks.splits or {}).get(p.id), valgrind, stop, fresh)  # fmt: skip

    total = sum(len(v) for v in todo.values())
    with sink.progress_bar(f"eval {policy.name}", total, progress):
        # Builds and correctness runs stay off the timing cores (worker threads inherit it).
        timed = options.mode == MeasureMode.TIME and options.lock is not None
        placement = general_affinity(options.lock.layout) if timed else contextlib.nullcontext()
        with placement:
            _judge_all([job(p) for p in programs if todo[p.id]], todo, jobs, stop, sink)
    results = sink.results
    return [results[(p.id, i)] for p in programs for i in range(samples) if (p.id, i) in results]


def _resumable(
    store: ResultStore | None,
    programs: Sequence[Program],
    inputs: dict[str, dict[str, str]],
    samples: int,
    notes: list[str] | None,
) -> set[tuple[str, int]]:
    """The stored samples that can be reused: finished, and judged under today's inputs.
    Those whose inputs changed are listed in `notes` (or logged), grouped by what changed."""
    done: set[tuple[str, int]] = set()
    if store is None:
        return done
    stale: dict[str, list[str]] = {}
    for (pid, i), stored_inputs in store.finished_inputs().items():
        if pid not in inputs or i >= samples:
            continue
        if stored_inputs == inputs[pid]:
            done.add((pid, i))
            continue
        changed = [k for k in inputs[pid] if stored_inputs.get(k) != inputs[pid][k]]
        why = (
            ", ".join(_INPUT_NAMES[k] for k in changed)
            if stored_inputs
            else "stored without input hashes by an older asmopt"
        )
        stale.setdefault(why, []).append(pid)
    for why, pids in sorted(stale.items()):
        names = sorted(set(pids))
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        message = (
            f"re-evaluating {len(pids)} stored sample(s) of {shown}: {why} since they were judged"
        )
        if notes is not None:
            notes.append(message)
        else:
            log.warning(message)
    return done


class _Sink:
    """Where finished samples go: the store (committed at once), the caller's callback, the
    results by (program, sample), and the progress bar. Called from worker threads."""

    def __init__(
        self,
        store: ResultStore | None,
        inputs: dict[str, dict[str, str]],
        on_result: Callable[[SampleOutcome], None] | None,
        abort: threading.Event | None,
    ) -> None:
        self.store, self.inputs, self.on_result, self.abort = store, inputs, on_result, abort
        self.results: dict[tuple[str, int], SampleOutcome] = {}
        self._lock = threading.Lock()
        self._bar: Any = None

    @contextlib.contextmanager
    def progress_bar(self, desc: str, total: int, shown: bool) -> Iterator[None]:
        self._bar = tqdm(total=total, desc=desc, unit="sample", disable=not shown or total == 0,
                         leave=False, dynamic_ncols=True)  # fmt: skip
        try:
            yield
        finally:
            self._bar.close()

    def __call__(self, outcome: SampleOutcome) -> None:
        if self.abort is not None and self.abort.is_set():
            return  # its processes were killed under it: the verdict is not the answer's
        if self.store is not None:
            self.store.record(outcome, self.inputs.get(outcome.program_id))
        with self._lock:
            self.results[outcome.key] = outcome
            if self.on_result is not None:
                self.on_result(outcome)
            if self._bar is not None:
                self._bar.update(1)


def _judge_all(
    jobs_: list[_ProgramJob],
    todo: dict[str, list[int]],
    jobs: int,
    stop: threading.Event,
    sink: _Sink,
) -> None:
    """Judge every program's samples, `jobs` programs at a time. A StoreError or a
    PolicyError (a problem the user fixes: a full disk, a request the model server refuses,
    a prompt over the model's context) stops the run, raised once the running programs
    finish; any other exception is a bug of ours, recorded as a grader infra_error for each
    of the program's samples not yet stored."""
    fatal: list[BaseException] = []
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = {pool.submit(_judge_program, job, todo[job.program.id]): job.program
                   for job in jobs_}  # fmt: skip
        for fut in completed(futures):
            program = futures[fut]
            if fut.cancelled():
                continue
            try:
                fut.result()
            except (StoreError, PolicyError) as exc:  # stop, report once
                if not fatal:
                    fatal.append(exc)
                stop.set()
            except Exception as exc:  # a bug of ours: record it, never drop the sample
                log.error("evaluation of %s raised: %s", program.id, traceback.format_exc())
                why = f"grader error: {type(exc).__name__}: {exc}"
                for i in todo[program.id]:
                    if (program.id, i) not in sink.results and not stop.is_set():
                        sink(SampleOutcome.infra_error(program.id, i, why))
            if stop.is_set():
                for other in futures:
                    other.cancel()
    finally:
        # Queued programs are cancelled; running ones see `stop` and end after their sample.
        pool.shutdown(wait=True, cancel_futures=True)
    if fatal:
        raise fatal[0]
