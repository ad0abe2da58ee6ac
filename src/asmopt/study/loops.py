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

The comparison is paired at two levels. Every model is evaluated on the same windows, so the
difference of two models' losses is averaged window by window and given a 95% interval over
windows: how sure we are *for these trained weights* (of the first seed). With `seeds`, every R
is trained once per seed (for a given seed, the same initial weights and token order for every
R), so the difference of two R's held-out losses is also taken seed by seed and given a
t-interval over seeds: that one covers seed-to-seed variation of training, and only it backs a
ranking of R (`findings`, from `MIN_SEEDS_FOR_RANKING` seeds).
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

import torch

from asmopt.measure import stats
from asmopt.provenance import environment
from asmopt.study.config import StudyConfig, to_dict
from asmopt.study.data import Prepared, prepare
from asmopt.study.diagnostics import run_diagnostics
from asmopt.study.lm import (
    PERIODIC_EVAL_WINDOWS,
    heldout_windows,
    model_dir,
    seed_config,
    train_lm,
)
from asmopt.study.task import evaluate_task, task_programs
from asmopt.train.run import quiet_transformers, resolve_device

STUDY_FILE = "study.json"
Z95 = 1.959964


def t_quantile(df: int) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    return stats.t_quantile(0.975, df)


def t_interval(values: list[float]) -> dict[str, Any]:
    """Mean of a few values (one per seed) with its 95% t-interval and min / max.

    Seeds are few, so the normal interval used over windows would be far too narrow: with
    3 seeds the t quantile is 4.30, not 1.96. n < 2 gives no interval; `significant` is True
    when the interval excludes 0 (used for differences)."""
    n = len(values)
    out: dict[str, Any] = {"values": list(values), "n": n, "mean": None, "min": None}
    out.update(max=None, low=None, high=None, significant=False)
    if n == 0:
        return out
    mean = sum(values) / n
    out.update(mean=mean, min=min(values), max=max(values))
    if n >= 2:
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
        half = t_quantile(n - 1) * sd / math.sqrt(n)
        out.update(low=mean - half, high=mean + half)
        out["significant"] = out["low"] > 0 or out["high"] < 0
    return out


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
    seed: int | None = None,
) -> dict[str, Any]:
    """Diagnostics and the task metric of a trained model (cached in its final/ directory;
    `seed` names the run directory as in `asmopt.study.lm.model_dir`)."""
    final = model_dir(cfg, loops, seed) / "final"
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
            print(f"R={loops}{_seed_label(seed)}: diagnostics", file=sys.stderr, flush=True)
        windows = diagnostics_windows(prepared, cfg)
        diag = run_diagnostics(model, windows, batch=cfg.eval.diag_batch, device=device).to_dict()
        _store(diag_path, key, diag)
    if task is None:
        if progress:
            print(
                f"R={loops}{_seed_label(seed)}: task ({len(task_set)} programs)",
                file=sys.stderr,
                flush=True,
            )
        task = evaluate_task(model, prepared.tokenizer, task_set, cfg, toolchain)
        _store(task_path, key, task)
    return {"diagnostics": diag, "task": task}


def _seed_label(seed: int | None) -> str:
    return "" if seed is None else f" seed {seed}"


def read_curve(path: Path) -> list[dict[str, Any]]:
    from asmopt.train.metrics_log import read_metrics

    return read_metrics(path)


def check_seeds(cfg: StudyConfig, seeds: list[int] | None) -> list[int]:
    """The seeds of a study: the config's own when none are given; distinct and >= 0."""
    if not seeds:
        return [cfg.train.seed]
    if len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"--seeds must be distinct seeds >= 0, got {seeds}")
    return list(seeds)


def seed_dir(cfg: StudyConfig, seed: int) -> int | None:
    """The run-directory tag of `seed` (`model_dir`): none for the config's own seed."""
    return None if seed == cfg.train.seed else seed


