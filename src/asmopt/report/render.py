"""Render a collected run (`asmopt.report.build.ReportData`) as HTML and as Markdown.

The words and markup live in `templates/` (Jinja2); this module formats every number and
decides every label, so the templates only place ready values. Program ids, messages and
whatever else a stored run holds are untrusted text: the HTML environment escapes every
value (autoescape), and the only markup passed through unescaped is difflib's own diff
table, whose cells difflib escapes itself.
"""

from __future__ import annotations

import base64
import functools
import math
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from asmopt.judge import Verdict
from asmopt.measure.speedup import INTERVAL_NAME
from asmopt.report.build import ReportData, Win
from asmopt.report.search import ProgramSearch, budget_hits, search_heading, variant_rows

DEFINITIONS = (
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

# Fingerprint keys shown under "Environment", in this order, when the run recorded them.
FINGERPRINT_KEYS = (
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
)


@functools.cache
def environment() -> Environment:
    """The one template environment: HTML templates autoescaped, Markdown ones not; an
    undefined name is an error rather than an empty string."""
    env = Environment(
        loader=PackageLoader("asmopt.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html",), default=False),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["clip"] = clip
    env.filters["md_cell"] = md_cell
    return env


def clip(text: str, length: int) -> str:
    """The first `length` characters (a long message would swamp its table)."""
    return text[:length]


def md_cell(text: str) -> str:
    """Text safe inside a Markdown table cell: a `|` would end the cell."""
    return text.replace("|", "/")


def fmt_ratio(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}x"


def fmt_pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def fmt_interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "–"
    return f"[{low:.3f}, {'∞' if not math.isfinite(high) else f'{high:.3f}'}]"


@dataclass(frozen=True)
class AnswerView:
    """One row of the per-answer table, every cell formatted."""

    program: str
    sample: int
    verdict: Verdict
    failed: bool
    tests: str
    speedup: str
    speedup_class: str
    interval: str
    significance: str
    note: str
    warnings: str
    wall_s: str
    message: str


def answer_view(row: dict[str, Any]) -> AnswerView:
    sig = row["significance"]
    note = "copy" if row["copy"] else row["status"] if row["status"] != "measured" else ""
    if row["reliable"] is False:
        note = (note + " unreliable").strip()
    return AnswerView(
        program=row["program"],
        sample=row["sample"],
        verdict=row["verdict"],
        failed=row["verdict"] != Verdict.PASS,
        tests=row["tests"],
        speedup=fmt_ratio(row["speedup"]),
        speedup_class=sig if sig in ("faster", "slower") else "",
        interval=fmt_interval(row["low"], row["high"]),
        significance=sig,
        note=note,
        warnings=row["warnings"],
        wall_s=f"{row['wall_s']:.1f}",
        message=row["message"],
    )


@dataclass(frozen=True)
class WinView:
    program_id: str
    sample: int
    ratio: str
    interval: str
    diff_html: Markup
    diff_text: str


def win_view(win: Win) -> WinView:
    return WinView(
        program_id=win.program_id,
        sample=win.sample,
        ratio=f"{win.ratio:.3f}x",
        interval=fmt_interval(win.low, win.high),
        # difflib.HtmlDiff escapes &, < and > of every assembly line it lays out.
        diff_html=Markup(win.diff_html),
        diff_text=win.diff_text[:6000],
    )


@dataclass(frozen=True)
class SearchView:
    heading: str
    rows: list[tuple[str, str, str, str, str]]
    on_scored_input: bool


def search_view(search: ProgramSearch) -> SearchView:
    return SearchView(search_heading(search), variant_rows(search), search.selected_on_scored_input)


def headline(data: ReportData) -> list[tuple[str, str, str]]:
    """(metric, value, kind) of the headline cards."""
    m = data.summary["metrics"]
    ref, strict = m["reference"], m["strict"]
    return [
        ("compile", fmt_pct(ref["compile_rate"]), "reference"),
        ("test pass", fmt_pct(ref["pass_rate"]), "reference"),
        ("avg speedup", fmt_ratio(ref["speedup"]), "reference (floored)"),
        ("significantly faster", fmt_pct(strict["significantly_faster"]), "strict"),
        ("%Opt (point ≥ 1.10x)", fmt_pct(ref.get("pie_opt_point")), "reference (point)"),
        ("%Opt (interval ≥ 1.10x)", fmt_pct(strict["pie_opt"]), "strict"),
        ("geomean of correct", fmt_ratio(strict["geomean_correct"]), "strict (unfloored)"),
        ("significantly slower", fmt_pct(strict["significantly_slower"]), "strict"),
        ("copies of baseline", fmt_pct(strict["copy_rate"]), "strict"),
    ]


def fingerprint_rows(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, value) rows of the Environment table: the run, then the machine."""
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
    rows += [(key, str(fp[key])) for key in FINGERPRINT_KEYS if fp.get(key) is not None]
    timing = fp.get("timing")
    if timing:
        rows.append(("timing", timing_text(timing)))
    return rows


def timing_text(timing: dict[str, Any]) -> str:
    return (
        f"target ±{100 * timing.get('target_half_width', 0):.1f}%, resolution "
        f"{resolution_text(timing)}, metric {timing.get('metric')}, "
        f"priority {timing.get('priority')}, cores {timing.get('timing_cores')} "
        f"(others: {timing.get('general_cores')})"
    )


def resolution_text(timing: dict[str, Any]) -> str:
    """A fixed resolution, or the rule that derives one per test from the machine."""
    fixed = timing.get("resolution")
    if fixed is not None:
        return f"±{100 * float(fixed):.1f}%"
    floor = 100 * float(timing.get("min_resolution", 0.01))
    return f"per test: ±{floor:.1f}% or the machine's between-sandbox spread, if larger"


def context(data: ReportData) -> dict[str, Any]:
    """What both templates show, ready to place."""
    run = data.meta.get("run", {}) or {}
    searches = [search_view(s) for s in data.searches]
    return {
        "run": {key: str(run.get(key)) for key in ("suite", "policy", "measure")},
        "summary": data.summary,
        "metrics": data.summary["metrics"],
        "warnings": {"unfit": data.unfit_warnings(), "budget": data.budget_warnings()},
        "headline": headline(data),
        "definitions": DEFINITIONS,
        "interval_name": INTERVAL_NAME,
        "taxonomy": data.taxonomy,
        "measure_status": data.measure_status,
        "answers": [answer_view(r) for r in data.rows],
        "searches": searches,
        "search_budget_hits": budget_hits(data.searches),
        "scored_searches": sum(s.on_scored_input for s in searches),
        "wins": [win_view(w) for w in data.wins],
        "environment": fingerprint_rows(data.meta),
    }


def render_html(data: ReportData, png: bytes | None) -> str:
    """The self-contained page; `png` (the speedup plot) is inlined when given."""
    return (
        environment()
        .get_template("report.html")
        .render(
            **context(data),
            png_base64=base64.b64encode(png).decode("ascii") if png else "",
            has_plot_points=bool(data.plot_points),
        )
    )


def render_markdown(data: ReportData, png_name: str | None) -> str:
    """The Markdown summary; `png_name` is the plot file beside it, if one was drawn."""
    return environment().get_template("report.md").render(**context(data), png_name=png_name or "")
