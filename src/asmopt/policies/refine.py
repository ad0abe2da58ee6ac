"""Iterative refinement: K rounds in which the model sees compact feedback and revises.

Feedback comes only from the SELECTION split of the tests (the same split best-of-N uses):
the first assembler errors, the first failing test's name and kind of difference (a failure
in a timed run among them), or the measured speedup. It never quotes a test's input, its
expected output or what the attempt printed, nor a value the attempt chose, such as an exit
code (policies/feedback.py): a model that could read them would learn the tests, not the
program. The answer returned is the best attempt on that split, and the evaluation
pipeline then judges it on every test, so tests the model was shown never decide its score
alone.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from asmopt.errors import InputError
from asmopt.evaluate import CheckResult, build_verdict, check_binary
from asmopt.judge import TestVerdict, Verdict
from asmopt.measure.speedup import MeasureStatus
from asmopt.measure.stats import combine_geometric
from asmopt.measure.timing import RunFailure, TimingConfig, time_test
from asmopt.policies.base import Candidate, Policy, PolicyRequest
from asmopt.policies.feedback import check_feedback, failure_feedback, format_feedback
from asmopt.programs.model import Program, TestCase
from asmopt.programs.selection import selection_split
from asmopt.sandbox.runner import Sandbox
from asmopt.toolchain import Toolchain

# How a refinement round times an attempt for its feedback: the eval's TimingConfig with a
# small budget (feedback needs faster / slower, not a +-2% interval; the final answer is
# measured by the evaluation itself).
REFINE_TIMING = TimingConfig(max_pairs=20, budget_s=3.0)


def _timed_failure(program: Program, test: TestCase, failure: RunFailure) -> str:
    """Feedback on an attempt that passed the selection split but failed in a timed run of
    `test` (it behaves otherwise when timed, or is flaky): the failure, told as any other
    (policies/feedback.py: that it was a timed run, never which), not "all tests passed"."""
    verdict = TestVerdict(
        test=test.name,
        verdict=failure.verdict,
        message=failure.message,
        difference=failure.difference,
        size_class=program.size_class(test.name),
    )
    return format_feedback(failure.verdict, failure_feedback(verdict, program))


class RefinePolicy:
    """Wraps any policy; `rounds` attempts per sample, each informed by the last."""

    def __init__(
        self,
        inner: Policy,
        rounds: int,
        toolchain: Toolchain,
        sandbox: Sandbox,
        timing: TimingConfig | None = None,
    ) -> None:
        if rounds < 1:
            raise InputError(f"rounds must be at least 1, got {rounds}")
        self.inner = inner
        self.rounds = rounds
        self.toolchain = toolchain
        self.sandbox = sandbox
        self.timing = timing or REFINE_TIMING
        self.name = f"{inner.name}+refine{rounds}"

    def _check(
        self, program: Program, assembly: str, selection: tuple[TestCase, ...]
    ) -> CheckResult:
        """`check_candidate` on the selection split only. The tests are handed to
        `check_binary` rather than put in a copy of the program, which would have to drop
        every field naming the other tests (examples, input classes) to stay valid."""
        try:
            build = self.toolchain.assemble_and_link(assembly, program.ldflags)
        except Exception as exc:  # the toolchain itself failed: ours
            return CheckResult(
                program.id, Verdict.INFRA_ERROR, f"toolchain error: {type(exc).__name__}: {exc}"
            )
        if not build.ok or build.output is None:
            return build_verdict(program.id, build)
        check = check_binary(program, build.output, self.sandbox, tests=selection)
        check.build_seconds = build.seconds
        return check

    def _judge(
        self, program: Program, baseline_asm: str, cand: Candidate
    ) -> tuple[tuple[int, float], str]:
        """(score on the selection split, feedback text) for one attempt."""
        if cand.assembly is None:
            why = cand.extra.get("extraction_error", "no assembly in the answer")
            return (-2, 0.0), format_feedback(Verdict.EXTRACTION_ERROR, why)
        selection = tuple(selection_split(program.tests))
        check = self._check(program, cand.assembly, selection)
        if not check.correct or check.binary is None:
            return ((-1 if not check.built else check.passed), 0.0), check_feedback(
                check, program
            )
        base = self.toolchain.assemble_and_link(baseline_asm, program.ldflags)
        parts = []
        if base.ok and base.output is not None:
            for test in selection:
                out = time_test(self.sandbox, base.output, check.binary, test, self.timing)
                if out.failure is not None and out.failure.candidate_fault:
                    return (len(selection) - 1, 0.0), _timed_failure(program, test, out.failure)
                if out.failure is None and out.speedup.status == MeasureStatus.MEASURED:
                    parts.append(out.speedup.interval)
        if not parts:
            return (len(selection), 0.0), format_feedback(Verdict.PASS)
        iv = combine_geometric(parts)
        return (len(selection), math.log(iv.ratio)), format_feedback(
            Verdict.PASS, speedup=iv.ratio, low=iv.low, high=iv.high
        )

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        out = []
        for _ in range(request.num_samples):
            feedback = request.feedback
            best: tuple[tuple[int, float], Candidate] | None = None
            history: list[dict[str, Any]] = []
            for r in range(self.rounds):
                [cand] = self.inner.propose(replace(request, feedback=feedback, num_samples=1))
                score, feedback = self._judge(request.program, request.baseline_asm, cand)
                history.append(
                    {
                        "round": r + 1,
                        "score": list(score),
                        "feedback": feedback,
                        "completion_tokens": cand.completion_tokens,
                    }
                )
                if best is None or score > best[0]:
                    best = (score, cand)
            assert best is not None
            chosen = best[1]
            extra = {**chosen.extra, "rounds": history}
            out.append(
                replace(
                    chosen,
                    extra=extra,
                    completion_tokens=sum(h["completion_tokens"] for h in history),
                )
            )
        return out
