"""`compiler-search`: the strongest answer a compiler gives without a language model.

For each program it builds assembly from the C source with other flag sets (and clang when
installed), drops variants that fail any test or are copies of the baseline, times the rest
against the -O3 baseline on a SELECTION split of the tests, and answers with the fastest
variant whose speedup is significant (interval above 1) - else with the baseline itself.

Honesty: selection (timing, and the PGO profile) uses only the selection split (every other
test, see `programs.selection`); the evaluation pipeline then re-judges the chosen answer
on every test with a fresh measurement, so the reported speedup does not carry the
selection's winner's-curse bias. A program with a single test has no held-out input: the
choice (and the PGO profile) is then made on the input it is scored on, and the record says
so (`selection: "scored input"`), like the oracle best-of-N.

Transparency: every variant tried - its build, verdict, and measured speedup with its
interval on the selection split - goes into the answer's `extra["search"]`, which the
evaluation stores with the sample (policy_info) and `asmopt report` / `results show -v`
print. Budget: a program's search stops starting new variants after `budget_s` seconds of
wall time (each timing is also capped by what is left); the record says when it did.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from asmopt.errors import InputError
from asmopt.evaluate import CheckResult, check_candidate, reference_runs
from asmopt.measure.canonical import canonical_hash
from asmopt.measure.speedup import MeasureStatus
from asmopt.measure.stats import combine_geometric
from asmopt.measure.timing import TimingConfig, time_candidates
from asmopt.policies.base import Candidate, PolicyRequest
from asmopt.programs.model import Program, TestCase
from asmopt.programs.selection import selection_split
from asmopt.sandbox.runner import Sandbox, default_sandbox
from asmopt.toolchain import Toolchain, default_toolchain

log = logging.getLogger(__name__)

# (name, compiler, flags, profile-guided)
VARIANTS: tuple[tuple[str, str, tuple[str, ...], bool], ...] = (
    ("gcc -O2", "gcc", ("-O2",), False),
    ("gcc -Os", "gcc", ("-Os",), False),
    ("gcc -O3 -funroll-loops", "gcc", ("-O3", "-funroll-loops"), False),
    ("gcc -O3 -march=native", "gcc", ("-O3", "-march=native"), False),
    (
        "gcc -O3 -march=native -funroll-loops",
        "gcc",
        ("-O3", "-march=native", "-funroll-loops"),
        False,
    ),
    ("gcc -O3 PGO", "gcc", ("-O3",), True),
    ("gcc -O3 -march=native PGO", "gcc", ("-O3", "-march=native"), True),
    ("clang -O3", "clang", ("-O3",), False),
    ("clang -O3 -march=native", "clang", ("-O3", "-march=native"), False),
)


# Wall seconds one program's search may take (building, checking and timing all variants).
DEFAULT_BUDGET_S = 180.0
SCORED_INPUT = "scored input"
BASELINE_NAME = "gcc -O3 (baseline: no variant significantly faster)"
HELD_OUT = "held-out split"


# How a search times each variant while choosing: the eval's TimingConfig with a smaller
# budget, since a search times up to a dozen variants per program and only needs to rank
# them (the chosen answer is then measured by the evaluation itself, to its own target).
SEARCH_TIMING = TimingConfig(max_pairs=40, budget_s=6.0)


@dataclass
class Tried:
    name: str
    # chosen | not_chosen | failed | duplicate | unavailable | skipped_budget
    status: str
    detail: str = ""
    speedup: float | None = None
    low: float | None = None
    high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class CompilerSearchPolicy:
    """The non-LLM reference every model must beat."""

    name = "compiler-search"

    def __init__(
        self,
        toolchain: Toolchain | None = None,
        sandbox: Sandbox | None = None,
        timing: TimingConfig | None = None,
        variants: tuple = VARIANTS,
        budget_s: float = DEFAULT_BUDGET_S,
    ) -> None:
        if budget_s <= 0:
            raise InputError(f"compiler-search budget must be positive, got {budget_s}")
        self._toolchain = toolchain
        self._sandbox = sandbox
        self.timing = timing or SEARCH_TIMING
        self.variants = variants
        self.budget_s = budget_s
        self._others: dict[str, Toolchain] = {}

    @property
    def toolchain(self) -> Toolchain:
        if self._toolchain is None:
            self._toolchain = default_toolchain()
        return self._toolchain

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = default_sandbox()
        return self._sandbox

    def _compiler(self, cc: str) -> Toolchain | None:
        if cc == self.toolchain.cc:
            return self.toolchain
        if shutil.which(cc) is None:
            return None
        if cc not in self._others:
            self._others[cc] = Toolchain(
                cc, sandbox=self.sandbox, cache_dir=self.toolchain.cache_dir
            )
        return self._others[cc]

    def _assembly(
        self,
        program: Program,
        cc: str,
        flags: tuple[str, ...],
        pgo: bool,
        selection: list[TestCase],
    ) -> tuple[str | None, str]:
        tc = self._compiler(cc)
        if tc is None:
            return None, f"{cc} is not installed"
        if pgo:
            build = tc.compile_assembly_pgo(program, [t.stdin for t in selection], flags)
        else:
            build = tc.compile_assembly(program, flags)
        if not build.ok or build.output is None:
            return None, build.message
        return build.output.read_text(encoding="utf-8", errors="replace"), ""

    def search(self, program: Program, baseline_asm: str) -> tuple[str, list[Tried]]:
        """Return the chosen assembly and the record of every variant tried."""
        asm, tried, _ = self.search_record(program, baseline_asm)
        return asm, tried

    def search_record(
        self, program: Program, baseline_asm: str
    ) -> tuple[str, list[Tried], dict[str, Any]]:
        """(chosen assembly, every variant tried, the search's own record: which input chose,
        the budget and whether it was hit, the wall time). Local, as programs are searched
        in parallel threads by one policy object."""
        start = time.monotonic()
        selection = selection_split(program.tests)
        held_out = len(selection) < len(program.tests)
        info: dict[str, Any] = {
            "selection": HELD_OUT if held_out else SCORED_INPUT,
            "selection_tests": [t.name for t in selection],
            "budget_s": self.budget_s,
            "budget_hit": False,
        }
        sel_program = Program(
            id=program.id,
            source=program.source,
            tests=tuple(selection),
            headers=program.headers,
            cflags=program.cflags,
            ldflags=program.ldflags,
        )
        base_build = self.toolchain.assemble_and_link(baseline_asm, program.ldflags)
        if not base_build.ok or base_build.output is None:
            return baseline_asm, [Tried("baseline", "failed", base_build.message)], info
        seen = {canonical_hash(baseline_asm)}
        tried: list[Tried] = []
        correct: list[tuple[Tried, str, CheckResult]] = []
        # Build and check every variant first, then time the correct ones together: they
        # share the baseline's runs (measure/timing: K candidates cost (K+1)/K runs a pair).
        for name, cc, flags, pgo in self.variants:
            left = self.budget_s - (time.monotonic() - start)
            if left <= 0:
                info["budget_hit"] = True
                tried.append(
                    Tried(name, "skipped_budget", f"the {self.budget_s:g}s search budget was spent")
                )
                continue
            asm, why = self._assembly(program, cc, flags, pgo, selection)
            if asm is None:
                status = "unavailable" if "not installed" in why else "failed"
                tried.append(Tried(name, status, why))
                continue
            digest = canonical_hash(asm)
            if digest in seen:
                tried.append(Tried(name, "duplicate", "same code as an earlier variant"))
                continue
            seen.add(digest)
            check = check_candidate(program, asm, self.toolchain, self.sandbox)
            if not check.correct or check.binary is None:
                tried.append(Tried(name, "failed", f"{check.verdict}: {check.message}"))
                continue
            record = Tried(name, "not_chosen")
            tried.append(record)
            correct.append((record, asm, check))
        best = self._time_variants(base_build.output, correct, sel_program, start, info)
        info["seconds"] = round(time.monotonic() - start, 3)
        if best is None:
            return baseline_asm, tried, info
        best[2].status = "chosen"
        return best[1], tried, info

    def _time_variants(
        self,
        baseline: Path,
        correct: list[tuple[Tried, str, CheckResult]],
        sel_program: Program,
        start: float,
        info: dict[str, Any],
    ) -> tuple[float, str, Tried] | None:
        """Time the correct variants together on the selection tests, within what is left
        of the budget; fill in each one's record; return the best significantly faster."""
        left = self.budget_s - (time.monotonic() - start)
        if not correct:
            return None
        if left <= 0:
            info["budget_hit"] = True
            for record, _, _ in correct:
                record.status, record.detail = "failed", "the search budget ran out before timing"
            return None
        tests = list(sel_program.tests)
        # Each (variant, test) gets its share of what is left (a share of a block's baseline
        # run is charged to each variant in it, so the shares add up to the wall time).
        share = left / (len(correct) * len(tests))
        timing = replace(self.timing, budget_s=max(0.05, min(self.timing.budget_s, share)))
        results = time_candidates(
            self.sandbox,
            baseline,
            [check.binary for _, _, check in correct],  # type: ignore[misc]
            tests,
            timing,
            references=[reference_runs(check, tests) for _, _, check in correct],
        )
        if time.monotonic() - start > self.budget_s:
            info["budget_hit"] = True
        best: tuple[float, str, Tried] | None = None
        for (record, asm, _), (speedups, failure, failed) in zip(correct, results, strict=True):
            parts = [sp.interval for sp in speedups if sp.status == MeasureStatus.MEASURED]
            if failure is not None or len(parts) < len(tests):
                record.status = "failed"
                record.detail = (
                    f"timing failed on {failed}: {failure.message}"
                    if failure is not None
                    else "could not be timed"
                )
                continue
            interval = combine_geometric(parts)
            record.speedup, record.low, record.high = interval.ratio, interval.low, interval.high
            if interval.low > 1.0 and (best is None or interval.ratio > best[0]):
                best = (interval.ratio, asm, record)
        return best

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        asm, tried, info = self.search_record(request.program, request.baseline_asm)
        chosen = next((t.name for t in tried if t.status == "chosen"), BASELINE_NAME)
        record = [t.to_dict() for t in tried]
        search = {**info, "chosen": chosen, "tried": record}
        extra = {"chosen": chosen, "tried": record, "search": search}
        return [
            Candidate(assembly=asm, raw_response="", extra=extra)
            for _ in range(request.num_samples)
        ]
