"""What every language-model policy shares: prompt in, answer text out, candidate back.

A back-end only has to implement `generate(messages_batch, n) -> list[list[Completion]]`;
prompting, extraction, the diff edit format and bookkeeping live here once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from asmopt.errors import AsmoptError, InputError
from asmopt.policies.base import Candidate, PolicyRequest
from asmopt.policies.diff_format import DiffError, apply_unified_diff
from asmopt.policies.extract import extract_assembly, extract_diff
from asmopt.policies.prompts import PromptTemplate, load_template


class PolicyError(AsmoptError, RuntimeError):
    """A configuration problem that stops the whole run (bad endpoint, key, model dir)."""


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    latency_s: float = 0.0


# Room for a whole answer: an answer is a complete assembly file, up to about 6,300 tokens
# on the built-in training split (docs/training.md), so the reference paper's 2,000 would cut
# most of them short. The same budget as the verl recipe's `max_response_length`.
ANSWER_TOKENS = 8192


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = ANSWER_TOKENS
    # The sampler's seed (an OpenAI request's `seed`); None leaves the sampler unseeded.
    sampling_seed: int | None = 0

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise InputError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise InputError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")


class Backend(Protocol):
    def generate(
        self, messages: list[dict[str, str]], n: int, params: SamplingParams
    ) -> list[Completion]: ...


def candidate_from_text(
    completion: Completion, template: PromptTemplate, baseline_asm: str
) -> Candidate:
    """Turn one raw answer into a candidate (assembly None = extraction_error)."""
    extra: dict[str, Any] = {
        "finish_reason": completion.finish_reason,
        "edit_format": template.edit_format,
    }
    assembly: str | None
    if template.edit_format == "diff":
        diff = extract_diff(completion.text)
        if diff is None:
            assembly = None
            extra["extraction_error"] = "no ```diff block in the answer"
        else:
            try:
                assembly = apply_unified_diff(baseline_asm, diff)
                # How much shorter the answer was than writing the file out in full.
                extra["diff_chars"] = len(diff)
                extra["full_chars"] = len(assembly)
            except DiffError as exc:
                assembly = None
                extra["extraction_error"] = f"diff does not apply: {exc}"
    else:
        assembly = extract_assembly(completion.text)
        if assembly is None:
            extra["extraction_error"] = "no assembly block in the answer"
    if completion.finish_reason == "length":
        extra["truncated"] = True
    return Candidate(
        assembly=assembly,
        raw_response=completion.text,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        latency_s=completion.latency_s,
        extra=extra,
    )


@dataclass
class LLMPolicy:
    """A policy around any back-end: renders the template, samples, extracts."""

    backend: Backend
    name: str = "llm"
    template: PromptTemplate = field(default_factory=lambda: load_template("reference"))
    params: SamplingParams = field(default_factory=SamplingParams)

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        messages = self.template.messages(
            request.program.source, request.baseline_asm, request.feedback
        )
        start = time.monotonic()
        completions = self.backend.generate(messages, request.num_samples, self.params)
        if len(completions) != request.num_samples:
            raise PolicyError(
                f"back-end returned {len(completions)} completions, {request.num_samples} requested"
            )
        elapsed = time.monotonic() - start
        out = []
        for c in completions:
            cand = candidate_from_text(c, self.template, request.baseline_asm)
            if not cand.latency_s:
                cand = Candidate(**{**cand.__dict__, "latency_s": elapsed / len(completions)})
            out.append(cand)
        return out
