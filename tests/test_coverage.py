"""Basic blocks reached by drawn inputs against the fixed tests' (measure/coverage.py): the
program built with gcc's trace-pc instrumentation and run in the sandbox reports what it
reached; a draw that never takes the sample's path shows as blocks missed, and an entropy
mark whose draws reach fewer blocks than the fixed tests makes the program unfit."""

from __future__ import annotations

from dataclasses import replace

from asmopt.entropy import EntropyReport
from asmopt.measure.coverage import measure_coverage
from asmopt.programs.generators import InputGenerator
from asmopt.programs.model import Program, TestCase

BRANCHY_C = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
    char word[16]; long n, s = 0;
    if (scanf("%15s %ld", word, &n) != 2) return 1;
    if (strcmp(word, "SQUARES") == 0) {
        for (long i = 1; i <= n; i++) { if (i % 2) s += i * i; else s -= i; }
        printf("squares %ld\n", s);
    } else if (strcmp(word, "CUBES") == 0) {
        for (long i = 1; i <= n; i++) s += i * i * i;
        printf("cubes %ld\n", s);
    } else {
        printf("unknown %s\n", word);
    }
    return 0;
}
"""


def _program(words: list[str]) -> Program:
    spec = {
        "version": 1,
        "origin": "learnt",
        "classes": {"c": {"template": "{w} {n}\n",
                          "vars": {"w": {"choice": words}, "n": {"int": [1, 1000]}}}},
        "tests": {"t1": "c", "t2": "c"},
    }
    tests = (TestCase("t1", b"SQUARES 10\n", b""), TestCase("t2", b"CUBES 7\n", b""))
    return Program("branchy", BRANCHY_C, tests, inputs=InputGenerator.from_dict(spec))


def test_draws_that_keep_the_keywords_reach_the_samples_blocks(toolchain, sandbox) -> None:
    cov = measure_coverage(_program(["SQUARES", "CUBES"]), toolchain, sandbox, per_class=8)
    assert cov is not None and cov.fixed > 0 and cov.draws == 8
    assert cov.missed == 0 and cov.drawn >= cov.fixed


def test_draws_that_replace_a_keyword_by_noise_miss_blocks_and_make_it_unfit(
    toolchain, sandbox
) -> None:
    program = _program(["SQUARES", "XQUARES", "QUBES"])  # CUBES' path is never drawn
    cov = measure_coverage(program, toolchain, sandbox, per_class=8)
    assert cov is not None and cov.missed > 0
    report = EntropyReport(program.id, program.content_hash(), origin="learnt",
                           coverage=replace(cov, drawn=cov.fixed - 1).to_dict())
    assert any("basic blocks" in p for p in report.problems())
    report.coverage = cov.to_dict() | {"drawn": cov.fixed}
    assert not any("basic blocks" in p for p in report.problems())


def test_a_source_that_cannot_take_the_runtime_is_not_measured(toolchain, sandbox) -> None:
    clash = replace(_program(["SQUARES"]), source="void __sanitizer_cov_trace_pc(void){}\n"
                    + BRANCHY_C)
    assert measure_coverage(clash, toolchain, sandbox) is None
