"""The discovery run's one exploration setting, chosen on the validation split only.

A warm start that was never shown the fast edit can only find it by sampling something it
was not taught; a higher rollout temperature samples further from what it was taught, and
also breaks more diffs. The rule, fixed before the run: of the candidate temperatures, the
highest at which at least half of the warm start's answers for the validation programs
still apply to their baseline (an answer that does not apply earns -1 whatever it tried).
Training programs are not used here (PPO samples them) and the test split is not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CANDIDATES = (0.6, 0.8, 1.0)
MIN_APPLIED = 0.5
SAMPLES = 4
CHOICE_FILE = "exploration.json"


def choose_temperature(root: Path, suite_dir: Path, model: Path, quick: bool) -> float:
    """The chosen rollout temperature, recorded (with what each candidate did) in
    `root/exploration.json`; a recorded choice is reused."""
    dest = root / CHOICE_FILE
    if dest.is_file():
        return float(json.loads(dest.read_text(encoding="utf-8"))["chosen"])
    trials = [try_temperature(suite_dir, model, t, 1 if quick else SAMPLES) for t in CANDIDATES]
    chosen = pick(trials)
    record = {
        "rule": f"highest of {list(CANDIDATES)} with >= {MIN_APPLIED:.0%} of validation "
        "answers applying",
        "chosen": chosen,
        "trials": trials,
    }
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return chosen


def pick(trials: list[dict[str, Any]]) -> float:
    """The rule: the highest temperature whose answers apply at least MIN_APPLIED of the
    time; the lowest candidate when none does."""
    fit = [t["temperature"] for t in trials if t["applied_share"] >= MIN_APPLIED]
    return max(fit) if fit else min(CANDIDATES)


def try_temperature(
    suite_dir: Path, model: Path, temperature: float, samples: int
) -> dict[str, Any]:
    """The warm start's answers for the validation programs at one temperature: how many
    apply, and how many write a 64-bit `popcnt` (the fast edit's instruction)."""
    import learning_common
    from speed_learning.baselines import applied

    from asmopt.programs import load_suite
    from asmopt.toolchain import DEFAULT_O3_FLAGS, default_toolchain

    suite, toolchain = load_suite(suite_dir), default_toolchain()
    answers = learning_common.sample_answers(
        model,
        Path(__file__).resolve().parent / "ppo.yaml",
        "suite:validation",
        suite=str(suite_dir),
        samples=samples,
        seed=77,
        temperature=temperature,
    )
    applies = popcntq = 0
    for row, answer, _ in answers:
        baseline = toolchain.baseline_assembly(suite.get(row["program_id"]), DEFAULT_O3_FLAGS)
        applies += applied(baseline, answer) is not None
        popcntq += "popcntq" in answer
    return {
        "temperature": temperature,
        "answers": len(answers),
        "applied_share": applies / len(answers) if answers else 0.0,
        "popcntq_answers": popcntq,
        "examples": [answer for _, answer, _ in answers[:3]],
    }
