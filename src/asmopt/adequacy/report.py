"""What one adequacy check found: the `AdequacyReport` (each trivial probe's verdict, the
mutants killed, surviving and equivalent, fit or unfit and why) and the `Mutation`s it
names, as stored in a program's `metadata.adequacy` mark. Apart from the check that fills
it (check.py), because the mark is read wherever a reward is paid, where nothing is built
or run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asmopt.errors import InputError
from asmopt.judge import Verdict

# A survivor that agrees with the baseline on this many drawn inputs of the light classes
# is reported as equivalent (EQUIVALENT_NOTE) and left out of the kill rate.
EQUIVALENCE_DRAWS = 1000
EQUIVALENT_NOTE = f"equivalent on {EQUIVALENCE_DRAWS} drawn inputs"


@dataclass(frozen=True)
class Mutation:
    """One changed instruction: where (function, 1-based line of the .s) and what."""

    function: str
    line: int
    original: str
    mutated: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "line": self.line,
            "original": self.original,
            "mutated": self.mutated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Mutation:
        return cls(
            function=str(data["function"]),
            line=int(data["line"]),
            original=str(data["original"]),
            mutated=str(data["mutated"]),
        )

    def describe(self) -> str:
        before, after = " ".join(self.original.split()), " ".join(self.mutated.split())
        return f"{self.function}:{self.line} {before} -> {after}"


@dataclass
class AdequacyReport:
    """The outcome of one adequacy check.

    `probes` maps each trivial probe to its verdict; `survivors` are the mutants that passed
    every test. `error` is set when our side failed (sandbox, toolchain): such a report is
    no judgement of the tests and is never stored as a mark."""

    program_id: str
    fit: bool
    reasons: list[str] = field(default_factory=list)
    probes: dict[str, Verdict] = field(default_factory=dict)
    mutants_killed: int = 0
    mutants_total: int = 0
    survivors: list[Mutation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tests: int = 0
    program_hash: str = ""
    error: str = ""
    checked_with: str = ""
    # Survivors that never differed from the baseline on EQUIVALENCE_DRAWS drawn inputs
    # (not in `survivors`, not counted in the kill rate).
    equivalent: list[Mutation] = field(default_factory=list)
    # Mutation (`describe()`) -> the test that killed it: a fixed test's name or a drawn
    # one's (`class~i`, the i-th draw of that class), so the kill rate at a smaller K can
    # be read off one check (`kill_rate_at`).
    killed_by: dict[str, str] = field(default_factory=dict)
    # How the mutants' drawn inputs were drawn ({"seed", "per_class"}; empty: fixed only).
    fresh: dict[str, int] = field(default_factory=dict)

    @property
    def checked(self) -> bool:
        return not self.error

    @property
    def mutation_score(self) -> float | None:
        """killed / built."""
        return self.mutants_killed / self.mutants_total if self.mutants_total else None

    @property
    def mutants_equivalent(self) -> int:
        return len(self.equivalent)

    @property
    def kill_rate(self) -> float | None:
        """killed / (built - equivalent): the share of mutants that can be caught that
        were caught (None when every built mutant is equivalent, or none was built)."""
        judged = self.mutants_total - self.mutants_equivalent
        return self.mutants_killed / judged if judged > 0 else None

    def summary(self) -> str:
        """One line: FIT/UNFIT and why."""
        if self.error:
            return f"not checked: {self.error}"
        score = (
            f"mutants killed {self.mutants_killed}/{self.mutants_total}"
            if self.mutants_total
            else "no mutants"
        )
        if self.equivalent:
            score += f", {self.mutants_equivalent} {EQUIVALENT_NOTE}"
        if self.fit:
            return f"fit ({score})" + (f"; warning: {self.warnings[0]}" if self.warnings else "")
        return "unfit: " + "; ".join(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "program": self.program_id,
            "fit": self.fit,
            "reasons": list(self.reasons),
            "probes": {name: str(v) for name, v in self.probes.items()},
            "mutants_killed": self.mutants_killed,
            "mutants_total": self.mutants_total,
            "survivors": [m.to_dict() for m in self.survivors],
            "warnings": list(self.warnings),
            "seconds": round(self.seconds, 3),
            "tests": self.tests,
            "program_hash": self.program_hash,
        }
        if self.equivalent:
            out["equivalent"] = [m.to_dict() for m in self.equivalent]
        if self.killed_by:
            out["killed_by"] = dict(self.killed_by)
        if self.fresh:
            out["fresh"] = dict(self.fresh)
        if self.error:
            out["error"] = self.error
        if self.checked_with:
            out["checked_with"] = self.checked_with
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdequacyReport:
        if not isinstance(data, dict) or "fit" not in data or "program" not in data:
            raise InputError("an adequacy report needs at least 'program' and 'fit'")
        if not isinstance(data["fit"], bool):  # bool("false") is True
            raise InputError(
                f"an adequacy report's 'fit' must be true or false, got {data['fit']!r}"
            )
        return cls(
            program_id=str(data["program"]),
            fit=bool(data["fit"]),
            reasons=[str(r) for r in data.get("reasons", [])],
            probes=_probes(data),
            mutants_killed=int(data.get("mutants_killed", 0)),
            mutants_total=int(data.get("mutants_total", 0)),
            survivors=[Mutation.from_dict(m) for m in data.get("survivors", [])],
            warnings=[str(w) for w in data.get("warnings", [])],
            seconds=float(data.get("seconds", 0.0)),
            tests=int(data.get("tests", 0)),
            program_hash=str(data.get("program_hash", "")),
            error=str(data.get("error", "")),
            checked_with=str(data.get("checked_with", "")),
            equivalent=[Mutation.from_dict(m) for m in data.get("equivalent", [])],
            killed_by={str(k): str(v) for k, v in dict(data.get("killed_by", {})).items()},
            fresh={str(k): int(v) for k, v in dict(data.get("fresh", {})).items()},
        )

    def to_mark(self, toolchain_identity: str) -> dict[str, Any]:
        """The dict stored as `metadata.adequacy` in program.json."""
        if self.error:
            raise InputError(f"{self.program_id}: an unchecked report is not a mark ({self.error})")
        return {**self.to_dict(), "checked_with": toolchain_identity}


def _probes(data: dict[str, Any]) -> dict[str, Verdict]:
    """A stored report's probe verdicts, each read back as the `Verdict` it names."""
    where = f"adequacy report of {data['program']}"
    return {
        str(k): Verdict.parse(v, f"{where}: probe {k}")
        for k, v in dict(data.get("probes", {})).items()
    }
