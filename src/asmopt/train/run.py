"""The start every trainer shares: process settings, device, and the run to resume.

PPO, SFT and the study's LM trainer (asmopt.study.lm) all start here, so a device that
cannot be used, or a checkpoint made with another recipe, is refused the same way for each.
A resumed run must compute what the original would have, so a checkpoint whose config
differs in a field that changes what a step computes is refused here, once, before any
model is loaded.

PPO and SFT also share the rest of a run's bookkeeping, written once here: the run
directory and its metrics log, the checkpoint layout, and when evaluations and checkpoints
are due.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from asmopt.train.checkpoint import (
    load_checkpoint,
    resolve_resume,
    rng_state,
    save_checkpoint,
    seed_everything,
    set_rng_state,
)
from asmopt.train.config import changed_fields, config_to_dict, config_to_yaml
from asmopt.train.data import RowSampler
from asmopt.train.metrics_log import MetricsLog


def resolve_device(name: str) -> torch.device:
    """`auto` is CUDA when torch sees a GPU, else the CPU; a CUDA device asked for by name
    on a machine without one is refused here, not found out later by the first tensor."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but torch sees no CUDA device")
    return device


def quiet_transformers() -> None:
    """No per-file download/loading progress bars inside our own progress output."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


@dataclass
class RunStart:
    """Where a run writes, what it runs on, and the checkpoint it continues (if any)."""

    device: torch.device
    out: Path
    resume_from: Path | None
    ckpt: dict[str, Any] | None


# checkpoint -> the settings that differ from the run resuming it (empty: same recipe)
ChangedSettings = Callable[[dict[str, Any]], list[str]]


def start_run(
    *,
    device: str,
    num_threads: int,
    seed: int | None,
    out: Path,
    resume: str,
    changed: ChangedSettings,
) -> RunStart:
    """Threads, quiet library logs, the seed, the device and the checkpoint to resume.

    `seed` None leaves the random generators alone (the study seeds around model
    construction itself); `resume` is the policy of `resolve_resume` ("auto", "never" or a
    checkpoint directory). A checkpoint for which `changed` names any setting is refused."""
    if num_threads:
        torch.set_num_threads(num_threads)
    quiet_transformers()
    if seed is not None:
        seed_everything(seed)
    torch_device = resolve_device(device)
    resume_from = resolve_resume(resume, out)
    ckpt = load_checkpoint(resume_from) if resume_from is not None else None
    if ckpt is not None:
        differ = changed(ckpt)
        if differ:
            raise ValueError(
                f"cannot resume {resume_from}: the config changed in {', '.join(differ)}; "
                "a resumed run must compute what the original would have (use a new "
                "output_dir, or delete that run)"
            )
    return RunStart(device=torch_device, out=out, resume_from=resume_from, ckpt=ckpt)


def begin_run(cfg: Any) -> RunStart:
    """`start_run` for a trainer config (PPOConfig, SFTConfig): seeded, resumed as
    `cfg.resume` says, refused when a field outside RESUMABLE_CHANGES differs."""
    current = config_to_dict(cfg)
    return start_run(
        device=cfg.device,
        num_threads=cfg.num_threads,
        seed=cfg.seed,
        out=Path(cfg.output_dir),
        resume=cfg.resume,
        changed=lambda ckpt: changed_fields(ckpt["config"], current),
    )


# --------------------------------------------------------------------------- PPO and SFT


def open_run_dir(cfg: Any, start: RunStart, step: int) -> MetricsLog:
    """The run directory with the config it runs under, and its metrics log (cut back to
    `step` when resuming, so that the steps after the checkpoint are not logged twice)."""
    start.out.mkdir(parents=True, exist_ok=True)
    (start.out / "config.yaml").write_text(config_to_yaml(cfg), encoding="utf-8")
    return MetricsLog(
        start.out, resume_step=step if start.ckpt is not None else None, tensorboard=cfg.tensorboard
    )


def restore_position(ckpt: dict[str, Any], sampler: RowSampler) -> int:
    """Where a checkpointed run stood: the data order and every random generator are put
    back, and the step it finished is returned (the trainer restores its own weights)."""
    sampler.load_state_dict(ckpt["data"])
    set_rng_state(ckpt["rng"])
    return int(ckpt["step"])


def save_trainer_checkpoint(
    cfg: Any,
    out: Path,
    step: int,
    *,
    kind: str,
    weights: dict[str, Any],
    optimizers: dict[str, Any],
    schedulers: dict[str, Any],
    sampler: RowSampler,
) -> None:
    """The checkpoint layout of PPO and SFT: what `restore_position` and the trainers read
    back for an exact resume (weights, optimiser and schedule states by part name)."""
    state = {
        "kind": kind,
        "step": step,
        "config": config_to_dict(cfg),
        "weights": weights,
        "optimizers": {name: opt.state_dict() for name, opt in optimizers.items()},
        "schedulers": {name: sched.state_dict() for name, sched in schedulers.items()},
        "data": sampler.state_dict(),
        "rng": rng_state(),
    }
    save_checkpoint(out, step, state, config_yaml=config_to_yaml(cfg), keep=cfg.keep_checkpoints)


def is_due(every: int, step: int, total_steps: int) -> bool:
    """Whether a periodic action (evaluation, checkpoint) runs after `step`: every `every`
    steps (0: never), and always after the last step."""
    return bool(every and step % every == 0) or step == total_steps
