"""Checkpoints that resume a run exactly, written so that a crash never leaves a broken one.

A checkpoint is a directory `<output_dir>/checkpoints/step-NNNNNNNN/` holding `state.pt`
(trained weights, optimiser and scheduler states, the python / numpy / torch RNG states, the
step, the data position and the config) and `config.yaml`. It is written under a temporary
name and renamed into place, then the `latest` pointer is replaced atomically: a run killed
with SIGKILL at any instant leaves either the previous checkpoint or the new one, complete.

Only trainable parameters are stored: frozen weights (a LoRA base model, a reference model)
are reloaded from their own directories, which the config names.

`state.pt` holds tensors and plain Python values only, so it loads with
`torch.load(weights_only=True)`: opening a checkpoint cannot run code.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import torch

STATE_FILE = "state.pt"
LATEST = "latest"
PREFIX = "step-"


# --------------------------------------------------------------------------- RNG


def rng_state() -> dict[str, Any]:
    """Every random generator the trainers draw from, as plain values."""
    import numpy as np

    np_state = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {
            "kind": np_state[0],
            "keys": [int(k) for k in np_state[1]],
            "pos": int(np_state[2]),
            "has_gauss": int(np_state[3]),
            "cached_gaussian": float(np_state[4]),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    import numpy as np

    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    n = state["numpy"]
    np.random.set_state(
        (
            n["kind"],
            np.array(n["keys"], dtype=np.uint32),
            n["pos"],
            n["has_gauss"],
            n["cached_gaussian"],
        )
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def seed_everything(seed: int) -> None:
    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


# --------------------------------------------------------------------------- weights


def trainable_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of the parameters that training changes (tied weights stored once)."""
    return {
        name: p.detach().to("cpu", copy=True)
        for name, p in module.named_parameters()
        if p.requires_grad
    }


def load_trainable_state(
    module: torch.nn.Module, state: dict[str, torch.Tensor], what: str
) -> None:
    """Loads `state` into exactly the trainable parameters of `module`, or names the mismatch."""
    params = {n: p for n, p in module.named_parameters() if p.requires_grad}
    missing = sorted(set(params) - set(state))
    unexpected = sorted(set(state) - set(params))
    if missing or unexpected:
        raise ValueError(
            f"checkpoint does not fit the {what}: missing {missing[:3]}, unexpected "
            f"{unexpected[:3]} (was it made with another model, LoRA or critic setting?)"
        )
    with torch.no_grad():
        for name, p in params.items():
            if p.shape != state[name].shape:
                raise ValueError(
                    f"checkpoint {what} parameter {name}: shape {tuple(state[name].shape)}, "
                    f"model has {tuple(p.shape)}"
                )
            p.copy_(state[name])


# --------------------------------------------------------------------------- files


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def checkpoint_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / "checkpoints"


def save_checkpoint(
    output_dir: str | Path, step: int, state: dict[str, Any], *, config_yaml: str, keep: int
) -> Path:
    """Writes the checkpoint of `step` atomically, points `latest` at it, prunes old ones."""
    root = checkpoint_root(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{PREFIX}{step:08d}"
    tmp = root / f".tmp-{PREFIX}{step:08d}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    with open(tmp / STATE_FILE, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    (tmp / "config.yaml").write_text(config_yaml, encoding="utf-8")
    _fsync_dir(tmp)
    if final.exists():  # the same step saved again after a resume: replace it
        old = root / f".old-{PREFIX}{step:08d}-{os.getpid()}"
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old)
    else:
        os.replace(tmp, final)
    _fsync_dir(root)
    atomic_write_text(root / LATEST, final.name + "\n")
    for stale in list_checkpoints(output_dir)[:-keep]:
        shutil.rmtree(stale, ignore_errors=True)
    for leftover in root.glob(".tmp-*"):  # from runs killed while saving
        if not leftover.name.endswith(f"-{os.getpid()}"):
            shutil.rmtree(leftover, ignore_errors=True)
    return final


def list_checkpoints(output_dir: str | Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    root = checkpoint_root(output_dir)
    if not root.is_dir():
        return []
    found = [
        p
        for p in root.iterdir()
        if p.is_dir() and p.name.startswith(PREFIX) and (p / STATE_FILE).is_file()
    ]
    return sorted(found, key=lambda p: p.name)


def find_checkpoint(output_dir: str | Path) -> Path | None:
    """The checkpoint `latest` points at (or the newest complete one), or None."""
    root = checkpoint_root(output_dir)
    pointer = root / LATEST
    if pointer.is_file():
        target = root / pointer.read_text(encoding="utf-8").strip()
        if (target / STATE_FILE).is_file():
            return target
    found = list_checkpoints(output_dir)
    return found[-1] if found else None


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    file = path / STATE_FILE if path.is_dir() else path
    if not file.is_file():
        raise ValueError(f"{path}: not a checkpoint (no {STATE_FILE})")
    return torch.load(file, map_location="cpu", weights_only=True)


def resolve_resume(resume: str, output_dir: str | Path) -> Path | None:
    """The checkpoint to resume from under the `resume` setting, or None to start fresh."""
    if resume == "never":
        existing = find_checkpoint(output_dir)
        if existing is not None:
            raise ValueError(
                f"{output_dir} already holds a run ({existing.name}); set resume: auto to "
                "continue it, or choose another output_dir"
            )
        return None
    if resume == "auto":
        return find_checkpoint(output_dir)
    path = Path(resume)
    if not (path / STATE_FILE).is_file():
        raise ValueError(f"resume: {resume} is not a checkpoint directory (no {STATE_FILE})")
    return path
