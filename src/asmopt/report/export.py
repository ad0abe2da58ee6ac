"""Exports of a run's stored results: one flat record per sample, as JSONL or parquet.

Both writers go through `asmopt.safe_io.write_output`: `-` is standard output, a regular
file is replaced atomically, anything else at the path (a device, a FIFO) is refused; each
returns the number of records it wrote, which is what a summary may report.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from asmopt.safe_io import write_output
from asmopt.store import ResultStore, StoreError


# ---------------------------------------------------------------------------- export
def _finite(x: Any) -> Any:
    """JSON has no infinity: an unbounded interval end is exported as null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def export_records(store: ResultStore, raw: bool = False) -> list[dict[str, Any]]:
    """One record per sample: verdict, speedup, tests with their timings, the answer text.

    The layout is flat where it can be (for dataframes) and nested per test."""
    meta = store.meta()
    run = meta.get("run", {})
    tests: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in store.test_rows():
        key = (r.pop("program_id"), r.pop("sample"))
        tests.setdefault(key, []).append(r)
    timings: dict[tuple[str, int, str], dict[str, Any]] = {}
    for r in store.timing_rows():
        key3 = (r.pop("program_id"), r.pop("sample"), r.pop("test"))
        if not raw:
            r.pop("raw", None)
        timings[key3] = r
    out = []
    for s in store.sample_rows():
        key = (s["program_id"], s["sample"])
        rec: dict[str, Any] = {
            "suite": run.get("suite"),
            "policy": run.get("policy"),
            "measure": run.get("measure"),
            **s,
            "assembly": store.candidate_asm(s["candidate_hash"]) if s["candidate_hash"] else None,
            "policy_info": json.loads(s["policy_info"] or "{}"),
        }
        rec["built"] = bool(rec["built"])
        rec["correct"] = bool(rec["correct"])
        rec["is_copy"] = bool(rec["is_copy"])
        rec["tests"] = [{**t, "timing": timings.get((*key, t["test"]))} for t in tests.get(key, [])]
        out.append(_finite(rec))
    return out


def write_jsonl(records: Sequence[dict[str, Any]], path: Path | str) -> int:
    """One JSON object per line; returns how many were written."""

    def write(fh: BinaryIO) -> int:
        count = 0
        for rec in records:
            fh.write((json.dumps(rec, default=str) + "\n").encode("utf-8"))
            count += 1
        return count

    return write_output(path, write)


def write_parquet(records: Sequence[dict[str, Any]], path: Path | str) -> int:
    """Parquet needs a fixed schema: free-form fields (tests, policy info) become JSON text."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise StoreError(
            "Parquet export needs pyarrow (pip install pyarrow); or use --format jsonl"
        ) from None
    rows = [
        {
            **{k: v for k, v in rec.items() if k not in ("tests", "policy_info")},
            "policy_info": json.dumps(rec.get("policy_info"), default=str),
            "tests": json.dumps(rec.get("tests"), default=str),
        }
        for rec in records
    ]
    table = pa.Table.from_pylist(rows)

    def write(fh: BinaryIO) -> int:
        pq.write_table(table, fh)
        return table.num_rows

    return write_output(path, write)
