"""Collect a run's data from the store: what the HTML and Markdown reports show.

Collection is kept apart from rendering (`asmopt.report.render`): everything here reads the
store and computes; nothing here knows about markup.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from asmopt.errors import InputError
from asmopt.evaluate import SampleOutcome
from asmopt.measure.speedup import MeasureStatus, ProgramSpeedup
from asmopt.report.search import ProgramSearch, program_searches
from asmopt.run import UNFIT_META_KEY, summarize
from asmopt.store import ResultStore


@dataclass
class Win:
    program_id: str
    sample: int
    ratio: float
    low: float
    high: float
    # A side-by-side table from difflib.HtmlDiff, which escapes every assembly line itself.
    diff_html: str
    diff_text: str


@dataclass
class ReportData:
    meta: dict[str, Any]
    summary: dict[str, Any]
    outcomes: list[SampleOutcome]
    rows: list[dict[str, Any]]
    taxonomy: list[tuple[str, int, str]]
    measure_status: list[tuple[str, int, str]]
    plot_points: list[tuple[str, float, float, float, bool]]
    wins: list[Win] = field(default_factory=list)
    # Evaluated programs whose tests are inadequate (docs/adequacy.md): id -> why.
    unfit: dict[str, str] = field(default_factory=dict)
    # What compiler-search tried per program (empty for other policies).
    searches: list[ProgramSearch] = field(default_factory=list)

    def unfit_warnings(self) -> list[str]:
        """One warning line per unfit program of the evaluated suite."""
        return [
            f"Warning: {pid} is marked unfit: its tests accept a trivial or mutated program "
            f"({why}); its pass rate and speedups may reward wrong answers."
            for pid, why in sorted(self.unfit.items())
        ]

    def budget_warnings(self) -> list[str]:
        """One line naming the answers whose timing stopped on a budget rather than on its
        target or a settled answer: their intervals may be wider than the target."""
        hits: list[str] = []
        for o in self.outcomes:
            sp = o.check.speedup
            if sp is None:
                continue
            stopped = {t.context.get("stopped") for t in sp.tests}
            if stopped & {"budget", "candidate_budget"}:
                hits.append(f"{o.program_id}#{o.sample}")
        if not hits:
            return []
        return [
            f"Timing stopped on its budget (--timing-budget, or the per-candidate budget) "
            f"before the target for {len(hits)} answer(s): {', '.join(hits)}; their "
            "intervals may be wider than the target."
        ]


class MixedSuitesError(InputError):
    """The run directory holds results of more than one suite; a report of it would mix
    programs that were never evaluated together."""


def suites_of(meta: dict[str, Any]) -> list[str]:
    """Every suite identity (`NAME@HASH`) recorded for the run and its sessions."""
    found = {str((meta.get("run") or {}).get("suite_id") or "")}
    found |= {str(s.get("suite_id") or "") for s in meta.get("sessions") or []}
    return sorted(f for f in found if f)


def collect(store: ResultStore, wins: int = 3) -> ReportData:
    """Everything a report shows, read from the store only (never by re-running anything);
    `wins` is how many of the largest wins get an assembly diff."""
    meta = store.meta()
    refuse_mixed_suites(store, meta)
    outcomes = store.load_outcomes()
    return ReportData(
        meta=meta,
        summary=summarize(outcomes),
        outcomes=outcomes,
        rows=[answer_row(o) for o in outcomes],
        taxonomy=verdict_taxonomy(outcomes),
        measure_status=measure_taxonomy(outcomes),
        plot_points=plot_points(outcomes),
        wins=largest_wins(store, outcomes, wins),
        unfit=unfit_programs(meta, outcomes),
        searches=program_searches(outcomes),
    )


def refuse_mixed_suites(store: ResultStore, meta: dict[str, Any]) -> None:
    """A run directory evaluated against more than one suite gets no report."""
    suites = suites_of(meta)
    if len(suites) > 1:
        raise MixedSuitesError(
            f"{store.path.parent} holds results of {len(suites)} suites ({', '.join(suites)}); "
            "a report would mix them: evaluate each suite into its own --run-dir"
        )


def _is_measured(sp: ProgramSpeedup | None) -> bool:
    return sp is not None and sp.status == MeasureStatus.MEASURED


def _significance(sp: ProgramSpeedup | None) -> str:
    if sp and sp.significantly_faster:
        return "faster"
    if sp and sp.significantly_slower:
        return "slower"
    return ""


def _wall_seconds(o: SampleOutcome) -> float:
    """Wall seconds spent on this answer: judging and measuring it, plus (once per
    program) the policy's own time to propose it."""
    policy_s = float((o.policy_info or {}).get("policy_s") or 0.0) if o.sample == 0 else 0.0
    return o.seconds + policy_s


