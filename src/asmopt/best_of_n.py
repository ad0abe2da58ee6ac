"""Best-of-N, honestly and as the reference does it, from samples already judged.

With N samples per program, every sample is judged on every test anyway, so both ways of
picking one can be computed afterwards without running anything again:

* honest: pick by the SELECTION split only (`programs.selection.selection_split`: most
  selection tests passed, then the best speedup on selection tests), then report the picked
  sample's result on ALL tests;
* oracle: pick by the result on all tests (most tests passed, then speedup) - what the
  reference harness reports, since it selects on the tests it scores with.

The gap between the two is how much the oracle number flatters a model.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from asmopt.evaluate import SampleOutcome
from asmopt.judge import Verdict
from asmopt.metrics import compute_metrics
from asmopt.programs.model import Program
from asmopt.programs.selection import selection_split


def _test_log_speedup(outcome: SampleOutcome, names: set[str]) -> float:
    logs = []
    for tv in outcome.check.tests:
        sp = getattr(tv, "speedup", None)
        if tv.test in names and sp is not None and sp.ratio and sp.ratio > 0:
            logs.append(math.log(sp.ratio))
    return sum(logs) / len(logs) if logs else 0.0


def _score(outcome: SampleOutcome, names: set[str]) -> tuple[int, int, float]:
    passed = sum(tv.verdict == Verdict.PASS for tv in outcome.check.tests if tv.test in names)
    built = int(outcome.check.built)
    return (passed, built, _test_log_speedup(outcome, names))


def pick(
    outcomes: Sequence[SampleOutcome], programs: dict[str, Program], honest: bool
) -> list[SampleOutcome]:
    """One outcome per program, chosen by the selection split (honest) or all tests."""
    by_program: dict[str, list[SampleOutcome]] = defaultdict(list)
    for o in outcomes:
        by_program[o.program_id].append(o)
    chosen = []
    for pid, group in by_program.items():
        program = programs[pid]
        names = (
            {t.name for t in selection_split(program.tests)}
            if honest
            else {t.name for t in program.tests}
        )
        # Ties go to the lowest sample index, so the choice is deterministic.
        chosen.append(max(sorted(group, key=lambda o: o.sample), key=lambda o: _score(o, names)))
    return chosen


def best_of_n_metrics(
    outcomes: Sequence[SampleOutcome], programs: dict[str, Program]
) -> dict[str, Any]:
    """Metrics of honest and oracle best-of-N side by side."""
    n = max((o.sample for o in outcomes), default=-1) + 1
    honest = [o.answer() for o in pick(outcomes, programs, honest=True)]
    oracle = [o.answer() for o in pick(outcomes, programs, honest=False)]
    # A program whose selection split is all its tests (one test) has no held-out input:
    # its "honest" pick is made on the input it is scored on, exactly like the oracle's.
    evaluated = {o.program_id for o in outcomes}
    scored = sorted(
        pid
        for pid in evaluated
        if pid in programs and len(selection_split(programs[pid].tests)) == len(programs[pid].tests)
    )
    return {
        "n": n,
        "honest": compute_metrics(honest).to_dict(),
        "oracle": compute_metrics(oracle).to_dict(),
        "selected_on_scored_input": scored,
    }
