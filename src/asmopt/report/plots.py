"""Plots for the report, as PNG bytes (matplotlib, Agg backend, imported only here).

matplotlib is optional for asmopt: only the report's plots need it, so it is imported
lazily and its absence is an error that says how to install it (or to skip the plots).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from asmopt.errors import EnvironmentProblem
from asmopt.measure.speedup import INTERVAL_NAME


class PlotsUnavailable(EnvironmentProblem):
    """matplotlib is not installed."""


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotsUnavailable(
            "the report's plots need matplotlib (pip install matplotlib); "
            "or run `asmopt report --no-plots`"
        ) from None
    return plt


def speedup_plot(points: Sequence[tuple[str, float, float, float, bool]]) -> bytes:
    """Left: histogram of per-answer speedups (log scale). Right: the intervals, sorted.

    `points` are (label, ratio, low, high, significant) for measured answers."""
    plt = _pyplot()
    fig, (ax_hist, ax_ci) = plt.subplots(
        1,
        2,
        figsize=(11, max(3.2, 0.22 * min(len(points), 40) + 1.2)),
        gridspec_kw={"width_ratios": [1, 1.3]},
    )
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ratios = [p[1] for p in points]
    lo, hi = min(ratios + [0.9]), max(ratios + [1.12])
    span = (math.log(lo / 1.02), math.log(hi * 1.02))
    bins = [math.exp(span[0] + (span[1] - span[0]) * k / 30) for k in range(31)]
    ax_hist.hist(ratios, bins=bins, color="#4c78a8", edgecolor="white")
    # Log scale (a 2x speedup and a 2x slowdown look alike) with plain tick labels.
    plain = FuncFormatter(lambda x, _pos: f"{x:.3g}")
    for ax in (ax_hist, ax_ci):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_formatter(plain if hi / lo < 3 else NullFormatter())
        ax.tick_params(axis="x", which="minor", labelsize=7)
    ax_hist.axvline(1.0, color="black", linewidth=1)
    ax_hist.axvline(1.10, color="#e45756", linewidth=1, linestyle="--", label="1.10x (%Opt)")
    ax_hist.set_xlabel("speedup over -O3 (log scale)")
    ax_hist.set_ylabel("answers")
    ax_hist.set_title("distribution of measured speedups")
    ax_hist.legend(loc="upper right", fontsize=8)
    shown = sorted(points, key=lambda p: p[1])[-40:]
    for y, (_label, ratio, low, high, sig) in enumerate(shown):
        high = high if math.isfinite(high) else ratio * 2
        color = "#54a24b" if sig else ("#e45756" if high < 1.0 else "#888888")
        ax_ci.plot([low, high], [y, y], color=color, linewidth=2)
        ax_ci.plot([ratio], [y], marker="o", color=color, markersize=4)
    ax_ci.set_yticks(range(len(shown)))
    ax_ci.set_yticklabels([p[0] for p in shown], fontsize=7)
    ax_ci.axvline(1.0, color="black", linewidth=1)
    ax_ci.set_xlabel(f"speedup with {INTERVAL_NAME} (green: significantly faster)")
    ax_ci.set_title(f"intervals (top {len(shown)} by speedup)")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
