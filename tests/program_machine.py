"""A mock machine for one program's tests, for the timing engine's simulations: every round
(sandbox) shifts each test's log-ratio by its own N(0, tau) effect and each pair adds
N(0, sigma); a candidate may add noise of its own to its runs. No real timing."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from asmopt.measure.timing import Round, RoundRequest, RunTiming, TimingConfig
from asmopt.measure.timing.spread import SandboxSpread

# What the reward times with (reward/service.REWARD_TIMING under the decision precision,
# whose one decision point is 1.0), on a machine whose sandboxes differ by 3% for 1 ms runs.
SPREAD = SandboxSpread(((0.001, 0.03), (0.005, 0.02), (0.05, 0.015)), df=5, source="test")
REWARD = TimingConfig(
    target_half_width=0.02,
    max_pairs=60,
    budget_s=10.0,
    precision="decision",
    decision_points=(1.0,),
    spread=SPREAD,
)

# A candidate's own slowdown of one run (a factor >= 1), drawn from the machine's generator.
CandidateNoise = Callable[[random.Random], float]


@dataclass(frozen=True)
class MockTest:
    """One test of a simulated program: its true log-ratio, per-pair noise and run length."""

    true_log: float
    sigma: float
    base_s: float
    tau: float


class ProgramMachine:
    """A BatchExecutor for one program's tests (see the module)."""

    def __init__(
        self, tests: Sequence[MockTest], seed: int, candidate_noise: CandidateNoise | None = None
    ) -> None:
        self.tests, self.rng = list(tests), random.Random(seed)
        self.candidate_noise = candidate_noise
        self.pairs = 0

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        out = {}
        for i, pairs, warmup in requests:
            t = self.tests[i]
            shift = t.true_log + self.rng.gauss(0.0, t.tau)
            made = []
            for _ in range(pairs + warmup):
                cand = t.base_s / math.exp(shift + self.rng.gauss(0.0, t.sigma))
                if self.candidate_noise is not None:
                    cand *= self.candidate_noise(self.rng)
                made.append((RunTiming(t.base_s, t.base_s), RunTiming(cand, cand)))
            self.pairs += pairs + warmup
            out[i] = Round(
                pairs=made[warmup:], warmups=made[:warmup], seconds=t.base_s * 2 * len(made)
            )
        return out
