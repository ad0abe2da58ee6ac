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
ranking of R (`asmopt.study.findings`, from `MIN_SEEDS_FOR_RANKING` seeds).
"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Any

import torch

from asmopt.errors import InputError
from asmopt.provenance import environment
from asmopt.study.config import StudyConfig, to_dict
from asmopt.study.data import Prepared, prepare
from asmopt.study.diagnostics import run_diagnostics
from asmopt.study.findings import erank_rule, findings, seed_runs, trend
from asmopt.study.intervals import Z95, paired_difference, t_interval, t_quantile
from asmopt.study.lm import (
    PERIODIC_EVAL_WINDOWS,
    heldout_windows,
    model_dir,
    seed_config,
    train_lm,
)
from asmopt.study.report import write_report
from asmopt.study.task import evaluate_task, task_programs
from asmopt.train.run import quiet_transformers, resolve_device

# The statistics and statements a study.json is read with live below the study itself
# (asmopt.study.intervals, asmopt.study.findings) so that the report can use them without
# importing this module; they stay importable from here, where the study's callers look.
__all__ = [
    "STUDY_FILE",
    "Z95",
    "check_loops",
    "check_seeds",
    "corpus_summary",
    "diagnostics_windows",
    "erank_rule",
    "evaluate_model",
    "findings",
    "paired_difference",
    "read_curve",
    "run_model",
    "run_study",
    "seed_dir",
    "seed_runs",
    "study_result",
    "t_interval",
    "t_quantile",
    "trend",
    "window_comparisons",
]

STUDY_FILE = "study.json"

log = logging.getLogger(__name__)  # progress notices, INFO (see study.data)


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
            log.info("R=%d%s: diagnostics", loops, _seed_label(seed))
        windows = diagnostics_windows(prepared, cfg)
        diag = run_diagnostics(model, windows, batch=cfg.eval.diag_batch, device=device).to_dict()
        _store(diag_path, key, diag)
    if task is None:
        if progress:
            log.info("R=%d%s: task (%d programs)", loops, _seed_label(seed), len(task_set))
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
        return [cfg.train.init_seed]
    if len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise InputError(f"--seeds must be distinct seeds >= 0, got {seeds}")
    return list(seeds)


def seed_dir(cfg: StudyConfig, seed: int) -> int | None:
    """The run-directory tag of `seed` (`model_dir`): none for the config's own seed."""
    return None if seed == cfg.train.init_seed else seed


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


def check_loops(loops: list[int]) -> list[int]:
    """The loop counts of a study, in order: distinct and >= 1."""
    if not loops or len(set(loops)) != len(loops) or min(loops) < 1:
        raise InputError(f"--loops must be distinct counts >= 1, got {loops}")
    return sorted(loops)


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

    `seeds` (default: the config's `train.init_seed` only) are the independent training runs per
    R. Seeds are the outer loop, so an interrupted study has whole seeds done. study.json
    keeps the first seed's models under `models` (the diagnostics tables and plots show
    them, and single-seed files look as they always did) and the other seeds' under
    `other_seeds` (R -> seed -> model); `seed_list` names them all in order.

    Wide because its keywords are the `study loops` command's options, each with a default,
    beside the config (`cfg`) and loop counts the command loads."""
    from asmopt.toolchain import default_toolchain

    loops = check_loops(loops)
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
    result = study_result(cfg, loops, seeds, runs, prepared, task_set, command)
    result["findings"] = findings(result)
    out = Path(cfg.output_dir)
    (out / STUDY_FILE).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if report is not None:
        notes_text = Path(notes).read_text(encoding="utf-8") if notes else None
        write_report(result, Path(report), notes=notes_text)
    return result


def window_comparisons(models: dict[int, dict[str, Any]], loops: list[int]) -> list[dict[str, Any]]:
    """Window-level paired tests of each step from R to the next (see the module
    docstring): the same held-out windows, so differences are taken window by window."""
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
    return comparisons


def corpus_summary(cfg: StudyConfig, prepared: Prepared) -> dict[str, Any]:
    """The corpus a study trained on, as study.json records it."""
    data_meta = json.loads((Path(cfg.output_dir) / "data" / "meta.json").read_text())
    return {
        "stats": {k: v for k, v in vars(prepared.corpus).items() if k != "skipped"},
        "skipped": len(prepared.corpus.skipped),
        "tokens": data_meta["counts"],
        "vocab_size": len(prepared.tokenizer),
    }


def study_result(
    cfg: StudyConfig,
    loops: list[int],
    seeds: list[int],
    runs: dict[int, dict[int, dict[str, Any]]],
    prepared: Prepared,
    task_set: list[Any],
    command: str,
) -> dict[str, Any]:
    """What study.json holds, but for the findings computed from it (`runs`: seed -> R ->
    model)."""
    models = runs[seeds[0]]
    return {
        "config": to_dict(cfg),
        "loops": loops,
        "command": command,
        "environment": environment(),
        "corpus": corpus_summary(cfg, prepared),
        "task_programs": [p.id for p in task_set],
        "periodic_eval_windows": PERIODIC_EVAL_WINDOWS,
        # Independent training runs per R behind these numbers, and which seeds they are
        # (seed s: train.init_seed = s, train.data_seed shifted by s - config seed).
        "seeds": len(seeds),
        "seed_list": seeds,
        "models": {str(r): m for r, m in models.items()},
        "other_seeds": {str(r): {str(seed): runs[seed][r] for seed in seeds[1:]} for r in loops},
        # Window-level paired tests of the first seed's models (see the module docstring).
        "comparisons": window_comparisons(models, loops),
    }
