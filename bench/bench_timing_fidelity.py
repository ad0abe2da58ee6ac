"""A/A fidelity: two identical binaries under load, our method vs the reference method.

For each of 10 built-in programs, the -O3 binary is timed against an identical copy of
itself, with two busy processes loading both cores, by our procedure (interleaved CPU time
in the sandbox, adaptive) and by the reference harness's (hyperfine 3+10, wall clock, two
tests at a time), alternating program by program so both see the same conditions.

Goal: ours never reports a significant speedup (interval above 1.0) and its ratio stays in
[0.98, 1.02] in at least 99% of trials.

    .venv/bin/python bench/bench_timing_fidelity.py [--quick] [--trials N] [--no-load]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_timing_common import (
    PROGRAMS,
    baseline_binary,
    busy_load,
    environment,
    md_table,
    ours,
    programs,
    quantiles,
    reference,
    setup,
    write_result,
)


def main() -> int:
    """Time every program's A/A pairs, ours and the reference's, then write the report.

    Long because the trial loop's tallies (program and test ratios of both methods, the
    per-trial and per-test rows) are what the report's summary, goals and tables read, in
    the order a reader meets them; split, the parts would hand all of them to each other."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 trial on 5 programs")
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--no-load", action="store_true", help="skip the two busy processes")
    ap.add_argument(
        "--fixed-inputs",
        action="store_true",
        help="time every pair on the fixed test's input (default: a fresh draw per pair, "
        "as `asmopt eval` does)",
    )
    args = ap.parse_args()
    ids = PROGRAMS[:5] if args.quick else PROGRAMS
    trials = 1 if args.quick else args.trials
    toolchain, sandbox = setup()
    progs = programs(ids)
    work = Path(tempfile.mkdtemp(prefix="asmopt-aa-"))
    binaries = {}
    for p in progs:
        a = baseline_binary(toolchain, p)
        b = work / f"{p.id}-copy"
        shutil.copyfile(a, b)  # an identical binary in a different file
        b.chmod(0o755)
        binaries[p.id] = (a, b)
    env_before = environment()
    ours_prog, ours_tests, ref_prog, ref_tests = [], [], [], []
    rows, test_rows = [], []
    start = time.monotonic()
    load = busy_load(0 if args.no_load else 2)
    with load:
        for trial in range(trials):
            for p in progs:
                a, b = binaries[p.id]
                o = ours(sandbox, a, b, p.tests, program=None if args.fixed_inputs else p)
                r = reference(a, b, p.tests)
                ours_prog.append(o.program)
                ours_tests += o.tests
                for t, rt in zip(o.tests, r.tests, strict=True):
                    test_rows.append(
                        (
                            trial + 1,
                            p.id,
                            t.test,
                            f"{t.base_mean * 1000:.1f}",
                            f"{t.ratio:.4f}",
                            f"[{t.low:.4f}, {t.high:.4f}]",
                            t.n,
                            t.n_outliers,
                            ", ".join(t.warnings),
                            t.context.get("stopped", ""),
                            f"{t.context['seconds']:.1f}",
                            f"{t.context.get('waited_s', 0.0):.1f}",
                            f"{t.context.get('stalled_s', 0.0):.1f}",
                            f"{rt.ratio:.4f}",
                            f"+-{100 * rt.half_width:.1f}%",
                        )
                    )
                ref_prog.append(r.ratio)
                ref_tests += [t.ratio for t in r.tests]
                sig = (
                    "faster"
                    if o.program.significantly_faster
                    else ("slower" if o.program.significantly_slower else "")
                )
                rows.append(
                    (
                        trial + 1,
                        p.id,
                        f"{o.program.ratio:.4f}",
                        f"[{o.program.low:.4f}, {o.program.high:.4f}]",
                        sig,
                        f"{o.wall_s:.1f}",
                        f"{r.ratio:.4f}",
                        f"{min(t.ratio for t in r.tests):.3f}-{max(t.ratio for t in r.tests):.3f}",
                        f"{r.wall_s:.1f}",
                    )
                )
                print(
                    f"trial {trial + 1} {p.id:18s} ours {o.program.ratio:.4f} "
                    f"[{o.program.low:.4f}, {o.program.high:.4f}] {sig:6s} {o.wall_s:5.1f}s   "
                    f"reference {r.ratio:.4f} {r.wall_s:5.1f}s",
                    flush=True,
                )
    elapsed = time.monotonic() - start
    shutil.rmtree(work, ignore_errors=True)

    def inside(x: float) -> bool:
        return 0.98 <= x <= 1.02

    n = len(ours_prog)
    ours_sig = sum(s.significantly_faster for s in ours_prog)
    ours_slow = sum(s.significantly_slower for s in ours_prog)
    ours_in = sum(inside(s.ratio) for s in ours_prog)
    ours_t_in = sum(inside(t.ratio) for t in ours_tests)
    ours_t_sig = sum(t.low > 1.0 for t in ours_tests)
    ref_in = sum(inside(x) for x in ref_prog)
    ref_109 = sum(x >= 1.09 for x in ref_prog)
    ref_t_in = sum(inside(x) for x in ref_tests)
    ref_t_109 = sum(x >= 1.09 for x in ref_tests)
    unreliable = sum(not t.reliable for t in ours_tests)
    goal_sig = ours_sig == 0
    goal_in = ours_in >= 0.99 * n
    summary = md_table(
        ["", "ours (program)", "reference (program)", "ours (test)", "reference (test)"],
        [
            ("trials", n, n, len(ours_tests), len(ref_tests)),
            (
                "ratio in [0.98, 1.02]",
                f"{ours_in}/{n}",
                f"{ref_in}/{n}",
                f"{ours_t_in}/{len(ours_tests)}",
                f"{ref_t_in}/{len(ref_tests)}",
            ),
            (
                "claims a speedup",
                f"{ours_sig} significant",
                f"{ref_109} at >= 1.09x",
                f"{ours_t_sig} significant",
                f"{ref_t_109} at >= 1.09x",
            ),
            ("significantly slower", ours_slow, "-", sum(t.high < 1.0 for t in ours_tests), "-"),
            (
                "flagged unreliable",
                f"{sum(not s.reliable for s in ours_prog)}/{n}",
                "-",
                f"{unreliable}/{len(ours_tests)}",
                "-",
            ),
        ],
    )
    text = "\n".join(
        [
            "# Timing fidelity: A/A under load",
            "",
            f"Command: `.venv/bin/python bench/bench_timing_fidelity.py"
            f"{' --quick' if args.quick else ''}{' --no-load' if args.no_load else ''}"
            f"{' --fixed-inputs' if args.fixed_inputs else ''}` "
            f"({trials} trial(s) x {len(progs)} programs, {elapsed:.0f} s).",
            f"Load: {'none added' if args.no_load else 'two busy processes (one per core)'}.",
            "Inputs: "
            + (
                "every pair on the fixed test's input."
                if args.fixed_inputs
                else "every pair of ours on its own fresh input of the test's size class "
                "(as `asmopt eval` times); the reference times the fixed inputs."
            ),
            f"Machine before: {env_before}.",
            f"Machine after: {environment()}.",
            "",
            "Identical binaries (the -O3 build and a copy of it), every test of each program. "
            "Ours: interleaved CPU time in the sandbox, adaptive to a +-2% interval, per-program "
            "geometric mean with a 98% interval (resolution from the between-sandbox spread, "
            "at least +-1%). Reference: hyperfine 3 "
            "warm-ups + 10 runs per binary, wall clock, two tests at a time, per-program mean "
            "of per-test ratios.",
            "",
            summary,
            "",
            f"Ours, program ratios: {quantiles([s.ratio for s in ours_prog])}",
            f"Reference, program ratios: {quantiles(ref_prog)}",
            f"Ours, test ratios: {quantiles([t.ratio for t in ours_tests])}",
            f"Reference, test ratios: {quantiles(ref_tests)}",
            f"Ours, tests flagged unreliable: {unreliable}/{len(ours_tests)}",
            "",
            f"Goal: no significant speedup: **{'met' if goal_sig else 'NOT met'}** "
            f"({ours_sig} of {n}); ratio in [0.98, 1.02] in >= 99% of trials: "
            f"**{'met' if goal_in else 'NOT met'}** ({ours_in}/{n}).",
            "",
            "## Per trial",
            "",
            md_table(
                [
                    "trial",
                    "program",
                    "ours",
                    "ours 98% interval",
                    "ours claims",
                    "ours s",
                    "reference",
                    "reference per-test range",
                    "reference s",
                ],
                rows,
            ),
            "",
            "## Per test",
            "",
            "Ours: CPU ms of the baseline, ratio, interval, timed pairs (the pilot round "
            "left out), outliers, warnings, why it stopped, seconds charged to its budget, "
            "seconds waiting for the timing core and in discarded stalled rounds (both "
            "charged to no budget); reference: ratio and its own 95% half-width.",
            "",
            md_table(
                [
                    "trial",
                    "program",
                    "test",
                    "ms",
                    "ours",
                    "ours 98% interval",
                    "pairs",
                    "outliers",
                    "warnings",
                    "stopped",
                    "s",
                    "waited s",
                    "stalled s",
                    "reference",
                    "ref. half-width",
                ],
                test_rows,
            ),
            "",
        ]
    )
    path = write_result("timing_fidelity.md", text)
    print(summary)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
