"""Reward functions: what one judged candidate is worth to an RL learner.

All rewards read the same `RewardInput`, a flat record of the judged candidate, so they can
be compared on identical data. `None` means "exclude this sample" (our infrastructure
failed): it must never become a 0 or a penalty, or the learner is trained on our bugs.

* `supercoder-design1`, `supercoder-design2`: exactly the published definitions, so runs
  are comparable with the reference work (including its weaknesses: noise in `s` is paid,
  and a verbatim copy earns 1 under design 1).
* `robust`: pays only for speedups the measurement can stand behind (the confidence
  interval excludes 1), on a log scale so that 2x faster and 2x slower are symmetric, and
  pays nothing for copies of the baseline after canonicalisation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from asmopt.errors import InputError, did_you_mean
from asmopt.judge import ALL_VERDICTS, BUILD_FAILURES, RUNTIME_FAILURES, Verdict


@dataclass(frozen=True)
class RewardInput:
    """A judged candidate, reduced to what rewards need.

    `speedup` is the reference's s: the mean over tests of t_baseline / t_candidate.
    `speedup_low`/`speedup_high` bound its 98% interval (None when not measured).
    `identical` is a verbatim copy; `is_copy` a copy after canonicalisation. `verdict` may
    be given as a verdict's name ("wrong_output"): it is read as the `Verdict` it names, and
    one that names none is refused."""

    verdict: Verdict
    passed: int = 0
    total: int = 0
    speedup: float | None = None
    speedup_low: float | None = None
    speedup_high: float | None = None
    identical: bool = False
    is_copy: bool = False

    def __post_init__(self) -> None:
        if self.verdict not in ALL_VERDICTS:
            raise InputError(f"unknown verdict {self.verdict!r}")
        object.__setattr__(self, "verdict", Verdict(self.verdict))
        if self.passed < 0 or self.total < 0 or self.passed > self.total:
            raise InputError(f"bad test counts passed={self.passed} total={self.total}")
        if self.speedup is not None and not (self.speedup > 0 and math.isfinite(self.speedup)):
            raise InputError(f"speedup must be a positive finite number, got {self.speedup}")


class RewardFunction(Protocol):
    name: str

    def __call__(self, x: RewardInput) -> float | None: ...


@dataclass(frozen=True)
class SupercoderDesign1:
    """Correctness-guided speedup (reference design 1).

    build failure -1; runtime error or non-zero exit on any test -0.5; some tests wrong
    passed/total; identical to the baseline 1; all pass and s <= 1: 1; s > 1: 1 + 10 s."""

    name: str = "supercoder-design1"
    speedup_weight: float = 10.0

    def __call__(self, x: RewardInput) -> float | None:
        if x.verdict == Verdict.INFRA_ERROR:
            return None
        if x.verdict in BUILD_FAILURES:
            return -1.0
        if x.verdict in RUNTIME_FAILURES:
            return -0.5
        if x.verdict == Verdict.WRONG_OUTPUT:
            return x.passed / x.total if x.total else 0.0
        if x.identical:
            return 1.0
        s = x.speedup if x.speedup is not None else 1.0
        return 1.0 if s <= 1.0 else 1.0 + self.speedup_weight * s


@dataclass(frozen=True)
class SupercoderDesign2:
    """Speedup only (reference design 2, the default of its training script): s if all
    tests pass and s > 1, else 0."""

    name: str = "supercoder-design2"

    def __call__(self, x: RewardInput) -> float | None:
        if x.verdict == Verdict.INFRA_ERROR:
            return None
        if x.verdict != Verdict.PASS or x.speedup is None:
            return 0.0
        return x.speedup if x.speedup > 1.0 else 0.0


# The failures a penalty may be set for (`RobustReward.penalties`): every candidate failure.
PENALISED = BUILD_FAILURES | RUNTIME_FAILURES | {Verdict.WRONG_OUTPUT}


def _default_penalties() -> dict[str, float]:
    """Keyed by the verdicts' values, as a configuration file writes them."""
    defaults = {
        Verdict.EXTRACTION_ERROR: -1.0,
        Verdict.ASSEMBLE_ERROR: -1.0,
        Verdict.LINK_ERROR: -1.0,
        Verdict.SANDBOX_VIOLATION: -1.0,
        Verdict.CRASH: -0.5,
        Verdict.NONZERO_EXIT: -0.5,
        Verdict.TIMEOUT: -0.5,
        Verdict.OUTPUT_LIMIT: -0.5,
        Verdict.WRONG_OUTPUT: -0.25,
    }
    return {v.value: p for v, p in defaults.items()}


@dataclass(frozen=True)
class RobustReward:
    """Correctness gate, then `scale * log(s)` only when the interval excludes 1.

    A copy of the baseline (after canonicalisation) earns `copy_reward` (0), so copying is
    never better than an honest attempt; a speedup the measurement cannot distinguish from
    1 earns 0; a significant slowdown earns a negative log reward. `max_abs` clips
    pathological ratios (e.g. a test that became trivially fast)."""

    name: str = "robust"
    scale: float = 1.0
    copy_reward: float = 0.0
    max_abs: float = 3.0
    penalties: dict[str, float] = field(default_factory=_default_penalties)

    def __post_init__(self) -> None:
        unknown = sorted(str(k) for k in set(self.penalties) - PENALISED)
        if unknown:
            known = sorted(v.value for v in PENALISED)
            raise InputError(
                f"penalties for unknown failure classes: {unknown}"
                f"{did_you_mean(unknown[0], known)} (known: {', '.join(known)})"
            )

    def __call__(self, x: RewardInput) -> float | None:
        if x.verdict == Verdict.INFRA_ERROR:
            return None
        if x.verdict != Verdict.PASS:
            return self.penalties.get(x.verdict, -1.0)
        if x.identical or x.is_copy:
            return self.copy_reward
        if x.speedup is None or x.speedup_low is None or x.speedup_high is None:
            return 0.0
        if x.speedup_low > 1.0 or x.speedup_high < 1.0:
            value = self.scale * math.log(x.speedup)
            return max(-self.max_abs, min(self.max_abs, value))
        return 0.0


REWARDS: dict[str, type] = {
    "supercoder-design1": SupercoderDesign1,
    "supercoder-design2": SupercoderDesign2,
    "robust": RobustReward,
}


def get_reward(name: str, **options: object) -> RewardFunction:
    if name not in REWARDS:
        raise InputError(f"unknown reward {name!r}; available: {', '.join(sorted(REWARDS))}")
    return REWARDS[name](**options)  # type: ignore[no-any-return]
