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

import contextlib
import errno
import os
import random
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from asmopt.errors import InputError
from asmopt.typed_config import one_line

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
        raise InputError(
            f"checkpoint does not fit the {what}: missing {missing[:3]}, unexpected "
            f"{unexpected[:3]} (was it made with another model, LoRA or critic setting?)"
        )
    with torch.no_grad():
        for name, p in params.items():
            if p.shape != state[name].shape:
                raise InputError(
                    f"checkpoint {what} parameter {name}: shape {tuple(state[name].shape)}, "
                    f"model has {tuple(p.shape)}"
                )
            p.copy_(state[name])


# --------------------------------------------------------------------------- errors


class CheckpointError(InputError):
    """A checkpoint that cannot be read or used; the message names the file, what is wrong
    and the way out (an earlier checkpoint, or a fresh start)."""


def disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised while handling, is a full disk. torch's
    writer turns the OSError of a failed write into a RuntimeError on the way out, and
    safetensors (the final model's weights) reports it in its own error's text only."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if not isinstance(current, OSError) and os.strerror(errno.ENOSPC) in str(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


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
    """`path` holds `text` or what it held before, never part of it; the temporary file is
    removed however the write ends (a full disk, an interrupt)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


@contextlib.contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """A temporary directory beside `final` to write into; it replaces `final` only when
    the block completes, and is removed on every other exit (a full disk, an error while
    serialising, an interrupt). A kill leaves it behind; `remove_leftovers` takes it."""
    tmp = final.with_name(f".tmp-{final.name}-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        _fsync_dir(tmp)
        _replace_dir(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(final.parent)


def _replace_dir(new: Path, final: Path) -> None:
    """Renames `new` to `final`; an existing `final` (the same step saved again after a
    resume) is moved aside first and removed only once `new` is in place."""
    if not final.exists():
        os.replace(new, final)
        return
    old = final.with_name(f".old-{final.name}-{os.getpid()}")
    os.replace(final, old)
    os.replace(new, final)
    shutil.rmtree(old, ignore_errors=True)


def remove_leftovers(root: Path) -> None:
    """Temporary files and directories of other processes' interrupted writes (a killed
    run): they are never read, and on a nearly full disk they hold the space a new write
    needs."""
    if not root.is_dir():
        return
    mine = f"-{os.getpid()}"
    for leftover in [*root.glob(".tmp-*"), *root.glob(".old-*"), *root.glob(".*.tmp-*")]:
        if leftover.name.endswith(mine):
            continue
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def checkpoint_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / "checkpoints"


def save_checkpoint(
    output_dir: str | Path, step: int, state: dict[str, Any], *, config_yaml: str, keep: int
) -> Path:
    """Writes the checkpoint of `step` atomically, points `latest` at it, prunes old ones.

    A full disk is an OSError (ENOSPC) naming the checkpoint directory, raised after the
    half-written checkpoint is removed, so the previous one stays the one to resume from."""
    root = checkpoint_root(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    remove_leftovers(root)
    final = root / f"{PREFIX}{step:08d}"
    try:
        with staged_dir(final) as tmp:
            _write_state(tmp / STATE_FILE, state)
            (tmp / "config.yaml").write_text(config_yaml, encoding="utf-8")
        atomic_write_text(root / LATEST, final.name + "\n")
    except Exception as exc:
        if disk_full(exc):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root)) from None
        raise
    for stale in list_checkpoints(output_dir)[:-keep]:
        shutil.rmtree(stale, ignore_errors=True)
    return final


def _write_state(file: Path, state: dict[str, Any]) -> None:
    with open(file, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


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
    """The checkpoint `latest` points at (or the newest complete one), or None. A `latest`
    that names no checkpoint of this directory (garbled by hand) is ignored."""
    root = checkpoint_root(output_dir)
    pointer = root / LATEST
    if pointer.is_file():
        name = pointer.read_text(encoding="utf-8", errors="replace").strip()
        target = root / name
        if name.startswith(PREFIX) and "/" not in name and (target / STATE_FILE).is_file():
            return target
    found = list_checkpoints(output_dir)
    return found[-1] if found else None


# --------------------------------------------------------------------------- reading


def load_checkpoint(
    path: str | Path, *, required: Iterable[str] = (), explicit: bool = False
) -> dict[str, Any]:
    """The state of a checkpoint (a directory or its state.pt) holding the `required` keys;
    anything else is a CheckpointError naming the file and the way out (`explicit`: the
    checkpoint was named by `resume`, so the way out is another `--resume`)."""
    path = Path(path)
    file = path / STATE_FILE if path.is_dir() else path
    if not file.is_file():
        raise InputError(f"{path}: not a checkpoint (no {STATE_FILE})")
    with open(file, "rb") as f:  # a file we may not read is an OSError, not damage
        if os.fstat(f.fileno()).st_size == 0:
            raise damaged(file, "it is empty (0 bytes)", explicit)
        try:
            state = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as exc:  # torch raises many types for bytes it cannot parse
            detail = one_line(str(exc).split(". ")[0]) or type(exc).__name__
            raise damaged(file, f"it cannot be read ({detail[:120]})", explicit) from None
    if not isinstance(state, dict):
        what = type(state).__name__
        raise damaged(file, f"it holds a {what}, not a checkpoint's mapping", explicit)
    missing = [key for key in required if key not in state]
    if missing:
        raise damaged(file, f"it has no {_describe(missing[0])} ({missing[0]!r})", explicit)
    return state


# What a missing key of a checkpoint's state means, for messages.
KEY_MEANINGS = {
    "optimizers": "optimizer state",
    "optimizer": "optimizer state",
    "schedulers": "learning-rate schedule state",
    "weights": "weights",
    "model": "weights",
    "rng": "random generator states",
    "data": "data position",
    "step": "step",
    "config": "config",
    "kind": "trainer kind",
}


def _describe(key: str) -> str:
    return KEY_MEANINGS.get(key, "entry")


def damaged(
    file: Path, problem: str, explicit: bool, *, label: str = "damaged checkpoint"
) -> CheckpointError:
    """The one-line error for an unusable checkpoint file, with the way out: the newest
    earlier checkpoint of the same run (moving the damaged one away resumes from it), or a
    fresh start."""
    ckpt_dir = file.parent
    earlier = [p for p in list_checkpoints(ckpt_dir.parent.parent) if p.name < ckpt_dir.name]
    if earlier and explicit:
        way = f"resume from an earlier checkpoint (--resume {earlier[-1]}) or start fresh"
    elif earlier:
        way = (
            f"move {ckpt_dir} away to resume from the earlier {earlier[-1].name}, or start "
            "fresh with a new output directory"
        )
    else:
        way = "no earlier checkpoint is left: start fresh with a new output directory"
    return CheckpointError(f"{file}: {label}: {problem}; {way}")


@contextlib.contextmanager
def restoring(path: Path, explicit: bool = False) -> Iterator[None]:
    """Loading a checkpoint's parts into the models and optimisers: what does not fit (a
    missing part, a state of the wrong shape) is reported against the checkpoint file."""
    file = path / STATE_FILE if path.is_dir() else path
    try:
        yield
    except CheckpointError:
        raise
    except KeyError as exc:
        raise damaged(file, f"it has no {exc.args[0]!r} entry", explicit) from None
    except (ValueError, TypeError, IndexError, AttributeError, RuntimeError) as exc:
        # damage or another recipe's checkpoint: the file cannot tell which
        problem = f"it does not fit this run ({one_line(str(exc))[:200]})"
        raise damaged(file, problem, explicit, label="unusable checkpoint") from None


def resolve_resume(resume: str, output_dir: str | Path) -> Path | None:
    """The checkpoint to resume from under the `resume` setting, or None to start fresh."""
    if resume == "never":
        existing = find_checkpoint(output_dir)
        if existing is not None:
            raise InputError(
                f"{output_dir} already holds a run ({existing.name}); set resume: auto to "
                "continue it, or choose another output_dir"
            )
        return None
    if resume == "auto":
        return find_checkpoint(output_dir)
    path = Path(resume)
    if not (path / STATE_FILE).is_file():
        raise InputError(f"resume: {resume} is not a checkpoint directory (no {STATE_FILE})")
    return path
