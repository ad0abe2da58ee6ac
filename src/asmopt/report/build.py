"""Collect a run's data from the store and render it as HTML and Markdown."""

from __future__ import annotations

import base64
import difflib
import html
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from asmopt.errors import InputError
from asmopt.evaluate import SampleOutcome
from asmopt.measure.speedup import INTERVAL_NAME, MeasureStatus
from asmopt.report.search import (
    ProgramSearch,
    budget_hits,
    markdown_lines,
    program_searches,
    search_heading,
    variant_rows,
)
from asmopt.run import UNFIT_META_KEY, summarize
from asmopt.store import ResultStore

_DEFINITIONS = (
    "Speedup = baseline time / candidate time (> 1: faster), per test from interleaved "
    "CPU-time runs (or exact instruction counts), per answer the geometric mean over tests "
    f"with a {INTERVAL_NAME}. Reference metrics follow the SuperCoder definitions (per-test "
    "speedups floored at 1.0, failures and copies count 1.0, geometric mean over answers). "
    "Strict metrics use the intervals: 'significantly faster' means the whole interval is "
    "above 1.0 and the measurement is reliable; strict %Opt counts those answers whose "
    "interval's lower bound is at least 1.10 (the reference %Opt uses the point estimate). "
    "Infrastructure errors are excluded from every denominator. "
    "See docs/measurement.md."
)


@dataclass
class Win:
    program_id: str
    sample: int
    ratio: float
    low: float
    high: float
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


def _fmt_ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}x"


def _fmt_pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _fmt_interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "–"
    return f"[{low:.3f}, {'∞' if not math.isfinite(high) else f'{high:.3f}'}]"


def _strip_noise(asm: str) -> list[str]:
    """Assembly lines without .cfi/.loc bookkeeping, so a diff shows real edits."""
    keep = []
    for line in asm.splitlines():
        s = line.strip()
        if s.startswith((".cfi_", ".loc ", ".file", ".ident")):
            continue
        keep.append(line.rstrip())
    return keep


class MixedSuitesError(InputError):
    """The run directory holds results of more than one suite; a report of it would mix
    programs that were never evaluated together."""


def suites_of(meta: dict[str, Any]) -> list[str]:
    """Every suite identity (`NAME@HASH`) recorded for the run and its sessions."""
    found = {str((meta.get("run") or {}).get("suite_id") or "")}
    found |= {str(s.get("suite_id") or "") for s in meta.get("sessions") or []}
    return sorted(f for f in found if f)


