"""The policy that answers one fixed text, and the loop behind `asmopt eval` run on it with
timing: how the exploit tests send an attack's assembly through an evaluation."""

from __future__ import annotations

from asmopt.evaluate import MeasureOptions, SampleOutcome
from asmopt.measure.speedup import MeasureMode
from asmopt.measure.timing import TimingConfig
from asmopt.policies.base import Candidate, PolicyRequest
from asmopt.programs.model import Program
from asmopt.run import evaluate_programs
from asmopt.sandbox import Limits, Sandbox
from asmopt.toolchain import Toolchain


class FixedAnswer:
    """A policy whose every sample is the same assembly."""

    name = "fixed"

    def __init__(self, asm: str) -> None:
        self.asm = asm

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        return [Candidate(self.asm) for _ in range(request.num_samples)]


def eval_fixed(
    program: Program,
    asm: str,
    toolchain: Toolchain,
    sandbox: Sandbox,
    timing: TimingConfig,
    limits: Limits | None = None,
) -> SampleOutcome:
    """`asm` as the one sample of `program`, judged and timed with `timing` by the loop
    behind `asmopt eval` (one job)."""
    [outcome] = evaluate_programs(
        [program],
        FixedAnswer(asm),
        toolchain,
        sandbox,
        progress=False,
        jobs=1,
        limits=limits,
        measure=MeasureOptions(mode=MeasureMode.TIME, timing=timing),
    )
    return outcome
