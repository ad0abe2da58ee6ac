"""A draw that fails while grading is never the answer's fault.

Drawing happens before any run on the drawn input, so when it fails (a spec that passed
the load checks and still broke, or a bug of ours) the answer had nothing to do with it.
The grader must say so: `infra_error` (excluded from every rate, judged again on a rerun),
never a candidate verdict such as `sandbox_violation`, which would charge it to the
answer. The program's own -O3 code is the answer here: no verdict but `pass` or
`infra_error` can be right for it. docs/faults.md, fault 37.
"""

from __future__ import annotations

from typing import Any

import pytest

from asmopt.evaluate import check_candidate
from asmopt.fresh import FreshInputs, Grading, check_drawn, draw_inputs
from asmopt.judge import Verdict
from asmopt.programs.generators import DrawError, GeneratorError, InputGenerator
from asmopt.programs.model import Program, TestCase
from asmopt.sandbox.records import Limits
from asmopt.toolchain import Toolchain

DOUBLE = r"""#include <stdio.h>
int main(void) {
    long m, s;
    if (scanf("%ld %ld", &m, &s) != 2) return 1;
    printf("%ld\n", 2 * m + s % 7);
    return 0;
}
"""
# The divisor is zero for m = 1, 3, 5 and 7: inside the range, never at its extremes
# (0, 4, 8), which are all the load checks evaluate; so the spec is accepted and about
# half of its draws fail.
ZERO_INSIDE = {
    "version": 1,
    "classes": {"c": {"template": "{m} {s}\n", "vars": {
        "m": {"int": [0, 8]},
        "q": {"value": "10 // ((m - 1) * (m - 3) * (m - 5) * (m - 7))"},
        "s": {"int": [0, 18446744073709551615]},
    }}},
    "tests": {"t1": "c"},
}
SAFE = {**ZERO_INSIDE, "classes": {"c": {"template": "{m} {s}\n", "vars": {
    "m": {"int": [0, 8]}, "s": {"int": [0, 18446744073709551615]}}}}}


def _program(spec: dict[str, Any]) -> Program:
    tests = (TestCase("t1", b"4 10\n", b"11\n"),)
    return Program("double", DOUBLE, tests, inputs=InputGenerator.from_dict(spec))


def _failing_grading(program: Program) -> FreshInputs:
    """A grading whose first drawn input fails to draw (found, not assumed)."""
    for seed in range(200):
        fresh = FreshInputs(seed=seed)
        try:
            fresh.draw(program, 0, "check", "c", 0)
        except DrawError:
            return fresh
    raise AssertionError("no grading of 200 draws a failing input")


class _NoRuns:
    """A sandbox that must not be used."""

    limits = Limits()

    def run_binaries(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the drawn inputs ran although drawing them failed")


def _injected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every draw raises, whatever the spec (it passed the load checks)."""

    def broken(self: InputGenerator, size_class: str, seed: int) -> bytes:
        raise ZeroDivisionError("injected draw failure")

    monkeypatch.setattr(InputGenerator, "draw", broken)


@pytest.mark.fast
def test_a_draw_that_fails_while_grading_is_a_draw_error_before_any_run() -> None:
    program = _program(ZERO_INSIDE)
    fresh = _failing_grading(program)
    with pytest.raises(DrawError) as err:
        check_drawn(program, "cand", "base", _NoRuns(), Grading(fresh, "0"))  # type: ignore[arg-type]
    exc = err.value
    assert (exc.program, exc.size_class) == ("double", "c")
    assert f"seed {exc.seed}" in str(exc) and "division by zero" in str(exc)
    assert "not the answer" in str(exc)
    assert isinstance(exc.__cause__, GeneratorError)


@pytest.mark.fast
def test_any_exception_of_an_injected_draw_is_a_draw_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bug of ours in drawing (any exception) is reported the same way, by name."""
    program = _program(SAFE)
    _injected(monkeypatch)
    with pytest.raises(DrawError, match="ZeroDivisionError: injected draw failure") as err:
        draw_inputs(program, FreshInputs(seed=3), 0)
    assert isinstance(err.value.__cause__, ZeroDivisionError)


def _assert_not_the_answer_s(result: Any) -> None:
    assert result.verdict == Verdict.INFRA_ERROR, (result.verdict, result.message)
    assert not any(t.verdict.is_candidate_failure for t in result.tests), result.tests
    assert "program 'double': drawing an input of class 'c'" in result.message


def test_injected_draw_failure_never_gives_the_o3_baseline_a_candidate_verdict(
    toolchain: Toolchain, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program(SAFE)
    _injected(monkeypatch)
    result = check_candidate(
        program, toolchain.baseline_assembly(program), toolchain, fresh=FreshInputs(seed=1)
    )
    _assert_not_the_answer_s(result)
    assert "injected draw failure" in result.message


def test_a_spec_failing_inside_its_range_never_gives_the_o3_baseline_a_candidate_verdict(
    toolchain: Toolchain,
) -> None:
    program = _program(ZERO_INSIDE)
    fresh = _failing_grading(program)
    result = check_candidate(program, toolchain.baseline_assembly(program), toolchain,
                             fresh=fresh)
    _assert_not_the_answer_s(result)