def collect(store: ResultStore, wins: int = 3) -> ReportData:
    meta = store.meta()
    suites = suites_of(meta)
    if len(suites) > 1:
        raise MixedSuitesError(
            f"{store.path.parent} holds results of {len(suites)} suites ({', '.join(suites)}); "
            "a report would mix them: evaluate each suite into its own --run-dir"
        )
    outcomes = store.load_outcomes()
    summary = summarize(outcomes)
    rows = []
    points = []
    for o in outcomes:
        sp = o.check.speedup
        status = str(sp.status) if sp else "–"
        measured = sp is not None and sp.status == MeasureStatus.MEASURED
        warnings = sorted({w for t in (sp.tests if sp else []) for w in t.warnings})
        rows.append(
            {
                "program": o.program_id,
                "sample": o.sample,
                "verdict": str(o.check.verdict),
                "tests": f"{o.check.passed}/{o.check.total}",
                "speedup": sp.ratio if sp and sp.has_ratio else None,
                "low": sp.low if measured else None,
                "high": sp.high if measured else None,
                "status": status,
                "significance": (
                    "faster"
                    if sp and sp.significantly_faster
                    else "slower"
                    if sp and sp.significantly_slower
                    else ""
                ),
                "reliable": sp.reliable if sp else None,
                "copy": o.is_copy,
                "warnings": ", ".join(warnings),
                "message": "" if o.check.correct else o.check.message,
                # Wall seconds spent on this answer: judging and measuring it, plus (once
                # per program) the policy's own time to propose it.
                "wall_s": o.seconds
                + (float((o.policy_info or {}).get("policy_s") or 0.0) if o.sample == 0 else 0.0),
            }
        )
        if measured and sp is not None:
            label = o.program_id if o.sample == 0 else f"{o.program_id}#{o.sample}"
            points.append((label, sp.ratio, sp.low, sp.high, sp.significantly_faster))
    examples: dict[str, str] = {}
    for o in outcomes:
        examples.setdefault(str(o.check.verdict), f"{o.program_id}: {o.check.message}")
    taxonomy = [
        (v, n, examples.get(v, ""))
        for v, n in Counter(str(o.check.verdict) for o in outcomes).most_common()
    ]
    status_examples: dict[str, str] = {}
    for o in outcomes:
        if o.check.speedup is not None:
            status_examples.setdefault(
                str(o.check.speedup.status), f"{o.program_id}: {o.check.speedup.message}"
            )
    measure_status = [
        (s, n, status_examples.get(s, ""))
        for s, n in Counter(
            str(o.check.speedup.status) for o in outcomes if o.check.speedup is not None
        ).most_common()
    ]
    best = sorted(
        (
            o
            for o in outcomes
            if o.check.correct
            and o.check.speedup is not None
            and o.check.speedup.status == MeasureStatus.MEASURED
            and o.check.speedup.ratio > 1.0
            and o.assembly is not None
        ),
        key=lambda o: o.check.speedup.ratio if o.check.speedup else 0.0,
        reverse=True,
    )[:wins]
    win_list = []
    for o in best:
        base = store.baseline_asm(o.program_id) or ""
        a, b = _strip_noise(base), _strip_noise(o.assembly or "")
        differ = difflib.HtmlDiff(tabsize=8, wrapcolumn=60)
        table = differ.make_table(a, b, "baseline (-O3)", "candidate", context=True, numlines=3)
        text = "\n".join(difflib.unified_diff(a, b, "baseline", "candidate", lineterm="", n=2))
        sp = o.check.speedup
        assert sp is not None
        win_list.append(Win(o.program_id, o.sample, sp.ratio, sp.low, sp.high, table, text))
    evaluated = {o.program_id for o in outcomes}
    unfit = {
        str(pid): str(why)
        for pid, why in (meta.get(UNFIT_META_KEY) or {}).items()
        if pid in evaluated
    }
    return ReportData(
        meta=meta,
        summary=summary,
        outcomes=outcomes,
        rows=rows,
        taxonomy=taxonomy,
        measure_status=measure_status,
        plot_points=points,
        wins=win_list,
        unfit=unfit,
        searches=program_searches(outcomes),
    )


def _headline(data: ReportData) -> list[tuple[str, str, str]]:
    m = data.summary["metrics"]
    ref, strict = m["reference"], m["strict"]
    return [
        ("compile", _fmt_pct(ref["compile_rate"]), "reference"),
        ("test pass", _fmt_pct(ref["pass_rate"]), "reference"),
        ("avg speedup", _fmt_ratio(ref["speedup"]), "reference (floored)"),
        ("significantly faster", _fmt_pct(strict["significantly_faster"]), "strict"),
        ("%Opt (point ≥ 1.10x)", _fmt_pct(ref.get("pie_opt_point")), "reference (point)"),
        ("%Opt (interval ≥ 1.10x)", _fmt_pct(strict["pie_opt"]), "strict"),
        ("geomean of correct", _fmt_ratio(strict["geomean_correct"]), "strict (unfloored)"),
        ("significantly slower", _fmt_pct(strict["significantly_slower"]), "strict"),
        ("copies of baseline", _fmt_pct(strict["copy_rate"]), "strict"),
    ]


def _fingerprint_rows(meta: dict[str, Any]) -> list[tuple[str, str]]:
    fp = meta.get("fingerprint", {}) or {}
    run = meta.get("run", {}) or {}
    rows = [
        ("suite", str(run.get("suite"))),
        ("policy", str(run.get("policy"))),
        ("split", str(run.get("split"))),
        ("measurement", str(run.get("measure"))),
        ("created", str(meta.get("created"))),
        ("sessions", str(len(meta.get("sessions", []) or []))),
    ]
    for key in (
        "cpu_model",
        "cpus",
        "kernel",
        "compiler",
        "sandbox",
        "valgrind",
        "governor",
        "smt",
        "aslr",
        "git",
        "asmopt",
        "python",
    ):
        if fp.get(key) is not None:
            rows.append((key, str(fp[key])))
    timing = fp.get("timing")
    if timing:
        rows.append(
            (
                "timing",
                f"target ±{100 * timing.get('target_half_width', 0):.1f}%, resolution "
                f"{_resolution_text(timing)}, metric {timing.get('metric')}, "
                f"priority {timing.get('priority')}, cores {timing.get('timing_cores')} "
                f"(others: {timing.get('general_cores')})",
            )
        )
    return rows


