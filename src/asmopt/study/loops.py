"""`asmopt study loops`: train (or load) models with R = 1..N loops, measure, diagnose, report.

Steps, each reused when its inputs have not changed:

1. prepare the corpus, tokenizer and token arrays (asmopt.study.data);
2. train every R with matched settings (asmopt.study.lm; finished models are loaded);
3. evaluate each model on the same held-out windows (loss and accuracy, all tokens and the
   assembly only), on the task (asmopt.study.task), and compute the diagnostics
   (asmopt.study.diagnostics) on the same held-out windows;
4. compare the models pairwise on the held-out windows and write the report
   (asmopt.study.report): Markdown, PNG plots, one table per R, and `study.json` with every
   number.

The comparison is paired: every model is evaluated on the same windows, so the difference of
two models' losses is averaged window by window and given a 95% interval over windows. That
interval says how sure we are *for these trained weights*; it does not cover seed-to-seed
variation of training, which one run per R cannot measure (the report says so).
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

import torch

from asmopt.provenance import environment
from asmopt.study.config import StudyConfig, to_dict
from asmopt.study.data import Prepared, prepare
from asmopt.study.diagnostics import run_diagnostics
from asmopt.study.lm import PERIODIC_EVAL_WINDOWS, heldout_windows, model_dir, train_lm
from asmopt.study.task import evaluate_task, task_programs
from asmopt.train.run import quiet_transformers, resolve_device

STUDY_FILE = "study.json"
Z95 = 1.959964


def paired_difference(a: list[float | None], b: list[float | None]) -> dict[str, Any]:
    """Mean of b - a over the windows where both are known, with a normal 95% interval.

    `significant` is True when the interval excludes 0. n < 2 gives no interval."""
    diffs = [y - x for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n = len(diffs)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0, "significant": False}
    mean = sum(diffs) / n
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": n, "significant": False}
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    half = Z95 * math.sqrt(var / n)
    low, high = mean - half, mean + half
    return {"mean": mean, "low": low, "high": high, "n": n, "significant": low > 0 or high < 0}


def _load_model(path: Path, device: torch.device) -> Any:
    from asmopt.models.plt import load_plt_pretrained

    quiet_transformers()
    model = load_plt_pretrained(path)
    return model.to(device).eval()


def _cached(path: Path, key: dict[str, Any]) -> Any:
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("key") == key:
            return saved["value"]
    return None


def _store(path: Path, key: dict[str, Any], value: Any) -> None:
    path.write_text(json.dumps({"key": key, "value": value}) + "\n", encoding="utf-8")


def diagnostics_windows(prepared: Prepared, cfg: StudyConfig) -> torch.Tensor:
    """`[N, S + 1]` held-out windows for the diagnostics: a spread-out subset of the loss ones."""
    starts = heldout_windows(prepared.heldout, cfg.train.seq_len, cfg.eval.heldout_windows)
    count = min(cfg.eval.diag_windows, len(starts))
    pick = starts[torch.linspace(0, len(starts) - 1, count).round().long().numpy()]
    tokens = torch.from_numpy(prepared.heldout.tokens)
    index = torch.from_numpy(pick)[:, None] + torch.arange(cfg.train.seq_len + 1)[None, :]
    return tokens[index]


def evaluate_model(
    cfg: StudyConfig,
    loops: int,
    prepared: Prepared,
    *,
    toolchain: Any,
    task_set: list[Any],
    reevaluate: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Diagnostics and the task metric of a trained model (cached in its final/ directory)."""
    final = model_dir(cfg, loops) / "final"
    device = resolve_device(cfg.train.device)
    key = {"eval": to_dict(cfg.eval), "seq_len": cfg.train.seq_len}
    diag_path, task_path = final / "diagnostics.json", final / "task.json"
    diag = None if reevaluate else _cached(diag_path, key)
    task = None if reevaluate else _cached(task_path, key)
    if diag is not None and task is not None:
        return {"diagnostics": diag, "task": task}
    model = _load_model(final, device)
    if diag is None:
        if progress:
            print(f"R={loops}: diagnostics", file=sys.stderr, flush=True)
        windows = diagnostics_windows(prepared, cfg)
        diag = run_diagnostics(model, windows, batch=cfg.eval.diag_batch, device=device).to_dict()
        _store(diag_path, key, diag)
    if task is None:
        if progress:
            print(f"R={loops}: task ({len(task_set)} programs)", file=sys.stderr, flush=True)
        task = evaluate_task(model, prepared.tokenizer, task_set, cfg, toolchain)
        _store(task_path, key, task)
    return {"diagnostics": diag, "task": task}


