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
import threading
from collections.abc import Sequence
from typing import Any

from asmopt.errors import InputError
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
    the shared service: every row is read (and a bad one refused, naming its position)
    before anything is scored."""
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
    return [_verl_dict(r, p) for r, p in zip(results, programs, strict=True)]


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


# The result fields verl is given: the verdict, counts, flags and speedups, none of which
# holds test data. Not `message` (it quotes inputs and outputs: `feedback` replaces it),
# `grading` (the secret seed the inputs were drawn from), `seconds` (how long the answer ran
# is the candidate's to choose, a channel for bits of its input: policies/feedback.py), nor
# any field not listed.
VERL_FIELDS = (
    "verdict",
    "passed",
    "total",
    "speedup",
    "speedup_low",
    "speedup_high",
    "raw_speedup",
    "geomean_speedup",
    "geomean_low",
    "geomean_high",
    "is_copy",
    "identical",
)
# The speedups among them, given at the precision feedback gives them (coarse_speedup): the
# score pays the speedup itself, and a finer number would widen the channel a candidate
# opens by modulating its own run time.
VERL_SPEEDUPS = frozenset(
    {
        "speedup",
        "speedup_low",
        "speedup_high",
        "raw_speedup",
        "geomean_speedup",
        "geomean_low",
        "geomean_high",
    }
)


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
            log_extra("verdict", [r.verdict for r in self.last_results])
        log_metric = columns.get("log_metric")
        if callable(log_metric):
            for verdict in {r.verdict for r in self.last_results}:
                share = sum(r.verdict == verdict for r in self.last_results) / len(values)
                log_metric(f"asmopt/{verdict}", share)
        return values

    def dry_run(self, program_id: str | None = None) -> None:
        """Call once with a known-bad completion: proves the plumbing before training."""
        columns: dict[str, Any] = {}
        if program_id is not None:
            columns["program_id"] = [program_id]
        else:
            from asmopt.programs import load_builtin_suite, load_suite

            suite = load_suite(self.suite_path) if self.suite_path else load_builtin_suite()
            columns["program_id"] = [suite.select()[0].id]
        values = self(prompts=["dry run"], completions=["no assembly here"], **columns)
        if values[0] is None:
            raise RuntimeError(f"reward dry run was excluded: {self.last_results[0].message}")

    def close(self) -> None:
        self.service.close()


def dry_run_verl(**reward_kwargs: Any) -> dict[str, Any]:
    """Call compute_score on a tiny built-in row, in both forms verl's reward managers use
    (one answer; a batch), before training starts: a reward that cannot be imported,
    scored or batched fails here, not after the first rollout. Returns the one-answer
    result."""
    program = Program(id="dry", source="int main(void){return 0;}\n", tests=())
    extra = {
        "c_code": program.source,
        "inputs": [""],
        "outputs": [""],
        "split": "train",
        "index": 0,
    }
    out = compute_score("asmopt/dry-run", "no assembly", "\t.text\n", extra, **reward_kwargs)
    if not isinstance(out, dict) or "score" not in out:
        raise AssertionError("compute_score returned no 'score'")
    batch = compute_score(
        data_sources=["asmopt/dry-run"],
        solution_strs=["no assembly"],
        ground_truths=["\t.text\n"],
        extra_infos=[dict(extra)],
        **reward_kwargs,
    )
    if not isinstance(batch, list) or [b.get("score") for b in batch] != [out["score"]]:
        raise AssertionError(f"compute_score's batch form returned {batch!r} for one answer")
    return out


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
