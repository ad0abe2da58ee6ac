"""How judged answers are shown: the cells `eval`, `check` and `results` print alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from asmopt.cli.common import _interval, _pct, _ratio, print_table
from asmopt.measure.speedup import INTERVAL_NAME


def speedup_cells(speedup: Any) -> tuple[str, str, str]:
    """(speedup, interval, note) columns for one answer's measurement (None: not measured)."""
    if speedup is None:
        return "-", "-", ""
    status = str(speedup.status)
    if status == "copy":
        return "1.000x", "-", "copy"
    if status != "measured":
        return "-", "-", status
    note = (
        "faster"
        if speedup.significantly_faster
        else "slower"
        if speedup.significantly_slower
        else ""
    )
    if not speedup.reliable:
        note = (note + " unreliable").strip()
    return _ratio(speedup.ratio), _interval(speedup.low, speedup.high), note


def timing_warnings(o: Any) -> str:
    """The timing warnings the answer's stored measurement carries (e.g. high_load)."""
    sp = o.check.speedup
    return ", ".join(sorted({w for t in (sp.tests if sp else []) for w in t.warnings}))


def wall_s(o: Any) -> float:
    """Wall seconds of an answer: judging and measuring it, plus the policy's time for its
    program (counted on sample 0, as the policy answers all samples at once)."""
    policy_s = float((o.policy_info or {}).get("policy_s") or 0.0) if o.sample == 0 else 0.0
    return float(o.seconds) + policy_s


def outcome_rows(outcomes: Sequence[Any]) -> list[tuple[Any, ...]]:
    """One row per answer: program, sample, verdict, speedup cells, warnings, wall s."""
    rows = []
    for o in outcomes:
        speed, interval, note = speedup_cells(o.check.speedup)
        rows.append(
            (
                o.program_id,
                o.sample,
                o.check.verdict,
                speed,
                interval,
                note,
                timing_warnings(o),
                f"{wall_s(o):.1f}",
            )
        )
    return rows


OUTCOME_HEADERS = ["program", "sample", "verdict", "speedup", INTERVAL_NAME, "note", "warnings"]


def print_searches(outcomes: Sequence[Any], variants: bool) -> None:
    """What a compiler search chose per program (and with `variants`, every variant)."""
    from asmopt.report.search import budget_hits, program_searches, search_heading, variant_rows

    searches = program_searches(outcomes)
    if not searches:
        return
    print()
    for search in searches:
        print(search_heading(search))
        if variants:
            print_table(
                variant_rows(search), ["  variant", "outcome", "speedup", INTERVAL_NAME, "detail"]
            )
    scored = sum(s.selected_on_scored_input for s in searches)
    if scored:
        print(
            f"{scored} of {len(searches)} programs: variant selected on the scored input "
            "(one test, no held-out input); their speedups are optimistic"
        )
    hits = budget_hits(searches)
    if hits:
        print(f"hit the search budget: {', '.join(hits)}")


def print_best_of_n(summary: dict[str, Any]) -> None:
    """The honest and the oracle best-of-N lines of an evaluation's summary."""
    bon = summary["best_of_n"]
    for kind, what in (
        ("honest", "picked on the selection split, scored on all tests"),
        ("oracle", "picked on the tests it is scored on, as the reference"),
    ):
        ref = bon[kind]["reference"]
        print(
            f"  best-of-{bon['n']} {kind:6s} pass {_pct(ref['pass_rate'])}, speedup "
            f"{ref['speedup'] or 0:.3f}x, significantly faster "
            f"{_pct(bon[kind]['strict']['significantly_faster'])} ({what})"
        )
    scored = bon.get("selected_on_scored_input") or []
    if scored:
        print(
            f"  best-of-{bon['n']} honest: {len(scored)} of {summary['programs']} programs "
            "have one test, so their pick was selected on the scored input (as the oracle)"
        )
