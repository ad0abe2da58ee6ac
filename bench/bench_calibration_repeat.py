"""Repeated calibrations of the between-sandbox spread: do they agree, and is any bound 0?

`asmopt doctor --calibrate` measures this machine's between-sandbox spread (A/A rounds at
five run lengths of two kinds of work, docs/measurement.md) and keeps a one-sided 95%
upper bound per length.
That bound is the prior every timed test pools with, so repeated calibrations must not
scatter beyond what their own rounds allow, and none may read 0. This bench runs the
calibration `--repeats` times back to back (with `--load` busy processes beside it, as a
machine doing other work would have) and reports per timing core, kind of work and run length:

* each repeat's stored figure (the upper bound, floored at its detection floor);
* each repeat's two-sided 90% Q-profile interval of the spread (5% and 95% bounds);
* agreement within the bound's own width: the scatter of the stored figures (largest less
  smallest) is at most the median width of the repeats' 90% intervals, the uncertainty one
  calibration carries by itself.

Raw rounds (every pair's log-ratio, by repeat, core and length) are written beside the
report, so every figure recomputes.

    .venv/bin/python bench/bench_calibration_repeat.py [--repeats 6] [--load 2]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import busy_load, environment, md_table, setup, write_result

from asmopt.measure.stats import between_variance_upper, trimmed_interval
from asmopt.measure.timing.calibration import calibration_rounds_per_core
from asmopt.measure.timing.cores import default_core_lock
from asmopt.measure.timing.spread import spread_from_rounds


def interval(rounds: list[list[float]]) -> tuple[float, float]:
    """The two-sided 90% Q-profile interval of the between-round spread (as a standard
    deviation of the log-ratio)."""
    parts = [trimmed_interval(r) for r in rounds if len(r) >= 2]
    low = math.sqrt(between_variance_upper(parts, 0.05))
    high = math.sqrt(between_variance_upper(parts, 0.95))
    return low, high


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--load", type=int, default=2, help="busy processes beside it")
    ap.add_argument("--beside", default="", help="other work running beside it, for the report")
    args = ap.parse_args()
    if args.repeats < 2 or args.load < 0:
        ap.error("--repeats must be at least 2 and --load at least 0")
    toolchain, sandbox = setup()
    lock = default_core_lock()
    env_before = environment()
    raw: list[dict[str, dict[str, list[list[float]]]]] = []
    start = time.monotonic()
    with busy_load(args.load):
        for k in range(args.repeats):
            per_core = calibration_rounds_per_core(sandbox, lock, toolchain)
            raw.append(
                {
                    f"{c} {kind}": {repr(s): r for s, r in rl.items()}
                    for c, by_kind in per_core.items()
                    for kind, rl in by_kind.items()
                }
            )
            print(f"repeat {k + 1}: {len(per_core)} core(s)", flush=True)
    elapsed = time.monotonic() - start
    raw_path = write_result("calibration_repeat_raw.json", json.dumps(raw))
    text = report(raw)
    head = [
        "# Repeated calibrations of the between-sandbox spread",
        "",
        f"Command: `.venv/bin/python bench/bench_calibration_repeat.py --repeats {args.repeats} "
        f"--load {args.load}{' --beside ...' if args.beside else ''}` ({elapsed:.0f} s).",
        f"Machine before: {env_before}.",
        f"Machine after: {environment()}.",
        f"Load: {args.load} busy process(es) beside the calibrations"
        + (f"; also beside them: {args.beside}." if args.beside else "."),
        "",
        "",
    ]
    path = write_result("calibration_repeat.md", "\n".join(head) + text)
    print(text)
    print(f"wrote {path} and {raw_path.name}")
    return 0


def report(raw: list[dict[str, dict[str, list[list[float]]]]]) -> str:
    """The report's text from the raw rounds of each repeat."""
    rows = []
    summary = []
    zero = 0
    for core in sorted(raw[0]):  # `core kind`: each core's cache- and memory-bound work
        # Each repeat keys its lengths by the run length it measured: matched by rank.
        ranked = [sorted(rep[core].items(), key=lambda kv: float(kv[0])) for rep in raw]
        stored_by_repeat = []
        for rep in ranked:
            spread = spread_from_rounds({float(s): r for s, r in rep}, "bench")
            stored_by_repeat.append([t for _, t in spread.points])
        for i in range(len(ranked[0])):
            intervals = [interval(rep[i][1]) for rep in ranked]
            stored = [st[i] for st in stored_by_repeat]
            length = sorted(float(rep[i][0]) for rep in ranked)[len(ranked) // 2]
            zero += sum(s <= 0 for s in stored)
            width = sorted(hi - lo for lo, hi in intervals)[len(intervals) // 2]
            agree = max(stored) - min(stored) <= width
            ms = length * 1e3
            rows.append((core, f"{ms:.2f}", stored, intervals, agree))
            summary.append(
                (
                    core,
                    f"{ms:.2f}",
                    ", ".join(f"{100 * s:.2f}" for s in stored),
                    f"{100 * (max(stored) - min(stored)):.2f}",
                    ", ".join(f"[{100 * lo:.2f}, {100 * hi:.2f}]" for lo, hi in intervals),
                    f"{100 * width:.2f}",
                    "yes" if agree else "NO",
                )
            )
    agreed = sum(r[4] for r in rows)
    text = "\n".join(
        [
            "Per timing core and run length (the median over the repeats): each repeat's "
            "stored spread (the one-sided 95% upper bound, floored at its detection floor; % "
            "of the log-ratio), their scatter "
            "(largest less smallest), each repeat's two-sided 90% Q-profile interval and "
            "their median width, and whether the scatter is within that width.",
            "",
            md_table(
                [
                    "core, work",
                    "run ms",
                    "stored spread per repeat (%)",
                    "scatter (%)",
                    "90% intervals (%)",
                    "median width (%)",
                    "agree",
                ],
                summary,
            ),
            "",
            f"Lengths whose repeats agree within the width: **{agreed}/{len(rows)}**; stored "
            "spreads of 0: "
            f"**{zero}**.",
            "",
            "Raw rounds: `calibration_repeat_raw.json` (per repeat, core and run length in "
            "seconds: each round's log-ratios).",
            "",
        ]
    )
    return text


if __name__ == "__main__":
    raise SystemExit(main())
