"""Which of a program's basic blocks a set of inputs reaches: drawn inputs against fixed ones.

A learnt generator can draw inputs that never reach what the fixed tests exercise (a
keyword replaced by noise: 200 of 200 draws print `nope`), and a grading on them then
tests less than the sample did. The measure: the program built at -O0 with gcc's
`-fsanitize-coverage=trace-pc` (a call at the head of every basic block) and a small
runtime of ours appended to its source, which records each block's address once and, at
exit, writes the blocks reached to stderr as offsets from a fixed symbol (stable across
runs despite address randomisation). The build and every run go through the toolchain and
the program sandbox like any other; a run that ends without its report (a crash, a
timeout, `_exit`) counts no block.

`measure_coverage` compares the blocks the fixed tests reach with those reached by draws
of the program's classes: `fixed`, `drawn` (each a count of distinct blocks) and `missed`
(blocks of the fixed tests that no draw reached).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.programs.model import Program

if TYPE_CHECKING:
    from asmopt.sandbox.records import Limits
    from asmopt.sandbox.runner import Sandbox
    from asmopt.toolchain import Toolchain

COVERAGE_FLAGS = ("-O0", "-fsanitize-coverage=trace-pc")
# Draws of each class whose blocks are pooled.
DRAWS_PER_CLASS = 16
REPORT_TAG = b"ASMOPT-COVERAGE"

# Appended to the program's source. Its own functions are not instrumented; it uses only
# the C library's headers (guarded, so a program that includes them is unaffected).
RUNTIME = r"""
#include <stdio.h>
#include <unistd.h>
#define ASMOPT_COV_SLOTS 65536UL
static unsigned long asmopt_cov_seen[ASMOPT_COV_SLOTS];
static unsigned long asmopt_cov_count;
__attribute__((no_sanitize_coverage)) void __sanitizer_cov_trace_pc(void)
{
    unsigned long pc = (unsigned long)__builtin_return_address(0);
    unsigned long h = (pc * 0x9E3779B97F4A7C15UL) >> 48;
    while (asmopt_cov_seen[h] != pc) {
        if (asmopt_cov_seen[h] == 0) {
            if (asmopt_cov_count + 1 < ASMOPT_COV_SLOTS) {
                asmopt_cov_seen[h] = pc;
                asmopt_cov_count++;
            }
            return;
        }
        h = (h + 1) & (ASMOPT_COV_SLOTS - 1);
    }
}
__attribute__((no_sanitize_coverage, destructor)) static void asmopt_cov_report(void)
{
    char line[32];
    unsigned long base = (unsigned long)&__sanitizer_cov_trace_pc;
    fflush(stdout);
    write(2, "\nASMOPT-COVERAGE", 16);
    for (unsigned long k = 0; k < ASMOPT_COV_SLOTS; k++) {
        if (asmopt_cov_seen[k]) {
            int n = snprintf(line, sizeof line, " %lx", asmopt_cov_seen[k] - base);
            write(2, line, (unsigned long)n);
        }
    }
    write(2, "\n", 1);
}
"""


@dataclass(frozen=True)
class Coverage:
    """Distinct basic blocks reached by the fixed tests and by the draws, and how many of
    the fixed tests' blocks no draw reached; None where the program could not be built
    for it (its source and the runtime disagree: a macro, a name of its own)."""

    fixed: int
    drawn: int
    missed: int
    draws: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def coverage_binary(program: Program, toolchain: Toolchain) -> Path | None:
    """The program built to report the blocks it reaches, or None where it cannot be."""
    covered = replace(program, source=program.source + "\n" + RUNTIME)
    build = toolchain.compile_binary(covered, COVERAGE_FLAGS)
    return Path(build.output) if build.ok and build.output is not None else None


def blocks_reached(
    binary: Path, sandbox: Sandbox, stdin: bytes, argv: tuple[str, ...], limits: Limits
) -> frozenset[int]:
    """The blocks one run reaches (none when it ends without its report)."""
    run = sandbox.run_program(binary, argv=argv, stdin=stdin, limits=limits)
    at = run.stderr.rfind(REPORT_TAG)
    if at < 0:
        return frozenset()
    line = run.stderr[at + len(REPORT_TAG) :].split(b"\n", 1)[0]
    try:
        return frozenset(int(word, 16) for word in line.split())
    except ValueError:
        return frozenset()


def measure_coverage(
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    per_class: int = DRAWS_PER_CLASS,
    input_seed: int = 0,
    limits: Limits | None = None,
) -> Coverage | None:
    """Blocks reached by the fixed tests against those reached by `per_class` draws of
    each class; None without a generator or where the coverage build fails."""
    from asmopt.programs.generators import derive_seed

    if program.inputs is None:
        return None
    binary = coverage_binary(program, toolchain)
    if binary is None:
        return None
    limits = limits or sandbox.limits
    fixed: set[int] = set()
    for test in program.tests:
        fixed |= blocks_reached(binary, sandbox, test.stdin, tuple(test.argv), limits)
    argv = tuple(program.tests[0].argv) if program.tests else ()
    drawn: set[int] = set()
    draws = 0
    for size_class in program.inputs.class_names:
        for k in range(per_class):
            seed = derive_seed(input_seed, "coverage", size_class, k)
            stdin = program.inputs.draw(size_class, seed)
            drawn |= blocks_reached(binary, sandbox, stdin, argv, limits)
            draws += 1
    return Coverage(fixed=len(fixed), drawn=len(drawn), missed=len(fixed - drawn), draws=draws)
