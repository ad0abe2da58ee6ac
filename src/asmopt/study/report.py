"""The loop-count study as Markdown with PNG plots (matplotlib, Agg backend).

Everything shown comes from `study.json` (asmopt.study.loops), so a report can be redrawn
without retraining: `asmopt study report runs/study/cpu_small/study.json -o docs/study/x.md`.
Plots are small (about 100 dpi, a few hundred pixels per panel) so they stay well under
200 KB each and diff reasonably in git.

The page's words are in `templates/study.md` (Jinja2, Markdown: nothing escaped); this module
formats every number for it. The statements it reports (asmopt.study.findings) and the
intervals behind them sit below this module, and the study loop above it: the report never
imports the loop (tests/test_study_layering.py).
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from asmopt import typed_config
from asmopt.errors import InputError
from asmopt.safe_io import check_output_path, write_output
from asmopt.study.diagnostics import METRICS
from asmopt.study.findings import (
    CORRECTION,
    FAMILY_ALPHA,
    MIN_SEEDS_FOR_RANKING,
    first_seed,
    init_seed_of,
    seed_runs,
)

# Columns of the per-R diagnostics table: (key in per_loop, header, digits).
TABLE_COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("step_size", "delta", -4),
    ("step_size_rel", "delta/‖h‖", 3),
    ("update_cos", "cos", 3),
    ("erank", "erank", 1),
    ("fixed_point_gap_rel", "fp gap/‖h‖", 3),
    ("offset_cost", "Omega", -4),
    ("offset_cost_rel", "Omega/‖h‖", 3),
    ("attn_entropy", "attn H", 3),
    ("attn_kl", "attn KL", 3),
    ("head_similarity", "head sim", 3),
    ("gate", "gate", 3),
    ("output_kl", "out KL", 3),
    ("lens_loss", "lens loss", 3),
    ("lens_accuracy", "lens acc", 3),
    ("median_rank", "median rank", 0),
)
COLORS = ("#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")


def _f(x: Any, digits: int = 3) -> str:
    """Fixed-point with `digits` decimals; a negative `digits` means that many significant
    digits (raw norms differ by orders of magnitude between model sizes)."""
    if x is None:
        return "–"
    if isinstance(x, float) and x != x:  # NaN
        return "–"
    if not isinstance(x, float):
        return str(x)
    return f"{x:.{-digits}g}" if digits < 0 else f"{x:.{digits}f}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def _p(x: float | None) -> str:
    """A p-value: three decimals, two significant digits below 0.001, and a bound below
    1e-6 (normal tails that far out say nothing more)."""
    if x is None:
        return "–"
    if x < 1e-6:
        return "<1e-6"
    return f"{x:.1e}" if x < 0.001 else f"{x:.3f}"


def _interval(d: dict[str, Any]) -> str:
    if d["mean"] is None:
        return "–"
    if d["low"] is None:
        return f"{d['mean']:+.4f}"
    return f"{d['mean']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"


# --------------------------------------------------------------------------- plots


def _figure(rows: int, cols: int, width: float = 9.0, height: float = 3.0) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, cols, figsize=(width, height * rows), squeeze=False)
    return fig, axes


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# Panels that start at loop 2: loop 1's step is measured from the embedding, whose norm is
# small, so its relative size dwarfs the rest of the curve and says little.
FROM_LOOP_TWO = {"step_size_rel"}


def _per_loop_panel(ax: Any, models: dict[int, Any], key: str, title: str) -> None:
    """One line per model over its loops; loops where the value is undefined are skipped."""
    drawn = False
    first = 2 if key in FROM_LOOP_TWO else 1
    for i, (r, m) in enumerate(sorted(models.items())):
        values = m["diagnostics"]["per_loop"][key]
        points = [
            (k + 1, v) for k, v in enumerate(values) if v is not None and v == v and k + 1 >= first
        ]
        if key == "erank":
            points = [(0, m["diagnostics"]["embedding_erank"]), *points]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, marker="o", color=COLORS[i % len(COLORS)], label=f"R={r}")
        drawn = True
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("loop r", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if drawn:
        ax.legend(fontsize=7)
        ax.xaxis.get_major_locator().set_params(integer=True)
    else:
        ax.text(0.5, 0.5, "undefined for these models", ha="center", va="center", fontsize=8)


def plot_training(result: dict[str, Any], path: Path) -> None:
    fig, axes = _figure(1, 2)
    for i, (r, m) in enumerate(sorted((int(k), v) for k, v in result["models"].items())):
        color = COLORS[i % len(COLORS)]
        train = [x for x in m["curve"] if x.get("kind") == "train"]
        # Periodic evaluations use a subset of the windows; the final one uses all of them,
        # so it is drawn apart (not joined to the curve) rather than read as the curve's end.
        held = [x for x in m["curve"] if x.get("kind") == "heldout"]
        final = [x for x in m["curve"] if x.get("kind") == "heldout_final"]
        if train:
            axes[0][0].plot(
                [x["step"] for x in train], [x["loss"] for x in train], color=color, label=f"R={r}"
            )
        if held:
            axes[0][1].plot(
                [x["step"] for x in held],
                [x["asm_loss"] for x in held],
                marker="o",
                color=color,
                label=f"R={r}",
            )
        if final:
            axes[0][1].plot(
                [x["step"] for x in final],
                [x["asm_loss"] for x in final],
                marker="x",
                linestyle="none",
                markersize=8,
                color=color,
            )
    for ax, title in zip(
        axes[0],
        (
            "training loss (per logged step)",
            f"held-out assembly loss: o = {_periodic_windows(result)} windows, x = all "
            f"{result['config']['eval']['heldout_windows']}",
        ),
        strict=True,
    ):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    _save(fig, path)


def _periodic_windows(result: dict[str, Any]) -> int:
    """How many held-out windows the evaluations during training use (recorded by the study;
    16 in studies written before it was recorded)."""
    recorded = int(result.get("periodic_eval_windows", 16))
    return min(recorded, int(result["config"]["eval"]["heldout_windows"]))


def plot_summary(result: dict[str, Any], path: Path) -> None:
    """Held-out loss by R (with several seeds: the mean, each seed as a faint point) and the
    task metric of the first seed's models."""
    models = sorted((int(k), v) for k, v in result["models"].items())
    rs = [r for r, _ in models]
    runs = seed_runs(result)
    fig, axes = _figure(1, 2)
    ax = axes[0][0]
    for key, label, marker in (("loss", "all", "o"), ("asm_loss", "assembly", "s")):
        per_r = [[m["summary"]["heldout"][key] for m in runs[r].values()] for r in rs]
        (line,) = ax.plot(rs, [sum(v) / len(v) for v in per_r], marker=marker, label=label)
        if any(len(v) > 1 for v in per_r):
            xs = [r for r, v in zip(rs, per_r, strict=True) for _ in v]
            ys = [y for v in per_r for y in v]
            ax.scatter(xs, ys, s=12, alpha=0.4, color=line.get_color())
    seeds = max(len(runs[r]) for r in rs)
    ax.set_title(
        "held-out loss (nats/token) by loop count"
        + (f": mean of {seeds} seeds, dots = seeds" if seeds > 1 else ""),
        fontsize=9,
    )
    ax = axes[0][1]
    for key, label, marker in (
        ("build_rate", "builds", "o"),
        ("assemble_rate", "assembles", "s"),
        ("ended_rate", "ends", "^"),
        ("similarity", "line similarity", "d"),
    ):
        ys = [m["task"][key] for _, m in models]
        if all(y is not None for y in ys):
            ax.plot(rs, ys, marker=marker, label=label)
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(
        "task: assembly generated from C" + (f" (seed {first_seed(result)})" if seeds > 1 else ""),
        fontsize=9,
    )
    for ax in axes[0]:
        ax.set_xlabel("R (loops)", fontsize=8)
        ax.set_xticks(rs)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    _save(fig, path)


