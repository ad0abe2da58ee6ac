"""Cost of per-run isolation: sandbox overhead per run and wall time per candidate.

Every run gets its own pid and mount namespace, a fresh /tmp, stdin and output pipes
(docs/sandbox.md). This measures what that costs, with the same script on two source
trees (this one, and an older checkout given with --src), interleaved round by round so
both see the same machine:

* overhead per run: a trusted probe run N times in one sandbox; (sandbox wall time -
  sum of the runs' own fork-to-wait4 time) / N, i.e. everything outside the timed region;
* cost per candidate: `time_tests` on built-in programs with a fixed number of pairs
  (identity candidate, min_pairs = max_pairs), so both trees do the same runs.

Goal (the issue): overhead stays outside the timed region, cost per candidate at most 1.3x.

    .venv/bin/python bench/bench_isolation_cost.py --src OLD_TREE/src [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM_IDS = ("gcd_pairs", "crc32_table", "popcount_swar")

# Runs inside a child interpreter whose sys.path starts with the tree under test.
CHILD = r"""
import json, os, statistics, sys, time
from asmopt.measure.timing import TimingConfig, time_tests
from asmopt.programs import load_builtin_suite
from asmopt.sandbox.runner import default_sandbox
from asmopt.toolchain import default_toolchain

runs, pairs, ids = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
sandbox = default_sandbox(); sandbox.check(); toolchain = default_toolchain()
suite = load_builtin_suite()
out = {}
probe = os.environ["BENCH_PROBE"]
res = sandbox.run_program(probe, stdin=b"x\n", runs=runs)
inside = sum(r.wall_time_s for r in res.records)
out["overhead_ms_per_run"] = 1e3 * (res.outer_wall_s - inside) / runs
out["run_ms"] = 1e3 * inside / runs
cfg = TimingConfig(min_pairs=pairs, max_pairs=pairs, max_rounds=1, budget_s=1e9,
                   target_half_width=1e-9)
start = time.monotonic()
n_runs = 0
for pid in ids:
    program = suite.get(pid)
    build = toolchain.assemble_and_link(toolchain.baseline_assembly(program), program.ldflags)
    speedups, failure, _ = time_tests(sandbox, build.output, build.output, program.tests, cfg)
    assert failure is None, failure.message
    n_runs += sum(s.context.get("runs", 0) for s in speedups)
out["candidate_s"] = (time.monotonic() - start) / len(ids)
out["timed_runs"] = n_runs
print("BENCH " + json.dumps(out))
"""


def _probe(cc: str = "gcc") -> Path:
    src = Path("/tmp/asmopt-bench-probe.c")
    src.write_text('#include <stdio.h>\nint main(void){puts("ok");return 0;}\n')
    out = Path("/tmp/asmopt-bench-probe")
    subprocess.run([cc, "-O2", "-o", str(out), str(src)], check=True)
    return out


def _measure(name: str, src: Path, runs: int, pairs: int) -> dict[str, float]:
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "BENCH_PROBE": str(_probe()),
        # Each tree keeps its own build cache: their cache layouts may differ.
        "ASMOPT_CACHE_DIR": f"/tmp/asmopt-bench-cache-{name}",
    }
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(runs), str(pairs), ",".join(PROGRAM_IDS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[6:])
    raise RuntimeError(f"{src}: no result\n{proc.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True, help="the older tree's src directory")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=10)
    args = ap.parse_args()
    trees = {"before": args.src.resolve(), "after": ROOT / "src"}
    got: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    for r in range(args.rounds):
        for name in ("before", "after") if r % 2 == 0 else ("after", "before"):
            got[name].append(_measure(name, trees[name], args.runs, args.pairs))
            print(name, got[name][-1], flush=True)

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in got[name])

    rows = []
    for key, label in (
        ("overhead_ms_per_run", "sandbox overhead per run, outside the timed region (ms)"),
        ("run_ms", "probe run, fork to wait4 (ms)"),
        ("candidate_s", f"wall time per candidate, {args.pairs} pairs per test (s)"),
    ):
        b, a = med("before", key), med("after", key)
        rows.append(f"| {label} | {b:.3f} | {a:.3f} | {a / b:.2f}x |")
    commit = (
        subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        or "unknown (not a git checkout)"
    )
    text = "\n".join(
        [
            "# Isolation cost: per-run namespaces, fresh /tmp, stdin and pipes",
            "",
            f"Command: `.venv/bin/python bench/bench_isolation_cost.py --src OLD/src "
            f"--rounds {args.rounds}` (commit {commit}; 'before' is the tree given with "
            "--src). Medians over rounds; before and after alternate round by round.",
            f"Programs: {', '.join(PROGRAM_IDS)} (all their tests, identity candidate). "
            f"Load average at the end: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs.",
            "",
            "| measure | before | after | after / before |",
            "|---|---|---|---|",
            *rows,
            "",
            "Raw rounds:",
            "",
            "```json",
            json.dumps(got, indent=1),
            "```",
            "",
        ]
    )
    out = ROOT / "bench" / "results" / "isolation_cost.md"
    out.write_text(text)
    print(text)
    print(f"written {out} at {time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
