"""What a compiler search did, per program, read back from a run's stored samples.

`compiler-search` keeps its whole record with each answer (`policy_info["search"]`): which
variant it chose, every variant it tried with its build/verdict and the speedup it measured
on the selection input with the interval, which input chose (a held-out split or, for a
program with one test, the scored input itself), its wall budget and whether that was hit.
The report, `results show -v` and `asmopt eval` print it from here, so nobody has to rebuild
the variants to learn what the search saw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from asmopt.evaluate import SampleOutcome

# How each stored variant status reads in a table.
STATUS_TEXT = {
    "chosen": "chosen",
    "not_chosen": "measured, not chosen",
    "slower_or_equal": "measured, not chosen",
    "failed": "failed",
    "duplicate": "same code as an earlier variant",
    "unavailable": "compiler not installed",
    "skipped_budget": "skipped (budget spent)",
}


@dataclass
class ProgramSearch:
    """One program's search, as stored with its first sample."""

    program_id: str
    chosen: str
    selection: str
    seconds: float | None
    budget_s: float | None
    budget_hit: bool
    variants: list[dict[str, Any]] = field(default_factory=list)

    @property
    def selected_on_scored_input(self) -> bool:
        return self.selection == "scored input"


def program_searches(outcomes: Sequence[SampleOutcome]) -> list[ProgramSearch]:
    """Every program whose answer carries a search record, in program order."""
    found: dict[str, ProgramSearch] = {}
    for o in sorted(outcomes, key=lambda o: (o.program_id, o.sample)):
        rec = (o.policy_info or {}).get("search")
        if not isinstance(rec, dict) or o.program_id in found:
            continue
        found[o.program_id] = ProgramSearch(
            program_id=o.program_id,
            chosen=str(rec.get("chosen", "?")),
            selection=str(rec.get("selection", "?")),
            seconds=rec.get("seconds"),
            budget_s=rec.get("budget_s"),
            budget_hit=bool(rec.get("budget_hit")),
            variants=[v for v in rec.get("tried", []) if isinstance(v, dict)],
        )
    return list(found.values())


def fmt_speedup(v: dict[str, Any]) -> tuple[str, str]:
    """(speedup, interval) cells of one variant ('-' when it was not measured)."""
    ratio, low, high = v.get("speedup"), v.get("low"), v.get("high")
    if ratio is None:
        return "-", "-"
    hi = "inf" if high is None or not math.isfinite(high) else f"{high:.3f}"
    lo = "-" if low is None else f"{low:.3f}"
    return f"{ratio:.3f}x", f"[{lo}, {hi}]"


def variant_rows(search: ProgramSearch) -> list[tuple[str, str, str, str, str]]:
    """(variant, outcome, speedup, interval, detail) per variant tried."""
    rows = []
    for v in search.variants:
        status = str(v.get("status", "?"))
        speed, interval = fmt_speedup(v)
        detail = " ".join(str(v.get("detail") or "").split())[:80]
        if detail == STATUS_TEXT.get(status):
            detail = ""
        rows.append(
            (
                str(v.get("name", "?")),
                STATUS_TEXT.get(status, status),
                speed,
                interval,
                detail,
            )
        )
    return rows


def search_heading(search: ProgramSearch) -> str:
    """One line: what was chosen, on which input, in how long, and whether the budget hit."""
    where = (
        "selected on the scored input (one test: no held-out input)"
        if search.selected_on_scored_input
        else f"selected on the {search.selection}"
    )
    took = f", {search.seconds:.1f}s" if isinstance(search.seconds, int | float) else ""
    budget = ""
    if search.budget_hit:
        budget = f", hit its {search.budget_s:g}s budget" if search.budget_s else ", hit its budget"
    return f"{search.program_id}: chose {search.chosen}; {where}{took}{budget}"


def budget_hits(searches: Sequence[ProgramSearch]) -> list[str]:
    return [s.program_id for s in searches if s.budget_hit]
