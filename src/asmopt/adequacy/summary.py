"""What a set of adequacy reports says: the mutants' kill rates per program and over all,
the kill rate had fewer inputs been drawn per class (`kill_rate_at`, read off the test
that killed each mutant), and the counts `suite verify --json` shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from asmopt.adequacy.report import AdequacyReport


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den > 0 else None


def kill_depth(test_name: str) -> int:
    """How many drawn inputs per class a check needs to fail on `test_name`: 0 for a fixed
    test, i for the i-th draw of a class (`class~i`)."""
    _, sep, index = test_name.rpartition("~")
    return int(index) if sep and index.isdigit() else 0


def kill_rate_at(reports: Sequence[AdequacyReport], per_class: int) -> dict[str, Any]:
    """The suite's kill rate had the mutants been judged with `per_class` drawn inputs per
    class instead (no more than the reports used): a mutant counts as killed when the test
    that killed it is a fixed test or a draw numbered `per_class` or lower. Draws with the
    same seed and label are the same whatever K is, so this is exact for one seed."""
    killed = built = equivalent = 0
    for r in reports:
        if not r.checked:
            continue
        built += r.mutants_total
        equivalent += r.mutants_equivalent
        killed += sum(kill_depth(t) <= per_class for t in r.killed_by.values())
    return {
        "per_class": per_class,
        "killed": killed,
        "built": built,
        "equivalent": equivalent,
        "rate": _rate(killed, built),
        "rate_nonequivalent": _rate(killed, built - equivalent),
    }


def kill_rates(reports: Sequence[AdequacyReport]) -> dict[str, dict[str, Any]]:
    """Program id -> killed, built, equivalent, killed / built and killed / (built -
    equivalent), for every checked program that built mutants."""
    return {
        r.program_id: {
            "killed": r.mutants_killed,
            "built": r.mutants_total,
            "equivalent": r.mutants_equivalent,
            "rate": _rate(r.mutants_killed, r.mutants_total),
            "rate_nonequivalent": _rate(r.mutants_killed, r.mutants_total - r.mutants_equivalent),
        }
        for r in reports
        if r.checked and r.mutants_total
    }


def kill_rate_lines(reports: Sequence[AdequacyReport]) -> list[str]:
    """One line per program with mutants and a total line, for a human reader."""
    rates = kill_rates(reports)
    lines = []
    for pid, k in rates.items():
        eq = f", {k['equivalent']} equivalent" if k["equivalent"] else ""
        share = k["rate_nonequivalent"]
        shown = f"{100 * share:.0f}%" if share is not None else "-"
        lines.append(f"{pid}: {k['killed']}/{k['built'] - k['equivalent']} killed ({shown}){eq}")
    killed = sum(k["killed"] for k in rates.values())
    judged = sum(k["built"] - k["equivalent"] for k in rates.values())
    if judged:
        lines.append(
            f"total: {killed}/{judged} non-equivalent mutants killed ({100 * killed / judged:.1f}%)"
        )
    return lines


def summarize_reports(reports: Sequence[AdequacyReport]) -> dict[str, Any]:
    """Counts, the unfit and unchecked programs with their reasons, and the mutation kill
    rates per program and over all (for --json)."""
    checked = [r for r in reports if r.checked]
    killed = sum(r.mutants_killed for r in checked)
    built = sum(r.mutants_total for r in checked)
    equivalent = sum(r.mutants_equivalent for r in checked)
    return {
        "checked": len(checked),
        "fit": sum(r.fit for r in checked),
        "unfit": {r.program_id: r.reasons for r in checked if not r.fit},
        "not_checked": {r.program_id: r.error for r in reports if not r.checked},
        "warnings": {r.program_id: r.warnings for r in checked if r.warnings},
        "kill_rates": kill_rates(reports),
        "mutants": {
            "killed": killed,
            "built": built,
            "equivalent": equivalent,
            "rate": _rate(killed, built),
            "rate_nonequivalent": _rate(killed, built - equivalent),
        },
    }
