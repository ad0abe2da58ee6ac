"""What every command group shares: the common options, errors, tables, JSON output."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from asmopt.errors import InputError
from asmopt.programs.model import Suite
from asmopt.programs.suite_io import builtin_suite_path, load_suite


class UsageError(InputError):
    """Bad command-line input; the message says what to change."""


def _jobs_default() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def common_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument(
        "--suite", default=None, help="suite directory (default: the built-in suite)"
    )
    common.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    return common


def open_suite(args: argparse.Namespace) -> Suite:
    return load_suite(args.suite or builtin_suite_path())


def print_table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def json_safe(data: Any) -> Any:
    """`data` with every NaN or infinity replaced by None (null), recursively.

    Python's json writes NaN and Infinity, which are not JSON: jq, JavaScript and most
    parsers reject the whole document. Metrics are NaN when undefined (e.g. explained
    variance of a constant return), so every `--json` output goes through this."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: json_safe(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [json_safe(v) for v in data]
    return data


def emit_json(data: Any) -> None:
    json.dump(json_safe(data), sys.stdout, indent=2, default=str, allow_nan=False)
    sys.stdout.write("\n")


def _short(text: str, n: int = 70) -> str:
    line = text.replace("\n", " | ")
    return line if len(line) <= n else line[: n - 3] + "..."


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


# ---------------------------------------------------------------------------- eval
def _ratio(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}x"


def _interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "-"
    hi = "inf" if high == float("inf") else f"{high:.3f}"
    return f"[{low:.3f}, {hi}]"


def print_metrics(metrics: dict[str, Any], indent: str = "  ") -> None:
    ref, strict = metrics["reference"], metrics["strict"]
    print(f"{indent}reference metrics (SuperCoder definitions)")
    print(f"{indent}  compile           {_pct(ref['compile_rate'])}")
    print(f"{indent}  test pass         {_pct(ref['pass_rate'])}")
    print(f"{indent}  avg speedup       {_ratio(ref['speedup'])}  (floored at 1.0 per test)")
    print(
        f"{indent}  %Opt (point)      {_pct(ref.get('pie_opt_point'))}  "
        "(point estimate >= 1.10x, interval ignored)"
    )
    print(f"{indent}strict metrics")
    print(f"{indent}  significantly faster  {_pct(strict['significantly_faster'])}")
    print(
        f"{indent}  %Opt (strict)         {_pct(strict['pie_opt'])}  "
        "(significantly faster, interval >= 1.10x)"
    )
    print(f"{indent}  geomean of correct    {_ratio(strict['geomean_correct'])}  (unfloored)")
    print(f"{indent}  significantly slower  {_pct(strict['significantly_slower'])}")
    print(f"{indent}  copies of baseline    {_pct(strict['copy_rate'])}")
    print(
        f"{indent}  measured {metrics['measured']} (unreliable {metrics['unreliable']}), "
        f"unmeasurable {metrics['unmeasurable']}"
    )


def reporting_full_disk(work: Callable[[], Any], output_dir: str) -> Any:
    """`work()`; a disk that fills on the way (a checkpoint, the metrics, the final model,
    whatever raises it) is one line naming the full directory and how the run resumes."""
    from asmopt.train.checkpoint import disk_full
    from asmopt.train.run import disk_full_message

    try:
        return work()
    except Exception as exc:
        if disk_full(exc):
            raise UsageError(disk_full_message(exc, output_dir)) from None
        raise
