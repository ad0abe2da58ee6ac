"""The policy interface: a program (and its baseline) in, candidate assembly texts out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from asmopt.programs.model import Program


@dataclass(frozen=True)
class PolicyRequest:
    """What a policy is given: the program, its -O3 assembly and optional feedback."""

    program: Program
    baseline_asm: str
    feedback: str | None = None
    num_samples: int = 1
    # Which sample indices are asked for (None: 0..num_samples-1). A resumed run asks only
    # for the unfinished ones; a policy that answers per index (answers files) needs them.
    samples: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Candidate:
    """One answer: the assembly (None when none could be extracted) and how it was made."""

    assembly: str | None
    raw_response: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    name: str

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        """Return `request.num_samples` candidates (fewer only on error, never silently)."""
        ...


class IdentityPolicy:
    """Returns the baseline unchanged: the pipeline's sanity check (100% build and pass)."""

    name = "identity"

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        return [
            Candidate(assembly=request.baseline_asm, raw_response=request.baseline_asm)
            for _ in range(request.num_samples)
        ]
