"""Baselines a learnt policy must beat, measured like its answers.

- The rule: the best simple rule for the family, a fixed text substitution (`popcnt_rule`,
  the same for both families: `families.py`); where it changes nothing, the baseline is
  kept (`KEPT`, 1.0 by definition).
- Best-of-N of a model: of its N answers for a program, the one a user would keep after
  scoring each with the training reward (timed on the program's own tests and freshly drawn
  inputs): a selection measurement independent of the measurement that scores the pick.
- Re-measurement: every answer (a model's, the rule's) is scored by `score_one` with one
  config; identical applied answers of a program share one measurement per pass, so two
  rows that hold the same answer differ by nothing but their other answers.

Measurements are appended to a JSONL file as they finish, so an interrupted pass resumes
where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from speed_learning.family import FAST_LINE, POPCOUNT_CALL

MEASURED_FIELDS = ("verdict", "reward", "speedup", "low", "high", "raw_speedup", "message")


# The rule below is fixed from the family's description alone, with nothing chosen on any
# split: the family's own fast edit, stated as the substitution a person would write, with
# no knowledge of which programs it wins on (its value on the test split had already been
# reported from the first measurement when it was written here; nothing about it changed
# after). Calling convention (System V x86-64, which gcc follows for the libgcc helper): the
# argument of `__popcountdi2` is in %rdi at every `call`, its result is returned in %rax,
# and the call may clobber every caller-saved register and the flags; `popcntq %rdi, %rax`
# reads %rdi, writes %rax and the flags only, so it is a correct replacement at every call
# site. A reference to the helper that is not such a `call` line (a tail `jmp`, a call
# through a register) is left as it is, as a plain substitution rule does; the family's
# test checks that its baselines have none (gcc's `.globl __popcountdi2` line stays, and
# declares a symbol nothing uses any more).
def popcnt_rule(baseline: str) -> str:
    """The baseline with every `call __popcountdi2@PLT` line replaced by `popcntq %rdi,
    %rax` and nothing else changed."""
    lines = [
        FAST_LINE if line.rstrip() == POPCOUNT_CALL else line for line in baseline.splitlines()
    ]
    return "\n".join(lines) + "\n"


def rule_answer(baseline: str, rule: Callable[[str], str] = popcnt_rule) -> str:
    """The rule's answer in the policy's answer format (a fenced unified diff), so it is
    scored through exactly the path a model's answer takes."""
    from asmopt.train.data import fenced_diff

    answer = fenced_diff(baseline, rule(baseline), 0)
    if answer is None:
        raise ValueError("the rule changes nothing: the program has no __popcountdi2 call")
    return answer


# A rule that changes nothing in a program keeps its -O3 baseline: its answer is this empty
# text, and its value is 1.0 by definition (as the reward service scores a copy), recorded
# as such rather than timed.
KEPT = ""
KEPT_MEASUREMENT = {
    "verdict": "pass",
    "reward": 0.0,
    "speedup": 1.0,
    "low": 1.0,
    "high": 1.0,
    "raw_speedup": 1.0,
    "message": "the rule changes nothing here: the -O3 baseline is kept (1.0, not timed)",
}


def applied(baseline: str, answer: str) -> str | None:
    """The assembly an answer's diff produces, or None when it does not apply."""
    from asmopt.policies.diff_format import DiffError, apply_unified_diff
    from asmopt.policies.extract import extract_diff

    try:
        return apply_unified_diff(baseline, extract_diff(answer) or "")
    except (DiffError, ValueError):
        return None


def answer_key(program_id: str, baseline: str, answer: str) -> str:
    """Identity of an answer's measurement: the program and the assembly it applies to (the
    raw text for an answer that does not apply)."""
    if answer == KEPT:
        return f"{program_id}|kept"
    text = applied(baseline, answer) or answer
    return f"{program_id}|{hashlib.sha256(text.encode()).hexdigest()}"


class MeasurementLog:
    """Measurements of one pass, keyed by `answer_key`, stored one JSON line each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                self.rows[row["key"]] = row

    def add(self, key: str, measured: dict[str, Any]) -> None:
        row = {"key": key, **measured}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        self.rows[key] = row


def score_config() -> Any:
    """The held-out evaluation's and the training reward's scoring: robust reward, diff
    answers, timed with the reward's timing at 10 s per test (`ppo.yaml`)."""
    from asmopt.reward.service import ScoreConfig

    return ScoreConfig(
        reward="robust", measure="time", edit_format="diff", timing={"budget_s": 10.0}
    )


def measure(program: Any, answer: str) -> dict[str, Any]:
    """One independent scoring of an answer (fresh drawn inputs, fresh timing)."""
    from asmopt.reward.service import score_one

    result = score_one(program, answer, None, score_config())
    return {
        "verdict": result.verdict,
        "reward": result.reward,
        "speedup": result.speedup,
        "low": result.speedup_low,
        "high": result.speedup_high,
        "raw_speedup": result.raw_speedup,
        "message": result.message[:200],
    }


def measure_pass(
    items: Iterable[tuple[Any, str, str]],
    log: MeasurementLog,
    progress: Callable[[str], None] = lambda text: None,
) -> None:
    """Measure every (program, answer, key) whose key the log does not hold yet."""
    todo = {key: (program, answer) for program, answer, key in items if key not in log.rows}
    for n, (key, (program, answer)) in enumerate(todo.items(), 1):
        log.add(key, dict(KEPT_MEASUREMENT) if answer == KEPT else measure(program, answer))
        progress(f"{log.path.name}: {n}/{len(todo)} {program.id}")


def selection_key(measured: dict[str, Any]) -> tuple[float, float]:
    """How best-of-N ranks answers on a measurement: by the robust reward (log speedup when
    its interval excludes 1, 0 for an indistinguishable answer, negative for a failure),
    then by the raw speedup estimate; an answer the grader could not score ranks last."""
    reward = measured.get("reward")
    raw = measured.get("raw_speedup")
    return (
        float("-inf") if reward is None else float(reward),
        float("-inf") if raw is None else float(raw),
    )


def best_of(rows: list[dict[str, Any]], pick_on: str) -> dict[str, Any]:
    """The row whose measurement `pick_on` ranks first (the earliest sample on a tie)."""
    return max(enumerate(rows), key=lambda ir: (selection_key(ir[1][pick_on]), -ir[0]))[1]
