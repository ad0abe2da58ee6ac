"""Input generator specs are checked when they are read, so a draw cannot fail or run away
while grading (asmopt.programs.generators, "load checks").

A draw that fails at grading time can only be blamed on someone who had nothing to do with
it: the candidate being graded. So every bound, count and expression of a spec is
evaluated at load on the class's extremes, and the most bytes and steps a draw can take are
bounded from the spec; what would fail is refused by name (the file, the class, the var
and the problem), in one line, as every other suite error is. docs/faults.md, faults 33-36.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import asmopt
from asmopt.programs import generators
from asmopt.programs.generators import (
    MAX_DRAW_STEPS,
    MAX_DRAWN_BYTES,
    MAX_INT_DIGITS,
    GeneratorError,
    InputGenerator,
)
from asmopt.programs.rows import ItemError, _row_generator
from asmopt.programs.suite_io import SuiteFormatError, load_suite

SRC = str(Path(asmopt.__file__).resolve().parents[1])
ECHO = '#include <stdio.h>\nint main(void){long x; if (scanf("%ld", &x) != 1) return 1; ' \
       'printf("%ld\\n", x); return 0;}\n'


def _spec(variables: dict[str, Any], template: str | None = None) -> dict[str, Any]:
    """A spec of one class, `small`, showing every var unless a template is given."""
    if template is None:
        template = "".join("{" + name + "}" for name in variables) + "\n"
    return {"version": 1, "classes": {"small": {"template": template, "vars": variables}},
            "tests": {"t1": "small"}}


def _chain(links: int) -> dict[str, Any]:
    """`a1 = a0 * a0`, `a2 = a1 * a1`, ...: the integers double in length at every link
    (40 links: 2^40 digits, a first draw that never ends)."""
    variables: dict[str, Any] = {"a0": {"int": [2, 3]}}
    for k in range(1, links + 1):
        variables[f"a{k}"] = {"value": f"a{k - 1} * a{k - 1}"}
    return variables


N_0_3 = {"int": [0, 3]}
TEXT = {"text": {"length": 3, "alphabet": "ab"}}
# (case, spec, what the error names: the var's path, then the problem)
BAD_SPECS: list[tuple[str, dict[str, Any], str, str]] = [
    # Draws that raised while grading (the failure was blamed on the answer).
    ("floor_division_by_zero", _spec({"n": {"value": "1 // 0"}}),
     "vars.n.value", "'1 // 0': division by zero"),
    ("modulo_by_zero", _spec({"n": {"value": "7 % 0"}}), "vars.n.value", "division by zero"),
    ("division_by_zero_in_a_bound", _spec({"n": {"int": [0, "1 / 0"]}}),
     "vars.n.int", "division by zero"),
    ("division_by_a_var_that_can_be_zero",
     _spec({"m": {"int": [0, 5]}, "n": {"value": "10 // m"}}),
     "vars.n.value", "division by zero (when m = 0)"),
    ("int_low_above_high", _spec({"n": {"int": [5, 1]}}), "vars.n.int", "empty range [5, 1]"),
    ("int_range_empty_for_a_drawn_bound", _spec({"n": N_0_3, "m": {"int": [1, "n"]}}),
     "vars.m.int", "empty range [1, 0] (when n = 0)"),
    ("float_low_above_high", _spec({"x": {"float": [2, 1]}}), "vars.x.float", "empty range"),
    ("ints_range_empty", _spec({"xs": {"ints": {"count": 3, "range": [4, 1]}}}),
     "vars.xs.ints.range", "empty range [4, 1]"),
    ("negative_length", _spec({"s": {"text": {"length": -1, "alphabet": "ab"}}}),
     "vars.s.text.length", "-1 is outside 0..4000000"),
    ("count_over_the_cap", _spec({"xs": {"ints": {"count": 5_000_000, "range": [0, 1]}}}),
     "vars.xs.ints.count", "5000000 is outside 0..4000000"),
    ("count_negative_for_a_drawn_var",
     _spec({"n": {"int": [0, 10]}, "r": {"repeat": {"count": "n - 5", "template": "x"}}}),
     "vars.r.repeat.count", "-5 is outside 0..4000000 (when n = 0)"),
    ("record_range_empty_for_an_outer_var",
     _spec({"n": N_0_3, "r": {"repeat": {"count": 2, "template": "{m}",
                                        "vars": {"m": {"int": [1, "n"]}}}}}),
     "vars.r.repeat.vars.m.int", "empty range [1, 0] (when n = 0)"),
    ("min_of_nothing", _spec({"n": {"value": "min()"}}),
     "vars.n.value", "min() takes two or more arguments, got 0"),
    ("min_of_one_number", _spec({"n": {"value": "max(3)"}}),
     "vars.n.value", "max() takes two or more arguments, got 1"),
    ("abs_of_two_numbers", _spec({"n": {"value": "abs(1, 2)"}}),
     "vars.n.value", "abs() takes one argument, got 2"),
    ("float_overflow", _spec({"n": {"value": "1e308 * 10"}}),
     "vars.n.value", "inf is not a finite number"),
    ("float_overflow_in_an_int_bound", _spec({"n": {"int": [0, "1e308 * 1e308"]}}),
     "vars.n.int", "inf is not a finite number"),
    ("float_range_wider_than_a_float", _spec({"x": {"float": [-1e308, 1e308]}}),
     "vars.x.float", "wider than a float holds"),
    ("value_over_python_s_digit_limit", _spec(_chain(14), "{a14}\n"),
     "vars.a10.value", f"digits (at most {MAX_INT_DIGITS})"),
    ("lone_surrogate_in_an_alphabet",
     _spec({"s": {"text": {"length": 3, "alphabet": "a\ud800"}}}),
     "vars.s.text.alphabet", "lone surrogate (U+D800)"),
    ("lone_surrogate_in_a_template", _spec({"n": N_0_3}, "{n}\udc00\n"),
     "classes.small.template", "lone surrogate (U+DC00)"),
    ("lone_surrogate_in_a_choice", _spec({"c": {"choice": ["a", "\udfff"]}}),
     "vars.c.choice[1]", "lone surrogate"),
    ("text_var_used_as_a_number", _spec({"s": TEXT, "n": {"int": [0, "s"]}}),
     "vars.n.int", "'s' is not a number"),
    ("choice_of_text_multiplied", _spec({"s": {"choice": ["ab", 3]}, "n": {"value": "s * 9"}}),
     "vars.n.value", "'s' is not a number"),
    ("unsupported_operator", _spec({"n": {"value": "2 ** 10"}}), "vars.n.value", "only numbers"),
    ("a_function_as_a_number", _spec({"n": {"value": "min + 1"}}),
     "vars.n.value", "min is a function"),
    ("a_bool_in_an_expression", _spec({"n": {"value": "True + 1"}}),
     "vars.n.value", "only numbers"),
    ("infinite_weights", _spec({"c": {"choice": [1, 2], "weights": [1e308, 1e308]}}),
     "vars.c.weights", "one non-negative number per value"),
    # First draws that never ended.
    ("nested_repeat_of_empty_records",
     _spec({"r": {"repeat": {"count": 4_000_000, "template": "{q}", "vars": {
         "q": {"repeat": {"count": 4_000_000, "template": ""}}}}}}),
     "vars.r", f"steps (values, records, characters), over the {MAX_DRAW_STEPS:,}"),
    ("forty_chained_squares", _spec(_chain(40), "{a40}\n"),
     "vars.a10.value", f"digits (at most {MAX_INT_DIGITS})"),
    ("output_over_the_byte_cap",
     _spec({"s": {"text": {"length": 4_000_000, "alphabet": "ab"}}}, "{s}{s}{s}{s}{s}"),
     "classes.small", f"may draw 20,000,000 bytes, over the {MAX_DRAWN_BYTES:,}"),
    # `true` is not version 1, nor is 1.0.
    ("version_true", {**_spec({"n": N_0_3}), "version": True}, "inputs.version", "got true"),
    ("version_float", {**_spec({"n": N_0_3}), "version": 1.0}, "inputs.version", "got 1.0"),
    # Bad input that was an internal error (exit 70).
    ("a_100k_term_expression", _spec({"n": {"value": "+".join(["1"] * 100_000)}}),
     "vars.n.value", "an expression of 199999 characters"),
    ("a_100k_unary_minus_chain", _spec({"n": {"value": "-" * 100_000 + "1"}}),
     "vars.n.value", "an expression of 100001 characters"),
    ("an_int_bound_of_10_to_the_4000", _spec({"n": {"int": [0, 10**4000]}}),
     "vars.n.int[1]", f"an integer of 4001 digits (at most {MAX_INT_DIGITS})"),
]


@pytest.mark.fast
@pytest.mark.parametrize(
    ("spec", "where", "problem"),
    [pytest.param(spec, where, problem, id=case) for case, spec, where, problem in BAD_SPECS],
)
def test_a_spec_whose_draw_would_fail_is_refused_at_load_by_name(
    spec: dict[str, Any], where: str, problem: str
) -> None:
    start = time.process_time()
    with pytest.raises(GeneratorError) as err:
        InputGenerator.from_dict(spec)
    message = str(err.value)
    assert where in message and problem in message, message
    assert "\n" not in message
    assert time.process_time() - start < 5.0  # refused, never drawn


def _write_suite(root: Path, program: dict[str, Any] | str) -> Path:
    """A suite of one echo program whose program.json is `program` (text: as written)."""
    pdir = root / "programs" / "p"
    (pdir / "tests").mkdir(parents=True)
    (pdir / "main.c").write_text(ECHO)
    (pdir / "tests" / "t1.in").write_text("3\n")
    (pdir / "tests" / "t1.out").write_text("3\n")
    text = program if isinstance(program, str) else json.dumps(program)
    (pdir / "program.json").write_text(text)
    index = {"format": "asmopt-suite", "version": 1, "name": "s",
             "programs": [{"id": "p", "split": "test"}]}
    (root / "suite.json").write_text(json.dumps(index))
    return root


@pytest.mark.fast
@pytest.mark.parametrize(
    ("spec", "where", "problem"),
    [pytest.param(spec, where, problem, id=case) for case, spec, where, problem in BAD_SPECS],
)
def test_a_suite_with_such_a_spec_fails_to_load_naming_the_file(
    tmp_path: Path, spec: dict[str, Any], where: str, problem: str
) -> None:
    root = _write_suite(tmp_path / "s", {"inputs": spec})
    with pytest.raises(SuiteFormatError) as err:
        load_suite(root)
    message = str(err.value)
    assert message.startswith(str(root / "programs" / "p" / "program.json") + ": inputs")
    assert where in message and problem in message and "\n" not in message


@pytest.mark.fast
def test_a_5000_digit_integer_in_program_json_is_refused_by_name(tmp_path: Path) -> None:
    root = _write_suite(tmp_path / "s", '{"inputs": {"version": ' + "7" * 5000 + "}}")
    with pytest.raises(SuiteFormatError, match="more than 4,300 digits") as err:
        load_suite(root)
    assert "program.json" in str(err.value) and "set_int_max_str_digits" not in str(err.value)
    # A row carrying its spec as JSON: the row is dropped as bad, named.
    with pytest.raises(ItemError, match="more than 4,300 digits") as item:
        _row_generator({"inputs_spec": '{"version": ' + "7" * 5000 + "}"}, "row 3")
    assert item.value.reason == "bad_row"
    with pytest.raises(ItemError, match="division by zero"):
        _row_generator({"inputs_spec": json.dumps(BAD_SPECS[0][1])}, "row 4")


@pytest.mark.parametrize(
    "case",
    ["floor_division_by_zero", "nested_repeat_of_empty_records", "a_100k_unary_minus_chain",
     "version_true"],
)
def test_the_command_line_says_so_in_one_line(tmp_path: Path, case: str) -> None:
    """`asmopt suite list` (and every command that loads the suite): exit 2, one
    `asmopt: error:` line, no traceback, never exit 70 (an internal error)."""
    spec = next(spec for name, spec, _, _ in BAD_SPECS if name == case)
    root = _write_suite(tmp_path / "s", {"inputs": spec})
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-m", "asmopt.cli", "suite", "list", "--suite", str(root)],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(lines) == 1 and "program.json: inputs" in lines[0], proc.stderr


@pytest.mark.fast
def test_what_the_load_checks_accept_still_draws() -> None:
    """Bounds that move together, a divisor that is never zero, a big but allowed integer
    and a repeat that never draws its record are all fine."""
    gen = InputGenerator.from_dict(_spec({
        "n": {"int": [1, 50]},
        "m": {"int": ["n", "2 * n"]},
        "q": {"value": "max(48 // n, 1) + m % n"},
        "big": {"int": [0, 10 ** (MAX_INT_DIGITS - 1)]},
        "none": {"repeat": {"count": 0, "template": "{z}", "vars": {"z": {"value": "1 // 0"}}}},
        "xs": {"ints": {"count": "n", "range": [-5, 5], "per_line": 7}},
    }))
    for seed in range(50):
        head = gen.draw("small", seed).decode().split("\n")[0]
        assert head


@pytest.mark.fast
def test_the_draw_budgets_are_a_backstop_at_draw_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec within the budgets at load never reaches them while drawing; should one
    (lowered here after the load), the draw stops with a GeneratorError instead of filling
    memory or running on."""
    gen = InputGenerator.from_dict(_spec({"s": {"repeat": {
        "count": 300, "template": "{t}\n", "vars": {"t": TEXT}}}}))
    assert len(gen.draw("small", 1)) == 1201
    monkeypatch.setattr(generators, "MAX_DRAWN_BYTES", 1000)
    with pytest.raises(GeneratorError, match="exceed 1000 bytes"):
        gen.draw("small", 1)
    monkeypatch.setattr(generators, "MAX_DRAWN_BYTES", MAX_DRAWN_BYTES)
    monkeypatch.setattr(generators, "MAX_DRAW_STEPS", 500)
    with pytest.raises(GeneratorError, match="more than 500 steps"):
        gen.draw("small", 1)


@pytest.mark.fast
def test_a_draw_that_fails_anyway_fails_with_a_generator_error() -> None:
    """The load checks evaluate the extremes; a divisor that is zero only inside its
    range (here m = 1, 3, 5 or 7 of 0..8) passes them, and its draw fails by name."""
    zero_inside = "10 // ((m - 1) * (m - 3) * (m - 5) * (m - 7))"
    gen = InputGenerator.from_dict(_spec({"m": {"int": [0, 8]}, "q": {"value": zero_inside}}))
    failures = 0
    for seed in range(40):
        try:
            gen.draw("small", seed)
        except GeneratorError as exc:
            assert "division by zero" in str(exc)
            failures += 1
    assert 0 < failures < 40
