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
import hashlib
import json
import logging
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from asmopt.best_of_n import best_of_n_metrics
from asmopt.entropy import DRAWS as ENTROPY_DRAWS
from asmopt.entropy import EntropyReport, measure_entropy
from asmopt.errors import InputError
from asmopt.evaluate import (
    CheckResult,
    MeasureOptions,
    Measurer,
    SampleOutcome,
    check_binary,
    check_candidate,
)
from asmopt.fresh import FreshInputs, draw_inputs, expected_tests
from asmopt.judge import Verdict
from asmopt.measure.canonical import canonical_statements, content_hash
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup
from asmopt.measure.timing import (
    CoreLock,
    TimingCancelled,
    TimingConfig,
    default_core_lock,
    general_affinity,
)
from asmopt.metrics import compute_metrics, verdict_rates
from asmopt.parallel import completed, parallel_map
from asmopt.policies.base import Candidate, Policy, PolicyRequest
from asmopt.policies.factory import PolicySpec, make_policy
from asmopt.policies.llm import PolicyError
from asmopt.programs.model import Program, Suite
from asmopt.sandbox import live as live_processes
from asmopt.sandbox.runner import Limits, Sandbox, default_sandbox
from asmopt.store import RunLock, StoreError
from asmopt.toolchain import Toolchain, ToolchainError, default_toolchain
from asmopt.typed_config import check_fields

if TYPE_CHECKING:
    from asmopt.measure.timing.cores import CoreLayout
    from asmopt.measure.valgrind import Valgrind
    from asmopt.store import ResultStore

log = logging.getLogger(__name__)

# Run metadata key: program id -> why its tests are inadequate (see record_unfit).
UNFIT_META_KEY = "unfit_programs"


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
    stop: threading.Event | None = None,
    abort: threading.Event | None = None,
    notes: list[str] | None = None,
    fresh_inputs: FreshInputs | None = None,
) -> list[SampleOutcome]:
    """Judge `samples` candidates per program; results come back in program order.

    `fresh_inputs` is how inputs are drawn (fresh.py): one secret seed for the whole evaluation
    unless given, each sample's draws labelled by its program and number, and recorded in
    its verdict so that it can be drawn again.

    `measure` defaults to no measurement (correctness only). With a `store`, samples it
    already holds (finished, not infra errors) are not judged again when they were judged
    under the same inputs (`sample_inputs`: program and tests, toolchain, measurement
    settings): they are loaded and returned with `resumed=True`. Stored samples whose inputs
    changed are judged again, and `notes` says how many and why. Every newly finished
    sample is committed at once. Setting `stop` (Ctrl-C) stops starting new samples; the
    running ones finish and are stored, the rest are left for a rerun; setting `abort` also
    drops what the running ones finish (their processes were killed under them). A store
    that cannot be written (disk full, read-only) stops the run the same way and its
    StoreError is raised once the running samples are done."""
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
    sink = _Sink(store, inputs, on_result, abort)
    sink.results.update(
        {k: o for o in (store.load_outcomes() if store else []) if (k := o.key) in done}
    )
    stop = stop or threading.Event()

    def job(p: Program) -> _ProgramJob:
        return _ProgramJob(p, policy, toolchain, sandbox, limits, options, sink, store,
                           (splits or {}).get(p.id), valgrind, stop, fresh)  # fmt: skip

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
    # The -O0 build judged on drawn inputs against the -O3 build's outputs (None: the
    # program has fixed inputs only), and how many draws the -O3 build did not accept.
    drawn: CheckResult | None = None
    refused: int = 0
    # Both entropy measures of every timed class (asmopt.entropy); None: not measured
    # (fixed inputs only, or a build failed).
    entropy: EntropyReport | None = None

    @property
    def tabulable(self) -> list[str]:
        """Why a table of answers could pass this program's gradings (empty: none can)."""
        return self.entropy.problems() if self.entropy is not None else []

    @property
    def ok(self) -> bool:
        agree = self.drawn is None or (self.drawn.correct and self.refused == 0)
        return self.o0.correct and self.o3.correct and agree


# Draws per size class at `suite verify`: the baseline's output is the expected output of
# every drawn input later, so -O0 and -O3 must agree on many of them first.
VERIFY_DRAWS = 8


def verify_programs(
    programs: Iterable[Program],
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int = 2,
    progress: bool = True,
    limits: Limits | None = None,
    entropy_draws: int = ENTROPY_DRAWS,
) -> list[VerifyOutcome]:
    """Rebuild each program at -O0 and -O3 and check both pass every test, that both
    agree on drawn inputs, and (with `entropy_draws` > 0) that no answer of a timed class
    can be precomputed: declared entropy, distinct outputs over `entropy_draws` draws,
    every field changing the output (asmopt.entropy)."""
    programs = list(programs)

    def one(program: Program) -> VerifyOutcome:
        checks = []
        binaries = []
        for flags in (("-O0",), ("-O3",)):
            build = toolchain.compile_binary(program, flags)
            if not build.ok or build.output is None:
                verdict = Verdict.INFRA_ERROR if build.stage == "infra" else Verdict.ASSEMBLE_ERROR
                checks.append(CheckResult(program.id, verdict, f"gcc {flags[0]}: {build.message}"))
                binaries.append(None)
            else:
                checks.append(check_binary(program, build.output, sandbox, limits))
                binaries.append(build.output)
        outcome = VerifyOutcome(program.id, checks[0], checks[1])
        if program.inputs is not None and all(b is not None for b in binaries):
            outcome.drawn, outcome.refused = _verify_drawn(
                program, binaries[0], binaries[1], sandbox, limits
            )
            if entropy_draws > 0:
                outcome.entropy = measure_entropy(
                    program, toolchain, sandbox, draws=entropy_draws, limits=limits
                )
        return outcome

    return parallel_map(one, programs, jobs=jobs, desc="verify", progress=progress)


def _verify_drawn(
    program: Program, o0: Any, o3: Any, sandbox: Sandbox, limits: Limits | None
) -> tuple[CheckResult, int]:
    """The -O0 build on VERIFY_DRAWS inputs per class, judged by the -O3 build's outputs
    (the baseline's outputs are what every drawn input is judged by later)."""
    fresh = FreshInputs(per_class=VERIFY_DRAWS)
    drawn = draw_inputs(program, fresh, "verify")
    inputs = [(how["class"], test.stdin) for test, how in drawn]
    tests = expected_tests(program, o3, sandbox, inputs, limits)
    refused = len(inputs) - len(tests)
    result = check_binary(program, o0, sandbox, limits, tests=tests)
    if refused:
        result.message = f"the -O3 build refused {refused} of {len(inputs)} drawn inputs; " + (
            result.message
        )
    return result, refused


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
                store=store,
                splits=job.suite.splits,
                stop=interrupt.stop,
                abort=interrupt.cancel,
                notes=notes,
                fresh_inputs=config.fresh_inputs,
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
