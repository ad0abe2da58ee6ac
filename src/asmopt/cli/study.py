"""`asmopt study ...` and `asmopt train lm`: the loop-count study from the command line.

    asmopt study corpus   --config cpu_small               build corpus, tokenizer, token arrays
    asmopt train lm       --config cpu_small --loops 2     train one model (resumable)
    asmopt study loops    --config cpu_small --loops 1 2 3 4 --report docs/study/loops_cpu.md
    asmopt study loops    --config cpu_seeds --seeds 0 1 2 --report docs/study/loops_cpu_seeds.md
    asmopt study diagnose runs/study/cpu_small/models/R2/final --config cpu_small
    asmopt study report   docs/study/loops_cpu_seeds_study.json -o docs/study/loops_cpu_seeds.md

`--config` takes a YAML file or a built-in config (`cpu_seeds`, `cpu_small`, `gpu`, `toy`);
`--set section.key=value` overrides one field (`--set train.max_steps=10`). Heavy imports
(torch, transformers) happen only when a command runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from asmopt.cli.common import reporting_full_disk
from asmopt.cli.options import add_bounded
from asmopt.errors import InputError


def _config(args: argparse.Namespace) -> Any:
    from asmopt.study.config import load_study_config

    overrides = list(args.set or [])
    cfg = load_study_config(args.config, overrides)
    if getattr(args, "output_dir", None):
        cfg.output_dir = args.output_dir
    if getattr(args, "suite", None):
        cfg.corpus.suites.append(args.suite)
    return cfg


def _progress(args: argparse.Namespace) -> bool:
    return not getattr(args, "no_progress", False)


def command_line() -> str:
    """The command as typed (niceness included), for the report."""
    prog = Path(sys.argv[0]).name
    head = "asmopt" if prog == "asmopt" else f"python -m {__package__}"
    try:
        niceness = os.nice(0)
    except OSError:
        niceness = 0
    prefix = f"nice -n {niceness} " if niceness > 0 else ""
    return prefix + head + " " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def cmd_corpus(args: argparse.Namespace) -> int:
    from asmopt.study.data import prepare

    cfg = _config(args)
    prepared = prepare(cfg, progress=_progress(args) and not args.json)
    meta = json.loads((Path(cfg.output_dir) / "data" / "meta.json").read_text())
    stats = vars(prepared.corpus)
    if args.json:
        json.dump({"corpus": stats, "tokens": meta["counts"]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(
        f"corpus in {cfg.output_dir}: documents {stats['documents']}, programs "
        f"{stats['programs']}, by origin {stats['by_origin']}, skipped {len(stats['skipped'])}"
    )
    for split, counts in meta["counts"].items():
        print(
            f"  {split}: {counts['tokens']} tokens ({counts['assembly_tokens']} assembly), "
            f"{counts['documents']} documents"
        )
    print(f"  tokenizer: {len(prepared.tokenizer)} tokens in {prepared.tokenizer_dir}")
    return 0


def cmd_train_lm(args: argparse.Namespace) -> int:
    from asmopt.study.config import to_yaml

    cfg = _config(args)
    if args.print_config:
        sys.stdout.write(to_yaml(cfg))
        return 0
    from asmopt.study.lm import train_lm

    summary = reporting_full_disk(
        lambda: train_lm(cfg, args.loops, progress=_progress(args)), cfg.output_dir
    )
    if args.json:
        json.dump({k: v for k, v in summary.items() if k != "config"}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        h = summary["heldout"]
        print(
            f"R={summary['loops']}: {summary['steps']} steps, {summary['tokens_seen']} tokens, "
            f"{summary['train_seconds'] / 60:.1f} min; held-out loss {h['loss']:.4f}, "
            f"assembly loss {h['asm_loss']:.4f} -> {summary['output_dir']}/final"
        )
    return 0


def cmd_loops(args: argparse.Namespace) -> int:
    from asmopt.study.loops import run_study

    cfg = _config(args)
    report = args.report or str(Path(cfg.output_dir) / "report.md")
    result = reporting_full_disk(
        lambda: run_study(
            cfg,
            args.loops,
            seeds=args.seeds,
            report=report,
            notes=args.notes,
            command=command_line(),
            reevaluate=args.reevaluate,
            progress=_progress(args) and not args.json,
        ),
        cfg.output_dir,
    )
    if args.json:
        json.dump(
            {
                "findings": result["findings"],
                "report": report,
                "study": str(Path(cfg.output_dir) / "study.json"),
            },
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return 0
    from asmopt.study.report import _model_rows

    print("\n".join(_model_rows(result)))
    print(f"\n{result['findings']['summary_line']}")
    print(f"report: {report}\nall numbers: {Path(cfg.output_dir) / 'study.json'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from asmopt.study.loops import findings
    from asmopt.study.report import load_result, write_report
    from asmopt.typed_config import read_text

    result = load_result(args.study)
    notes = read_text(Path(args.notes), "notes file") if args.notes else None
    try:
        # The reading is derived from the numbers by the current rules, not taken from the
        # file.
        result["findings"] = findings(result)
        path = write_report(result, Path(args.output), notes=notes)
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        # load_result checks the top level; deeper, the file is read as it goes.
        detail = f"no {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise InputError(
            f"{args.study}: not the study.json a study run writes ({detail}); write the "
            "report from the run's own study.json"
        ) from None
    print(f"wrote {path}")
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    import torch

    from asmopt.models.plt import load_plt_pretrained
    from asmopt.study.data import prepare
    from asmopt.study.diagnostics import METRICS, run_diagnostics
    from asmopt.study.loops import diagnostics_windows
    from asmopt.train.run import quiet_transformers, resolve_device

    quiet_transformers()
    cfg = _config(args)
    device = resolve_device(cfg.train.device)
    model = load_plt_pretrained(args.model).to(device)
    if args.text:
        from asmopt.study.tokenizer import encode, load_tokenizer

        tokenizer = load_tokenizer(args.model)
        ids = encode(tokenizer, Path(args.text).read_text(encoding="utf-8"))
        seq = cfg.train.seq_len
        if len(ids) < seq + 1:
            raise InputError(f"{args.text}: {len(ids)} tokens, fewer than seq_len + 1 = {seq + 1}")
        count = min(cfg.eval.diag_windows, len(ids) // (seq + 1))
        windows = torch.tensor(ids[: count * (seq + 1)]).view(count, seq + 1)
    else:
        windows = diagnostics_windows(prepare(cfg, progress=False), cfg)
    diag = run_diagnostics(model, windows, batch=cfg.eval.diag_batch, device=device)
    if args.json:
        json.dump(diag.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    print(f"{args.model}: R = {diag.loops}, {diag.windows} windows, {diag.tokens} tokens")
    loops = [f"loop {r}" for r in range(1, diag.loops + 1)]
    print(f"{'metric':<40} " + "  ".join(f"{h:>10}" for h in loops))
    for key, label in METRICS.items():
        cells = ["-" if v is None else f"{v:.4g}" for v in diag.per_loop[key]]
        print(f"{label[:40]:<40} " + "  ".join(f"{c:>10}" for c in cells))
    print(f"embedding effective rank {diag.embedding_erank:.2f}; peak share {diag.peak_share}")
    return 0


def _config_options(p: argparse.ArgumentParser) -> None:
    from asmopt.study.config import builtin_configs

    p.add_argument(
        "--config",
        default="cpu_small",
        help=f"YAML file or built-in study config ({', '.join(builtin_configs())}); "
        "default cpu_small",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help="override one field (repeatable; the value is read as YAML)",
    )
    p.add_argument("--output-dir", default=None, help="override output_dir")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def add_train_lm(sub: Any, common: argparse.ArgumentParser) -> None:
    """The `lm` subcommand of `asmopt train` (registered by asmopt.cli.train)."""
    p = sub.add_parser(
        "lm",
        parents=[common],
        help="pre-train (or SFT) a looped decoder of a loop-count study",
        description="Trains the R-loop model of a study config with the settings every R "
        "shares (docs/study.md). Resumes from the newest checkpoint; a finished model is "
        "reused.",
    )
    _config_options(p)
    add_bounded(
        p, "--loops", low=1, high=64, type=int, required=True, help="R, the number of loops"
    )
    p.add_argument("--print-config", action="store_true", help="print the resolved config")
    p.set_defaults(func=cmd_train_lm)


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Adds the `study` group to the `asmopt` parser."""
    study = subparsers.add_parser("study", help="loop-count study: corpus, training, diagnostics")
    sub = study.add_subparsers(dest="study_command", metavar="ACTION")
    sub.required = True

    p = sub.add_parser(
        "loops",
        parents=[common],
        help="train or load R-loop models, evaluate, diagnose, write a report",
        description="Trains (or loads) one model per loop count with matched settings, "
        "measures held-out loss and the task metric, computes the loop diagnostics and writes "
        "a Markdown report with PNG plots (docs/study.md).",
    )
    _config_options(p)
    add_bounded(
        p, "--loops", low=1, high=64, type=int, nargs="+", default=[1, 2, 3, 4],
        help="loop counts R",
    )  # fmt: skip
    add_bounded(
        p,
        "--seeds",
        low=0,
        high=2**63 - 1,
        type=int,
        nargs="+",
        default=None,
        help="train every R once per seed (initial weights and data order); a ranking of R "
        "is stated only from 3 seeds (default: the config's train.init_seed only)",
    )
    p.add_argument("--report", default=None, help="Markdown file (default: OUTPUT_DIR/report.md)")
    p.add_argument("--notes", default=None, help="Markdown to include as the discussion")
    p.add_argument(
        "--reevaluate", action="store_true", help="recompute diagnostics and the task metric"
    )
    p.set_defaults(func=cmd_loops)

    p = sub.add_parser(
        "corpus", parents=[common], help="build the corpus, tokenizer and token arrays"
    )
    _config_options(p)
    p.set_defaults(func=cmd_corpus)

    p = sub.add_parser(
        "diagnose",
        parents=[common],
        help="loop diagnostics of any PLT model on held-out data",
        description="Computes every loop diagnostic of a PLT model directory on the held-out "
        "windows of a study config, or on windows of a text file (--text).",
    )
    p.add_argument("model", help="a PLT / LoopCoder model directory")
    p.add_argument("--text", default=None, help="a text file to cut into windows instead")
    _config_options(p)
    p.set_defaults(func=cmd_diagnose)

    p = sub.add_parser("report", parents=[common], help="redraw a report from study.json")
    p.add_argument("study", help="the study.json of a run")
    p.add_argument("-o", "--output", required=True, help="Markdown file to write")
    p.add_argument("--notes", default=None, help="Markdown to include as the discussion")
    p.set_defaults(func=cmd_report)
