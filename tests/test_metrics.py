"""Reference and strict metrics against hand-computed examples."""

from __future__ import annotations

import math

import pytest

from asmopt.metrics import (
    Answer,
    compute_metrics,
    reference_answer_speedup,
    strict_opt,
    strict_wins,
)


def fast(pid: str, tests: tuple[float, ...], low: float, high: float) -> Answer:
    ratio = math.exp(sum(math.log(t) for t in tests) / len(tests))
    return Answer(
        pid, measure_status="measured", speedup=ratio, low=low, high=high, test_speedups=tests
    )


COMPILE_FAIL = Answer("c", verdict="assemble_error", built=False, correct=False)
WRONG = Answer("w", verdict="wrong_output", built=True, correct=False)
COPY = Answer("k", is_copy=True, measure_status="copy", speedup=1.0, low=1.0, high=1.0)
INFRA = Answer("i", verdict="infra_error", built=False, correct=False)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # all tests pass: arithmetic mean of per-test speedups floored at 1.0
        (fast("a", (2.0, 0.5, 1.0), 0.9, 1.2), (2.0 + 1.0 + 1.0) / 3),
        (fast("b", (0.8, 0.9), 0.8, 0.9), 1.0),
        (COMPILE_FAIL, 1.0),
        (WRONG, 1.0),
        (COPY, 1.0),
    ],
)
def test_reference_answer_speedup(answer: Answer, expected: float) -> None:
    assert reference_answer_speedup(answer) == pytest.approx(expected)


def test_suite_metrics_hand_computed() -> None:
    a = fast("a", (2.0, 0.5, 1.0), 0.9, 1.2)  # geomean 1.0, interval spans 1
    b = fast("b", (1.21, 1.21), 1.15, 1.27)  # 1.21x, significantly faster, %Opt
    c = fast("c2", (0.9, 0.9), 0.85, 0.95)  # significantly slower
    answers = [a, b, c, COPY, COMPILE_FAIL, WRONG, INFRA]
    m = compute_metrics(answers)
    assert m.answers == 6 and m.infra_errors == 1 and m.programs == 7
    assert m.compile_rate == pytest.approx(5 / 6)
    assert m.pass_rate == pytest.approx(4 / 6)
    ref = [4 / 3, 1.21, 1.0, 1.0, 1.0, 1.0]
    assert m.reference_speedup == pytest.approx(math.prod(ref) ** (1 / 6))
    assert m.significantly_faster == pytest.approx(1 / 6)
    assert m.pie_opt == pytest.approx(1 / 6)
    assert m.significantly_slower == pytest.approx(1 / 6)
    assert m.copy_rate == pytest.approx(1 / 6)
    # unfloored geometric mean over correct answers with a speedup (the copy counts 1.0)
    assert m.geomean_correct == pytest.approx((1.0 * 1.21 * 0.9 * 1.0) ** (1 / 4))
    assert m.counts == {"assemble_error": 1, "pass": 4, "wrong_output": 1}


def test_measurement_infra_error_is_excluded_and_unmeasurable_counts_one() -> None:
    broken_timer = Answer("x", measure_status="infra_error")
    unmeasurable = Answer("u", measure_status="unmeasurable")
    m = compute_metrics([broken_timer, unmeasurable])
    assert m.answers == 1 and m.infra_errors == 1
    assert m.reference_speedup == pytest.approx(1.0) and m.unmeasurable == 1
    assert m.geomean_correct is None


def test_empty_metrics() -> None:
    m = compute_metrics([])
    assert m.answers == 0 and m.pass_rate is None and m.reference_speedup is None


def test_strict_opt_and_significance_agree_by_construction() -> None:
    """Strict %Opt counts a subset of the significantly faster answers: a point estimate over
    1.10 with an interval reaching below 1.0, or an unreliable measurement, is never a
    strict win, while the reference block's point-estimate %Opt still counts the first."""
    wide = fast("nsieve", (1.129,), 0.93, 1.37)  # point >= 1.10, interval spans 1.0
    shaky = Answer("u", measure_status="measured", speedup=1.5, low=1.3, high=1.7, reliable=False)
    narrow = fast("win", (1.25,), 1.12, 1.39)  # lower bound >= 1.10
    just = fast("just", (1.08,), 1.03, 1.13)  # significantly faster, but not by 10%
    answers = [wide, shaky, narrow, just, COPY, WRONG]
    m = compute_metrics(answers)
    assert {a.program_id for a in strict_opt(answers)} == {"win"}
    assert {a.program_id for a in strict_wins(answers)} == {"win", "just"}
    assert m.pie_opt == pytest.approx(1 / 6) and m.significantly_faster == pytest.approx(2 / 6)
    assert m.pie_opt_point == pytest.approx(3 / 6)  # wide, shaky and narrow by point estimate
    # by construction, on every threshold: each strict %Opt answer is a strict win
    for threshold in (1.0, 1.05, 1.10, 1.2, 2.0):
        assert set(map(id, strict_opt(answers, threshold))) <= set(map(id, strict_wins(answers)))
