"""Run a policy over a suite: baseline -> candidates -> checks, in parallel, with progress.

This is the loop behind `asmopt eval` and `asmopt suite verify`. It never drops a sample:
every (program, sample) pair ends with a recorded verdict, `infra_error` included.
"""

from __future__ import annotations

import logging
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from asmopt.evaluate import CheckResult, Verdict, check_binary, check_candidate
from asmopt.policies.base import Policy, PolicyRequest
from asmopt.programs.model import Program
from asmopt.sandbox.runner import Limits, Sandbox
from asmopt.toolchain import Toolchain, ToolchainError

log = logging.getLogger(__name__)


@dataclass
class SampleOutcome:
    """One candidate for one program, judged."""

    program_id: str
    sample: int
    check: CheckResult
    assembly: str | None = None
    policy_info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program_id,
            "sample": self.sample,
            **self.check.to_dict(),
            "policy": self.policy_info,
        }


def _judge_program(
    program: Program,
    policy: Policy,
    toolchain: Toolchain,
    sandbox: Sandbox,
    samples: int,
    limits: Limits | None,
) -> list[SampleOutcome]:
    try:
        baseline = toolchain.baseline_assembly(program)
    except ToolchainError as exc:
        return [
            SampleOutcome(
                program.id, i, CheckResult(program.id, Verdict.INFRA_ERROR, f"baseline: {exc}")
            )
            for i in range(samples)
        ]
    try:
        candidates = policy.propose(
            PolicyRequest(program=program, baseline_asm=baseline, num_samples=samples)
        )
    except Exception as exc:
        log.error("policy %s failed on %s: %s", policy.name, program.id, traceback.format_exc())
        return [
            SampleOutcome(
                program.id,
                i,
                CheckResult(
                    program.id, Verdict.INFRA_ERROR, f"policy error: {type(exc).__name__}: {exc}"
                ),
            )
            for i in range(samples)
        ]
    outcomes = []
    for i in range(samples):
        if i >= len(candidates):
            check = CheckResult(
                program.id,
                Verdict.INFRA_ERROR,
                f"policy returned {len(candidates)} of {samples} samples",
            )
            outcomes.append(SampleOutcome(program.id, i, check))
            continue
        cand = candidates[i]
        info = {
            "prompt_tokens": cand.prompt_tokens,
            "completion_tokens": cand.completion_tokens,
            "latency_s": cand.latency_s,
        }
        if cand.assembly is None:
            check = CheckResult(
                program.id, Verdict.EXTRACTION_ERROR, "the response contains no assembly"
            )
        else:
            check = check_candidate(program, cand.assembly, toolchain, sandbox, limits)
        outcomes.append(SampleOutcome(program.id, i, check, cand.assembly, info))
    return outcomes


def evaluate_programs(
    programs: Sequence[Program],
    policy: Policy,
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    samples: int = 1,
    jobs: int = 2,
    limits: Limits | None = None,
    progress: bool = True,
    on_result: Callable[[SampleOutcome], None] | None = None,
) -> list[SampleOutcome]:
    """Judge `samples` candidates per program; results come back in program order."""
    results: dict[str, list[SampleOutcome]] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {
            pool.submit(_judge_program, p, policy, toolchain, sandbox, samples, limits): p
            for p in programs
        }
        bar = tqdm(
            total=len(futures),
            desc=f"eval {policy.name}",
            unit="prog",
            disable=not progress,
            leave=False,
        )
        for fut in as_completed(futures):
            program = futures[fut]
            try:
                outs = fut.result()
            except Exception as exc:  # a bug of ours: record it, never drop the sample
                log.error("evaluation of %s raised: %s", program.id, traceback.format_exc())
                outs = [
                    SampleOutcome(
                        program.id,
                        i,
                        CheckResult(
                            program.id,
                            Verdict.INFRA_ERROR,
                            f"grader error: {type(exc).__name__}: {exc}",
                        ),
                    )
                    for i in range(samples)
                ]
            results[program.id] = outs
            for out in outs:
                if on_result is not None:
                    on_result(out)
            bar.update(1)
        bar.close()
    return [o for p in programs for o in results[p.id]]


@dataclass
class VerifyOutcome:
    program_id: str
    o0: CheckResult
    o3: CheckResult

    @property
    def ok(self) -> bool:
        return self.o0.correct and self.o3.correct


def verify_programs(
    programs: Iterable[Program],
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int = 2,
    progress: bool = True,
    limits: Limits | None = None,
) -> list[VerifyOutcome]:
    """Rebuild each program at -O0 and -O3 and check both pass every test."""
    programs = list(programs)

    def one(program: Program) -> VerifyOutcome:
        checks = []
        for flags in (("-O0",), ("-O3",)):
            build = toolchain.compile_binary(program, flags)
            if not build.ok or build.output is None:
                verdict = Verdict.INFRA_ERROR if build.stage == "infra" else Verdict.ASSEMBLE_ERROR
                checks.append(CheckResult(program.id, verdict, f"gcc {flags[0]}: {build.message}"))
            else:
                checks.append(check_binary(program, build.output, sandbox, limits))
        return VerifyOutcome(program.id, checks[0], checks[1])

    out: dict[str, VerifyOutcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(one, p): p for p in programs}
        bar = tqdm(
            total=len(futures), desc="verify", unit="prog", disable=not progress, leave=False
        )
        for fut in as_completed(futures):
            out[futures[fut].id] = fut.result()
            bar.update(1)
        bar.close()
    return [out[p.id] for p in programs]


def summarize(outcomes: Sequence[SampleOutcome]) -> dict[str, Any]:
    """Counts and rates; infra errors are excluded from the denominators and reported apart."""
    verdicts = Counter(str(o.check.verdict) for o in outcomes)
    judged = [o for o in outcomes if o.check.verdict != Verdict.INFRA_ERROR]
    n = len(judged)
    built = sum(o.check.verdict.built for o in judged)
    passed = sum(o.check.correct for o in judged)
    return {
        "samples": len(outcomes),
        "programs": len({o.program_id for o in outcomes}),
        "judged": n,
        "infra_errors": verdicts.get(str(Verdict.INFRA_ERROR), 0),
        "build_rate": built / n if n else None,
        "pass_rate": passed / n if n else None,
        "verdicts": dict(sorted(verdicts.items())),
    }
