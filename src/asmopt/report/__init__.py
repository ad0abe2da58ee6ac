"""`asmopt report RUN`: a self-contained HTML page and a Markdown summary of a stored run.

Both are built from the results store only (never by re-running anything), so a report can
be written while an evaluation is still going, and again later from the same database.
The page holds the headline metrics (reference and strict), the environment fingerprint,
the speedup distribution and intervals (an inline PNG), the failure taxonomy, a
per-answer table, and side-by-side diffs of baseline and candidate assembly for the
largest wins.
"""

from __future__ import annotations

from pathlib import Path

from asmopt.report.build import ReportData, collect, render_html, render_markdown
from asmopt.report.plots import PlotsUnavailable, speedup_plot
from asmopt.store import ResultStore

__all__ = ["PlotsUnavailable", "ReportData", "collect", "write_report"]


def write_report(
    store: ResultStore, out_dir: Path | None = None, *, plots: bool = True, wins: int = 3
) -> tuple[Path, Path]:
    """Write report.html and report.md (and the plot as report-speedups.png)."""
    out_dir = out_dir or store.path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    data = collect(store, wins=wins)
    png = None
    if plots and data.plot_points:
        png = speedup_plot(data.plot_points)
        (out_dir / "report-speedups.png").write_bytes(png)
    html_path = out_dir / "report.html"
    md_path = out_dir / "report.md"
    html_path.write_text(render_html(data, png), encoding="utf-8")
    md_path.write_text(
        render_markdown(data, "report-speedups.png" if png else None), encoding="utf-8"
    )
    return html_path, md_path
