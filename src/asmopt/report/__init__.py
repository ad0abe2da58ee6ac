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

from asmopt.report.build import ReportData, collect
from asmopt.report.plots import PlotsUnavailable, speedup_plot
from asmopt.report.render import render_html, render_markdown
from asmopt.safe_io import check_output_file, write_output
from asmopt.store import ResultStore

__all__ = ["PlotsUnavailable", "ReportData", "collect", "write_report"]


def write_report(
    store: ResultStore, out_dir: Path | None = None, *, plots: bool = True, wins: int = 3
) -> tuple[Path, Path]:
    """Write report.html and report.md (and the plot as report-speedups.png)."""
    out_dir = out_dir or store.path.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    png_path, html_path, md_path = (
        out_dir / n for n in ("report-speedups.png", "report.html", "report.md")
    )
    for path in (png_path, html_path, md_path):  # all refused before any is written
        check_output_file(path, "report file", stdout_ok=False)
    data = collect(store, wins=wins)
    png = None
    if plots and data.plot_points:
        png = speedup_plot(data.plot_points)
        _write(png_path, png)
    _write(html_path, render_html(data, png).encode("utf-8"))
    _write(md_path, render_markdown(data, png_path.name if png else None).encode("utf-8"))
    return html_path, md_path


def _write(path: Path, data: bytes) -> None:
    """Replace one report file atomically, never a device or FIFO at its name."""
    write_output(path, lambda fh: fh.write(data), option="report file", stdout_ok=False)
