"""Reference and strict metrics against hand-computed examples."""

from __future__ import annotations

import math

import pytest

from asmopt.metrics import Answer, compute_metrics, reference_answer_speedup


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
