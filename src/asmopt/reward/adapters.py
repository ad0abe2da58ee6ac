"""Plug the reward into RL frameworks without changing them.

* verl: `compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`
  reads SuperCoder-schema rows (the verl parquet that `asmopt data export` writes) and
  returns a dict with "score" plus diagnostics, every one a number or a string (verl
  averages them). Called with `data_sources=, solution_strs=, ground_truths=,
  extra_infos=` (verl's `BatchRewardManager`) it scores the batch concurrently and returns
  one such dict per answer. verl has no way to drop a sample, so an excluded sample scores 0.0 with
  `excluded: 1.0` in its diagnostics. It needs only plain `asmopt` (no extras), so it runs
  inside verl's own environment (docs/training.md).
* TRL: `TRLReward` has TRL's reward-function signature `(prompts, completions, **columns)`
  and returns one float per completion, or None to exclude a sample (TRL's convention).

Neither hands a trainer a person's message: the result's `message` quotes test inputs,
expected outputs and what the candidate printed, so verl's diagnostics carry `feedback`
(policies/feedback.py: verdict, test name, kind of difference, speedup; no value the
candidate chose) in its place, with speedups at two significant digits and no run time, and
TRL's `last_feedback` holds the same text (`last_results` keeps the full results, for a
person).

Both assert one finite reward (or None) per candidate and can be dry-called at start-up
(`dry_run`) so a signature or configuration mismatch fails before any training step. Both
refuse programs marked unfit (docs/adequacy.md) unless given `allow_unfit=True`.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from typing import Any

from asmopt.errors import InputError
from asmopt.judge import Verdict
from asmopt.policies.feedback import coarse_speedup, message_feedback
from asmopt.programs.model import Program
from asmopt.reward.service import RewardService, ScoreConfig, ScoreRequest, ScoreResult

_services: dict[tuple[Any, ...], RewardService] = {}
_lock = threading.Lock()


def _service(
    config: ScoreConfig, workers: int, backend: str, allow_unfit: bool = False
) -> RewardService:
    key = (repr(config), workers, backend, allow_unfit)
    with _lock:
        if key not in _services:
            _services[key] = RewardService(
                config,
                workers=workers,
                backend=backend,  # type: ignore[arg-type]
                allow_unfit=allow_unfit,
            )
        return _services[key]


def _check_rewards(values: Sequence[float | None], n: int) -> None:
    if len(values) != n:
        raise AssertionError(f"reward returned {len(values)} values for {n} candidates")
    for v in values:
        if v is not None and not math.isfinite(v):
            raise AssertionError(f"reward returned a non-finite value {v}")


# ---------------------------------------------------------------------------- verl
def program_from_row(
    extra_info: dict[str, Any], ground_truth: str | None = None, data_source: Any = None
) -> Program:
    """A SuperCoder-schema row (its extra_info) as a Program with the given baseline."""
    from asmopt.programs.rows import row_to_program

    row = {
        "extra_info": extra_info,
        "data_source": data_source,
        "reward_model": {"style": "rule", "ground_truth": ground_truth},
    }
    program, _ = row_to_program(row, 0, "verl row", "row", "train")
    return program


def compute_score(
    data_source: Any = None,
    solution_str: str | None = None,
    ground_truth: str | None = None,
    extra_info: dict[str, Any] | None = None,
    *,
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[str] | None = None,
    ground_truths: Sequence[str | None] | None = None,
    extra_infos: Sequence[dict[str, Any] | None] | None = None,
    **kwargs: Any,
) -> dict[str, Any] | list[dict[str, Any]]:
    """verl's reward plug-in, in both of the forms verl's reward managers call.

    * One answer (`data_source, solution_str, ground_truth, extra_info`): verl's reward
      loop managers (`naive`, `dapo`, `limited`, ...) and the legacy `NaiveRewardManager`
      call it so, one sample at a time; the result is one dict.
    * A batch (`data_sources=, solution_strs=, ground_truths=, extra_infos=`, all by
      keyword): the legacy `BatchRewardManager` calls it so, once for the whole batch; the
      result is one dict per answer, in order, each the dict the one-answer form returns
      for that answer. The batch goes to the scoring service in one `score_batch`, so its
      answers are scored concurrently (`workers` of them at a time) instead of in turn.

    kwargs (verl's `reward_kwargs`) may set `reward`, `measure`, `workers`, `backend`,
    `allow_unfit` and any ScoreConfig field (`timing` a nested mapping of TimingConfig
    fields); they apply to every answer of a batch."""
    batch = (data_sources, solution_strs, ground_truths, extra_infos)
    single = (data_source, solution_str, ground_truth, extra_info)
    if all(v is None for v in batch):
        if solution_str is None:
            raise TypeError(
                "compute_score takes (data_source, solution_str, ground_truth, extra_info) "
                "for one answer, or data_sources=, solution_strs=, ground_truths=, "
                "extra_infos= for a batch"
            )
        [out] = _score_verl([single], kwargs)
        return out
    if any(v is not None for v in single):
        raise TypeError("compute_score got both a single answer and a batch: pass one form")
    if solution_strs is None or extra_infos is None:
        raise TypeError("compute_score's batch form needs solution_strs= and extra_infos=")
    n = len(solution_strs)
    sources = [None] * n if data_sources is None else list(data_sources)
    truths = [None] * n if ground_truths is None else list(ground_truths)
    infos = list(extra_infos)
    if not len(sources) == len(truths) == len(infos) == n:
        raise InputError(
            f"compute_score's batch form got {len(sources)} data_sources, {n} solution_strs, "
            f"{len(truths)} ground_truths and {len(infos)} extra_infos: one each per answer"
        )
    return _score_verl(list(zip(sources, solution_strs, truths, infos, strict=True)), kwargs)


def _score_verl(
    items: list[tuple[Any, str | None, str | None, Any]], kwargs: dict[str, Any]
) -> list[dict[str, Any]]:
    """Score (data_source, solution_str, ground_truth, extra_info) items in one batch of
    the shared service, as verl's dicts."""
    results, programs = _score_rows(items, kwargs)
    return [_verl_dict(r, p) for r, p in zip(results, programs, strict=True)]


def _score_rows(
    items: list[tuple[Any, str | None, str | None, Any]], kwargs: dict[str, Any]
) -> tuple[list[ScoreResult], list[Program]]:
    """The results (with a person's messages) and programs of one batch: every row is read
    (and a bad one refused, naming its position) before anything is scored."""
    options = dict(kwargs)
    workers = int(options.pop("workers", 1))
    backend = str(options.pop("backend", "thread"))
    allow_unfit = bool(options.pop("allow_unfit", False))
    config = ScoreConfig.from_options(options)
    programs, requests = [], []
    for i, (source, solution, truth, extra) in enumerate(items):
        if not isinstance(extra, dict):
            where = "" if len(items) == 1 else f" (answer {i} of the batch)"
            raise InputError(
                f"compute_score needs the row's extra_info (c_code, inputs, outputs){where}; "
                "use a parquet written by `asmopt data export --format verl-parquet`"
            )
        if not isinstance(solution, str):
            raise TypeError(f"solution_str must be a string, got {type(solution).__name__}")
        program = program_from_row(extra, truth, source)
        programs.append(program)
        requests.append(ScoreRequest(program, solution, truth))
    results = _service(config, workers, backend, allow_unfit).score_batch(requests)
    _check_rewards([r.reward for r in results], len(requests))
    return results, programs


def policy_feedback(result: ScoreResult, program: Program) -> str:
    """The text a trainer (and through it a policy) may see about a scored answer: the
    service's own (built from the per-test records), or, for a result without one (an
    extraction error, an excluded sample), rebuilt from the message's fixed phrases."""
    if result.feedback:
        return result.feedback
    return message_feedback(
        result.verdict,
        result.message,
        program,
        speedup=result.speedup,
        low=result.speedup_low,
        high=result.speedup_high,
        is_copy=result.is_copy,
    )


# The speedups among the fields verl is given (VERL_SPEEDUPS), given at the precision
# feedback gives them (coarse_speedup): the score pays the speedup itself, and a finer
# number would widen the channel a candidate opens by modulating its own run time.
_SPEEDUP_FIELDS = (
    "speedup",
    "speedup_low",
    "speedup_high",
    "raw_speedup",
    "geomean_speedup",
    "geomean_low",
    "geomean_high",
)
# The result fields verl is given: the verdict, counts, flags and speedups, none of which
# holds test data. Not `message` (it quotes inputs and outputs: `feedback` replaces it),
# `grading` (the secret seed the inputs were drawn from), `seconds` (how long the answer ran
# is the candidate's to choose, a channel for bits of its input: policies/feedback.py), nor
# any field not listed.
VERL_FIELDS = ("verdict", "passed", "total", *_SPEEDUP_FIELDS, "is_copy", "identical")
VERL_SPEEDUPS = frozenset(_SPEEDUP_FIELDS)


def _verl_dict(result: ScoreResult, program: Program) -> dict[str, Any]:
    """The score and its diagnostics with a number (or a string) for every key, every time.

    verl copies every key into `reward_extra_info`, stacks each key over the batch and
    averages it (`process_validation_metrics`, the trainer's metrics): a None or a missing
    key breaks that, and a bool breaks a tensor mean. So flags are 0.0/1.0, and a speedup
    that was not measured (a failure, an untimed copy, `measure="none"`) is -1.0, a value
    no ratio can take; `timed` (1.0/0.0) says which samples carry a measured speedup.
    verl logs these values and can put them in front of a model, so only the fields in
    `VERL_FIELDS` are copied: the result's message (a person's, quoting test data) is
    replaced by `feedback`, and a field added to the result later (how its inputs were
    drawn, say) stays out until it is listed here. Speedups come at two significant digits
    (`VERL_SPEEDUPS`, policies/feedback.py), so a candidate's run time writes no finer
    number than the score already pays."""
    out: dict[str, Any] = {
        "score": 0.0 if result.reward is None else float(result.reward),
        "excluded": float(result.reward is None),
        "timed": float(result.raw_speedup is not None),
        # 1.0 where the program is unfit for reward and was scored under allow_unfit.
        "unfit": float(result.unfit is not None),
    }
    fields = result.to_dict()
    for key in VERL_FIELDS:
        value = fields.get(key)
        if value is None:  # every optional field listed is an unmeasured ratio
            out[key] = -1.0
        elif isinstance(value, bool):
            out[key] = float(value)
        elif key in VERL_SPEEDUPS:
            out[key] = coarse_speedup(float(value))
        else:
            out[key] = value
    out["feedback"] = policy_feedback(result, program)
    # 1.0: the row brought no input generator, so every input of this score was one a
    # candidate could know in advance (a memorised answer would have been paid).
    out["fixed_inputs"] = float(program.fixed_inputs)
    return out


# ---------------------------------------------------------------------------- TRL
class TRLReward:
    """A TRL reward function backed by the reward service.

    Rows name their program by `program_id` (looked up in `suite`, default the built-in
    suite) or carry SuperCoder columns (`extra_info`, optional `reward_model`). Programs
    marked unfit are refused unless `allow_unfit`."""

    def __init__(
        self,
        config: ScoreConfig | None = None,
        *,
        suite: str | None = None,
        workers: int = 2,
        backend: str = "process",
        allow_unfit: bool = False,
    ) -> None:
        self.__name__ = f"asmopt_{(config or ScoreConfig()).reward.replace('-', '_')}"
        self.config = config or ScoreConfig()
        self.suite_path = suite
        self._suite: Any = None
        self.service = RewardService(
            self.config,
            workers=workers,
            backend=backend,  # type: ignore[arg-type]
            allow_unfit=allow_unfit,
        )
        # The last batch's full results (their messages quote test data: for a person) and
        # the feedback on each that a trainer or policy may see.
        self.last_results: list[ScoreResult] = []
        self.last_feedback: list[str] = []

    def _program(self, i: int, columns: dict[str, Any]) -> tuple[Program, str | None]:
        if "program_id" in columns:
            if self._suite is None:
                from asmopt.programs import load_builtin_suite, load_suite

                self._suite = (
                    load_suite(self.suite_path) if self.suite_path else load_builtin_suite()
                )
            return self._suite.get(columns["program_id"][i]), None
        if "extra_info" in columns:
            truth = None
            if "reward_model" in columns and isinstance(columns["reward_model"][i], dict):
                truth = columns["reward_model"][i].get("ground_truth")
            return program_from_row(columns["extra_info"][i], truth), truth
        raise InputError(
            "TRLReward needs a 'program_id' or 'extra_info' dataset column; "
            f"got columns {sorted(columns)}"
        )

    @staticmethod
    def _text(completion: Any) -> str:
        if isinstance(completion, str):
            return completion
        if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
            return str(completion[-1].get("content", ""))  # conversational format
        return str(completion)

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        requests = []
        for i, completion in enumerate(completions):
            program, truth = self._program(i, columns)
            requests.append(ScoreRequest(program, self._text(completion), truth))
        self.last_results = self.service.score_batch(requests)
        values = [r.reward for r in self.last_results]
        _check_rewards(values, len(completions))
        self.last_feedback = [
            policy_feedback(r, q.program) for r, q in zip(self.last_results, requests, strict=True)
        ]
        log_extra = columns.get("log_extra")
        if callable(log_extra):
            log_extra("verdict", [str(r.verdict) for r in self.last_results])  # plain text
        log_metric = columns.get("log_metric")
        if callable(log_metric):
            for verdict in {r.verdict for r in self.last_results}:
                share = sum(r.verdict == verdict for r in self.last_results) / len(values)
                log_metric(f"asmopt/{verdict}", share)
        return values

    def dry_run(self, program_id: str | None = None) -> ScoreResult:
        """Score one real answer before training: the -O3 baseline of `program_id` (default:
        the suite's first program fit for reward), written as the configured answer form
        asks, through extraction, the build and the sandboxed tests. Anything but `pass`
        (the sandbox cannot run, the toolchain is missing, a configuration the service
        refuses) raises here, so a trainer fails at start-up instead of excluding or
        penalising every sample of its first steps. Returns the result (a copy: not timed)."""
        if program_id is not None:
            program, truth = self._program(0, {"program_id": [program_id]})
        else:
            program, truth = self._dry_run_program(), None
        baseline = truth or _baseline_of(program)
        answer = baseline_answer(baseline, self.config.edit_format)
        self(prompts=["dry run"], completions=[answer], program_id=[program.id])
        result = self.last_results[0]
        require_dry_run_pass(result.verdict, result.message, f"the -O3 baseline of {program.id}")
        return result

    def _dry_run_program(self) -> Program:
        from asmopt.adequacy import is_reward_fit
        from asmopt.programs import load_builtin_suite, load_suite

        if self._suite is None:
            self._suite = load_suite(self.suite_path) if self.suite_path else load_builtin_suite()
        programs = self._suite.select()
        fit = [p for p in programs if p.tests and is_reward_fit(p)[0]]
        if fit:
            return fit[0]
        if self.service.allow_unfit and programs:
            return programs[0]
        raise InputError(
            f"suite {self._suite.name!r} has no program fit for reward to dry-run the reward "
            "on (docs/adequacy.md); pass allow_unfit to score unfit ones"
        )

    def close(self) -> None:
        self.service.close()


def baseline_answer(baseline: str, edit_format: str = "assembly") -> str:
    """An answer that stands for the -O3 baseline itself, in `edit_format`: the assembly in
    one fenced block, or a diff whose one hunk keeps the first line (changes nothing). A dry
    run scores it: it must build and pass every test, so only our side can fail it."""
    if edit_format == "diff":
        first = baseline.splitlines()[0] if baseline.strip() else ""
        return f"```diff\n@@ -1,1 +1,1 @@\n {first}\n```"
    return f"```assembly\n{baseline.rstrip()}\n```"


def _baseline_of(program: Program) -> str:
    given = program.meta.get("baseline_asm")
    if isinstance(given, str) and given.strip():
        return given
    from asmopt.toolchain import default_toolchain

    return default_toolchain().baseline_assembly(program)


def require_dry_run_pass(verdict: Verdict, message: str, what: str) -> None:
    """A dry run's real answer must pass; anything else stops the job before it starts,
    naming what failed (our `infra_error`: the sandbox or toolchain cannot run here)."""
    if verdict == Verdict.PASS:
        return
    from asmopt.errors import EnvironmentProblem

    hint = (
        " (our side failed: check bubblewrap and gcc with `asmopt doctor`)"
        if verdict == Verdict.INFRA_ERROR
        else ""
    )
    raise EnvironmentProblem(
        f"reward dry run: {what} scored {verdict}, not pass{hint}: {message[:500]}"
    )


def first_parquet_row(path: str) -> dict[str, Any]:
    """The first row of a verl parquet file (pyarrow, which verl's environment has), as
    verl's dataset hands it to the reward: `extra_info`, `reward_model`, `data_source`."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading a parquet file needs pyarrow") from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot read the parquet file ({exc})") from None
    if table.num_rows == 0:
        raise InputError(f"{path}: no rows")
    row: dict[str, Any] = table.slice(0, 1).to_pylist()[0]
    return row


def dry_run_verl(row: Any = None, **reward_kwargs: Any) -> dict[str, Any]:
    """Score a real answer, the -O3 baseline of a row, through the sandbox with
    compute_score in both forms verl's reward managers use (one answer; a batch), before
    training starts: a reward that cannot be imported, batched or scored, or a sandbox
    that cannot run, fails here (EnvironmentProblem naming the verdict), not as excluded
    samples after the first rollout. `row` is a SuperCoder-schema row (a dict with
    `extra_info`, `reward_model`, `data_source`) or the path of a verl parquet file whose
    first row is used (`run_ppo.sh` passes the training file); without one, the built-in
    suite's first program as `asmopt data export` writes it. Returns the one-answer
    result."""
    if row is None:
        row = _builtin_row()
    elif isinstance(row, str | os.PathLike):
        row = first_parquet_row(str(row))
    extra = dict(row.get("extra_info") or {})
    truth = (row.get("reward_model") or {}).get("ground_truth") or extra.get("unoptimized_assembly")
    if not isinstance(truth, str) or not truth.strip():
        raise InputError("dry run: the row has no -O3 assembly (reward_model.ground_truth)")
    source = row.get("data_source", "asmopt/dry-run")
    answer = baseline_answer(truth, reward_kwargs.get("edit_format", "assembly"))
    out = compute_score(source, answer, truth, extra, **reward_kwargs)
    if not isinstance(out, dict) or "score" not in out:
        raise AssertionError("compute_score returned no 'score'")
    if out.get("verdict") != Verdict.PASS:  # once more for a person's message (verl's has none)
        [result], _ = _score_rows([(source, answer, truth, extra)], dict(reward_kwargs))
        where = f"the -O3 baseline of row {extra.get('program_id', extra.get('index', 0))}"
        require_dry_run_pass(result.verdict, result.message, where)
    batch = compute_score(
        data_sources=[source],
        solution_strs=[answer],
        ground_truths=[truth],
        extra_infos=[dict(extra)],
        **reward_kwargs,
    )
    if not isinstance(batch, list) or [b.get("verdict") for b in batch] != [out["verdict"]]:
        raise AssertionError(f"compute_score's batch form returned {batch!r} for one answer")
    return out


def _builtin_row() -> dict[str, Any]:
    """The built-in suite's first program fit for reward, as a verl row (the fields the
    reward reads), with its -O3 baseline from the sandboxed toolchain."""
    from asmopt.adequacy import is_reward_fit
    from asmopt.programs import load_builtin_suite
    from asmopt.programs.rows import INPUTS_SPEC_FIELD, PROGRAM_ID_FIELD, row_inputs_spec

    # A row's C code must stand alone (the export inlines headers and -D flags; here a
    # program that needs neither is taken).
    program = next(
        p
        for p in load_builtin_suite().select()
        if is_reward_fit(p)[0] and not p.headers and not p.cflags and p.tests
    )
    baseline = _baseline_of(program)
    extra = {
        "split": "train",
        "index": 0,
        "c_code": program.source,
        "inputs": [t.stdin.decode() for t in program.tests],
        "outputs": [t.expected_stdout.decode() for t in program.tests],
        "unoptimized_assembly": baseline,
        PROGRAM_ID_FIELD: program.id,
        INPUTS_SPEC_FIELD: row_inputs_spec(program),
    }
    return {
        "data_source": "asmopt/builtin",
        "extra_info": extra,
        "reward_model": {"style": "rule", "ground_truth": baseline},
    }


def make_execution_reward(
    suite: str | None = None,
    workers: int = 2,
    backend: str = "process",
    allow_unfit: bool = False,
    **score_options: Any,
) -> TRLReward:
    """Factory for the trainers' reward registry (`reward: execution` in a config): the
    other options are ScoreConfig fields (`timing` a nested mapping, ScoreConfig.from_options);
    `allow_unfit` lets it score programs marked unfit (reward_options.allow_unfit)."""
    reward = TRLReward(
        ScoreConfig.from_options(score_options),
        suite=suite,
        workers=workers,
        backend=backend,
        allow_unfit=allow_unfit,
    )
    reward.dry_run()
    return reward
