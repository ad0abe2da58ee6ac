"""A policy that answers from a list, one answer a round, for tests of what refinement
rounds tell a policy."""

from __future__ import annotations

from asmopt.policies.base import Candidate, PolicyRequest


class ScriptedPolicy:
    """Answers from a list, recording the feedback each round was given."""

    name = "scripted"

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.feedback: list[str | None] = []

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        self.feedback.append(request.feedback)
        return [Candidate(assembly=self.answers[len(self.feedback) - 1], completion_tokens=1)]