def answer_row(o: SampleOutcome) -> dict[str, Any]:
    """One answer as the per-answer table shows it (values, not yet formatted)."""
    sp = o.check.speedup
    measured = _is_measured(sp)
    warnings = sorted({w for t in (sp.tests if sp else []) for w in t.warnings})
    return {
        "program": o.program_id,
        "sample": o.sample,
        "verdict": o.check.verdict,
        "tests": f"{o.check.passed}/{o.check.total}",
        "speedup": sp.ratio if sp and sp.has_ratio else None,
        "low": sp.low if sp is not None and measured else None,
        "high": sp.high if sp is not None and measured else None,
        "status": str(sp.status) if sp else "–",
        "significance": _significance(sp),
        "reliable": sp.reliable if sp else None,
        "copy": o.is_copy,
        "warnings": ", ".join(warnings),
        "message": "" if o.check.correct else o.check.message,
        "wall_s": _wall_seconds(o),
    }


def plot_points(outcomes: Sequence[SampleOutcome]) -> list[tuple[str, float, float, float, bool]]:
    """(label, ratio, low, high, significantly faster) of every measured answer."""
    points = []
    for o in outcomes:
        sp = o.check.speedup
        if sp is not None and _is_measured(sp):
            label = o.program_id if o.sample == 0 else f"{o.program_id}#{o.sample}"
            points.append((label, sp.ratio, sp.low, sp.high, sp.significantly_faster))
    return points


def tally(labelled: Sequence[tuple[str, str]]) -> list[tuple[str, int, str]]:
    """(label, count, first example) per label of (label, example) pairs, most common first
    (ties in the order the labels first appear)."""
    examples: dict[str, str] = {}
    for label, example in labelled:
        examples.setdefault(label, example)
    counts = Counter(label for label, _ in labelled)
    return [(label, n, examples[label]) for label, n in counts.most_common()]


def verdict_taxonomy(outcomes: Sequence[SampleOutcome]) -> list[tuple[str, int, str]]:
    """How many answers got each verdict, with one example message each."""
    return tally([(str(o.check.verdict), f"{o.program_id}: {o.check.message}") for o in outcomes])


def measure_taxonomy(outcomes: Sequence[SampleOutcome]) -> list[tuple[str, int, str]]:
    """How the measured answers' measurements ended, with one example message each."""
    return tally(
        [
            (str(o.check.speedup.status), f"{o.program_id}: {o.check.speedup.message}")
            for o in outcomes
            if o.check.speedup is not None
        ]
    )


def _is_win(o: SampleOutcome) -> bool:
    sp = o.check.speedup
    return (
        o.check.correct
        and sp is not None
        and sp.status == MeasureStatus.MEASURED
        and sp.ratio > 1.0
        and o.assembly is not None
    )


def largest_wins(store: ResultStore, outcomes: Sequence[SampleOutcome], count: int) -> list[Win]:
    """The `count` correct answers measured fastest, each with its diff to the baseline."""
    best = sorted(
        (o for o in outcomes if _is_win(o)),
        key=lambda o: o.check.speedup.ratio if o.check.speedup else 0.0,
        reverse=True,
    )[:count]
    return [_win(store.baseline_asm(o.program_id) or "", o) for o in best]


def _win(baseline: str, o: SampleOutcome) -> Win:
    a, b = _strip_noise(baseline), _strip_noise(o.assembly or "")
    differ = difflib.HtmlDiff(tabsize=8, wrapcolumn=60)
    table = differ.make_table(a, b, "baseline (-O3)", "candidate", context=True, numlines=3)
    text = "\n".join(difflib.unified_diff(a, b, "baseline", "candidate", lineterm="", n=2))
    sp = o.check.speedup
    assert sp is not None
    return Win(o.program_id, o.sample, sp.ratio, sp.low, sp.high, table, text)


def _strip_noise(asm: str) -> list[str]:
    """Assembly lines without .cfi/.loc bookkeeping, so a diff shows real edits."""
    keep = []
    for line in asm.splitlines():
        s = line.strip()
        if s.startswith((".cfi_", ".loc ", ".file", ".ident")):
            continue
        keep.append(line.rstrip())
    return keep


def unfit_programs(meta: dict[str, Any], outcomes: Sequence[SampleOutcome]) -> dict[str, str]:
    """The run's unfit marks, limited to the programs it evaluated."""
    evaluated = {o.program_id for o in outcomes}
    return {
        str(pid): str(why)
        for pid, why in (meta.get(UNFIT_META_KEY) or {}).items()
        if pid in evaluated
    }
