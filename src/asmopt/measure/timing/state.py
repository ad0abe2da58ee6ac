"""What the timing engine knows of one (candidate, test) while it measures it.

The engine (engine.py) fills a test's state round by round and reads it to decide when to
stop; the summary (summary.py) turns it into the test's interval and record and leaves in
it what the stopping rule reads. Both import it from here: the engine reads the summary, and the
summary never reads the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asmopt.measure.speedup import TestSpeedup
from asmopt.measure.stats import RatioInterval
from asmopt.measure.timing.rounds import Round, RunTiming

_Pair = tuple[RunTiming, RunTiming, int]  # (baseline run, candidate run, round index)


@dataclass
class _TestState:
    """One (candidate, test): its rounds and pairs, what they cost, and where it stands."""

    name: str
    pairs: list[_Pair] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    spent: float = 0.0  # seconds of timing charged to the budget
    waited: float = 0.0  # seconds waiting for the timing core (never charged)
    stalled_s: float = 0.0  # seconds of discarded stalled rounds (never charged)
    discarded: int = 0  # stalled rounds discarded and repeated
    kept_stalled: int = 0  # stalled rounds kept once the discard allowance was used up
    want: int = 0
    speedup: TestSpeedup | None = None
    done: bool = False
    decided: bool = False  # stopped by the sequential rule before the target
    stopped: str = ""  # why: target, decided, program, pairs, rounds, budget, candidate_budget
    retries: int = 0
    target: float | None = None  # this test's own target half-width, if it has one
    # Its runs are so slow that the budget affords only a few pairs: they come in short
    # rounds without warm-up, every round in the estimate (no pilot is left out).
    slow: bool = False
    # From the last summary: its resolution (config.resolution_for), the rounds of two or
    # more pairs in its estimate with their intervals, and the machine's between-sandbox
    # standard deviation for this test's run length.
    resolution: float = 0.0
    effective_target: float = 0.0  # the target, or what the spread allows if that is more
    rounds_used: int = 0
    parts: list[RatioInterval] = field(default_factory=list)
    tau: float = 0.0
    # The raw statistic of the last summary (what the planner sizes the next round from),
    # and the standard error of the test's log ratio that its program's verdict asks of it
    # (decisions.program_aims; 0: none, the test's own rules plan it).
    stat: RatioInterval | None = None
    program_aim_se: float = 0.0

    @property
    def pair_seconds(self) -> float:
        """Seconds of the budget one pair has cost so far (warm-ups counted as pairs, since
        the budget pays for them too); 0.0 before the first round."""
        runs = sum(len(r.pairs) + len(r.warmups) for r in self.rounds)
        return self.spent / max(1, runs)

    @property
    def used_pair_seconds(self) -> float:
        """Seconds spent so far for each pair that counts (warm-ups and round starts
        spread over them): what another pair of this test costs the program's plan."""
        return self.spent / max(1, len(self.pairs))
