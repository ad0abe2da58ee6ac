"""Answers right only inside the samples' limits (asmopt.sample_limits): the bends, and the
measurement that makes a learnt generator whose draws do not reach past its samples unfit
(asmopt.entropy)."""

from __future__ import annotations

import pytest
from bench_module import import_bench

from asmopt.entropy import MAX_ATTACK_PASS, measure_entropy
from asmopt.programs.generators import InputGenerator
from asmopt.programs.model import Program, TestCase
from asmopt.sample_limits import SampleLimits, bend


@pytest.mark.fast
def test_the_limits_and_bends_of_the_samples() -> None:
    limits = SampleLimits.of([b"3\n1 -2 7\n", b"ab 12345678901234567890\nabcd\n"])
    # the 20-digit number is no integer a bend touches, and not a word either
    assert limits == SampleLimits(lo=-2, hi=7, word=4, tokens=4)
    assert bend(b"9 -5 4\n", "range", limits) == b"7 -2 4\n"
    assert bend(b"abcdefg 99 x1.5\n", "prefix", limits) == b"abcd 99 x1.5\n"
    assert bend(b"1 2 3 4 5 6\n", "size", limits) == b"1 2 3 4 "
    assert bend(b"1 2\n", "size", limits) == b"1 2\n"
    with pytest.raises(ValueError, match="unknown attack"):
        bend(b"", "shuffle", limits)


# n, then n values: a weighted sum of all of them, the first place where a value passes
# 900 (-1 if none; reading no further), or (reading no further) the largest of the first
# three.
SUM_C = r"""
#include <stdio.h>
int main(void) {
    long n, x, s = 0, top = -1, over = -1;
    if (scanf("%ld", &n) != 1) return 1;
    long read = FIRST_THREE && n > 3 ? 3 : n;
    for (long i = 0; i < read; i++) {
        if (scanf("%ld", &x) != 1) return 2;
        s += x * (i + 1);
        if (x > top) top = x;
        if (x > 900 && over < 0) { over = i; if (STOP_AT_OVER) break; }
    }
    printf("%ld\n", WHAT);
    return 0;
}
"""


def _program(what: str, origin: str = "learnt") -> Program:
    """One fixed test `5` and five values in 1..9; draws of 40-80 values in 1..1000."""
    gen = InputGenerator.from_dict({
        "version": 1,
        "classes": {"c": {"template": "{n}\n{v}\n", "vars": {
            "n": {"int": [40, 80]},
            "v": {"ints": {"count": "n", "range": [1, 1000]}}}}},
        "tests": {"t1": "c"},
        "origin": origin,
    })
    source = (
        SUM_C.replace("WHAT", what)
        .replace("FIRST_THREE", str(int(what == "top")))
        .replace("STOP_AT_OVER", str(int(what == "over")))
    )
    return Program("limits", source, (TestCase("t1", b"5\n1 9 2 8 3\n", b""),), inputs=gen)


@pytest.mark.parametrize(
    ("what", "origin", "size_matches", "unfit"),
    [
        ("s", "learnt", "none", False),
        ("over", "learnt", "some", True),
        ("top", "learnt", "all", False),
        ("over", "declared", None, False),
    ],
    ids=["sum_of_all", "first_over_900", "first_three_only", "declared_generator"],
)
def test_an_answer_right_only_inside_the_samples_limits_must_fail_the_gradings(
    what: str, origin: str, size_matches: str | None, unfit: bool,
    toolchain: object, sandbox: object,
) -> None:
    """Cutting the input to the sample's six tokens, or clamping the values to 1..9:
    - a weighted sum of 40-80 values in 1..1000 changes on every such draw, so neither
      answer passes a grading;
    - the first place a value passes 900 is inside the sample's five values in about 41%
      of draws: the cut answer is right there and wrong elsewhere, and at 8 draws a class
      it still passes a grading too often (a gap in the draws): unfit, by name;
    - the largest of the first three values never changes under the cut (the program reads
      no further): the cut answer is the program on every draw, and bounds nothing.
    A suite's own (declared) generator is not measured this way."""
    program = _program(what, origin)
    report = measure_entropy(program, toolchain, sandbox, draws=128, field_draws=4)  # type: ignore[arg-type]
    [klass] = report.classes
    if size_matches is None:
        assert klass.attacks == {} and report.attack_pass_bound("size", 8) == 0.0
        return
    assert klass.attacks["range"][0] == klass.draws == 128  # every draw has a value past 9
    assert klass.attacks["prefix"] == [0, 0]  # no words: the answer is the program
    assert report.attack_pass_bound("prefix", 2) == 0.0
    changed, matched = klass.attacks["size"]
    assert changed == 128
    assert {"none": matched == 0, "some": 20 < matched < 108, "all": matched == 128}[size_matches]
    problems = " ".join(report.problems())
    assert ("right only inside the samples' limits (size" in problems) is unfit, problems
    assert (report.attack_pass_bound("size", 8) > MAX_ATTACK_PASS) is unfit
    if not unfit:  # no changed draw matched, or none changed its output
        assert report.attack_pass_bound("size", 2) <= MAX_ATTACK_PASS


ECHO_C = r"""
#include <stdio.h>
int main(void) {
    int c;
    while ((c = getchar()) != EOF) putchar(c);
    return 0;
}
"""


@pytest.mark.parametrize("kind", ["range", "prefix", "size"])
def test_the_benchmarks_wrapped_answers_bend_as_the_measurement_does(
    kind: str, toolchain: object, sandbox: object
) -> None:
    """The attack benchmark grades real answers: the program behind a C wrapper that bends
    its stdin. Behind the wrapper, a program that echoes its input prints exactly what
    `bend` makes of it, so the benchmark's answers are the ones the import measured."""
    attack_program = import_bench("bench_import_attacks").attack_program
    limits = SampleLimits(lo=-3, hi=40, word=3, tokens=5)
    inputs = [b"1 2 3\n", b"-9 100 abcdef 7\nxy 2.5 12345678901234567890 q\n", b"  a\tb  \n"]
    echo = attack_program(Program("echo", ECHO_C, (TestCase("t", b"", b""),)), kind, limits)
    build = toolchain.compile_binary(echo)  # type: ignore[attr-defined]
    assert build.ok, build.message
    result = sandbox.run_binaries(  # type: ignore[attr-defined]
        [build.output], [0] * len(inputs), stdin=inputs, feed=[0, 1, 2], marker="endofrun"
    )
    assert list(result.segments) == [bend(x, kind, limits) for x in inputs]
