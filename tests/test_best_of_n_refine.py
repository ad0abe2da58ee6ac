"""Best-of-N (honest vs oracle selection) and iterative refinement with feedback."""

from __future__ import annotations

import pytest

from asmopt.best_of_n import best_of_n_metrics, pick
from asmopt.evaluate import CheckResult, SampleOutcome
from asmopt.judge import TestVerdict, Verdict
from asmopt.policies.base import Candidate, PolicyRequest
from asmopt.policies.refine import RefinePolicy
from asmopt.programs import load_builtin_suite
from asmopt.programs.model import Program, TestCase
from asmopt.programs.selection import selection_split
from asmopt.sandbox import Sandbox
from asmopt.toolchain import Toolchain

PROG = Program(
    id="p",
    source="int main(void){return 0;}\n",
    tests=tuple(TestCase(f"t{i}", b"", b"") for i in range(1, 5)),
)


def _outcome(sample: int, failing: set[str]) -> SampleOutcome:
    tests = [
        TestVerdict(t.name, Verdict.WRONG_OUTPUT if t.name in failing else Verdict.PASS)
        for t in PROG.tests
    ]
    verdict = Verdict.WRONG_OUTPUT if failing else Verdict.PASS
    return SampleOutcome("p", sample, CheckResult("p", verdict, "", tests))


def test_honest_selection_cannot_see_held_out_tests() -> None:
    visible = {t.name for t in selection_split(PROG.tests)}
    hidden = next(t.name for t in PROG.tests if t.name not in visible)
    # Sample 0 fails a held-out test; sample 1 fails a visible one and passes the held-out.
    outcomes = [_outcome(0, {hidden}), _outcome(1, {next(iter(visible))})]
    assert pick(outcomes, {"p": PROG}, honest=True)[0].sample == 0  # looks perfect on visible
    assert pick(outcomes, {"p": PROG}, honest=False)[0].sample == 0  # ties: 3 of 4 each
    outcomes.append(_outcome(2, set()))
    assert pick(outcomes, {"p": PROG}, honest=False)[0].sample == 2
    metrics = best_of_n_metrics([_outcome(0, {hidden}), _outcome(1, set())], {"p": PROG})
    assert metrics["n"] == 2
    # Honest picks sample 0 (ties on visible tests go to the lower index): it fails.
    assert metrics["honest"]["reference"]["pass_rate"] == 0.0
    assert metrics["oracle"]["reference"]["pass_rate"] == 1.0
    assert metrics["selected_on_scored_input"] == []


def test_one_test_programs_are_named_as_selected_on_the_scored_input() -> None:
    one = Program(id="q", source="int main(void){return 0;}\n", tests=(TestCase("t1", b"", b""),))
    outcomes = [SampleOutcome("q", i, CheckResult("q", Verdict.PASS, "", [])) for i in (0, 1)]
    outcomes.append(_outcome(0, set()))
    metrics = best_of_n_metrics(outcomes, {"p": PROG, "q": one})
    assert metrics["selected_on_scored_input"] == ["q"]


class _Scripted:
    """A deterministic policy that answers from a list, recording the feedback it got."""

    name = "scripted"

    def __init__(self, answers: list[str | None]) -> None:
        self.answers = answers
        self.feedback: list[str | None] = []

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        self.feedback.append(request.feedback)
        asm = self.answers[len(self.feedback) - 1]
        return [
            Candidate(
                assembly=asm,
                completion_tokens=10,
                extra={} if asm else {"extraction_error": "no assembly"},
            )
        ]


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_refinement_feeds_back_and_keeps_the_best_attempt(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    program = load_builtin_suite().select(split="test")[0]
    baseline = toolchain.baseline_assembly(program)
    inner = _Scripted([None, "\tmovq %rax\n", baseline])
    policy = RefinePolicy(inner, rounds=3, toolchain=toolchain, sandbox=sandbox)
    [cand] = policy.propose(PolicyRequest(program, baseline))
    assert cand.assembly == baseline
    assert inner.feedback[0] is None
    assert "extraction_error" in inner.feedback[1]
    assert "assemble_error" in inner.feedback[2] and "cand.s" in inner.feedback[2]
    assert [h["round"] for h in cand.extra["rounds"]] == [1, 2, 3]
    assert cand.completion_tokens == 30
    assert policy.name == "scripted+refine3"
