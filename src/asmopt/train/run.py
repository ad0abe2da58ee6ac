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

from asmopt.errors import InputError
from asmopt.train.checkpoint import (
    KEY_MEANINGS,
    STATE_FILE,
    damaged,
    find_checkpoint,
    load_checkpoint,
    resolve_resume,
    restoring,
    rng_state,
    save_checkpoint,
    seed_everything,
    set_rng_state,
)
from asmopt.train.config import TrainerConfig, changed_fields, config_to_dict, config_to_yaml
from asmopt.train.data import RowSampler
from asmopt.train.metrics_log import MetricsLog
from asmopt.typed_config import DEVICE_TYPES


def resolve_device(name: str) -> torch.device:
    """`auto` is CUDA when torch sees a GPU, else the CPU. A device torch cannot name, or
    one this machine does not have, is refused here, before any model loads, not found out
    later by the first tensor."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in DEVICE_TYPES:
        raise InputError(f"device {name!r} is not one of auto, cpu, cuda, cuda:N, mps")
    _check_available(name, device)
    return device


def _check_available(name: str, device: torch.device) -> None:
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise InputError(f"device {name!r}: torch sees no MPS device here (use device: cpu)")
    if device.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise InputError(
            f"device {name!r} asked for, but torch sees no CUDA device here "
            "(use device: cpu, or auto)"
        )
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise InputError(
            f"device {name!r} asked for, but torch sees {count} CUDA device(s): "
            f"cuda:0 to cuda:{count - 1}"
        )


def disk_full_message(exc: BaseException, output_dir: str | Path) -> str:
    """The one line for a disk that filled during a run: which directory is full, and that
    the same command resumes from the last checkpoint once there is space."""
    filename = getattr(exc, "filename", None)
    where = Path(filename) if filename else Path(output_dir)
    while not where.is_dir() and where != where.parent:  # a file, or one removed since
        where = where.parent
    last = find_checkpoint(output_dir)
    resume = f"resume from {last.name}" if last is not None else "resume"
    return (
        f"{where}: no space left on device; free disk space, then rerun the same command "
        f"to {resume}"
    )


def quiet_transformers() -> None:
    """No per-file download/loading progress bars inside our own progress output."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


@dataclass
class RunStart:
    """Where a run writes, what it runs on, and the checkpoint it continues (if any);
    `explicit`: that checkpoint was named by `resume`, not found in the run directory."""

    device: torch.device
    out: Path
    resume_from: Path | None
    ckpt: dict[str, Any] | None
    explicit: bool = False


# checkpoint -> the settings that differ from the run resuming it (empty: same recipe)
ChangedSettings = Callable[[dict[str, Any]], list[str]]
# Keys every PPO and SFT checkpoint holds (save_trainer_checkpoint writes them).
TRAINER_KEYS = ("kind", "step", "config", "weights", "optimizers", "schedulers", "data", "rng")
# Keys of any checkpoint a run resumes from (the study's LM trainer's included).
COMMON_KEYS = ("step", "config", "rng")


def start_run(
    *,
    device: str,
    num_threads: int,
    train_seed: int | None,
    out: Path,
    resume: str,
    changed: ChangedSettings,
    required: tuple[str, ...] = COMMON_KEYS,
) -> RunStart:
    """Threads, quiet library logs, the trainer's seed, the device and the checkpoint to
    resume.

    `train_seed` None leaves the random generators alone (the study seeds around model
    construction itself); `resume` is the policy of `resolve_resume` ("auto", "never" or a
    checkpoint directory). A checkpoint that cannot be read or lacks a `required` key is a
    CheckpointError naming the file; one for which `changed` names any setting is refused."""
    if num_threads:
        torch.set_num_threads(num_threads)
    quiet_transformers()
    if train_seed is not None:
        seed_everything(train_seed)
    torch_device = resolve_device(device)
    resume_from = resolve_resume(resume, out)
    explicit = resume not in ("auto", "never")
    ckpt = None
    if resume_from is not None:
        ckpt = load_checkpoint(resume_from, required=required, explicit=explicit)
        with restoring(resume_from, explicit):
            differ = changed(ckpt)
        if differ:
            raise InputError(
                f"cannot resume {resume_from}: the config changed in {', '.join(differ)}; "
                "a resumed run must compute what the original would have (use a new "
                "output_dir, or delete that run)"
            )
    return RunStart(torch_device, out, resume_from, ckpt, explicit)


def begin_run(cfg: TrainerConfig, kind: str) -> RunStart:
    """`start_run` for a trainer config (PPOConfig, SFTConfig; `kind` "ppo" or "sft"):
    seeded, resumed as `cfg.resume` says, refused when a field outside RESUMABLE_CHANGES
    differs or the checkpoint lacks a part this trainer restores. All of it before any
    model loads, so a damaged checkpoint costs no loading time."""
    current = config_to_dict(cfg)
    start = start_run(
        device=cfg.device,
        num_threads=cfg.num_threads,
        train_seed=cfg.train_seed,
        out=Path(cfg.output_dir),
        resume=cfg.resume,
        changed=lambda ckpt: changed_fields(ckpt["config"], current),
        required=TRAINER_KEYS,
    )
    if start.ckpt is not None and start.resume_from is not None:
        _check_parts(start.ckpt, kind, current, start.resume_from, start.explicit)
    return start


def required_parts(kind: str, config: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """The parts a checkpoint of `kind` holds under each of its keys, by part name: what
    `save_trainer_checkpoint` writes for that trainer and config, and what it restores."""
    if kind == "sft":
        return {"weights": ("model",), "optimizers": ("model",), "schedulers": ("model",)}
    separate = config.get("critic_mode") == "separate"
    return {
        "weights": ("actor", "value_head", *(("critic",) if separate else ())),
        "optimizers": ("actor", "critic"),
        "schedulers": ("actor", "critic"),
    }


def _check_parts(
    ckpt: dict[str, Any], kind: str, config: dict[str, Any], path: Path, explicit: bool
) -> None:
    """Each part `required_parts` names is in the checkpoint, checked before any model
    loads (the trainers would otherwise find a missing part after loading them all)."""
    file = path / STATE_FILE if path.is_dir() else path
    if ckpt["kind"] != kind:
        problem = f"it was written by {ckpt['kind']!r} training, not {kind!r}"
        raise damaged(file, problem, explicit, label="unusable checkpoint")
    for key, parts in required_parts(kind, config).items():
        held = ckpt[key]
        missing = [p for p in parts if not isinstance(held, dict) or p not in held]
        if missing:
            what = KEY_MEANINGS.get(key, key)
            raise damaged(
                file, f"it has no {what} for the {missing[0]} ({key}.{missing[0]})", explicit
            )


# --------------------------------------------------------------------------- PPO and SFT


def open_run_dir(cfg: TrainerConfig, start: RunStart, step: int) -> MetricsLog:
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
    cfg: TrainerConfig,
    out: Path,
    step: int,
    *,
    kind: str,
    weights: dict[str, dict[str, torch.Tensor]],
    optimizers: dict[str, torch.optim.Optimizer],
    schedulers: dict[str, torch.optim.lr_scheduler.LRScheduler],
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
