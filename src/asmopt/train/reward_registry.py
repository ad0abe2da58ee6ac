"""Reward functions for the trainers, chosen by name in the config.

A reward function has the TRL signature

    reward_fn(prompts: list[str], completions: list[str], **columns) -> list[float | None]

`prompts` are the rendered prompt texts the policy saw, `completions` the decoded answers,
and `columns` every other field of the data rows, one list each (e.g. `program_id`). `None`
means "exclude this sample" (our infrastructure failed); it is never turned into a 0.

If the function also accepts `log_extra` and/or `log_metric` keyword arguments (or any
`**kwargs`), it is handed two callbacks, as in TRL: `log_extra(column, values)` attaches one
value per sample (the trainer reports the share of each value of a `verdict` column, and the
build and pass rates when those values are sandbox verdicts), and `log_metric(name, value)`
logs a scalar.

The registry maps names to factories `factory(**reward_options) -> reward_fn`. A factory is
given either as a callable or as a `"module:attribute"` string that is imported only when the
reward is used, so registering a reward that needs the sandbox costs nothing elsewhere.
A config may also name a factory directly as `module:attribute`.

    from asmopt.train.reward_registry import register_reward
    register_reward("my-reward", "mypackage.rewards:make_reward")
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from asmopt.errors import InputError, did_you_mean

RewardFn = Callable[..., Sequence[float | None]]
RewardFactory = Callable[..., RewardFn]

_REGISTRY: dict[str, RewardFactory | str] = {
    "text-task": "asmopt.train.reward_registry:TextTaskReward",
    # The sandboxed execution reward (build, tests, timing); options are ScoreConfig fields
    # (`timing` a nested mapping of TimingConfig fields) plus suite / workers / backend.
    "execution": "asmopt.reward.adapters:make_execution_reward",
}


def register_reward(name: str, factory: RewardFactory | str, *, replace: bool = False) -> None:
    """Make `name` usable as `reward:` in a config. `factory(**reward_options)` builds it."""
    if not name or ":" in name:
        raise InputError(f"reward names are non-empty and contain no ':', got {name!r}")
    if name in _REGISTRY and not replace and _REGISTRY[name] != factory:
        raise InputError(f"reward {name!r} is already registered (pass replace=True)")
    if isinstance(factory, str) and ":" not in factory:
        raise InputError(f"a lazy factory is 'module:attribute', got {factory!r}")
    _REGISTRY[name] = factory


def available_rewards() -> list[str]:
    return sorted(_REGISTRY)


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"cannot import reward factory {target!r}: {exc}") from None
    return obj


def make_reward(name: str, options: dict[str, Any] | None = None) -> RewardFn:
    """The reward function for a registered name or a `module:attribute` factory."""
    if name in _REGISTRY:
        entry = _REGISTRY[name]
        factory = _import(entry) if isinstance(entry, str) else entry
    elif ":" in name:
        factory = _import(name)
    else:
        raise InputError(
            f"unknown reward {name!r}{did_you_mean(name, _REGISTRY)} (available: "
            f"{', '.join(available_rewards())}, or give module:attribute)"
        )
    fn = factory(**(options or {}))
    if not callable(fn):
        raise InputError(f"reward factory for {name!r} returned {type(fn).__name__}, not callable")
    return fn


class TextTaskReward:
    """Share of the completion's characters that are in `alphabet` (default: a-z).

    A toy task with a known optimum (1.0: answer only in those letters) on which PPO must
    visibly improve a random tiny model within a few dozen CPU steps. An empty completion
    earns 0. It ignores the prompt, so it measures the optimiser, not reading."""

    name = "text-task"

    def __init__(self, alphabet: str = "abcdefghijklmnopqrstuvwxyz") -> None:
        if not alphabet:
            raise InputError("text-task: alphabet must not be empty")
        self.alphabet = frozenset(alphabet)

    def __call__(
        self, prompts: list[str], completions: list[str], **columns: object
    ) -> list[float]:
        return [
            sum(ch in self.alphabet for ch in text) / len(text) if text else 0.0
            for text in completions
        ]


def _accepts(fn: Callable[..., Any]) -> set[str]:
    """Which of log_extra/log_metric the function can take."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return {"log_extra", "log_metric"}
    return {p.name for p in params} & {"log_extra", "log_metric"}


def score(
    fn: RewardFn, prompts: list[str], completions: list[str], columns: dict[str, list[Any]]
) -> tuple[list[float | None], dict[str, list[Any]], dict[str, list[float]]]:
    """Calls `fn` and checks its answer: one finite float or None per completion.

    Returns (scores, extra columns logged per sample, scalar metrics logged)."""
    extras: dict[str, list[Any]] = {}
    metrics: dict[str, list[float]] = {}

    def log_extra(column: str, values: Sequence[Any]) -> None:
        extras.setdefault(column, []).extend(values)

    def log_metric(name: str, value: float) -> None:
        metrics.setdefault(name, []).append(float(value))

    kwargs: dict[str, Any] = dict(columns)
    wanted = _accepts(fn)
    if "log_extra" in wanted:
        kwargs["log_extra"] = log_extra
    if "log_metric" in wanted:
        kwargs["log_metric"] = log_metric
    raw = list(fn(prompts=prompts, completions=completions, **kwargs))
    name = getattr(fn, "name", type(fn).__name__)
    if len(raw) != len(completions):
        raise InputError(
            f"reward {name!r} returned {len(raw)} values for {len(completions)} completions"
        )
    out: list[float | None] = []
    for i, value in enumerate(raw):
        if value is None:
            out.append(None)
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise InputError(f"reward {name!r} returned {value!r} for sample {i}; want a float")
        if not math.isfinite(float(value)):
            raise InputError(
                f"reward {name!r} returned {value} for sample {i}; use None to exclude a sample"
            )
        out.append(float(value))
    for column, values in extras.items():
        if len(values) != len(completions):
            raise InputError(
                f"reward {name!r} logged {len(values)} values of {column!r} for "
                f"{len(completions)} completions"
            )
    return out, extras, metrics
