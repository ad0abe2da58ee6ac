"""The start every trainer shares: process settings, device, and the run to resume.

A resumed run must compute what the original would have, so a checkpoint whose config
differs in a field that changes what a step computes is refused here, once, for every
trainer, before any model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from asmopt.train.checkpoint import load_checkpoint, resolve_resume, seed_everything
from asmopt.train.config import changed_fields, config_to_dict
from asmopt.train.modeling import quiet_transformers, resolve_device


@dataclass
class RunStart:
    """Where a run writes, what it runs on, and the checkpoint it continues (if any)."""

    device: torch.device
    out: Path
    resume_from: Path | None
    ckpt: dict[str, Any] | None


def begin_run(cfg: Any) -> RunStart:
    """Threads, quiet library logs, the seed, the device and the checkpoint to resume."""
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    quiet_transformers()
    seed_everything(cfg.seed)
    device = resolve_device(cfg.device)
    out = Path(cfg.output_dir)
    resume_from = resolve_resume(cfg.resume, out)
    ckpt = load_checkpoint(resume_from) if resume_from is not None else None
    if ckpt is not None:
        changed = changed_fields(ckpt["config"], config_to_dict(cfg))
        if changed:
            raise ValueError(
                f"cannot resume {resume_from}: the config changed in {', '.join(changed)}; "
                "a resumed run must compute what the original would have (use a new output_dir)"
            )
    return RunStart(device=device, out=out, resume_from=resume_from, ckpt=ckpt)
