"""Writes PLT kernel choices into the kernel cache file, as an earlier process would have."""

from __future__ import annotations

import json
from typing import Any


def write_choice(machine: str | None = None, **change: Any) -> dict[str, Any]:
    """One cached float32 2-row 16 x 8 choice (few-row, timed against F.linear), with the
    fields in `change` replaced or added, under `machine` (default: this machine's key).
    Returns the entry written."""
    from asmopt.models.plt import kernels

    entry: dict[str, Any] = {
        "dtype": "float32",
        "rows": 2,
        "in_features": 16,
        "out_features": 8,
        "timings_us": {"linear": 10.0, "few_row": 1.0},
        "kernel": "few_row",
        **change,
    }
    key = kernels.machine_key() if machine is None else machine
    kernels.cache_path().write_text(json.dumps({key: {"float32 rows=2 16x8": entry}}))
    return entry
