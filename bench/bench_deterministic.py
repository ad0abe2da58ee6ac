"""Deterministic mode: instruction counts of identical binaries agree exactly, every time.

For built-in programs, the -O3 binary and an identical copy are counted under valgrind
(cachegrind, in the sandbox) on every test but the heavy one, several times over. Goal: the
A/A ratio is exactly 1.000 and every repeat gives the same count.

The full run also shows the mode's bias: for -Os and -O1 builds of a few programs it puts
the instruction-count speedup next to the timed one.

    .venv/bin/python bench/bench_deterministic.py [--quick] [--repeats N]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import (
    PROGRAMS,
    MeasureMode,
    ProgramSpeedup,
    TimingConfig,
    baseline_binary,
    environment,
    md_table,
    programs,
    setup,
    time_tests,
    write_result,
)

from asmopt.evaluate import check_binary
from asmopt.measure.valgrind import Valgrind, count_instructions, instruction_speedup


def _aa_rows(
    jobs: list[tuple[str, Any, Path, Path]], sandbox: Any, vg: Valgrind, repeats: int
) -> tuple[list[tuple[object, ...]], int, int]:
    """Count every (program, test, binary, copy) job `repeats` times, two jobs at a time:
    the table rows, how many tests had every A/A ratio exactly 1, and how many had every
    repeat identical."""

    def count(job):  # type: ignore[no-untyped-def]
        pid, test, a, b = job
        results = []
        for _ in range(repeats):
            ca = count_instructions(sandbox, a, test, valgrind=vg)
            cb = count_instructions(sandbox, b, test, valgrind=vg)
            results.append((ca, cb))
        return pid, test.name, results

    rows, exact, same = [], 0, 0
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        for pid, name, results in pool.map(count, jobs):
            counts = [c.count for pair in results for c in pair]
            ratios = [instruction_speedup(name, ca, cb).ratio for ca, cb in results]
            ok = all(r == 1.0 for r in ratios)
            repeat_ok = len(set(counts)) == 1 and None not in counts
            exact += ok
            same += repeat_ok
            rows.append(
                (
                    pid,
                    name,
                    f"{counts[0]:,}" if counts[0] else results[0][0].message[:60],
                    " ".join(f"{r:.6f}" for r in ratios),
                    "yes" if repeat_ok else "NO",
                )
            )
            print(f"{pid:18s} {name}: {counts[0]} ratios {ratios}", flush=True)
    return rows, exact, same


def _bias_rows(
    toolchain: Any, sandbox: Any, vg: Valgrind, ids: tuple[str, ...]
) -> list[tuple[object, ...]]:
    """-Os and -O1 answers: real, correct, and different from -O3 in ways that instruction
    counts and time judge differently (-Os prefers short sequences, e.g. a `div` over a
    multiply by the reciprocal; -O1 does not vectorise or unroll). One row per answer: its
    speedup by instruction count and timed."""
    bias_rows = []
    for p in programs(ids):
        base = baseline_binary(toolchain, p)
        heavy = set(p.meta.get("heavy_tests", []))
        light = [t for t in p.tests if t.name not in heavy]
        for flags in (("-Os",), ("-O1",)):
            built = toolchain.compile_assembly(p, flags)
            if not built.ok or built.output is None:
                continue
            cand = baseline_binary(toolchain, p, built.output.read_text())
            if not check_binary(p, cand, sandbox).correct:
                continue
            inst = [
                instruction_speedup(
                    t.name,
                    count_instructions(sandbox, base, t, valgrind=vg),
                    count_instructions(sandbox, cand, t, valgrind=vg),
                )
                for t in light
            ]
            timed, failure, _ = time_tests(sandbox, base, cand, light, TimingConfig())
            if failure is not None:
                continue
            pi = ProgramSpeedup.from_tests(MeasureMode.INSTRUCTIONS, inst)
            pt = ProgramSpeedup.from_tests(MeasureMode.TIME, timed)
            agree = (pi.ratio > 1) == (pt.ratio > 1) or pt.low <= 1 <= pt.high
            bias_rows.append(
                (
                    p.id,
                    " ".join(flags),
                    f"{pi.ratio:.3f}",
                    f"{pt.ratio:.3f} [{pt.low:.3f}, {pt.high:.3f}]",
                    "" if agree else "**disagree**",
                )
            )
            print(
                f"bias {p.id} {' '.join(flags)}: instructions {pi.ratio:.3f}, "
                f"time {pt.ratio:.3f}",
                flush=True,
            )
    return bias_rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 programs, 2 repeats, no bias table")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    ids = PROGRAMS[:3] if args.quick else PROGRAMS
    repeats = 2 if args.quick else args.repeats
    toolchain, sandbox = setup()
    vg = Valgrind.locate()
    work = Path(tempfile.mkdtemp(prefix="asmopt-det-"))
    start = time.monotonic()
    jobs = []
    for p in programs(ids):
        a = baseline_binary(toolchain, p)
        b = work / f"{p.id}-copy"
        shutil.copyfile(a, b)
        b.chmod(0o755)
        heavy = set(p.meta.get("heavy_tests", []))
        jobs += [(p.id, t, a, b) for t in p.tests if t.name not in heavy]

    rows, exact, same = _aa_rows(jobs, sandbox, vg, repeats)
    shutil.rmtree(work, ignore_errors=True)
    bias_rows = [] if args.quick else _bias_rows(toolchain, sandbox, vg, ids[:5])
    elapsed = time.monotonic() - start
    n = len(rows)
    goal = exact == n and same == n
    text = [
        "# Deterministic mode: instruction counts",
        "",
        "Command: `.venv/bin/python bench/bench_deterministic.py"
        f"{' --quick' if args.quick else ''}`"
        f" ({len(ids)} programs, {n} tests, {repeats} repeats, {elapsed:.0f} s).",
        f"Machine: {environment()}; {vg.version}.",
        "",
        "Each test (the heavy one excluded: valgrind runs programs 20-50x slower) is counted "
        f"for the -O3 binary and an identical copy, {repeats} times each, every count in a "
        "fresh sandbox.",
        "",
        f"A/A ratio exactly 1.000000 on {exact}/{n} tests; every repeat identical on "
        f"{same}/{n} tests.",
        "",
        f"Goal: A/A ratio exactly 1.000 on repeated runs: **{'met' if goal else 'NOT met'}**.",
        "",
        md_table(
            ["program", "test", "instructions", "A/A ratio per repeat", "repeats equal"], rows
        ),
        "",
    ]
    if bias_rows:
        text += [
            "## Bias: instruction counts are not time",
            "",
            "-Os and -O1 builds of the first five programs as candidates, on the same light "
            "tests: speedup over -O3 by instruction count vs timed speedup (95% interval). "
            "Where they disagree in direction, fewer instructions did not mean less time (or "
            "the reverse); where they agree, the sizes still differ.",
            "",
            md_table(["program", "candidate", "instructions", "time", ""], bias_rows),
            "",
        ]
    path = write_result("deterministic.md", "\n".join(text))
    print(f"{exact}/{n} exact, {same}/{n} repeat-identical; wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
