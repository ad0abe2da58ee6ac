"""Score batches of (program, completion) pairs: extraction, build, tests, timing, reward.

RL spends most of its wall time here, so the service is built around four rules:

* Correctness runs go in parallel (worker processes or Ray tasks); timing is serialised
  per core by the measurement engine's core lock, which works across processes.
* A candidate's time is the candidate's (reward/deadline.py): a reward's check stops at
  the first failing test, and a run killed at its limit is the candidate's `timeout`, with
  its penalty. Each sample's deadline is computed from its own limits (its builds, every
  run of its check to its wall limit, its timing budget, with a margin), so no honest or
  sleeping candidate reaches it; a `deadline_s` set by hand bounds each task, and the
  candidate's runs get a share of it, cut in the worker, so the worker returns the
  candidate's `timeout` itself.
* Every task of a sample (its check, its timing) has a hard deadline, a last resort: the
  process pool (pebble's) ends a worker whose task runs past it and starts a fresh one, Ray
  kills and replaces its worker, and threads, which cannot be killed, are left behind with
  their pool. So one degenerate candidate never stalls a batch. Such a hit is the
  candidate's `timeout` where its worker was in the candidate's own build or runs and a
  known-good program runs fine right after, else ours. Every task has a directory of its
  own, removed however the task ends, so a killed worker leaves no run directory behind.
* A failure of ours (sandbox down, grader raised, deadline hit in our own work while the
  machine was overloaded) gives `reward=None`: the sample is excluded, never scored 0.

A batch that holds a program unfit for reward is refused with `UnfitProgramError` naming
it, before anything is built: a program without an input generator or with a tabulable
class (an answer can be known in advance: docs/sandbox.md), or one whose tests accept a
trivial or mutated program (docs/adequacy.md). Paying a reward there teaches a policy to
exploit it. `allow_unfit=True` scores them anyway, and every such score says why in
`ScoreResult.unfit`. `score_one`, the one-sample path, applies the same rule.

`score_one` is a plain top-level function of picklable arguments, so the same code runs
in-process, in a process pool and as a Ray task.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import logging
import math
import multiprocessing as mp
import os
import sys
import time
import traceback
import typing
from collections.abc import Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

import pebble

from asmopt import typed_config
from asmopt.adequacy import UnfitProgramError, is_reward_fit, require_fit
from asmopt.errors import InputError
from asmopt.fresh import DEFAULT_PER_CLASS, FreshInputs
from asmopt.judge import Verdict
from asmopt.measure.timing import TimingConfig
from asmopt.policies.prompts import EditFormat, check_edit_format
from asmopt.programs.model import Program
from asmopt.reward.deadline import (
    SampleDeadline,
    TaskDirs,
    check_budget,
    deadline_verdict,
    limits_of,
    run_limits,
    run_task,
    sample_deadline,
)
from asmopt.reward.functions import RewardInput, get_reward
from asmopt.sandbox.records import Limits
from asmopt.typed_config import check_arguments, check_fields, show

log = logging.getLogger(__name__)

MAX_COMPLETION_BYTES = 1 << 20  # a completion longer than this is a degenerate generation


# A reward times for a decision, an eval for a report. A reward must know whether an answer
# is faster, not, or slower (and a real speedup's size to the reward's resolution), and it
# is paid for on every RL step; an eval reports a number a person reads, +-2% on every test.
# So the reward times with fewer pairs (60, not 200) and half the time per test (10 s, not
# 20 s), and with the "decision" precision: a test stops as soon as that is settled
# (TimingConfig.precision); "target" times every test to the target as `asmopt eval` does.
REWARD_TIMING = TimingConfig(
    target_half_width=0.02, max_pairs=60, budget_s=10.0, precision="decision"
)

# The flat spellings ScoreConfig had for four of its timing settings, and their names now.
_FLAT_TIMING_KEYS = {
    "timing_target_half_width": "timing.target_half_width",
    "timing_max_pairs": "timing.max_pairs",
    "timing_budget_s": "timing.budget_s",
    "timing_precision": "timing.precision",
}
# The old flat spelling of the fresh-input settings, refused naming the new one.
_FLAT_FRESH_KEYS = {
    "drawn_per_class": "fresh_inputs.per_class",
    "fresh_timed": "fresh_inputs.timed",
    "seed": "fresh_inputs.seed",
}


@dataclass(frozen=True)
class ScoreConfig:
    """Everything that decides a score; shipped to workers with each batch.

    From a mapping (a YAML section, verl's reward_kwargs, keyword options) build it with
    `ScoreConfig.from_options`, which names a misspelt or retired key."""

    reward: str = "robust"
    reward_options: dict[str, Any] = field(default_factory=dict)
    measure: Literal["time", "instructions", "none"] = "time"
    # How answers are timed (measure="time"): REWARD_TIMING unless given. A mapping of
    # TimingConfig fields (`{"budget_s": 20}`) changes those fields of REWARD_TIMING. Under
    # the "decision" precision the reward's one decision point is 1.0 (`decision_points`
    # is not used): PIE's 1.10 %Opt threshold is a report's decision (`asmopt eval`), and a
    # test sitting at 1.10 would otherwise run to its round limit for a decision no reward
    # makes.
    timing: TimingConfig = REWARD_TIMING
    extract: bool = True  # completions are raw model text (else: assembly already)
    # The answer's form, named as prompt templates name it (PromptTemplate.edit_format):
    # `assembly`, a whole assembly file; `diff`, a unified diff against the baseline
    # assembly (the `diff` template), applied before the build; one that does not apply is
    # an extraction_error naming the hunk.
    edit_format: EditFormat = "assembly"
    # Seconds each of a sample's two tasks (its check: build and tests; its timing, waiting
    # for a timing core included) may run before the service ends it (its worker replaced).
    # None: computed from the sample's own limits (reward/deadline.py: its builds, every run
    # of its check to its wall limit, its timing budget, with a margin), so that no honest
    # or sleeping candidate reaches it. Set by hand it is an upper bound on each task; the
    # candidate's own runs then get a share of it, enforced in the worker, so a candidate
    # that runs past its share gets its `timeout` (a verdict and its penalty), and only a
    # hit on our side's time is excluded as infra_error.
    deadline_s: float | None = None
    # The per-run limits of the candidate's runs (a mapping of Limits fields changes those
    # of the defaults): None, the sandbox's (20 s wall, 10 s CPU a run).
    limits: Limits | None = None
    # A speedup whose 98% interval contains 1 is reported to the reward as exactly 1.0: the
    # measurement cannot tell it from the baseline, so no reward (design 1 and 2 included)
    # may pay for it. The raw estimate stays in `raw_speedup`.
    snap_insignificant: bool = True
    # Time answers that are copies of the baseline (A/A checks of the instrument only).
    time_copies: bool = False
    max_completion_bytes: int = MAX_COMPLETION_BYTES
    # Fresh inputs (fresh.py), one FreshInputs as everywhere (a mapping of its fields
    # changes those of the default): drawn inputs per size class in the correctness check
    # (`per_class`), whether timed pairs run on fresh inputs (`timed`). Each sample draws
    # from a secret input seed of its own unless `seed` fixes one (to replay a score
    # exactly; never in training).
    fresh_inputs: FreshInputs = field(
        default_factory=lambda: FreshInputs(seed=None, per_class=DEFAULT_PER_CLASS)
    )
    # Score programs unfit for reward (adequacy.is_reward_fit: no input generator, a
    # tabulable class, inadequate tests) instead of refusing them. Every such score says
    # so in `ScoreResult.unfit`: a reward from them may pay a memorised answer.
    allow_unfit: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.timing, Mapping):
            object.__setattr__(self, "timing", reward_timing(self.timing))
        elif not isinstance(self.timing, TimingConfig):
            raise InputError(
                "ScoreConfig.timing: expected a TimingConfig or a mapping of its fields, got "
                f"{show(self.timing)}"
            )
        if isinstance(self.limits, Mapping):
            object.__setattr__(self, "limits", limits_of(self.limits))
        elif self.limits is not None and not isinstance(self.limits, Limits):
            raise InputError(
                "ScoreConfig.limits: expected Limits or a mapping of its fields, got "
                f"{show(self.limits)}"
            )
        if isinstance(self.fresh_inputs, Mapping):
            fresh = FreshInputs.from_mapping(self.fresh_inputs, "fresh_inputs")
            object.__setattr__(self, "fresh_inputs", fresh)
        elif not isinstance(self.fresh_inputs, FreshInputs):
            raise InputError(
                "ScoreConfig.fresh_inputs: expected FreshInputs or a mapping of its fields "
                f"(seed, per_class, timed), got {show(self.fresh_inputs)}"
            )
        check_edit_format(self.edit_format)  # first: it names a retired spelling's new name
        check_fields(self, {"max_completion_bytes": (1, None)})
        get_reward(self.reward, **self.reward_options)  # fail now, not in a worker
        check_edit_format(self.edit_format)
        if self.measure not in ("time", "instructions", "none"):
            raise InputError(f"measure must be time, instructions or none, got {self.measure!r}")
        if self.deadline_s is not None and not self.deadline_s > 0:
            raise InputError("deadline_s must be positive (or None: computed per sample)")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> ScoreConfig:
        """The config a mapping of its fields describes, `timing` a nested mapping. A key
        of the old flat timing spelling is refused naming the new one (`timing_budget_s:
        use timing.budget_s`), any other unknown key naming the nearest field."""
        names = [f.name for f in fields(cls)]
        for key in options:
            if key in _FLAT_TIMING_KEYS:
                raise InputError(
                    f"{key}: use {_FLAT_TIMING_KEYS[key]} (the timing settings are one "
                    "nested mapping, `timing:`, of TimingConfig fields)"
                )
            if key in _FLAT_FRESH_KEYS:
                raise InputError(
                    f"{key}: use {_FLAT_FRESH_KEYS[key]} (the fresh-input settings are one "
                    "nested mapping, `fresh_inputs:`, of seed, per_class and timed)"
                )
            if key not in names:
                raise typed_config.unknown_key(key, names, "ScoreConfig setting")
        return cls(**options)

    def to_dict(self) -> dict[str, Any]:
        """Plain values only (JSON), `timing` as a mapping of its fields."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["reward_options"] = dict(self.reward_options)
        out["timing"] = self.timing.to_dict()
        out["limits"] = asdict(self.limits) if self.limits is not None else None
        out["fresh_inputs"] = self.fresh_inputs.to_dict()
        return out


def reward_timing(settings: Mapping[str, Any]) -> TimingConfig:
    """REWARD_TIMING with the fields `settings` names changed (`timing: {budget_s: 20}` in a
    config). Every key must be a TimingConfig field and every value of its type
    (typed_config), so a misspelt key or a mistyped value fails here, naming `timing.KEY`."""
    hints = typing.get_type_hints(TimingConfig)
    names = [f.name for f in fields(TimingConfig)]
    values = {}
    for key, value in settings.items():
        if key == "spread":
            raise InputError(
                "timing.spread: the between-sandbox spread is this machine's measurement; a "
                "SandboxSpread can be given in Python only (TimingConfig(spread=...))"
            )
        if key not in names:
            raise typed_config.unknown_key(key, names, "timing setting", "timing")
        values[key] = typed_config.coerce(f"timing.{key}", value, hints[key])
    try:
        return replace(REWARD_TIMING, **values)
    except ValueError as exc:
        raise InputError(f"timing: {exc}") from None


@dataclass
class ScoreResult:
    """A reward plus everything needed to understand it."""

    reward: float | None
    verdict: Verdict
    message: str = ""
    passed: int = 0
    total: int = 0
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    raw_speedup: float | None = None
    # The geometric mean over tests with its own interval (the eval headline's statistic).
    geomean_speedup: float | None = None
    geomean_low: float | None = None
    geomean_high: float | None = None
    is_copy: bool = False
    identical: bool = False
    seconds: float = 0.0
    # How this score's inputs were drawn (seed, per class, fixed_inputs): to replay it;
    # for a person, never for a policy.
    grading: dict[str, Any] | None = None
    # What a policy may be told about this score (policies/feedback.py: the verdict, the
    # failing test's name and size class, the kind of difference; never a byte of data).
    # `message` is a person's and may quote test data.
    feedback: str = ""
    # Seconds from the start of the service's batch until this score was final (None
    # outside a batch): where a batch's wall time went.
    batch_finish_s: float | None = None
    # Where this score's time went: `check_s` (extraction, build and correctness runs, on
    # the general cores), and for a timed answer `timing_s` (the timing core's seconds
    # charged to it), `waited_s` (waiting for a timing core), `timed_runs` and `stopped`
    # (why its tests stopped, counted). For throughput accounting, never for a policy.
    cost: dict[str, Any] = field(default_factory=dict)
    # Why the program is unfit for reward, when it was scored anyway (`allow_unfit`): such
    # a reward may pay an answer known in advance. None: the program is fit.
    unfit: str | None = None

    @property
    def excluded(self) -> bool:
        return self.reward is None

    def to_dict(self) -> dict[str, Any]:
        """The result as plain data (the verdict as its value, "pass"), as JSON writes it."""
        return {**asdict(self), "verdict": str(self.verdict)}


# ---------------------------------------------------------------------------- in a worker
_WORKER: dict[str, Any] = {}


def _worker_parts() -> tuple[Any, Any]:
    """One toolchain and sandbox per worker process (they cache and are thread-safe)."""
    if "toolchain" not in _WORKER:
        from asmopt.sandbox.runner import default_sandbox
        from asmopt.toolchain import default_toolchain

        sandbox = default_sandbox()
        sandbox.check()
        _WORKER["sandbox"] = sandbox
        _WORKER["toolchain"] = default_toolchain()
    return _WORKER["toolchain"], _WORKER["sandbox"]


def _coerce_text(completion: str | bytes) -> tuple[str | None, str]:
    if isinstance(completion, bytes):
        try:
            return completion.decode("utf-8"), ""
        except UnicodeDecodeError as exc:
            return None, f"completion is not UTF-8 (invalid byte at offset {exc.start})"
    if not isinstance(completion, str):
        return None, f"completion must be text, got {type(completion).__name__}"
    try:
        completion.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: nothing a file could hold
        return None, f"completion is not valid Unicode (lone surrogate at offset {exc.start})"
    return completion, ""


def _extract(text: str, config: ScoreConfig) -> tuple[str | None, str]:
    """The assembly (or, for `edit_format="diff"`, the diff) in the completion, or (None,
    why not). Needs neither the sandbox nor the baseline, so it runs before either: an
    answer with nothing to build is the model's `extraction_error` even when our side is
    down, never our `infra_error`."""
    from asmopt.policies.extract import extract_assembly, extract_diff

    if config.edit_format == "diff":
        diff = extract_diff(text) if config.extract else text
        return (None, "no ```diff block in the completion") if diff is None else (diff, "")
    assembly = extract_assembly(text) if config.extract else text
    return (None, "no assembly block in the completion") if assembly is None else (assembly, "")


def _answer_assembly(
    payload: str, baseline_asm: str, config: ScoreConfig
) -> tuple[str | None, str]:
    """The candidate assembly the extracted payload stands for, or (None, why not)."""
    from asmopt.policies.diff_format import DiffError, apply_unified_diff

    if config.edit_format != "diff":
        return payload, ""
    try:
        return apply_unified_diff(baseline_asm, payload), ""
    except DiffError as exc:
        return None, f"diff does not apply: {exc}"


def _reward_input(result: ScoreResult) -> RewardInput:
    return RewardInput(
        verdict=result.verdict,
        passed=result.passed,
        total=result.total,
        speedup=result.speedup,
        speedup_low=result.speedup_low,
        speedup_high=result.speedup_high,
        identical=result.identical,
        is_copy=result.is_copy,
    )


def _finish(result: ScoreResult, config: ScoreConfig, start: float) -> ScoreResult:
    reward_fn = get_reward(config.reward, **config.reward_options)
    value = reward_fn(_reward_input(result))
    if value is not None and not math.isfinite(value):
        raise InputError(f"reward {config.reward} produced a non-finite value {value}")
    result.reward = value
    result.seconds = time.monotonic() - start
    result.cost.setdefault("check_s", round(result.seconds, 4))  # nothing was timed
    return result


def score(
    program: Program,
    completion: str | bytes,
    config: ScoreConfig | None = None,
    *,
    baseline_asm: str | None = None,
    allow_unfit: bool = False,
    **options: Any,
) -> ScoreResult:
    """The reward of one model answer (raw text with an assembly fence, or with
    `extract=False` the assembly itself): the public entry point. Settings come as a typed
    `ScoreConfig`, or as its fields by keyword (`reward`, `measure`, `timing={"budget_s":
    20}`, ...), each checked by name and type (`ScoreConfig.from_options`); not both.
    Programs marked unfit are refused (UnfitProgramError) unless `allow_unfit`."""
    check_arguments(score, {"program": program, "completion": completion, "config": config,
                            "baseline_asm": baseline_asm, "allow_unfit": allow_unfit})  # fmt: skip
    if config is not None and options:
        raise InputError(
            f"give a ScoreConfig or its fields by keyword, not both (got {sorted(options)})"
        )
    config = config if config is not None else ScoreConfig.from_options(options)
    if allow_unfit and not config.allow_unfit:
        config = replace(config, allow_unfit=True)
    return score_one(program, completion, baseline_asm, config)


def fitness(program: Program, config: ScoreConfig, what: str = "reward") -> str | None:
    """Refuse `program` (UnfitProgramError naming it and why) if it is unfit for reward
    and `config` does not allow that; else why it is unfit (None: it is fit), for the
    score's record. Fixed inputs in the config itself (no drawn input in the check and
    none in the timed pairs) are as unfit as a program without a generator."""
    fit, why = is_reward_fit(program)
    if fit and not config.fresh_inputs.enabled:
        fit, why = False, (
            "fixed_inputs: the score config draws no input (fresh_inputs.per_class 0 and "
            "fresh_inputs.timed off), so a memorised answer would be paid"
        )
    if fit:
        return None
    if not config.allow_unfit:
        require_fit([program], what, False)  # raises, naming the program and why
        raise UnfitProgramError(f"refusing {what} for {program.id}: {why}")
    return why


def score_one(
    program: Program, completion: str | bytes, baseline_asm: str | None, config: ScoreConfig
) -> ScoreResult:
    """Score one completion, check and timing in one call. A program unfit for reward is
    refused (UnfitProgramError) unless `config.allow_unfit`; otherwise it never raises:
    our own failures become `infra_error`."""
    unfit = fitness(program, config)
    result, job = check_one(program, completion, baseline_asm, config)
    result = result if job is None else time_one(program, job, config)
    result.unfit = unfit
    return result


@dataclass
class TimingJob:
    """What a correct answer's timing needs from its check, shipped to whichever worker
    times it (picklable: the service may time it in another process or on another node).
    The binary is rebuilt there from `assembly` (a build-cache hit on the same machine)."""

    result: ScoreResult
    check: Any  # evaluate.CheckResult: its verdicts and how its inputs were drawn
    assembly: str
    baseline_asm: str
    copy: bool


def check_one(
    program: Program,
    completion: str | bytes,
    baseline_asm: str | None,
    config: ScoreConfig,
    task_dir: str | None = None,
) -> tuple[ScoreResult, TimingJob | None]:
    """The first half of a score: extraction, build and the correctness check. Returns the
    finished result, or, for a correct answer that is to be measured, a provisional result
    and the job `time_one` finishes. Never raises: our own failures become `infra_error`.

    The service runs every check of a batch before any timing, so an answer that needs no
    timing (most answers in RL: wrong, unbuildable, copies) is never queued behind timed
    ones, nor left out by the batch's deadline while the timing cores are busy. The check
    runs under the sample's deadline (reward/deadline.py: the candidate's runs cut to
    their share of it, so a sleeper's `timeout` comes from here, not from the service's
    kill); `task_dir` is where it reports its phase for the service."""
    start = time.monotonic()
    try:
        return _check(program, completion, baseline_asm, config, start, task_dir)
    except Exception as exc:  # the grader raised: ours, so the sample is excluded
        return _grader_error(program, exc, start), None


def time_one(
    program: Program, job: TimingJob, config: ScoreConfig, task_dir: str | None = None
) -> ScoreResult:
    """The second half of a score: time a correct answer, then its reward. Never raises.
    (`task_dir`: the service's directory for the task; a timing reports no phase, since a
    kill during it is ours: every timed run has a deadline of its own.)"""
    start = time.monotonic() - job.result.seconds  # seconds count both halves
    try:
        return _time(program, job, config, start)
    except Exception as exc:
        return _grader_error(program, exc, start)


def _grader_error(program: Program, exc: Exception, start: float) -> ScoreResult:
    log.error("scoring %s failed: %s", program.id, traceback.format_exc())
    return ScoreResult(
        reward=None,
        verdict=Verdict.INFRA_ERROR,
        message=f"grader error: {type(exc).__name__}: {exc}",
        seconds=time.monotonic() - start,
    )


def _check(
    program: Program,
    completion: str | bytes,
    baseline_asm: str | None,
    config: ScoreConfig,
    start: float,
    task_dir: str | None = None,
) -> tuple[ScoreResult, TimingJob | None]:
    from asmopt.evaluate import check_candidate
    from asmopt.measure.canonical import is_copy
    from asmopt.measure.timing import general_affinity

    total = len(program.tests)
    raw = completion if isinstance(completion, bytes) else completion.encode("utf-8", "replace")
    if len(raw) > config.max_completion_bytes:
        message = (
            f"completion is {len(raw)} bytes, over the {config.max_completion_bytes}-byte limit"
        )
        return _refused(message, total, config, start), None
    text, problem = _coerce_text(completion)
    if text is None:
        return _refused(problem, total, config, start), None
    payload, problem = _extract(text, config)
    if payload is None:
        return _refused(problem, total, config, start), None
    # From the task's start, as the service's own deadline counts (a fresh worker's set-up
    # is our work, and counts as ours).
    budget = check_budget(program, config, start, task_dir)
    budget.phase("ours")
    toolchain, sandbox = _worker_parts()
    if baseline_asm is None:
        baseline_asm = program.meta.get("baseline_asm") or toolchain.baseline_assembly(program)
    assembly, problem = _answer_assembly(payload, baseline_asm, config)
    if assembly is None:
        return _refused(problem, total, config, start), None
    identical = assembly.strip() == baseline_asm.strip()
    copy = identical or is_copy(assembly, baseline_asm)
    # Correctness runs stay off the timing cores (as in `asmopt eval`): they must not wait
    # for, or disturb, a timing, and a candidate's timed runs are judged against them.
    placement = general_affinity() if config.measure == "time" else contextlib.nullcontext()
    fresh = config.fresh_inputs.for_grading()
    with placement:
        check = check_candidate(
            program,
            assembly,
            toolchain,
            sandbox,
            config.limits,
            _stops_at(config),
            fresh=fresh,
            budget=budget,
        )
    result = ScoreResult(
        None,
        check.verdict,
        message=check.message,
        passed=check.passed,
        total=max(total, check.total),  # the fixed tests and the drawn ones
        is_copy=copy,
        identical=identical,
        grading=check.inputs.to_dict() if check.inputs is not None else None,
    )
    if not check.correct or config.measure == "none":
        return _feedback_and_finish(result, check, program, config, start), None
    job = TimingJob(result, check, assembly, baseline_asm, copy)
    if copy and not config.time_copies:  # 1.0 by rule: nothing to time, finish here
        return _measure(program, job, config, start, toolchain, sandbox), None
    result.seconds = time.monotonic() - start
    check.binary = None  # a path in this worker's cache; the timer builds its own
    return result, job


def _stops_at(config: ScoreConfig) -> bool | frozenset[Verdict]:
    """Where a reward's check stops: at the first failing test, since the verdict is the
    first failure's and the tests after it only cost time (a sleeper's each a whole wall
    limit). Design 1 pays passed/total for a wrong output, so its checks go on past a wrong
    output, and stop at any other failure (a timeout included)."""
    if config.reward == "supercoder-design1":
        return frozenset(v for v in Verdict if v.is_candidate_failure) - {Verdict.WRONG_OUTPUT}
    return True


def _refused(message: str, total: int, config: ScoreConfig, start: float) -> ScoreResult:
    """An answer with nothing to build: the model's extraction_error."""
    refused = ScoreResult(None, Verdict.EXTRACTION_ERROR, message=message, total=total)
    return _finish(refused, config, start)


def _time(program: Program, job: TimingJob, config: ScoreConfig, start: float) -> ScoreResult:
    toolchain, sandbox = _worker_parts()
    build = toolchain.assemble_and_link(job.assembly, program.ldflags)
    if not build.ok or build.output is None:  # it built for the check: ours
        job.result.verdict = Verdict.INFRA_ERROR
        job.result.message = f"rebuild for timing: {build.message}"
        return _finish(job.result, config, start)
    job.check.binary = build.output
    return _measure(program, job, config, start, toolchain, sandbox)


def _measure(
    program: Program,
    job: TimingJob,
    config: ScoreConfig,
    start: float,
    toolchain: Any,
    sandbox: Any,
) -> ScoreResult:
    """Measure a correct answer (or mark a copy 1.0 by rule), then feedback and reward."""
    from asmopt.evaluate import MeasureOptions, Measurer
    from asmopt.measure.speedup import MeasureMode, MeasureStatus

    result, check = job.result, job.check
    result.cost["check_s"] = round(result.seconds, 4)
    options = MeasureOptions(
        mode=MeasureMode(config.measure),
        timing=_timing_run(config.timing),
        time_copies=config.time_copies,
    )
    measurer = Measurer(program, job.baseline_asm, toolchain, sandbox, options, config.limits)
    measurer.measure(check, job.copy)
    result.verdict = check.verdict  # a flaky answer can fail during timing
    result.message = check.message
    result.passed = check.passed
    sp = check.speedup
    if sp is not None and sp.tests:
        result.cost.update(_timing_cost(sp.tests))
    if sp is not None and sp.status == MeasureStatus.INFRA_ERROR:
        result.verdict, result.message = Verdict.INFRA_ERROR, f"measurement: {sp.message}"
    elif sp is not None and sp.has_ratio:
        # The reference's s is the arithmetic mean of per-test ratios, reported with
        # the interval of that same statistic; the geometric mean keeps its own.
        result.speedup = sp.mean_ratio
        result.speedup_low, result.speedup_high = sp.mean_low, sp.mean_high
        result.raw_speedup = result.speedup
        result.geomean_speedup = sp.ratio
        result.geomean_low, result.geomean_high = sp.low, sp.high
        if config.snap_insignificant and sp.mean_low <= 1.0 <= sp.mean_high:
            result.speedup = 1.0
    elif job.copy:
        result.speedup, result.speedup_low, result.speedup_high = 1.0, 1.0, 1.0
        result.geomean_speedup, result.geomean_low, result.geomean_high = 1.0, 1.0, 1.0
    return _feedback_and_finish(result, check, program, config, start)


def _timing_run(timing: TimingConfig) -> TimingConfig:
    """The timing a reward runs: under the decision precision its one decision point is 1.0
    (faster / not / slower; see ScoreConfig.timing)."""
    if timing.precision == "decision":
        return replace(timing, decision_points=(1.0,))
    return timing


def _timing_cost(tests: Sequence[Any]) -> dict[str, Any]:
    """What timing an answer's tests cost (their records' context), summed."""
    from asmopt.measure.speedup import MeasureStatus

    stopped: dict[str, int] = {}
    for t in tests:
        why = t.context.get("stopped")
        if why:
            stopped[why] = stopped.get(why, 0) + 1
    return {
        "timing_s": round(sum(float(t.context.get("seconds", 0.0)) for t in tests), 4),
        "waited_s": round(sum(float(t.context.get("waited_s", 0.0)) for t in tests), 4),
        "timed_runs": round(sum(float(t.context.get("charged_runs", 0.0)) for t in tests), 3),
        "stopped": stopped,
        "tests": len(tests),
        "tests_faster": sum(t.status == MeasureStatus.MEASURED and t.low > 1.0 for t in tests),
        "tests_slower": sum(t.status == MeasureStatus.MEASURED and t.high < 1.0 for t in tests),
        # Per test: its baseline run length, pairs and rounds, why it stopped, its ratio and
        # per-pair noise: what a cost bench sets against the pairs the noise requires.
        "per_test": [_test_cost(t) for t in tests if t.status == MeasureStatus.MEASURED],
    }


def _test_cost(test: Any) -> dict[str, Any]:
    """One measured test's row of `per_test` (see _timing_cost)."""
    sd = test.pair_sd
    return {
        "test": test.test,
        "base_ms": round(test.base_mean * 1e3, 4) if test.base_mean else None,
        "pairs": test.n,
        "rounds": test.context.get("rounds"),
        "stopped": test.context.get("stopped"),
        "ratio": test.ratio,
        "low": test.low,
        "high": test.high,
        "pair_sd": None if sd is None else round(sd, 6),
    }


def _feedback_and_finish(
    result: ScoreResult, check: Any, program: Program, config: ScoreConfig, start: float
) -> ScoreResult:
    from asmopt.policies.feedback import check_feedback

    result.feedback = check_feedback(
        check,
        program,
        speedup=result.speedup,
        low=result.speedup_low,
        high=result.speedup_high,
        is_copy=result.is_copy,
    )
    return _finish(result, config, start)


# ---------------------------------------------------------------------------- the service
def unguarded_main_script() -> str | None:
    """The running script's path if spawned workers would re-run its top-level code.

    A `spawn` worker starts by importing the parent's `__main__` file. A training script
    written without `if __name__ == "__main__":` (as TRL's quick-start snippets are) then
    builds its trainer again inside every worker, which dies trying to start processes of
    its own: every sample becomes an excluded infra_error and nothing is learned. Returns
    None for guarded scripts and for `python -c`, notebooks and REPLs (nothing to re-run),
    and when the file cannot be read or parsed (no evidence of a problem)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if not path or name == "__main__" or name.endswith(".__main__"):
        return None  # multiprocessing never re-runs a package's __main__.py
    try:
        tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)  # noqa: SIM115
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            names = [node.test.left, *node.test.comparators]
            if any(isinstance(n, ast.Name) and n.id == "__name__" for n in names) and any(
                isinstance(n, ast.Constant) and n.value == "__main__" for n in names
            ):
                return None
    return str(path)


def _ray_init(ray: Any, address: str | None, timeout_s: float) -> None:
    """`ray.init`, but a clear error instead of a silent hang.

    ray.init has no timeout of its own, and it must run on the caller's thread (Ray's
    driver loses its GCS connection when initialised from another thread). So: an explicit
    address is first probed with a plain TCP connection (nothing listening is an error at
    once, naming the address); then ray.init runs under a SIGALRM timer of `timeout_s`
    when called from the main thread (elsewhere no timer can be set, and it runs as is)."""
    import signal
    import socket
    import threading

    if address and address not in ("auto", "local"):
        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), min(timeout_s, 10)).close()
        except (OSError, ValueError) as exc:
            raise RuntimeError(
                f"no Ray cluster answers at {address!r} ({exc}); check the address "
                "(`ray status` on the head node) or use ray_address=None for a local instance"
            ) from None
    where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
    # The timer borrows SIGALRM only while the host has no handler of its own on it (a host
    # program owns its signals; with one installed, ray.init runs without the timeout).
    timed = (
        threading.current_thread() is threading.main_thread()
        and hasattr(signal, "setitimer")
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
    )

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, expire) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        ray.init(
            address=address,
            ignore_reinit_error=True,
            include_dashboard=False,
            log_to_driver=False,
        )
    except TimeoutError:
        with contextlib.suppress(Exception):
            ray.shutdown()
        raise RuntimeError(
            f"ray.init did not finish within {timeout_s:g}s starting or joining {where}; "
            "check the machine's load and /tmp space, or raise ray_init_timeout_s"
            + _ray_auth_hint(address)
        ) from None
    except ConnectionError as exc:
        raise RuntimeError(f"could not join {where}: {exc}" + _ray_auth_hint(address)) from None
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _ray_auth_hint(address: str | None) -> str:
    """Why joining a cluster that answers can still fail: a cluster started with token
    authentication refuses every driver that does not use it too, and Ray then reports only
    a failure to connect (its reason goes to the C++ log, not to the exception)."""
    if not address or address == "local" or os.environ.get("RAY_AUTH_MODE") == "token":
        return ""
    return (
        "; if the cluster was started with token authentication (RAY_AUTH_MODE=token), "
        "this process needs RAY_AUTH_MODE=token as well, and the cluster's token in "
        "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"
    )


@dataclass
class ScoreRequest:
    program: Program
    completion: str | bytes
    baseline_asm: str | None = None


class RewardService:
    """Score batches with a local process pool (default), threads, or Ray.

    The process pool is pebble's `ProcessPool`: it holds every task to the deadline and
    replaces a worker it had to end, which concurrent.futures' pool has no public way to
    do. It spawns fresh interpreters, which re-run the parent's script: from a script
    without an `if __name__ == "__main__":` guard the service logs a warning naming it
    and uses threads instead (`self.backend` says which is in use). Threads are a safe
    stand-in because the heavy work (gcc, the sandboxed runs, timing) happens in child
    processes either way; what they lose is the watchdog's ability to kill a stuck worker.

    `backend="ray"` connects with `ray.init(address=ray_address)` (None starts a local
    instance; an address where no cluster answers, or a start that takes longer than
    `ray_init_timeout_s`, is a RuntimeError, not a hang); every request becomes one Ray
    task. Programs marked unfit are refused (`UnfitProgramError`) unless `allow_unfit`."""

    def __init__(
        self,
        config: ScoreConfig | None = None,
        *,
        workers: int = 2,
        backend: Literal["process", "thread", "ray"] = "process",
        ray_address: str | None = None,
        ray_init_timeout_s: float = 120.0,
        allow_unfit: bool = False,
    ) -> None:
        if workers < 1:
            raise InputError("workers must be at least 1")
        if backend not in ("process", "thread", "ray"):
            raise InputError(f"backend must be process, thread or ray, got {backend!r}")
        self.config = config or ScoreConfig()
        if allow_unfit and not self.config.allow_unfit:
            self.config = replace(self.config, allow_unfit=True)
        self.workers = workers
        self.backend = backend
        if backend == "process":
            script = unguarded_main_script()
            if script is not None:
                log.warning(
                    '%s has no `if __name__ == "__main__":` guard, so spawned reward '
                    "workers would re-run it and die; scoring with threads instead. Put the "
                    "script's training code under the guard to use worker processes.",
                    script,
                )
                self.backend = "thread"
        self.ray_address = ray_address
        self.ray_init_timeout_s = ray_init_timeout_s
        self.allow_unfit = self.config.allow_unfit
        self._pool: cf.ThreadPoolExecutor | pebble.ProcessPool | None = None
        self._ray_fn: Any = None
        # Every task's directory (its progress; on processes and Ray its temporary files).
        self._tasks = TaskDirs()
        # `deadline_hits`: tasks the service ended at their deadline (a last resort: the
        # candidate's own time is bounded in the worker; reward/deadline.py);
        # `pool_restarts`: batches in which the watchdog replaced workers (or the whole
        # pool) for them.
        self.stats = {
            "batches": 0,
            "samples": 0,
            "excluded": 0,
            "deadline_hits": 0,
            "pool_restarts": 0,
        }

    # ------------------------------------------------------------------ pools
    def _submit(self, fn: Any, deadline_s: float, task_dir: str, *args: Any) -> cf.Future[Any]:
        """Queue `fn(*args, task_dir=task_dir)` on the pool (started on first use). On the
        process pool the task has `deadline_s` from the moment a worker takes it: past
        that, pebble ends the worker (its sandbox dies with it), starts a fresh one, and
        the future raises TimeoutError. Its temporary files go in `task_dir` (run_task)."""
        if self._pool is None:
            if self.backend == "thread":
                self._pool = cf.ThreadPoolExecutor(max_workers=self.workers)
            else:
                # spawn: a fresh interpreter, no inherited threads or locks from the caller
                self._pool = pebble.ProcessPool(
                    max_workers=self.workers, context=mp.get_context("spawn")
                )
        if isinstance(self._pool, pebble.ProcessPool):
            return self._pool.schedule(
                run_task, args=(fn, task_dir, True, args), timeout=deadline_s
            )
        return self._pool.submit(run_task, fn, task_dir, False, args)

    def _stall_s(self, longest_s: float) -> float:
        """How long a batch waits for any task to finish before it gives up on the rest
        (`longest_s`: the longest deadline of its tasks). Threads cannot be killed, so for
        them this is the watchdog itself (see `_score_pool`); the process pool ends a stuck
        task at its deadline, so there it is a backstop for a pool that runs nothing at all
        (a worker restart takes seconds)."""
        if self.backend == "thread":
            return longest_s
        return 2 * longest_s + 60.0

    def _end_pool(self, *, wait_for_threads: bool) -> None:
        """Stop the pool; the next batch starts a fresh one. pebble's `stop` ends every
        worker process (and with it any sandbox it runs); threads cannot be killed, so a
        stuck one is left to end alone unless `wait_for_threads`."""
        pool, self._pool = self._pool, None
        if isinstance(pool, pebble.ProcessPool):
            pool.stop()
            pool.join()
        elif pool is not None:
            pool.shutdown(wait=wait_for_threads, cancel_futures=True)

    def _ray(self) -> Any:
        if self._ray_fn is None:
            try:
                import ray
            except ImportError as exc:
                raise RuntimeError(
                    f"the ray back-end needs ray (pip install 'asmopt[rl]'): {exc}"
                ) from None
            if not ray.is_initialized():
                _ray_init(ray, self.ray_address, self.ray_init_timeout_s)
            self._ray_fn = ray.remote(num_cpus=1)(run_task)
        return self._ray_fn

    def close(self) -> None:
        """End the workers. Between batches they are idle (every task of a batch has ended
        by the time it returns), so nothing is cut short; then remove the tasks' root."""
        self._end_pool(wait_for_threads=True)
        self._tasks.close()

    def __enter__(self) -> RewardService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ scoring
    def _deadline_result(self, req: ScoreRequest, task: _Task) -> ScoreResult:
        """The result of a task the service ended at its deadline (a last resort: the
        worker bounds the candidate's own time itself). The candidate's `timeout`, with its
        penalty, where the task was in the candidate's own build or runs and a known-good
        program runs fine right after (reward/deadline.py); else our infra_error."""
        self.stats["deadline_hits"] += 1
        verdict = Verdict.INFRA_ERROR
        why = "during its timing (waiting for a timing core included): excluded, the machine "
        why += "may be overloaded"
        if task.kind == "check":
            verdict, why = deadline_verdict(task.task_dir, self._known_good)
        result = ScoreResult(
            reward=None,
            verdict=verdict,
            total=len(req.program.tests),
            message=f"scoring exceeded the {task.deadline_s:g}s deadline {why}",
            seconds=task.deadline_s,
        )
        if verdict == Verdict.INFRA_ERROR:
            return result
        from asmopt.evaluate import CheckResult
        from asmopt.policies.feedback import check_feedback

        check = CheckResult(req.program.id, verdict, result.message)
        result.feedback = check_feedback(check, req.program)
        return _finish(result, self.config, time.monotonic() - task.deadline_s)

    def _known_good(self) -> str | None:
        """The known-good probe in a fresh sandbox, under the samples' own limits: None
        when it runs fine (Sandbox.self_test)."""
        from asmopt.sandbox.runner import default_sandbox

        return default_sandbox().self_test(run_limits(self.config))

    def score_batch(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        """One result per request, in order; never raises for a bad candidate.

        Raises UnfitProgramError (nothing scored) when a request's program is unfit for
        reward (`fitness`) and the service was not made with `allow_unfit=True`."""
        if not requests:
            return []
        programs = {id(r.program): r.program for r in requests}
        require_fit(programs.values(), "reward", self.allow_unfit)
        unfit = {key: fitness(program, self.config) for key, program in programs.items()}
        if self.backend == "ray":
            results = self._score_ray(requests)
        else:
            results = self._score_pool(requests)
        for req, result in zip(requests, results, strict=True):
            result.unfit = unfit[id(req.program)]
        self.stats["batches"] += 1
        self.stats["samples"] += len(results)
        self.stats["excluded"] += sum(r.reward is None for r in results)
        assert len(results) == len(requests)
        return results

    def _score_pool(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        """Checks first, then timings; every task bounded by its deadline.

        Every request's check is queued before any timing, and a correct answer's timing
        is queued when its check ends, so answers that need no timing are never behind
        timed ones. Each task has its sample's deadline (reward/deadline.py); on the
        process pool a task that runs past it is ended by pebble (its worker replaced) and
        judged by `_deadline_result`, so a batch with a stuck sample ends after the real
        work plus at most one deadline.

        Threads cannot be killed, so the thread back-end waits for progress instead: a task
        starts only when a worker frees up (at the batch's start or when another task
        finishes), so when nothing has finished for the longest deadline, every task still
        running has run past its own. Those (and any not started) are judged by
        `_deadline_result` and the pool is replaced. The Ray back-end waits the same way.
        Every task's directory is removed when it ends, however it ends."""
        began = time.monotonic()
        deadlines = [sample_deadline(r.program, self.config, self.workers) for r in requests]
        owner: dict[cf.Future[Any], _Task] = {}
        for i, r in enumerate(requests):
            task = _Task(i, "check", deadlines[i].check_s, self._tasks.new())
            args = (r.program, r.completion, r.baseline_asm, self.config)
            owner[self._submit(check_one, task.deadline_s, task.task_dir, *args)] = task
        results: list[ScoreResult | None] = [None] * len(requests)
        faults: set[str] = set()
        stale: list[str] = []
        pending = set(owner)
        while pending:
            done, pending = cf.wait(
                pending, timeout=self._stall_s(_longest(deadlines)), return_when=cf.FIRST_COMPLETED
            )
            if not done:  # threads: every running task is past its deadline; processes: a
                # pool that runs nothing. Either way the pool is replaced.
                for fut in pending:
                    task = owner[fut]
                    results[task.index] = self._deadline_result(requests[task.index], task)
                    stale.append(task.task_dir)
                faults |= {"deadline", "broken"}
                break
            for fut in done:
                task = owner.pop(fut)
                result, job, fault = self._outcome(fut, requests[task.index], task)
                self._tasks.remove(task.task_dir)
                if job is not None:
                    timing, result, fault = self._queue_timing(requests, task.index, job, deadlines)
                    if timing is not None:
                        owner[timing[0]] = timing[1]
                        pending.add(timing[0])
                        continue
                faults.add(fault)
                results[task.index] = self._done(result, began)
        self._after_faults(faults)
        for task_dir in stale:  # after the pool's end: no worker writes there any more
            self._tasks.remove(task_dir)
        return [r for r in results if r is not None]

    def _queue_timing(
        self,
        requests: Sequence[ScoreRequest],
        i: int,
        job: TimingJob,
        deadlines: Sequence[SampleDeadline],
    ) -> tuple[tuple[cf.Future[Any], _Task] | None, ScoreResult, str]:
        """Queue a correct answer's timing: (its future and task, its provisional result,
        ""), or where the pool broke under it, (None, the sample's infra_error, "broken")."""
        task = _Task(i, "time", deadlines[i].time_s, self._tasks.new())
        try:
            fut = self._submit(
                time_one, task.deadline_s, task.task_dir, requests[i].program, job, self.config
            )
        except Exception as exc:  # the pool broke under it: ours, excluded
            self._tasks.remove(task.task_dir)
            return None, self._worker_failed(requests[i], "worker failed", exc), "broken"
        return (fut, task), job.result, ""

    def _outcome(
        self, fut: cf.Future[Any], req: ScoreRequest, task: _Task
    ) -> tuple[ScoreResult, TimingJob | None, str]:
        """A finished task's result and timing job, and what went wrong with our side if
        anything: "deadline" (pebble ended the task past its deadline and replaced its
        worker), "broken" (the pool can run nothing more), else ""."""
        try:
            result, job = _as_outcome(fut.result())
        except cf.TimeoutError:
            return self._deadline_result(req, task), None, "deadline"
        except Exception as exc:  # a worker died (killed, out of memory): ours, excluded
            broken = isinstance(exc, BrokenProcessPool)
            return self._worker_failed(req, "worker failed", exc), None, "broken" if broken else ""
        return result, job, ""

    def _after_faults(self, faults: set[str]) -> None:
        """A batch in which the watchdog replaced workers counts as a pool restart; a
        pool that can run nothing more is replaced for the next batch."""
        if "deadline" in faults:
            self.stats["pool_restarts"] += 1
        if "broken" in faults:
            self._end_pool(wait_for_threads=False)

    def _score_ray(self, requests: Sequence[ScoreRequest]) -> list[ScoreResult]:
        """As `_score_pool`, with one Ray task per check and per timing (each in its task's
        directory, which the service removes; on another node than this one, a killed
        worker's directory there is left)."""
        import ray

        run = self._ray()
        began = time.monotonic()
        deadlines = [sample_deadline(r.program, self.config, self.workers) for r in requests]
        owner: dict[Any, _Task] = {}
        for i, r in enumerate(requests):
            task = _Task(i, "check", deadlines[i].check_s, self._tasks.new())
            args = (r.program, r.completion, r.baseline_asm, self.config)
            owner[run.remote(check_one, task.task_dir, True, args)] = task
        results: list[ScoreResult | None] = [None] * len(requests)
        pending = list(owner)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=_longest(deadlines))
            if not ready:  # a stall: every running task is past its deadline
                break
            for ref in ready:
                task = owner.pop(ref)
                i = task.index
                self._tasks.remove(task.task_dir)
                try:
                    result, job = _as_outcome(ray.get(ref))
                except Exception as exc:
                    results[i] = self._done(
                        self._worker_failed(requests[i], "ray task failed", exc), began
                    )
                    continue
                if job is None:
                    results[i] = self._done(result, began)
                else:
                    timing = _Task(i, "time", deadlines[i].time_s, self._tasks.new())
                    args = (requests[i].program, job, self.config)
                    ref = run.remote(time_one, timing.task_dir, True, args)
                    owner[ref] = timing
                    pending.append(ref)
        for ref in pending:
            ray.cancel(ref, force=True)  # Ray kills the worker and starts a fresh one
            task = owner[ref]
            results[task.index] = self._deadline_result(requests[task.index], task)
            self._tasks.remove(task.task_dir)
        return [r for r in results if r is not None]

    @staticmethod
    def _worker_failed(req: ScoreRequest, what: str, exc: Exception) -> ScoreResult:
        return ScoreResult(
            reward=None,
            verdict=Verdict.INFRA_ERROR,
            total=len(req.program.tests),
            message=f"{what}: {type(exc).__name__}: {exc}",
        )

    @staticmethod
    def _done(result: ScoreResult, began: float) -> ScoreResult:
        result.batch_finish_s = time.monotonic() - began
        return result


@dataclass(frozen=True)
class _Task:
    """One queued task of a batch: its request's index, which half of the score it is,
    its deadline and its directory (TaskDirs)."""

    index: int
    kind: Literal["check", "time"]
    deadline_s: float
    task_dir: str


def _longest(deadlines: Sequence[SampleDeadline]) -> float:
    """The longest deadline of a batch's tasks: how long the thread and Ray back-ends wait
    for progress before they give up on every task still running."""
    return max(max(d.check_s, d.time_s) for d in deadlines)


def _as_outcome(out: Any) -> tuple[ScoreResult, TimingJob | None]:
    """A check task returns (result, job or None); a timing task returns the result."""
    return out if isinstance(out, tuple) else (out, None)