def plot_group(models: dict[int, Any], keys: list[tuple[str, str]], path: Path) -> None:
    cols = 2
    rows = (len(keys) + cols - 1) // cols
    fig, axes = _figure(rows, cols, height=2.6)
    for i, (key, title) in enumerate(keys):
        _per_loop_panel(axes[i // cols][i % cols], models, key, title)
    for j in range(len(keys), rows * cols):
        axes[j // cols][j % cols].axis("off")
    _save(fig, path)


def plot_peaks(models: dict[int, Any], path: Path) -> None:
    fig, axes = _figure(1, 1, width=4.5, height=2.6)
    ax = axes[0][0]
    width = 0.8 / max(1, len(models))
    for i, (r, m) in enumerate(sorted(models.items())):
        share = m["diagnostics"]["peak_share"]
        if share:
            xs = [k + 2 + (i - len(models) / 2) * width for k in range(len(share))]
            ax.bar(xs, share, width=width, color=COLORS[i % len(COLORS)], label=f"R={r}")
    ax.set_title("share of tokens whose output shift peaks at loop r", fontsize=9)
    ax.set_xlabel("loop r", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3, axis="y")
    if any(m["diagnostics"]["peak_share"] for m in models.values()):
        ax.legend(fontsize=7)
    _save(fig, path)


def draw_plots(result: dict[str, Any], directory: Path, stem: str) -> dict[str, str]:
    """Writes the PNGs beside the report; returns {name: file name}."""
    models = {int(k): v for k, v in result["models"].items()}
    files = {
        "training": f"{stem}_training.png",
        "summary": f"{stem}_summary.png",
        "states": f"{stem}_states.png",
        "attention": f"{stem}_attention.png",
        "outputs": f"{stem}_outputs.png",
        "peaks": f"{stem}_peaks.png",
    }
    plot_training(result, directory / files["training"])
    plot_summary(result, directory / files["summary"])
    plot_group(
        models,
        [
            ("step_size_rel", "relative step size ||h(r)-h(r-1)|| / ||h(r-1)||, r >= 2"),
            ("update_cos", "update alignment cos (<0: oscillation)"),
            ("erank", "effective rank (loop 0 = embeddings)"),
            ("fixed_point_gap_rel", "relative fixed-point gap ||h-f(h)|| / ||h||"),
            ("offset_cost_rel", "relative offset cost Omega(r) / ||h(r-1)||"),
            ("state_norm", "state norm ||h(r)||"),
        ],
        directory / files["states"],
    )
    plot_group(
        models,
        [
            ("attn_entropy", "attention entropy (nats)"),
            ("attn_kl", "attention KL(A(r) || A(r-1))"),
            ("head_similarity", "head similarity (mean pairwise cosine)"),
            ("gate", "mean gate (weight on global branch)"),
        ],
        directory / files["attention"],
    )
    plot_group(
        models,
        [
            ("output_kl", "output shift KL(p(r) || p(r-1))"),
            ("lens_loss", "logit-lens loss of loop r"),
            ("lens_accuracy", "logit-lens top-1 accuracy"),
            ("median_rank", "median rank of the true token"),
        ],
        directory / files["outputs"],
    )
    plot_peaks(models, directory / files["peaks"])
    return files


# --------------------------------------------------------------------------- Markdown


def _model_rows(result: dict[str, Any]) -> list[str]:
    """One row per model: per R, or with several seeds per (R, seed)."""
    runs = seed_runs(result)
    several = any(len(v) > 1 for v in runs.values())
    lines = [
        "| R |"
        + (" seed |" if several else "")
        + " parameters | tokens seen | train time | tok/s | held-out loss | assembly loss "
        "| assembly acc. | builds | assembles | ends | line sim. |",
        "|---|" + ("---|" if several else "") + "---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = [(r, seed, m) for r in sorted(runs) for seed, m in sorted(runs[r].items())]
    for r, seed, m in rows:
        s, h, t = m["summary"], m["summary"]["heldout"], m["task"]
        lines.append(
            f"| {r} | "
            + (f"{seed} | " if several else "")
            + f"{s['parameters']['total'] / 1e6:.2f}M | {s['tokens_seen'] / 1e6:.3f}M | "
            f"{s['train_seconds'] / 60:.1f} min | {s['tokens_per_second']:.0f} | "
            f"{h['loss']:.4f} | {h['asm_loss']:.4f} | {h['asm_accuracy']:.3f} | "
            f"{_pct(t['build_rate'])} | {_pct(t['assemble_rate'])} | {_pct(t['ended_rate'])} | "
            f"{_f(t['similarity'])} |"
        )
    return lines


def _all_models(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every trained model of the study, all seeds."""
    return [m for per in seed_runs(result).values() for m in per.values()]


@functools.cache
def templates() -> Environment:
    """The study's Markdown templates: nothing is escaped (Markdown, not HTML), an undefined
    name is an error rather than an empty string, and a template's last newline is kept."""
    return Environment(
        loader=PackageLoader("asmopt.study", "templates"),
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _trained(result: dict[str, Any]) -> dict[str, str] | None:
    """When the models finished training and at which commit they started (None when a
    model does not record it)."""
    stamps = [m["summary"].get("trained") for m in _all_models(result)]
    if not all(stamps):
        return None
    dates = sorted(s["date"] for s in stamps)
    commits = sorted({s["started_commit"] for s in stamps})
    return {"first": dates[0], "last": dates[-1], "commits": ", ".join(commits)}


def _setup(result: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """The numbers of the Setup section, formatted."""
    cfg, corpus = result["config"], result["corpus"]
    m0 = next(iter(result["models"].values()))["summary"]
    train, tok = cfg["train"], corpus["tokens"]
    return {
        "parameters": f"{m0['parameters']['total'] / 1e6:.2f}",
        "non_embedding": f"{m0['parameters']['non_embedding'] / 1e6:.2f}",
        "steps": m0["steps"],
        "batch_sequences": train["batch_size"] * train["grad_accum"],
        "tokens_per_model": f"{m0['tokens_seen'] / 1e6:.2f}",
        "data_seeds": [train["data_seed"] + s - init_seed_of(train) for s in seeds],
        "documents": _counts(corpus["stats"]["documents"]),
        "by_origin": _counts(corpus["stats"]["by_origin"]),
        "levels": " ".join(cfg["corpus"]["levels"]),
        "train_tokens": f"{tok['train']['tokens'] / 1e6:.2f}",
        "heldout_tokens": f"{tok['heldout']['tokens'] / 1e6:.2f}",
        "task_programs": len(result["task_programs"]),
    }


def _erank_reading(fnd: dict[str, Any]) -> dict[str, Any] | None:
    """The last loop's effective rank per R, and whether it orders R like the loss does
    (None in `orders_like_loss`: no order is claimed)."""
    if "final_erank" not in fnd:
        return None
    ranks = ", ".join(f"R={r}: {_f(v, 1)}" for r, v in fnd["final_erank"].items())
    return {"ranks": ranks, "orders_like_loss": fnd.get("erank_orders_like_loss")}


def _trend_cell(t: dict[str, Any] | None) -> str:
    """One seed's sequence: its values, last / first where defined, and its direction."""
    if t is None:
        return "–"
    values = ", ".join(_f(v, 2 if abs(v) >= 10 else 3) for v in t["values"])
    change = "" if t["change"] is None else f"x{t['change']:.2f}, "
    return f"{values} ({change}{t['direction']})"


def _loop_trends(fnd: dict[str, Any]) -> dict[str, Any] | None:
    """Cells of the per-loop trend table of the largest model (one column per seed) and
    the direction counts by quantity (None for a file without them)."""
    trends = fnd.get("loop_trends")
    if not trends or not trends["rows"]:
        return None
    model = trends["model"]
    rows = [
        [
            row["name"],
            f"{row['first_loop']}..{model}",
            *(_trend_cell(row["per_seed"][str(s)]) for s in trends["seeds"]),
            row["count"],
        ]
        for row in trends["rows"]
    ]
    counts = {row["key"]: row["count"] for row in trends["rows"]}
    return {"model": model, "seeds": trends["seeds"], "rows": rows, "count": counts}


def _all_in(count: str, word: str) -> bool:
    """Whether a direction count ("rising in 3 of 3 seeds") is `word` in every seed."""
    head, _, total = count.rpartition(" of ")
    return head == f"{word} in {total.split()[0]}"


def _cost_reading(trends: dict[str, Any] | None) -> str | None:
    """The one sentence the gain and cost trends allow, built from their directions: the
    relative offset cost is read against the raw one and the state norm it is divided by."""
    if trends is None:
        return None
    c = trends["count"]
    if not {"step_size_rel", "offset_cost", "offset_cost_rel", "state_norm"} <= set(c):
        return None
    text = (
        f"the relative step size (the gain) is {c['step_size_rel']}; the offset cost Ω is "
        f"{c['offset_cost']}, the relative offset cost Ω/‖h‖ {c['offset_cost_rel']} and the "
        f"state norm ‖h‖ {c['state_norm']}"
    )
    if all(
        _all_in(c[k], w)
        for k, w in (
            ("offset_cost", "rising"),
            ("offset_cost_rel", "falling"),
            ("state_norm", "rising"),
        )
    ):
        text += (
            ": the cost itself rises; its relative value falls only because the state norm "
            "grows faster"
        )
    return text


def _rule_reading(fnd: dict[str, Any], trends: dict[str, Any] | None) -> dict[str, Any] | None:
    """The erank rule of thumb read inside the largest model, per seed, with the direction
    count of its effective rank (None for a file without per-seed trends)."""
    raw = fnd.get("loop_trends")
    if not raw or not raw.get("erank_rule") or trends is None or "erank" not in trends["count"]:
        return None
    rule = {int(s): n for s, n in raw["erank_rule"].items()}
    values = set(rule.values())
    if len(values) == 1:
        loops = str(values.pop())
        where = "every seed" if len(rule) > 1 else "this run"
    else:
        loops = ", ".join(f"seed {s}: {n}" for s, n in sorted(rule.items()))
        where = "the seeds as listed"
    return {
        "model": raw["model"],
        "erank": trends["count"]["erank"],
        "loops": loops,
        "where": where,
    }


def _comparison_rows(result: dict[str, Any], fnd: dict[str, Any]) -> list[list[str]]:
    """Cells of the window-level paired differences, one row per step from R to the next."""
    models = result["models"]
    rows = []
    for c, s in zip(result["comparisons"], fnd["steps"], strict=True):
        a, b = models[str(c["from"])]["summary"]["heldout"], models[str(c["to"])]["summary"]
        token_diff = b["heldout"]["asm_loss"] - a["asm_loss"]
        rows.append(
            [
                f"R={c['from']}",
                f"R={c['to']}",
                _interval(c["loss"]),
                _interval(c["asm_loss"]),
                f"{token_diff:+.4f}",
                _p(s.get("p")),
                _p(s.get("p_holm")),
                s["verdict"],
            ]
        )
    return rows


def _mean_cell(d: dict[str, Any], digits: int = 4) -> str:
    """`mean [low, high] (min .. max)` of a t-interval dict."""
    if d["mean"] is None:
        return "–"
    text = f"{d['mean']:.{digits}f}"
    if d["low"] is not None:
        text += f" [{d['low']:.{digits}f}, {d['high']:.{digits}f}]"
    return text + f" ({d['min']:.{digits}f} .. {d['max']:.{digits}f})"


def _across_seeds(fnd: dict[str, Any], n: int) -> dict[str, Any]:
    """Cells of the seed-level tables: per R the loss over seeds, per pair of R the
    seed-by-seed differences with their uncorrected interval, p-value and Holm-adjusted
    p-value; the verdicts here (Holm) are the only ones a ranking may rest on."""
    agg = fnd["across_seeds"]
    eranks = fnd.get("final_erank_per_seed", {})
    per_r = [
        [
            r,
            _mean_cell(d["loss"]),
            _mean_cell(d["asm_loss"]),
            ", ".join(f"{v:.4f}" for v in d["asm_loss"]["values"]),
            ", ".join(_f(v, 1) for v in eranks.get(r, [])) or "–",
        ]
        for r, d in agg["per_r"].items()
    ]
    pairs = {(p["from"], p["to"]): p for p in agg["pairs"]}
    differences = [
        [
            f"R={p['from']}",
            f"R={p['to']}",
            ", ".join(f"{v:+.4f}" for v in p["asm_loss"]["values"]),
            _interval(p["asm_loss"]),
            _p(p.get("p")),
            _p(p.get("p_holm")),
            _interval(pairs[(p["from"], p["to"])]["loss"]),
            p["verdict"],
        ]
        for p in fnd["seed_pairs"]
    ]
    return {
        "runs": n,
        "dof": n - 1,
        "per_r": per_r,
        "pairs": differences,
        "survivors": _survivors(fnd),
        "loose": ", ".join(
            f"R={p['from']} vs R={p['to']}" for p in fnd.get("uncorrected_only", [])
        ),
    }


def _survivors(fnd: dict[str, Any]) -> str:
    """Which pairwise orders survive the correction, as one clause."""
    orders = [f"R={x['lower']} < R={x['higher']}" for x in fnd.get("ranking", [])]
    total = len(fnd["seed_pairs"])
    if not orders:
        return "no pair survives"
    if len(orders) == total:
        return f"all {total} pairs survive"
    listed = ", ".join(orders[:-1]) + f" and {orders[-1]}" if len(orders) > 1 else orders[0]
    return f"only {listed} {'survive' if len(orders) > 1 else 'survives'}"


def _diagnostics(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Per model of the first seed: its per-loop table cells and what its table notes."""
    models = []
    for r, m in sorted((int(k), v) for k, v in result["models"].items()):
        d = m["diagnostics"]
        per = d["per_loop"]
        rows = [
            [str(k + 1), *(_f(per[key][k], digits) for key, _, digits in TABLE_COLUMNS)]
            for k in range(r)
        ]
        shares = ", ".join(f"loop {k + 2}: {100 * s:.0f}%" for k, s in enumerate(d["peak_share"]))
        models.append(
            {
                "loops": r,
                "rows": rows,
                "embedding_erank": f"{d['embedding_erank']:.1f}",
                # One share: two loops, whose only output shift peaks at loop 2 by definition.
                "peak_by_construction": len(d["peak_share"]) == 1,
                "peak_shares": shares,
                "windows": d["windows"],
                "tokens": d["tokens"],
                "notes": d["notes"],
            }
        )
    return models


def render_markdown(
    result: dict[str, Any], plots: dict[str, str], notes: str | None, raw_name: str = ""
) -> str:
    """The report page of a study.json (templates/study.md); `plots` names the PNG files
    beside it, `notes` is a hand-written discussion, `raw_name` the copy of the data."""
    fnd = result["findings"]
    seeds = fnd.get("seed_list") or [first_seed(result)]
    several = len(seeds) > 1
    total_min = sum(m["summary"]["train_seconds"] for m in _all_models(result)) / 60
    trends = _loop_trends(fnd)
    return (
        templates()
        .get_template("study.md")
        .render(
            result=result,
            config=result["config"],
            env=result["environment"],
            command=result["command"] or "(command not recorded)",
            total_minutes=f"{total_min:.0f}",
            trained=_trained(result),
            seeds=seeds,
            several=several,
            first=first_seed(result),
            setup=_setup(result, seeds),
            summary_line=fnd["summary_line"],
            can_rank=bool(fnd.get("can_rank")),
            paper_pattern=fnd["paper_pattern"],
            rule=_rule_reading(fnd, trends),
            erank=_erank_reading(fnd),
            trends=trends,
            cost_reading=_cost_reading(trends),
            correction=CORRECTION,
            family_alpha=f"{FAMILY_ALPHA:.0%}",
            model_rows=_model_rows(result),
            across=_across_seeds(fnd, len(seeds)) if several else None,
            comparisons=_comparison_rows(result, fnd),
            plots=plots,
            columns=[header for _, header, _ in TABLE_COLUMNS],
            diagnostics=_diagnostics(result),
            min_seeds=MIN_SEEDS_FOR_RANKING,
            discussion=notes.strip() if notes else None,
            raw=raw_name or "study.json",
            metric_names=", ".join(f"`{k}`" for k in METRICS),
        )
    )


def raw_data_path(report: Path) -> Path:
    """Where the raw data behind a report lives: `<stem>_study.json` beside it."""
    return report.with_name(f"{report.stem}_study.json")


def write_report(result: dict[str, Any], path: Path, *, notes: str | None = None) -> Path:
    """Writes the Markdown file, its PNGs and the raw data it is drawn from (`study.json` as
    `<stem>_study.json`), all in one directory, so that a committed report carries its data
    and `asmopt study report <stem>_study.json -o <report>` redraws it."""
    path = Path(path)
    raw = raw_data_path(path)
    for target in (path, raw):  # a device, FIFO or directory there is refused, before work
        check_output_path(target, stdout_ok=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    plots = draw_plots(result, path.parent, path.stem)
    _write_text(raw, json.dumps(result, indent=1) + "\n")
    _write_text(path, render_markdown(result, plots, notes, raw.name))
    return path


def _write_text(path: Path, text: str) -> None:
    """Replace `path` atomically (safe_io.write_output: never through a device or FIFO)."""
    data = text.encode("utf-8")
    write_output(path, lambda f: f.write(data), stdout_ok=False)


# Top-level keys of a study.json the report reads, with the JSON kind each must have.
RESULT_KEYS: dict[str, tuple[type, ...]] = {
    "loops": (list,),
    "models": (dict,),
    "comparisons": (list,),
    "config": (dict,),
    "environment": (dict,),
    "corpus": (dict,),
    "command": (str, type(None)),
}
JSON_KINDS = {dict: "an object", list: "a list", str: "a string", type(None): "null"}


class _LongInt(str):
    """An integer of a study.json too long for Python to read, kept as its digits so that
    the key holding it can be named."""


def _parse_int(text: str) -> int | _LongInt:
    limit = sys.get_int_max_str_digits()
    return _LongInt(text) if limit and len(text.lstrip("-")) > limit else int(text)


def load_result(path: str | Path) -> dict[str, Any]:
    """The study.json of a run, checked to hold what the report reads at its top level;
    anything else is one ValueError naming the file and the key."""
    text = typed_config.read_text(Path(path), "study.json")
    try:
        data = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); give "
            "the study.json a study run wrote"
        ) from None
    _refuse_long_ints(data, "", path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object (a study's results), got {_kind(data)}")
    _check_result(data, path)
    return data


def _kind(value: Any) -> str:
    return JSON_KINDS.get(type(value), "a number" if isinstance(value, int | float) else "?")


def _refuse_long_ints(value: Any, key: str, path: str | Path) -> None:
    """A too-long integer anywhere in the file, named by its key (`models.1.steps`)."""
    if isinstance(value, _LongInt):
        where = f"{key}: " if key else ""
        raise InputError(f"{path}: {where}{typed_config.long_integer(len(value.lstrip('-')))}")
    if isinstance(value, dict):
        for k, v in value.items():
            _refuse_long_ints(v, f"{key}.{k}" if key else str(k), path)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _refuse_long_ints(v, f"{key}[{i}]", path)


def _check_result(data: dict[str, Any], path: str | Path) -> None:
    """The top-level keys and kinds the report needs, and a model for every loop count
    (the loop counts and their models first: without them nothing else can be read)."""
    for key in ("loops", "models"):
        _check_key(data, key, path)
    loops = data["loops"]
    if not loops or not all(isinstance(r, int) and not isinstance(r, bool) for r in loops):
        raise InputError(f"{path}: 'loops' must be a non-empty list of loop counts")
    missing = [r for r in loops if not isinstance(data["models"].get(str(r)), dict)]
    if missing:
        raise InputError(f"{path}: 'models' holds no model for R = {missing[0]}")
    for key in RESULT_KEYS:
        _check_key(data, key, path)


def _check_key(data: dict[str, Any], key: str, path: str | Path) -> None:
    kinds = RESULT_KEYS[key]
    if key not in data:
        raise InputError(f"{path}: no {key!r}; not the study.json of a study run")
    if not isinstance(data[key], kinds):
        raise InputError(f"{path}: {key!r} is {_kind(data[key])}, expected {JSON_KINDS[kinds[0]]}")
