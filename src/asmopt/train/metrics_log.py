"""Metrics as JSONL (one object per step and kind) and, optionally, TensorBoard scalars.

On resume the JSONL file is cut back to the checkpoint's step and TensorBoard is told to
purge later events, so that a run killed and resumed leaves the same record as one that was
never interrupted (the steps after the checkpoint are recomputed, not duplicated).
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.train.checkpoint import atomic_write_text

if TYPE_CHECKING:  # TensorBoard is optional, imported when it is asked for
    from torch.utils.tensorboard import SummaryWriter

log = logging.getLogger(__name__)
METRICS_FILE = "metrics.jsonl"


def _clean(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    """The complete lines of a run's metrics file (a torn last line is dropped)."""
    path = Path(output_dir) / METRICS_FILE
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


class MetricsLog:
    """Appends `{"step": s, "kind": k, ...}` lines; mirrors numbers to TensorBoard."""

    def __init__(
        self, output_dir: str | Path, *, resume_step: int | None, tensorboard: bool
    ) -> None:
        self.dir = Path(output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / METRICS_FILE
        kept = [
            r
            for r in read_metrics(self.dir)
            if resume_step is not None and r["step"] <= resume_step
        ]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.writer: SummaryWriter | None = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:
                log.warning("TensorBoard logging is off: %s (pip install tensorboard)", exc)
            else:
                purge = None if resume_step is None else resume_step + 1
                self.writer = SummaryWriter(str(self.dir / "tensorboard"), purge_step=purge)

    def write(self, step: int, kind: str, metrics: dict[str, Any]) -> None:
        record = {"step": step, "kind": kind, **{k: _clean(v) for k, v in metrics.items()}}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        if self.writer is not None:
            for key, value in metrics.items():
                number = isinstance(value, int | float) and not isinstance(value, bool)
                if number and math.isfinite(value):
                    self.writer.add_scalar(f"{kind}/{key}", value, step)
            self.writer.flush()

    def close(self) -> None:
        self._file.close()
        if self.writer is not None:
            self.writer.close()
