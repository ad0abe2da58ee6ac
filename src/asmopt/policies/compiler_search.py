"""`compiler-search`: the strongest answer a compiler gives without a language model.

For each program it builds assembly from the C source with other flag sets (and clang when
installed), drops variants that fail any test or are copies of the baseline, times the rest
against the -O3 baseline on a SELECTION split of the tests, and answers with the fastest
variant whose speedup is significant (interval above 1) - else with the baseline itself.

Honesty: selection (timing, and the PGO profile) uses only the selection split (every other
test, see `selection_split`); the evaluation pipeline then re-judges the chosen answer
on every test with a fresh measurement, so the reported speedup does not carry the
selection's winner's-curse bias.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from typing import Any

from asmopt.evaluate import check_candidate
from asmopt.measure.canonical import canonical_hash
from asmopt.measure.speedup import MeasureStatus
from asmopt.measure.stats import combine_geometric
from asmopt.measure.timing import TimingConfig, time_test
from asmopt.policies.base import Candidate, PolicyRequest
from asmopt.programs.model import Program, TestCase
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


def selection_split(tests: tuple[TestCase, ...]) -> list[TestCase]:
    """Every other test in name order, counting back from the last one (about half).

    Used to choose, never to score. Counting from the end keeps the heaviest test of suites
    that list tests from small to large (ours, and most hand-written ones) in the selection,
    so the choice is not made on tests too short to time."""
    ordered = sorted(tests, key=lambda t: t.name)
    return sorted(ordered[::-1][::2], key=lambda t: t.name)


@dataclass
class Tried:
    name: str
    status: str  # chosen | slower_or_equal | failed | duplicate | unavailable | baseline_copy
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
    ) -> None:
        self._toolchain = toolchain
        self._sandbox = sandbox
        self.timing = timing or TimingConfig(target_half_width=0.02, max_pairs=40, budget_s=6.0)
        self.variants = variants
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
        selection = selection_split(program.tests)
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
            return baseline_asm, [Tried("baseline", "failed", base_build.message)]
        seen = {canonical_hash(baseline_asm)}
        tried: list[Tried] = []
        best: tuple[float, str, Tried] | None = None
        for name, cc, flags, pgo in self.variants:
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
            parts = []
            for test in sel_program.tests:
                out = time_test(self.sandbox, base_build.output, check.binary, test, self.timing)
                if out.failure is not None:
                    parts = []
                    break
                if out.speedup.status == MeasureStatus.MEASURED:
                    parts.append(out.speedup.interval)
            if not parts:
                tried.append(Tried(name, "failed", "could not be timed"))
                continue
            interval = combine_geometric(parts)
            record = Tried(name, "slower_or_equal", "", interval.ratio, interval.low, interval.high)
            tried.append(record)
            if interval.low > 1.0 and (best is None or interval.ratio > best[0]):
                best = (interval.ratio, asm, record)
        if best is None:
            return baseline_asm, tried
        best[2].status = "chosen"
        return best[1], tried

    def propose(self, request: PolicyRequest) -> list[Candidate]:
        asm, tried = self.search(request.program, request.baseline_asm)
        chosen = next((t.name for t in tried if t.status == "chosen"), "gcc -O3 (baseline)")
        extra = {"chosen": chosen, "tried": [t.to_dict() for t in tried]}
        return [
            Candidate(assembly=asm, raw_response="", extra=extra)
            for _ in range(request.num_samples)
        ]