def read_curve(path: Path) -> list[dict[str, Any]]:
    from asmopt.train.metrics_log import read_metrics

    return read_metrics(path)


def run_study(
    cfg: StudyConfig,
    loops: list[int],
    *,
    report: str | Path | None = None,
    notes: str | Path | None = None,
    command: str = "",
    toolchain: Any = None,
    reevaluate: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The whole study; returns what `study.json` holds and writes the report."""
    from asmopt.study.report import write_report
    from asmopt.toolchain import default_toolchain

    if not loops or len(set(loops)) != len(loops) or min(loops) < 1:
        raise ValueError(f"--loops must be distinct counts >= 1, got {loops}")
    loops = sorted(loops)
    toolchain = toolchain or default_toolchain()
    prepared = prepare(cfg, toolchain=toolchain, progress=progress)
    summaries = {r: train_lm(cfg, r, prepared=prepared, progress=progress) for r in loops}
    task_set = task_programs(cfg, prepared.tokenizer, toolchain)
    models = {}
    for r in loops:
        evaluated = evaluate_model(
            cfg,
            r,
            prepared,
            toolchain=toolchain,
            task_set=task_set,
            reevaluate=reevaluate,
            progress=progress,
        )
        models[r] = {
            "summary": {k: v for k, v in summaries[r].items() if k != "config"},
            **evaluated,
            "curve": read_curve(model_dir(cfg, r)),
        }
    comparisons = []
    for a, b in itertools.pairwise(loops):
        ha, hb = models[a]["summary"]["heldout"], models[b]["summary"]["heldout"]
        comparisons.append(
            {
                "from": a,
                "to": b,
                "loss": paired_difference(ha["window_loss"], hb["window_loss"]),
                "asm_loss": paired_difference(ha["window_asm_loss"], hb["window_asm_loss"]),
            }
        )
    data_meta = json.loads((Path(cfg.output_dir) / "data" / "meta.json").read_text())
    result = {
        "config": to_dict(cfg),
        "loops": loops,
        "command": command,
        "environment": environment(),
        "corpus": {
            "stats": {k: v for k, v in vars(prepared.corpus).items() if k != "skipped"},
            "skipped": len(prepared.corpus.skipped),
            "tokens": data_meta["counts"],
            "vocab_size": len(prepared.tokenizer),
        },
        "task_programs": [p.id for p in task_set],
        "periodic_eval_windows": PERIODIC_EVAL_WINDOWS,
        # Independent training runs per R behind these numbers (one: the config's seed).
        "seeds": 1,
        "models": {str(r): m for r, m in models.items()},
        "comparisons": comparisons,
    }
    result["findings"] = findings(result)
    out = Path(cfg.output_dir)
    (out / STUDY_FILE).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if report is not None:
        notes_text = Path(notes).read_text(encoding="utf-8") if notes else None
        write_report(result, Path(report), notes=notes_text)
    return result


# --------------------------------------------------------------------------- findings


def _fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def erank_rule(eranks: list[float | None]) -> int:
    """The rule of thumb: add a loop only while effective rank still rises.

    Given erank(h(r)) for r = 1..R of one model, the last r reached by a run of rises."""
    best = 1
    for r in range(1, len(eranks)):
        prev, cur = eranks[r - 1], eranks[r]
        if prev is None or cur is None or cur <= prev:
            break
        best = r + 1
    return best


# A per-loop sequence "shrinks" or "grows" when its last value differs from its first by more
# than this factor, and is "flat" otherwise. One rule for the gains and the costs, so that the
# two labels in the report can be compared.
TREND_FACTOR = 1.25
# Rankings of R across models are stated only from this many independent training runs per R;
# with fewer, seed-to-seed variation (unmeasured) can be as large as the differences.
MIN_SEEDS_FOR_RANKING = 3


def trend(values: list[float | None]) -> dict[str, Any] | None:
    """Change of a per-loop sequence from its first to its last value, with one label rule."""
    known = [v for v in values if v is not None]
    if len(known) < 2 or known[0] == 0:
        return None
    change = known[-1] / known[0]
    if change < 1 / TREND_FACTOR:
        label = "shrinking"
    elif change > TREND_FACTOR:
        label = "growing"
    else:
        label = "flat"
    return {"values": known, "change": change, "label": label}


def findings(result: dict[str, Any]) -> dict[str, Any]:
    """Computed statements for the report, limited to what the data can carry.

    With fewer than `MIN_SEEDS_FOR_RANKING` training runs per R, no ranking of R is stated:
    the lowest loss is reported as measured, and the paired verdicts say "for these weights".
    """
    loops = result["loops"]
    seeds = int(result.get("seeds", 1))
    can_rank = seeds >= MIN_SEEDS_FOR_RANKING
    models = {int(r): m for r, m in result["models"].items()}
    loss = {r: models[r]["summary"]["heldout"]["loss"] for r in loops}
    asm = {r: models[r]["summary"]["heldout"]["asm_loss"] for r in loops}
    best_loss = min(loops, key=lambda r: loss[r])
    best_asm = min(loops, key=lambda r: asm[r])
    steps = []
    for c in result["comparisons"]:
        d = c["asm_loss"]
        if d["mean"] is None:
            word = "unknown"
        elif d["significant"]:
            word = "better" if d["mean"] < 0 else "worse"
        else:
            word = "no clear difference"
        steps.append({"from": c["from"], "to": c["to"], "asm_loss": d, "verdict": word})
    verdicts = [s["verdict"] for s in steps]
    if verdicts and all(v == "better" for v in verdicts):
        shape = "monotone: every added loop lowered held-out assembly loss"
    elif verdicts and all(v in ("better", "no clear difference") for v in verdicts):
        shape = "saturating: added loops helped or made no clear difference, none hurt"
    elif "worse" in verdicts and "better" in verdicts[: verdicts.index("worse")]:
        shape = "non-monotonic: loss fell, then rose again with more loops"
    elif "worse" in verdicts:
        shape = "loops hurt: loss rose without an earlier significant fall"
    else:
        shape = "inconclusive"
    paper_like = (
        all(r in loss for r in (1, 2, 3, 4))
        and best_asm == 2
        and any(s["verdict"] == "worse" for s in steps if s["from"] >= 2)
    )
    largest = max(loops)
    diag = models[largest]["diagnostics"]["per_loop"]
    rule = erank_rule(diag["erank"])
    gains = trend(diag["step_size_rel"][1:])
    costs = trend(diag["offset_cost_rel"][1:])
    trade = None
    if gains is not None and costs is not None:
        trade = {
            "model": largest,
            "gains": gains["values"],
            "costs": costs["values"],
            "gains_change": gains["change"],
            "costs_change": costs["change"],
            "gains_trend": gains["label"],
            "costs_trend": costs["label"],
            "rule": f"last / first below 1/{TREND_FACTOR} shrinking, above {TREND_FACTOR} "
            "growing, else flat",
        }
    final_erank = {r: models[r]["diagnostics"]["per_loop"]["erank"][-1] for r in loops}
    by_loss = sorted(loops, key=lambda r: asm[r])
    by_erank = sorted(loops, key=lambda r: -(final_erank[r] or 0.0))
    asm_text = ", ".join(f"R={r}: {_fmt(asm[r])}" for r in loops)
    runs = "one training run" if seeds == 1 else f"{seeds} training runs"
    if can_rank:
        summary = f"best R by held-out assembly loss: {best_asm} ({asm_text}); shape: {shape}"
    else:
        summary = (
            f"{runs} per R, so no ranking of R is claimed; held-out assembly loss {asm_text} "
            f"(lowest: R={best_asm}); paired test on these weights: {shape}"
        )
    return {
        "seeds": seeds,
        "can_rank": can_rank,
        "best_loss": best_loss,
        "final_erank": {str(r): v for r, v in final_erank.items()},
        "erank_orders_like_loss": (by_loss == by_erank) if can_rank else None,
        "best_asm_loss": best_asm,
        "steps": steps,
        "shape": shape,
        "paper_pattern": paper_like,
        "erank_rule": {"model": largest, "recommended_loops": rule},
        "tradeoff": trade,
        "summary_line": summary,
    }
