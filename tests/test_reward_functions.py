"""Reward functions, table-driven against the published definitions and our robust one."""

from __future__ import annotations

import math

import pytest

from asmopt.judge import Verdict
from asmopt.reward import RewardInput, get_reward

D1 = get_reward("supercoder-design1")
D2 = get_reward("supercoder-design2")
RB = get_reward("robust")


def ri(
    verdict: str = "pass",
    passed: int = 10,
    total: int = 10,
    s: float | None = None,
    lo: float | None = None,
    hi: float | None = None,
    identical: bool = False,
    copy: bool = False,
) -> RewardInput:
    return RewardInput(
        verdict=verdict,
        passed=passed,
        total=total,
        speedup=s,
        speedup_low=lo,
        speedup_high=hi,
        identical=identical,
        is_copy=copy,
    )


@pytest.mark.parametrize(
    ("x", "d1", "d2", "robust"),
    [
        (ri("assemble_error", 0, 10), -1.0, 0.0, -1.0),
        (ri("link_error", 0, 10), -1.0, 0.0, -1.0),
        (ri("extraction_error", 0, 0), -1.0, 0.0, -1.0),
        (ri("crash", 3, 10), -0.5, 0.0, -0.5),
        (ri("nonzero_exit", 3, 10), -0.5, 0.0, -0.5),
        (ri("timeout", 0, 10), -0.5, 0.0, -0.5),
        (ri("wrong_output", 7, 10), 0.7, 0.0, -0.25),
        (ri(identical=True, s=1.3, lo=0.9, hi=1.6), 1.0, 1.3, 0.0),
        (ri(copy=True, s=1.0, lo=0.99, hi=1.01), 1.0, 0.0, 0.0),
        (ri(s=0.8, lo=0.78, hi=0.82), 1.0, 0.0, math.log(0.8)),
        (ri(s=1.0, lo=0.98, hi=1.02), 1.0, 0.0, 0.0),
        (ri(s=1.05, lo=0.97, hi=1.13), 1.0 + 10.5, 1.05, 0.0),  # not significant: robust pays 0
        (ri(s=1.5, lo=1.45, hi=1.55), 16.0, 1.5, math.log(1.5)),
        (ri(s=100.0, lo=90.0, hi=110.0), 1001.0, 100.0, 3.0),  # robust clips at max_abs
        (ri("infra_error", 0, 10), None, None, None),
    ],
)
def test_reward_table(
    x: RewardInput, d1: float | None, d2: float | None, robust: float | None
) -> None:
    for fn, want in ((D1, d1), (D2, d2), (RB, robust)):
        got = fn(x)
        if want is None:
            assert got is None, fn.name
        else:
            assert got == pytest.approx(want), fn.name


def test_robust_penalties_are_configurable() -> None:
    fn = get_reward("robust", penalties={"wrong_output": -2.0}, scale=2.0)
    assert fn(ri("wrong_output", 1, 2)) == -2.0
    assert fn(ri("crash", 0, 2)) == -1.0  # classes without a penalty get -1
    assert fn(ri(s=2.0, lo=1.9, hi=2.1)) == pytest.approx(2 * math.log(2.0))
    with pytest.raises(ValueError, match="unknown failure classes"):
        get_reward("robust", penalties={"oops": 1.0})
    with pytest.raises(ValueError, match=r"\['wrong_outptu'\]; did you mean 'wrong_output'\?"):
        get_reward("robust", penalties={"wrong_outptu": -1.0})
    with pytest.raises(ValueError, match=r"unknown failure classes: \['infra_error'\]"):
        get_reward("robust", penalties={"infra_error": 0.0})  # ours: never penalised


def test_a_verdict_given_by_name_is_read_as_the_member() -> None:
    assert RewardInput(verdict="timeout").verdict is Verdict.TIMEOUT
    assert RewardInput(verdict=Verdict.CRASH).verdict is Verdict.CRASH


def test_bad_reward_inputs() -> None:
    with pytest.raises(ValueError, match="unknown verdict"):
        RewardInput(verdict="great")
    with pytest.raises(ValueError, match="test counts"):
        RewardInput(verdict="pass", passed=3, total=2)
    with pytest.raises(ValueError, match="speedup"):
        RewardInput(verdict="pass", speedup=float("inf"))
    with pytest.raises(ValueError, match="unknown reward"):
        get_reward("design3")
