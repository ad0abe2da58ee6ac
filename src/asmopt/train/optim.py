"""Optimisers and learning-rate schedules shared by the trainers."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from asmopt.train.config import TrainerConfig


def make_optimizer(
    params: list[torch.nn.Parameter], lr: float, cfg: TrainerConfig
) -> torch.optim.AdamW:
    """AdamW with the config's betas, eps and weight decay."""
    return torch.optim.AdamW(
        params,
        lr=lr,
        betas=(cfg.adam_beta1, cfg.adam_beta2),
        eps=cfg.adam_eps,
        weight_decay=cfg.weight_decay,
    )


def lr_factor(step: int, schedule: str, warmup_steps: int, total_steps: int) -> float:
    """Multiplier of the base learning rate after `step` scheduler steps: linear warm-up,
    then constant, linear or cosine decay reaching 0 at `total_steps`."""
    if warmup_steps and step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    progress = min(max(progress, 0.0), 1.0)
    if schedule == "linear":
        return 1.0 - progress
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    raise ValueError(f"unknown lr_schedule {schedule!r}; use constant, linear or cosine")


def make_scheduler(
    optimizer: torch.optim.Optimizer, schedule: str, warmup_steps: int, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """Stepped once per optimiser step of the trainer (one PPO iteration, one SFT batch)."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, schedule, warmup_steps, total_steps)
    )
