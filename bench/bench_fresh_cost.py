"""Cost of fresh inputs: grading a candidate with drawn inputs against fixed inputs only.

The whole grading path of `asmopt eval` (asmopt.evaluate: `check_candidate`, then
`Measurer.measure_many`), on built-in programs that have input generators, once with
fresh inputs (the default: K drawn inputs per size class in the correctness check, every
timed pair on its own drawn input, no baseline run shared between candidates on a fresh
test) and once with fixed inputs only (`FreshInputs.off()`: what grading cost before).
The two alternate program by program, the order flipping every repeat, so both see the
same machine. Reported per program and overall: wall time, busy time (wall time less
the time spent waiting for the timing core, which other processes on a shared machine
also lock), runs, and the speedup each reports (the same answer must get the same verdict
and about the same speedup).

Two cases: one candidate per program (its -O3 -march=native build), and four candidates
of one program graded together (-O3 -march=native, -O2, -O1, a byte-different copy of the
baseline timed with `time_copies`), where fixed inputs share the baseline's runs between
candidates and fresh inputs do not.

The adaptive engine stops each test when its interval is narrow enough, so how many pairs
a grading takes varies from one grading to the next by more than fresh inputs change it.
A third case therefore grades with a fixed number of timed pairs per test (8: the same
runs in both modes), which isolates what fresh inputs cost: the drawn correctness inputs,
the inputs drawn per pair, and inputs of another size than the fixed test's.

Goal: grading cost per candidate with fresh inputs within 1.2x of fixed inputs.

    .venv/bin/python bench/bench_fresh_cost.py [--quick] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import RESULTS, environment, md_table, setup

from asmopt.evaluate import MeasureOptions, Measurer, check_candidate
from asmopt.fresh import FreshInputs
from asmopt.measure.timing import TimingConfig, default_core_lock
from asmopt.programs import load_builtin_suite

PROGRAMS = (
    "gcd_pairs",
    "sieve_primes",
    "collatz_longest",
    "popcount_swar",
    "crc32_table",
    "lcs_dp",
    "quicksort_int",
    "floyd_warshall",
)
SHARED_PROGRAM = "collatz_longest"
FIXED_PAIRS = 8


def grade(
    program: Any,
    answers: list[str],
    baseline: str,
    toolchain: Any,
    sandbox: Any,
    fresh: FreshInputs,
    time_copies: bool = False,
    pairs: int | None = None,
) -> dict[str, Any]:
    """Grade `answers` of one program as `asmopt eval` does; wall and busy seconds. With
    `pairs`, every test gets exactly that many timed pairs."""
    lock = default_core_lock()
    timing = (
        TimingConfig()
        if pairs is None
        else TimingConfig(
            min_pairs=pairs, max_pairs=pairs, max_rounds=1, budget_s=1e9,
            target_half_width=1e-9,
        )
    )
    options = MeasureOptions(timing=timing, time_copies=time_copies, lock=lock)
    wall0 = time.monotonic()
    checks = [
        check_candidate(program, asm, toolchain, sandbox, fresh=fresh, label=k)
        for k, asm in enumerate(answers)
    ]
    measurer = Measurer(program, baseline, toolchain, sandbox, options, None)
    correct = [c for c in checks if c.correct]
    last = len(correct) - 1  # the copy of the baseline, timed only with time_copies
    measurer.measure_many([(c, time_copies and k == last) for k, c in enumerate(correct)])
    wall = time.monotonic() - wall0
    waited = sum(
        t.context.get("waited_s", 0.0)
        for c in checks
        if c.speedup is not None
        for t in c.speedup.tests
    )
    return {
        "wall_s": wall,
        "busy_s": wall - waited,
        "waited_s": waited,
        "verdicts": [str(c.verdict) for c in checks],
        "tests_run": [c.total for c in checks],
        "speedups": [
            None if c.speedup is None or not c.speedup.has_ratio
            else [c.speedup.ratio, c.speedup.low, c.speedup.high]
            for c in checks
        ],
        "pairs": [
            sum(t.n for t in c.speedup.tests) if c.speedup is not None else 0 for c in checks
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 programs, 1 repeat")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / "fresh_cost.md"))
    ap.add_argument("--raw", default=str(RESULTS / "fresh_cost_raw.json"))
    args = ap.parse_args()
    ids = PROGRAMS[:3] if args.quick else PROGRAMS
    repeats = 1 if args.quick else args.repeats
    toolchain, sandbox = setup()
    suite = load_builtin_suite()
    programs = [suite.get(i) for i in ids]
    missing = [p.id for p in programs if p.inputs is None]
    if missing:
        raise SystemExit(f"no input generator: {', '.join(missing)}")
    env_before = environment()
    started = time.monotonic()
    raw: list[dict[str, Any]] = []
    modes = {"fresh": lambda: FreshInputs(), "fixed": FreshInputs.off}
    for rep in range(repeats):
        for k, program in enumerate(programs):
            baseline = toolchain.baseline_assembly(program)
            answer = toolchain.baseline_assembly(program, ("-O3", "-march=native"))
            order = ["fresh", "fixed"] if (rep + k) % 2 == 0 else ["fixed", "fresh"]
            for case, pairs in (("one", None), ("fixed-pairs", FIXED_PAIRS)):
                for mode in order:
                    r = grade(
                        program, [answer], baseline, toolchain, sandbox, modes[mode](),
                        pairs=pairs,
                    )
                    raw.append(
                        {"case": case, "repeat": rep, "program": program.id, "mode": mode, **r}
                    )
                    print(f"{rep} {case} {program.id} {mode}: {r['wall_s']:.1f} s wall, "
                          f"{r['busy_s']:.1f} s busy, {r['verdicts']}", flush=True)
        program = suite.get(SHARED_PROGRAM)
        baseline = toolchain.baseline_assembly(program)
        answers = [
            toolchain.baseline_assembly(program, flags)
            for flags in (("-O3", "-march=native"), ("-O2",), ("-O1",))
        ] + [baseline + "\n# a byte-different copy\n"]
        order = ["fresh", "fixed"] if rep % 2 == 0 else ["fixed", "fresh"]
        for mode in order:
            r = grade(program, answers, baseline, toolchain, sandbox, modes[mode](), True)
            raw.append({"case": "four", "repeat": rep, "program": program.id, "mode": mode, **r})
            print(f"{rep} four candidates {mode}: {r['wall_s']:.1f} s wall", flush=True)
    elapsed = time.monotonic() - started
    Path(args.raw).write_text(json.dumps(raw, indent=1) + "\n")
    Path(args.out).write_text(render(raw, args, env_before, elapsed))
    print(f"wrote {args.out} and {args.raw}")
    return 0


def _ratio(raw: list[dict[str, Any]], case: str, key: str) -> list[float]:
    """fresh / fixed of `key`, per (repeat, program) of one case."""
    by = {(r["repeat"], r["program"], r["mode"]): r for r in raw if r["case"] == case}
    return [
        by[rep, prog, "fresh"][key] / by[rep, prog, "fixed"][key]
        for (rep, prog, mode) in by
        if mode == "fresh" and (rep, prog, "fixed") in by and by[rep, prog, "fixed"][key] > 0
    ]


def _med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}" if xs else "-"


def _span(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}" if xs else "-"


def _grading_rows(raw: list[dict[str, Any]]) -> list[tuple[object, ...]]:
    """One table row per grading in `raw`."""
    rows = []
    for r in raw:
        sp = r["speedups"][0]
        rows.append(
            (
                r["repeat"] + 1,
                r["case"],
                r["program"],
                r["mode"],
                f"{r['wall_s']:.1f}",
                f"{r['busy_s']:.1f}",
                f"{r['waited_s']:.1f}",
                " ".join(r["verdicts"]),
                sum(r["tests_run"]),
                sum(r["pairs"]),
                "-" if sp is None else f"{sp[0]:.3f} [{sp[1]:.3f}, {sp[2]:.3f}]",
            )
        )
    return rows


def render(raw: list[dict[str, Any]], args: argparse.Namespace, env: str, elapsed: float) -> str:
    fp_wall, fp_core = _ratio(raw, "fixed-pairs", "wall_s"), _ratio(raw, "fixed-pairs", "busy_s")
    fp_total = {
        mode: sum(r["busy_s"] for r in raw if r["case"] == "fixed-pairs" and r["mode"] == mode)
        for mode in ("fresh", "fixed")
    }
    fp_pooled = fp_total["fresh"] / fp_total["fixed"] if fp_total["fixed"] else float("nan")
    one_wall, one_core = _ratio(raw, "one", "wall_s"), _ratio(raw, "one", "busy_s")
    four_wall, four_core = _ratio(raw, "four", "wall_s"), _ratio(raw, "four", "busy_s")
    total = {
        mode: sum(r["busy_s"] for r in raw if r["case"] == "one" and r["mode"] == mode)
        for mode in ("fresh", "fixed")
    }
    pooled = total["fresh"] / total["fixed"] if total["fixed"] else float("nan")
    goal = "met" if pooled <= 1.2 else "NOT met"
    fp_goal = "met" if fp_pooled <= 1.2 else "NOT met"
    return "\n".join(
        [
            "# Grading cost: fresh inputs against fixed inputs only",
            "",
            f"Command: `.venv/bin/python bench/bench_fresh_cost.py"
            f"{' --quick' if args.quick else ''} --repeats {1 if args.quick else args.repeats}` "
            f"({elapsed:.0f} s).",
            f"Machine: {env}.",
            "",
            "The whole grading path of `asmopt eval` (check, then timing at the default +-2% "
            "target), fresh (K = 2 drawn inputs per size class, every timed pair on its own "
            "draw) against fixed inputs only, interleaved program by program. Raw data: "
            "`bench/results/fresh_cost_raw.json`.",
            "",
            "| case | fresh / fixed, wall (median, range) | fresh / fixed, busy (median, range) |",
            "|---|---|---|",
            f"| one candidate per program | {_med(one_wall)} ({_span(one_wall)}) | "
            f"{_med(one_core)} ({_span(one_core)}) |",
            f"| one candidate, {FIXED_PAIRS} pairs per test | {_med(fp_wall)} ({_span(fp_wall)}) | "
            f"{_med(fp_core)} ({_span(fp_core)}) |",
            f"| four candidates of {SHARED_PROGRAM} | {_med(four_wall)} ({_span(four_wall)}) | "
            f"{_med(four_core)} ({_span(four_core)}) |",
            "",
            f"Busy time over all single-candidate gradings (adaptive): fresh "
            f"{total['fresh']:.1f} s, fixed {total['fixed']:.1f} s, ratio **{pooled:.2f}** "
            f"(goal at most 1.2x: **{goal}**). With {FIXED_PAIRS} pairs per test (the same "
            f"runs): fresh {fp_total['fresh']:.1f} s, fixed {fp_total['fixed']:.1f} s, ratio "
            f"**{fp_pooled:.2f}** (**{fp_goal}**).",
            "",
            md_table(
                [
                    "repeat",
                    "case",
                    "program",
                    "inputs",
                    "wall s",
                    "busy s",
                    "waited s",
                    "verdicts",
                    "tests run",
                    "pairs",
                    "speedup (first answer)",
                ],
                _grading_rows(raw),
            ),
            "",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
