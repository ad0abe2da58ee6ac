"""A program with a wasted loop that does not change its output, so that an answer may drop
it (a real speedup), and a policy that answers it with variants of the baseline's assembly."""

from __future__ import annotations

from asmopt.policies.base import Candidate, PolicyRequest
from asmopt.programs.model import Program, TestCase
from asmopt.toolchain import Toolchain

# The volatile loop (WORK * n rounds) does not change the output.
WASTE_C = r"""
#include <stdio.h>
int main(void) {
    long n; if (scanf("%ld", &n) != 1) return 1;
    volatile unsigned long waste = 0;
    for (long i = 0; i < WORK * n; i++) waste += i;
    unsigned long s = 0;
    for (long i = 0; i < n; i++) s += (unsigned long)i * i % 7;
    printf("%lu\n", s);
    return 0;
}
"""


def waste_program(*tests: TestCase) -> Program:
    """The program with a wasted loop of 2n rounds, judged on `tests`."""
    return Program(id="waste", source=WASTE_C.replace("WORK", "2"), tests=tests)


class WastePolicy:
    """Answers made from the baseline's assembly and a faster one (the program built without
    its wasted loop), as `answers` makes them; no more than the samples asked for."""

    name = "waste"

    def __init__(self, toolchain: Toolchain) -> None:
        self.toolchain = toolchain

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        lean = Program(id="lean", source=WASTE_C.replace("WORK", "0"), tests=())
        faster = self.toolchain.baseline_assembly(lean)
        answers = self.answers(request.baseline_asm, faster)
        return [Candidate(a) for a in answers][: request.num_samples]

    def answers(self, base: str, faster: str) -> list[str]:
        raise NotImplementedError