_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1200px;color:#222;padding:0 1em;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
.sub{color:#666}.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.6em .9em;min-width:9em}
.card .v{font-size:1.5em;font-weight:600}.card .k{color:#555}.card .t{color:#999;font-size:.8em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
th,td{border-bottom:1px solid #eee;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f6f6f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.faster{color:#2a7d2a;font-weight:600}.slower{color:#b22}.muted{color:#999}
.fail{color:#b22}img{max-width:100%}
table.diff{font-family:monospace;font-size:.8em}.diff_add{background:#dfd}
.diff_chg{background:#ffd}.diff_sub{background:#fdd}td.diff_header{color:#999}
details{margin:.5em 0}.warn{color:#8a5300;background:#fff4e0;padding:.3em .6em}
"""


def _table(headers: list[str], rows: list[list[str]], num: set[int] | None = None) -> str:
    num = num or set()
    out = ["<table><thead><tr>"]
    out += [f"<th>{html.escape(h)}</th>" for h in headers]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>")
        for i, cell in enumerate(row):
            cls = ' class="num"' if i in num else ""
            out.append(f"<td{cls}>{cell}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def render_html(data: ReportData, png: bytes | None) -> str:
    run = data.meta.get("run", {}) or {}
    s = data.summary
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>asmopt report: {esc(str(run.get('suite')))} / {esc(str(run.get('policy')))}"
        "</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>asmopt report: {esc(str(run.get('policy')))} on {esc(str(run.get('suite')))}</h1>",
        f"<div class='sub'>{s['programs']} programs, {s['samples']} answers, measurement "
        f"<b>{esc(str(run.get('measure')))}</b>; {s['infra_errors']} infrastructure errors "
        f"and {s['measure_infra_errors']} failed measurements are excluded from the "
        "metrics.</div>",
    ]
    parts += [f"<p class='warn'>{esc(line)}</p>" for line in data.unfit_warnings()]
    parts += [f"<p class='warn'>{esc(line)}</p>" for line in data.budget_warnings()]
    parts.append("<div class='cards'>")
    for key, value, kind in _headline(data):
        parts.append(
            f"<div class='card'><div class='v'>{esc(value)}</div><div class='k'>{esc(key)}"
            f"</div><div class='t'>{esc(kind)}</div></div>"
        )
    parts.append("</div>")
    parts.append(f"<p class='sub'>{esc(_DEFINITIONS)}</p>")
    parts.append("<h2>Speedups</h2>")
    if png:
        b64 = base64.b64encode(png).decode("ascii")
        parts.append(f"<img alt='speedup distribution' src='data:image/png;base64,{b64}'>")
    elif data.plot_points:
        parts.append("<p class='muted'>(plots skipped)</p>")
    else:
        parts.append("<p class='muted'>No answer has a measured speedup in this run.</p>")
    m = s["metrics"]
    parts.append(
        f"<p>{m['measured']} answers measured ({m['unreliable']} flagged unreliable: the "
        f"interval missed its target or too many runs were outliers), {m['unmeasurable']} "
        f"unmeasurable, {s['copies']} copies of the baseline (1.0 by rule, not timed).</p>"
    )
    parts.append("<h2>Failure taxonomy</h2>")
    parts.append(
        _table(
            ["verdict", "answers", "example"],
            [[esc(v), str(n), esc(ex[:200])] for v, n, ex in data.taxonomy],
            {1},
        )
    )
    if data.measure_status:
        parts.append("<h3>Measurement of correct answers</h3>")
        parts.append(
            _table(
                ["status", "answers", "example"],
                [[esc(v), str(n), esc(ex[:200])] for v, n, ex in data.measure_status],
                {1},
            )
        )
    parts.append("<h2>Per answer</h2>")
    body = []
    for r in data.rows:
        sig = r["significance"]
        cls = "faster" if sig == "faster" else "slower" if sig == "slower" else ""
        verdict = esc(r["verdict"])
        if r["verdict"] != "pass":
            verdict = f"<span class='fail'>{verdict}</span>"
        note = "copy" if r["copy"] else r["status"] if r["status"] != "measured" else ""
        if r["reliable"] is False:
            note = (note + " unreliable").strip()
        body.append(
            [
                esc(r["program"]),
                str(r["sample"]),
                verdict,
                r["tests"],
                f"<span class='{cls}'>{_fmt_ratio(r['speedup'])}</span>",
                _fmt_interval(r["low"], r["high"]),
                esc(sig),
                esc(note),
                esc(r["warnings"]),
                f"{r['wall_s']:.1f}",
                esc(r["message"][:160]),
            ]
        )
    parts.append(
        _table(
            [
                "program",
                "#",
                "verdict",
                "tests",
                "speedup",
                INTERVAL_NAME,
                "significant",
                "note",
                "warnings",
                "wall s",
                "detail",
            ],
            body,
            {1, 4, 9},
        )
    )
    if data.searches:
        parts.append("<h2>Compiler search: every variant per program</h2>")
        parts.append(
            "<p class='sub'>Speedups are the search's own measurement on its selection "
            "input, before the evaluation re-measures the chosen answer on every test; a "
            "variant is chosen only when its whole interval is above 1.0.</p>"
        )
        hits = budget_hits(data.searches)
        if hits:
            parts.append(
                f"<p class='warn'>Programs that hit their search budget: {esc(', '.join(hits))}</p>"
            )
        for search in data.searches:
            parts.append(f"<h3>{esc(search_heading(search))}</h3>")
            parts.append(
                _table(
                    ["variant", "outcome", "speedup", INTERVAL_NAME, "detail"],
                    [[esc(c) for c in row] for row in variant_rows(search)],
                    {2},
                )
            )
    parts.append("<h2>Largest wins</h2>")
    if not data.wins:
        parts.append("<p class='muted'>No correct answer is faster than its baseline.</p>")
    for w in data.wins:
        parts.append(
            f"<h3>{esc(w.program_id)} (sample {w.sample}): {w.ratio:.3f}x "
            f"{_fmt_interval(w.low, w.high)}</h3>"
            "<details open><summary>baseline vs candidate (changed regions)</summary>"
            f"{w.diff_html}</details>"
        )
    parts.append("<h2>Environment</h2>")
    parts.append(_table(["", ""], [[esc(k), esc(v)] for k, v in _fingerprint_rows(data.meta)]))
    parts.append("</body></html>")
    return "\n".join(parts)


def render_markdown(data: ReportData, png_name: str | None) -> str:
    run = data.meta.get("run", {}) or {}
    s = data.summary
    lines = [
        f"# asmopt report: {run.get('policy')} on {run.get('suite')}",
        "",
        f"{s['programs']} programs, {s['samples']} answers, measurement `{run.get('measure')}`; "
        f"{s['infra_errors']} infrastructure errors and {s['measure_infra_errors']} failed "
        "measurements excluded.",
        "",
        *[f"> **{line}**\n" for line in data.unfit_warnings()],
        *[f"> {line}\n" for line in data.budget_warnings()],
        "| metric | value | kind |",
        "|---|---|---|",
    ]
    lines += [f"| {k} | {v} | {kind} |" for k, v, kind in _headline(data)]
    lines += ["", _DEFINITIONS, ""]
    if png_name:
        lines += [f"![speedups]({png_name})", ""]
    lines += ["## Failure taxonomy", "", "| verdict | answers | example |", "|---|---|---|"]
    lines += [f"| {v} | {n} | {ex[:120].replace('|', '/')} |" for v, n, ex in data.taxonomy]
    lines += [
        "",
        "## Per answer",
        "",
        f"| program | # | verdict | tests | speedup | {INTERVAL_NAME} | significant | note | "
        "warnings | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data.rows:
        note = "copy" if r["copy"] else r["status"] if r["status"] != "measured" else ""
        if r["reliable"] is False:
            note = (note + " unreliable").strip()
        lines.append(
            f"| {r['program']} | {r['sample']} | {r['verdict']} | {r['tests']} | "
            f"{_fmt_ratio(r['speedup'])} | {_fmt_interval(r['low'], r['high'])} | "
            f"{r['significance']} | {note} | {r['warnings']} | {r['wall_s']:.1f} |"
        )
    if data.searches:
        lines += ["", *markdown_lines(data.searches)]
    if data.wins:
        lines += ["", "## Largest wins", ""]
        for w in data.wins:
            lines += [
                f"### {w.program_id} (sample {w.sample}): {w.ratio:.3f}x "
                f"{_fmt_interval(w.low, w.high)}",
                "",
                "```diff",
                w.diff_text[:6000],
                "```",
                "",
            ]
    lines += ["", "## Environment", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v.replace('|', '/')} |" for k, v in _fingerprint_rows(data.meta)]
    return "\n".join(lines) + "\n"


def _resolution_text(timing: dict[str, Any]) -> str:
    """A fixed resolution, or the rule that derives one per test from the machine."""
    fixed = timing.get("resolution")
    if fixed is not None:
        return f"±{100 * float(fixed):.1f}%"
    floor = 100 * float(timing.get("min_resolution", 0.01))
    return f"per test: ±{floor:.1f}% or the machine's between-sandbox spread, if larger"
