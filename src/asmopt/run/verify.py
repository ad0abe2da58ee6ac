"""Verify a suite's own answers (`asmopt suite verify`): each program's reference answer
judged on its fixed tests and on drawn inputs, with the drawn outputs measured."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from asmopt.entropy import DRAWS as ENTROPY_DRAWS
from asmopt.entropy import EntropyReport, measure_entropy
from asmopt.evaluate import (
    CheckResult,
    check_binary,
)
from asmopt.fresh import FreshInputs, draw_inputs, expected_tests
from asmopt.judge import Verdict
from asmopt.parallel import parallel_map
from asmopt.programs.model import Program
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import Sandbox
from asmopt.toolchain import Toolchain


@dataclass
class VerifyOutcome:
    program_id: str
    o0: CheckResult
    o3: CheckResult
    # The -O0 build judged on drawn inputs against the -O3 build's outputs (None: the
    # program has fixed inputs only), and how many draws the -O3 build did not accept.
    drawn: CheckResult | None = None
    refused: int = 0
    # Both entropy measures of every timed class (asmopt.entropy); None: not measured
    # (fixed inputs only, or a build failed).
    entropy: EntropyReport | None = None

    @property
    def tabulable(self) -> list[str]:
        """Why a table of answers could pass this program's gradings (empty: none can)."""
        return self.entropy.problems() if self.entropy is not None else []

    @property
    def ok(self) -> bool:
        agree = self.drawn is None or (self.drawn.correct and self.refused == 0)
        return self.o0.correct and self.o3.correct and agree


# Draws per size class at `suite verify`: the baseline's output is the expected output of
# every drawn input later, so -O0 and -O3 must agree on many of them first.
VERIFY_DRAWS = 8


def verify_programs(
    programs: Iterable[Program],
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int = 2,
    progress: bool = True,
    limits: Limits | None = None,
    entropy_draws: int = ENTROPY_DRAWS,
) -> list[VerifyOutcome]:
    """Rebuild each program at -O0 and -O3 and check both pass every test, that both
    agree on drawn inputs, and (with `entropy_draws` > 0) that no answer of a timed class
    can be precomputed: declared entropy, distinct outputs over `entropy_draws` draws,
    every field changing the output (asmopt.entropy)."""
    programs = list(programs)

    def one(program: Program) -> VerifyOutcome:
        checks = []
        binaries = []
        for flags in (("-O0",), ("-O3",)):
            build = toolchain.compile_binary(program, flags)
            if not build.ok or build.output is None:
                verdict = Verdict.INFRA_ERROR if build.stage == "infra" else Verdict.ASSEMBLE_ERROR
                checks.append(CheckResult(program.id, verdict, f"gcc {flags[0]}: {build.message}"))
                binaries.append(None)
            else:
                checks.append(check_binary(program, build.output, sandbox, limits))
                binaries.append(build.output)
        outcome = VerifyOutcome(program.id, checks[0], checks[1])
        if program.inputs is not None and all(b is not None for b in binaries):
            outcome.drawn, outcome.refused = _verify_drawn(
                program, binaries[0], binaries[1], sandbox, limits
            )
            if entropy_draws > 0:
                outcome.entropy = measure_entropy(
                    program, toolchain, sandbox, draws=entropy_draws, limits=limits
                )
        return outcome

    return parallel_map(one, programs, jobs=jobs, desc="verify", progress=progress)


def _verify_drawn(
    program: Program, o0: Any, o3: Any, sandbox: Sandbox, limits: Limits | None
) -> tuple[CheckResult, int]:
    """The -O0 build on VERIFY_DRAWS inputs per class, judged by the -O3 build's outputs
    (the baseline's outputs are what every drawn input is judged by later)."""
    fresh = FreshInputs(per_class=VERIFY_DRAWS)
    drawn = draw_inputs(program, fresh, "verify")
    inputs = [(how["class"], test.stdin) for test, how in drawn]
    tests = expected_tests(program, o3, sandbox, inputs, limits)
    refused = len(inputs) - len(tests)
    result = check_binary(program, o0, sandbox, limits, tests=tests)
    if refused:
        result.message = f"the -O3 build refused {refused} of {len(inputs)} drawn inputs; " + (
            result.message
        )
    return result, refused
