"""`asmopt train ...`: the trainers' command group.

    asmopt train ppo --config ppo_tiny.yaml [--set key=value ...] [--output-dir DIR]
    asmopt train sft --config sft_tiny.yaml
    asmopt train rewards

`--config` takes a YAML file or the name of a built-in config (`ppo_tiny`, `ppo_reference`,
`sft_tiny`). `--set` overrides single fields (values are YAML: `--set total_steps=5`).
Each subcommand is added by a function in `SUBCOMMANDS`; a new trainer adds its own.
Heavy imports (torch, transformers) happen only when a trainer runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from asmopt import typed_config
from asmopt.cli.common import emit_json, reporting_full_disk

CONFIG_DIR = Path(__file__).resolve().parents[1] / "train" / "configs"
MISSING_DEPS = (
    "training needs torch, transformers, pyyaml and tqdm (pip install 'asmopt[ml,rl]'): {}"
)


def builtin_configs() -> list[str]:
    return typed_config.builtin_configs(CONFIG_DIR)


def config_path(name: str) -> Path:
    """A YAML file, or a built-in config by name (with or without `.yaml`)."""
    return typed_config.config_path(name, CONFIG_DIR)


def _usage_error(message: str) -> Exception:
    try:
        from asmopt.cli.common import UsageError
    except ImportError:  # pragma: no cover (the package always has its CLI)
        return ValueError(message)
    return UsageError(message)


def load_from_args(cls: type, args: argparse.Namespace) -> Any:
    """The config of a trainer: file, then --set, then the dedicated options."""
    try:
        from asmopt.train.config import load_config, parse_override
    except ImportError as exc:
        raise _usage_error(MISSING_DEPS.format(exc)) from None
    overrides: dict[str, Any] = {}
    for item in args.set or []:
        key, value = parse_override(item)
        overrides[key] = value
    if args.output_dir is not None:
        overrides["output_dir"] = args.output_dir
    if args.resume is not None:
        overrides["resume"] = args.resume
    if getattr(args, "suite", None):
        overrides["suite"] = args.suite
    return load_config(cls, config_path(args.config), overrides)


def _emit(summary: dict[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        emit_json(summary)  # undefined metrics (NaN) become null
        return
    print(f"output: {summary['output_dir']} ({summary['total_steps']} steps)")
    for key in ("val_start", "val_end"):
        if key in summary:
            shown = {k: v for k, v in summary[key].items() if not k.startswith("outcome/")}
            print(f"{key}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in shown.items()))
    if "final_model" in summary:
        print(f"final model: {summary['final_model']}")


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _progress(args: argparse.Namespace) -> bool:
    return not args.json and not args.no_progress and sys.stderr.isatty()


def _run_trainer(args: argparse.Namespace, config_name: str, trainer: str) -> int:
    """Load the config (or print it), then run `asmopt.train.<module>.<function>`; a
    missing optional dependency is a usage error naming the extra to install."""
    import importlib

    from asmopt.train import config as train_config

    cfg = load_from_args(getattr(train_config, config_name), args)
    if args.print_config:
        sys.stdout.write(train_config.config_to_yaml(cfg))
        return 0
    module, function = trainer.rsplit(".", 1)
    try:
        train = getattr(importlib.import_module(module), function)
    except ImportError as exc:
        raise _usage_error(MISSING_DEPS.format(exc)) from None

    def run() -> Any:
        return train(cfg, progress=_progress(args), echo=_echo)

    _emit(reporting_full_disk(run, cfg.output_dir), args)
    return 0


def _echo(text: str) -> None:
    """The trainer's notices (the resolved config, skipped rows, the plan) on stderr, so
    stdout holds only the summary (`--json`)."""
    print(text, file=sys.stderr, flush=True)


def cmd_ppo(args: argparse.Namespace) -> int:
    return _run_trainer(args, "PPOConfig", "asmopt.train.ppo.train_ppo")


def cmd_sft(args: argparse.Namespace) -> int:
    return _run_trainer(args, "SFTConfig", "asmopt.train.sft.train_sft")


def cmd_rewards(args: argparse.Namespace) -> int:
    from asmopt.train.reward_registry import available_rewards

    names = available_rewards()
    if args.json:
        import json

        print(json.dumps(names))
    else:
        print("\n".join(names))
    return 0


def _trainer_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        required=True,
        help=f"YAML file or built-in config ({', '.join(builtin_configs())})",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override one config field (repeatable; the value is read as YAML)",
    )
    p.add_argument("--output-dir", default=None, help="override output_dir")
    p.add_argument("--resume", default=None, help="auto | never | a checkpoint directory")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_ppo(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ppo",
        parents=[common],
        help="PPO on a causal LM with a reward function (one machine)",
        description="PPO for a local causal LM; every detail is a field of the YAML config "
        "(docs/training.md). Resumes from the newest checkpoint of output_dir by default.",
    )
    _trainer_options(p)
    p.set_defaults(func=cmd_ppo)


def add_sft(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "sft",
        parents=[common],
        help="supervised warm start on (prompt, completion) rows",
        description="Next-token cross-entropy on completions (docs/training.md).",
    )
    _trainer_options(p)
    p.set_defaults(func=cmd_sft)


def add_rewards(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("rewards", parents=[common], help="list the registered reward names")
    p.set_defaults(func=cmd_rewards)


def add_lm(sub: Any, common: argparse.ArgumentParser) -> None:
    """`asmopt train lm`: looped decoders of the loop-count study (asmopt.cli.study)."""
    from asmopt.cli.study import add_train_lm

    add_train_lm(sub, common)


# Each adds one `asmopt train` subcommand; append to add a trainer.
SUBCOMMANDS: list[Callable[[Any, argparse.ArgumentParser], None]] = [
    add_ppo,
    add_sft,
    add_rewards,
    add_lm,
]


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Adds the `train` group to the `asmopt` parser."""
    train = subparsers.add_parser("train", help="train policies: PPO, supervised warm start")
    sub = train.add_subparsers(dest="train_command", metavar="TRAINER")
    sub.required = True
    for add in SUBCOMMANDS:
        add(sub, common)