def run_model(
    cfg: StudyConfig,
    loops: int,
    seed: int,
    prepared: Prepared,
    *,
    toolchain: Any,
    task_set: list[Any],
    reevaluate: bool,
    progress: bool,
) -> dict[str, Any]:
    """Train (or resume, or reuse) and evaluate one (R, seed): what study.json holds for it.

    Each (R, seed) is finished, evaluated and cached before the next starts, so an
    interrupted multi-seed study loses at most the model in progress (its checkpoint
    resumes it)."""
    seeded, tag = seed_config(cfg, seed), seed_dir(cfg, seed)
    summary = train_lm(seeded, loops, prepared=prepared, progress=progress, seed=tag)
    evaluated = evaluate_model(
        seeded,
        loops,
        prepared,
        toolchain=toolchain,
        task_set=task_set,
        reevaluate=reevaluate,
        progress=progress,
        seed=tag,
    )
    return {
        "summary": {k: v for k, v in summary.items() if k != "config"},
        **evaluated,
        "curve": read_curve(model_dir(seeded, loops, tag)),
    }


def run_study(
    cfg: StudyConfig,
    loops: list[int],
    *,
    seeds: list[int] | None = None,
    report: str | Path | None = None,
    notes: str | Path | None = None,
    command: str = "",
    toolchain: Any = None,
    reevaluate: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The whole study; returns what `study.json` holds and writes the report.

    `seeds` (default: the config's `train.seed` only) are the independent training runs per
    R. Seeds are the outer loop, so an interrupted study has whole seeds done. study.json
    keeps the first seed's models under `models` (the diagnostics tables and plots show
    them, and single-seed files look as they always did) and the other seeds' under
    `other_seeds` (R -> seed -> model); `seed_list` names them all in order."""
    from asmopt.study.report import write_report
    from asmopt.toolchain import default_toolchain

    if not loops or len(set(loops)) != len(loops) or min(loops) < 1:
        raise ValueError(f"--loops must be distinct counts >= 1, got {loops}")
    loops = sorted(loops)
    seeds = check_seeds(cfg, seeds)
    toolchain = toolchain or default_toolchain()
    prepared = prepare(cfg, toolchain=toolchain, progress=progress)
    task_set = task_programs(cfg, prepared.tokenizer, toolchain)
    runs: dict[int, dict[int, dict[str, Any]]] = {seed: {} for seed in seeds}
    for seed in seeds:
        for r in loops:
            runs[seed][r] = run_model(
                cfg,
                r,
                seed,
                prepared,
                toolchain=toolchain,
                task_set=task_set,
                reevaluate=reevaluate,
                progress=progress,
            )
    models = runs[seeds[0]]
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
        # Independent training runs per R behind these numbers, and which seeds they are
        # (seed s: train.seed = s, train.data_seed shifted by s - config seed).
        "seeds": len(seeds),
        "seed_list": seeds,
        "models": {str(r): m for r, m in models.items()},
        "other_seeds": {str(r): {str(seed): runs[seed][r] for seed in seeds[1:]} for r in loops},
        # Window-level paired tests of the first seed's models (see the module docstring).
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


def first_seed(result: dict[str, Any]) -> int:
    """The seed of the models under `models` of a study.json (diagnostics, plots and the
    window-level tests show them). Files written before seeds were recorded hold one run,
    of the config's seed."""
    listed = result.get("seed_list")
    if listed:
        return int(listed[0])
    return int(result.get("config", {}).get("train", {}).get("seed", 0))


def seed_runs(result: dict[str, Any]) -> dict[int, dict[int, dict[str, Any]]]:
    """R -> seed -> model of a study.json, the first seed from `models`, the others from
    `other_seeds`."""
    first = first_seed(result)
    others = result.get("other_seeds", {})
    runs: dict[int, dict[int, dict[str, Any]]] = {}
    for r in result["loops"]:
        runs[r] = {first: result["models"][str(r)]}
        for seed, model in others.get(str(r), {}).items():
            runs[r][int(seed)] = model
    return runs


def across_seeds(result: dict[str, Any]) -> dict[str, Any]:
    """Held-out losses over the seeds every R was trained with: per R the mean, min / max
    and t-interval; per pair of R the seed-by-seed differences (later minus earlier R, same
    seed, so the same initial weights and token order) with their mean and t-interval."""
    runs = seed_runs(result)
    loops = result["loops"]
    common = sorted(set.intersection(*(set(runs[r]) for r in loops)))

    def heldout(r: int, seed: int, key: str) -> float:
        return float(runs[r][seed]["summary"]["heldout"][key])

    keys = ("loss", "asm_loss")
    per_r = {
        str(r): {k: t_interval([heldout(r, s, k) for s in common]) for k in keys} for r in loops
    }
    pairs = [
        {
            "from": a,
            "to": b,
            **{k: t_interval([heldout(b, s, k) - heldout(a, s, k) for s in common]) for k in keys},
        }
        for a, b in itertools.combinations(loops, 2)
    ]
    return {"seeds": common, "per_r": per_r, "pairs": pairs}


def _verdict(d: dict[str, Any], neutral: str) -> str:
    """ "better" / "worse" for the later R when the interval excludes 0, else `neutral`."""
    if d["mean"] is None:
        return "unknown"
    if d["significant"]:
        return "better" if d["mean"] < 0 else "worse"
    return neutral


def _shape(verdicts: list[str]) -> str:
    """The curve of loss over R from the verdicts of consecutive steps (neutral: neither
    "better" nor "worse" nor "unknown")."""
    neutral = [v not in ("better", "worse", "unknown") for v in verdicts]
    if verdicts and all(v == "better" for v in verdicts):
        return "monotone: every added loop lowered held-out assembly loss"
    if verdicts and all(v == "better" or n for v, n in zip(verdicts, neutral, strict=True)):
        return "saturating: added loops helped or made no clear difference, none hurt"
    if "worse" in verdicts and "better" in verdicts[: verdicts.index("worse")]:
        return "non-monotonic: loss fell, then rose again with more loops"
    if "worse" in verdicts:
        return "loops hurt: loss rose without an earlier significant fall"
    return "inconclusive"


def findings(result: dict[str, Any]) -> dict[str, Any]:
    """Computed statements for the report, limited to what the data can carry.

    A ranking of R rests on the seed-level test only: from `MIN_SEEDS_FOR_RANKING` seeds
    per R, an order between two R is stated when the t-interval over seeds of their paired
    difference excludes 0, and a best R only when it beats every other R that way; other
    pairs are "not distinguishable with N seeds". With fewer seeds no ranking is stated:
    the losses are reported as measured and the window-level verdicts say "for these
    weights". `seeds` counts the runs the file holds for every R, not what it claims.
    """
    loops = result["loops"]
    agg = across_seeds(result)
    seeds = len(agg["seeds"])
    can_rank = seeds >= MIN_SEEDS_FOR_RANKING
    models = {int(r): m for r, m in result["models"].items()}
    runs = seed_runs(result)
    loss = {r: agg["per_r"][str(r)]["loss"]["mean"] for r in loops}
    asm = {r: agg["per_r"][str(r)]["asm_loss"]["mean"] for r in loops}
    best_loss = min(loops, key=lambda r: loss[r])
    best_asm = min(loops, key=lambda r: asm[r])
    steps = []
    for c in result["comparisons"]:
        d = c["asm_loss"]
        word = _verdict(d, "no clear difference")
        steps.append({"from": c["from"], "to": c["to"], "asm_loss": d, "verdict": word})
    undecided = f"not distinguishable with {seeds} seeds"
    seed_pairs = [
        {
            "from": p["from"],
            "to": p["to"],
            "asm_loss": p["asm_loss"],
            "verdict": _verdict(p["asm_loss"], undecided) if can_rank else "no ranking",
        }
        for p in agg["pairs"]
    ]
    consecutive = {(a, b) for a, b in itertools.pairwise(loops)}
    seed_steps = [p for p in seed_pairs if (p["from"], p["to"]) in consecutive]
    # The shape and the paper's pattern come from the seed-level test when it may rank,
    # else from the window-level test of the first seed's weights.
    verdicts = [s["verdict"] for s in (seed_steps if can_rank else steps)]
    shape = _shape(verdicts)
    # Significant pairs as (lower loss, higher loss); "better" means the later R is lower.
    ranking = [
        {
            "lower": p["to"] if p["verdict"] == "better" else p["from"],
            "higher": p["from"] if p["verdict"] == "better" else p["to"],
            "asm_loss": p["asm_loss"],
        }
        for p in seed_pairs
        if p["verdict"] in ("better", "worse")
    ]
    beaten = {x["higher"] for x in ranking if x["lower"] == best_asm}
    best_significant = can_rank and beaten == set(loops) - {best_asm}
    if can_rank:
        later_worse = any(s["verdict"] == "worse" for s in seed_steps if s["from"] >= 2)
        paper_like = all(r in asm for r in (1, 2, 3, 4)) and best_significant and best_asm == 2
        paper_like = paper_like and later_worse
    else:
        paper_like = (
            all(r in asm for r in (1, 2, 3, 4))
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
    final_erank = {r: _mean_last_erank(runs[r], agg["seeds"]) for r in loops}
    by_loss = sorted(loops, key=lambda r: asm[r])
    by_erank = sorted(loops, key=lambda r: -(final_erank[r] or 0.0))
    runs_text = "one training run" if seeds == 1 else f"{seeds} training runs"
    if can_rank:
        asm_text = ", ".join(
            f"R={r}: {_mean_interval(agg['per_r'][str(r)]['asm_loss'])}" for r in loops
        )
        orders = ", ".join(f"R={x['lower']} < R={x['higher']}" for x in ranking) or "none"
        ties = ", ".join(
            f"R={p['from']} vs R={p['to']}" for p in seed_pairs if p["verdict"] == undecided
        )
        head = (
            f"best R by held-out assembly loss: {best_asm}, lower than every other R"
            if best_significant
            else "no single best R"
        )
        summary = (
            f"{head} ({seeds} seeds per R; mean [95% t-interval over seeds] {asm_text}); "
            f"significantly lower: {orders}"
            + (f"; {undecided}: {ties}" if ties else "")
            + f"; shape: {shape}"
        )
    else:
        asm_text = ", ".join(f"R={r}: {_fmt(asm[r])}" for r in loops)
        mean = "mean " if seeds > 1 else ""
        summary = (
            f"{runs_text} per R, so no ranking of R is claimed; {mean}held-out assembly loss "
            f"{asm_text} (lowest: R={best_asm}); paired test on the weights of seed "
            f"{agg['seeds'][0] if agg['seeds'] else '?'}: {shape}"
        )
    return {
        "seeds": seeds,
        "seed_list": agg["seeds"],
        "can_rank": can_rank,
        "best_loss": best_loss,
        "final_erank": {str(r): v for r, v in final_erank.items()},
        "erank_orders_like_loss": (by_loss == by_erank) if can_rank else None,
        "best_asm_loss": best_asm,
        "best_asm_significant": best_significant,
        "across_seeds": agg,
        "steps": steps,
        "seed_steps": seed_steps,
        "seed_pairs": seed_pairs,
        "ranking": ranking if can_rank else [],
        "shape": shape,
        "paper_pattern": paper_like,
        "erank_rule": {"model": largest, "recommended_loops": rule},
        "tradeoff": trade,
        "summary_line": summary,
    }


def _mean_interval(d: dict[str, Any]) -> str:
    if d["low"] is None:
        return _fmt(d["mean"])
    return f"{_fmt(d['mean'])} [{_fmt(d['low'])}, {_fmt(d['high'])}]"


def _mean_last_erank(per_seed: dict[int, dict[str, Any]], seeds: list[int]) -> float | None:
    """Mean over seeds of the effective rank of a model's last loop (None if undefined)."""
    values = [per_seed[s]["diagnostics"]["per_loop"]["erank"][-1] for s in seeds]
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known and len(known) == len(values) else None
