"""Reward A/A under load: what `supercoder-design2` pays for an answer that is the baseline.

For each program, the candidate is the baseline's own assembly (identical binaries), timed
with both cores loaded by two busy processes. Design 2 pays s when s > 1, so every trial
where the measurement reports s > 1 is money paid for noise.

* ours: the reward service (interleaved CPU-time measurement; insignificant speedups are
  reported as 1.0), with `time_copies` on so the copy is really timed.
* reference: hyperfine 3 warm-ups + 10 runs per binary per test, s = mean of per-test
  ratios, two tests at a time.

Usage: .venv/bin/python bench/bench_reward_aa.py [--quick] [--trials N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bench_timing_common import (
    PROGRAMS,
    baseline_binary,
    busy_load,
    environment,
    md_table,
    programs,
    reference,
    setup,
    write_result,
)

from asmopt.reward.functions import RewardInput, get_reward
from asmopt.reward.service import REWARD_TIMING, ScoreConfig, score_one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 programs, 1 trial")
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args()
    ids = PROGRAMS[:3] if args.quick else PROGRAMS[:6]
    trials = 1 if args.quick else args.trials
    toolchain, _ = setup()
    start = time.monotonic()
    before = environment()
    with busy_load(2):
        rows, paid = score_trials(toolchain, ids, trials)
    after = environment()
    command = (
        "Command: `.venv/bin/python bench/bench_reward_aa.py"
        f"{' --quick' if args.quick else ''}`"
        f" ({trials} trial(s) x {len(ids)} programs, {time.monotonic() - start:.0f} s). "
        "Load: two busy processes."
    )
    text = render(rows, paid, command, before, after)
    path = write_result("reward_aa.md", text)
    print(text)
    print(f"written to {path}")


def score_trials(
    toolchain: Any, ids: Sequence[str], trials: int
) -> tuple[list[tuple[object, ...]], tuple[int, int]]:
    """One row per trial and program: ours (the reward service) and the reference on the
    baseline against itself, each with what design 2 pays for it; and how many trials
    each paid something for."""
    design2 = get_reward("supercoder-design2")
    config = ScoreConfig(
        reward="supercoder-design2",
        measure="time",
        time_copies=True,
        timing=replace(REWARD_TIMING, max_pairs=60, budget_s=10.0),
    )
    rows: list[tuple[object, ...]] = []
    ours_paid = ref_paid = 0
    for trial in range(trials):
        for program in programs(ids):
            asm = toolchain.baseline_assembly(program)
            ours = score_one(program, f"```assembly\n{asm}```", asm, config)
            base = baseline_binary(toolchain, program)
            ref = reference(base, base, program.tests)
            ref_s = ref.ratio
            ref_reward = design2(
                RewardInput(
                    "pass",
                    len(program.tests),
                    len(program.tests),
                    speedup=ref_s if ref_s > 0 and ref_s < 1e9 else 1e9,
                )
            )
            ours_paid += (ours.reward or 0.0) > 0
            ref_paid += (ref_reward or 0.0) > 0
            rows.append(
                (
                    trial + 1,
                    program.id,
                    f"{ours.raw_speedup or 1.0:.4f}",
                    f"[{ours.speedup_low or 1:.4f}, {ours.speedup_high or 1:.4f}]",
                    f"{ours.reward:.3f}",
                    f"{ref_s:.4f}",
                    f"{ref_reward:.3f}",
                )
            )
    return rows, (ours_paid, ref_paid)


def render(
    rows: list[tuple[object, ...]], paid: tuple[int, int], command: str, before: str, after: str
) -> str:
    n = len(rows)
    ours_paid, ref_paid = paid
    return "\n".join(
        [
            "# Reward A/A under load: supercoder-design2 on identical binaries",
            "",
            command,
            f"Machine before: {before}",
            f"Machine after: {after}",
            "",
            f"Design 2 paid something for a copy of the baseline: ours **{ours_paid}/{n}**, "
            f"reference **{ref_paid}/{n}** trials.",
            "",
            md_table(
                [
                    "trial",
                    "program",
                    "ours raw s",
                    "ours 95% interval",
                    "ours design2",
                    "reference s",
                    "reference design2",
                ],
                rows,
            ),
            "",
            "Goal: ours stays at 0 in every trial. "
            + ("**met**" if ours_paid == 0 else f"**NOT met** ({ours_paid} trials paid)"),
            "",
        ]
    )


if __name__ == "__main__":
    main()
