"""Every knob of the timing procedure in one frozen config, each with the reason for its
default (the procedure itself: engine.py; docs/measurement.md has the numbers)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from asmopt.errors import InputError
from asmopt.measure.speedup import INTERVAL_CONFIDENCE
from asmopt.measure.timing.spread import SandboxSpread


@dataclass(frozen=True)
class TimingConfig:
    """Every knob of the timing procedure, with the reason for its default."""

    # Stop when the interval of the ratio is within ±2%: well below the 10% that separates
    # a real optimisation from noise in PIE's %Opt. The interval is a 98% one
    # (speedup.INTERVAL_CONFIDENCE): a "faster" claim for a no-op answer is then rare (1%).
    target_half_width: float = 0.02
    confidence: float = INTERVAL_CONFIDENCE
    # One discarded pair warms the page cache and the branch predictors, in a test's first
    # round only: later rounds find both binaries' pages cached, their first run is the
    # baseline's or the candidate's at random (the block order starts at random), and a
    # round's error is pooled with the others', so a cold first run there is noise with no
    # side, where a warm-up pair would cost a tenth of a two-round measurement. More
    # warm-up did not change A/A results on the built-in suite.
    warmup_pairs: int = 1
    # With 4 pairs t(3) = 3.18: a 2% half-width needs a per-pair spread under ~1.3%, which
    # CPU time of a >= 5 ms program meets on an idle core.
    min_pairs: int = 4
    # Pairs are cheap for short programs (a 1 ms program costs ~3 ms a pair with the
    # sandbox's per-run work) and those are the noisiest relative to their length.
    max_pairs: int = 200
    # Rounds are separate sandboxes (fresh binary copies, fresh environment padding): at
    # most `round_pairs` pairs each, so a long measurement samples several layouts.
    max_rounds: int = 8
    round_pairs: int = 50
    # A test whose runs are under TOO_FAST_S (2 ms) may take this many times `max_pairs`
    # and `round_pairs`: its pairs cost a few ms, yet its per-pair spread is the widest
    # (start-up noise), so 200 pairs often end a hair above the target; its time budget
    # still bounds it.
    short_test_pair_factor: int = 4
    # Seconds one test may spend timing (both binaries, warm-ups included; waiting for the
    # timing core does not count).
    budget_s: float = 20.0
    # Seconds one candidate may spend timing over all its tests (its charged share, as
    # above): a program with many slow tests cannot hold the timing core for an hour. When
    # it is spent, the candidate's unfinished tests stop where they are (flagged
    # unreliable if short of the target; `context.stopped` = "candidate_budget").
    candidate_budget_s: float = 120.0
    # The interval is never narrower than the resolution: the size of effects fixed for a
    # sandbox's lifetime (where the binaries land in memory, the stack's alignment) that
    # pairing cannot remove. None: this machine's measured between-sandbox standard
    # deviation for runs of the test's length (`spread`), and at least `min_resolution`;
    # a number fixes it. A "significant" speedup must exceed it.
    resolution: float | None = None
    min_resolution: float = 0.01
    # The between-sandbox spread (timing.spread): the prior the rounds' own spread is
    # pooled with, from the second round on. None: the machine's measurement, resolved by
    # the sandbox executor (time_candidates); the engine alone falls back to DEFAULT_SPREAD.
    spread: SandboxSpread | None = None
    # No test ends on fewer rounds (sandboxes) than this in its estimate, unless
    # `max_rounds` allows fewer: one sandbox's pairs say nothing about what differs between
    # sandboxes. A pilot left out for disagreeing is replaced by another round.
    min_rounds: int = 2
    # The estimate is the 20% trimmed mean of the paired log-ratios (stats.trimmed_interval).
    trim: float = 0.2
    outlier_threshold: float = 3.5
    # More outliers on one side than the share trimmed from it would reach the estimate:
    # unreliable.
    max_outlier_share: float = 0.2
    metric: Literal["cpu", "wall"] = "cpu"
    # SCHED_FIFO on the timing core when permitted (else nice -20, else normal): nothing of
    # normal priority preempts the timed program, so it is not slowed by a neighbour's
    # cache footprint after every time slice. The achieved level is recorded.
    priority: Literal["normal", "high", "realtime"] = "realtime"
    # The first round of a test is a pilot: it sizes the next round, never ends the
    # measurement alone (unless `max_rounds` is 1), and joins the estimate only where it
    # agrees with the later rounds (_used_pairs). A cold first round (page cache,
    # frequency ramp, a burst of load at the start of a batch) then cannot shift the
    # interval, nor end the measurement with a tight but displaced one.
    pilot_round: bool = True
    # A round is stalled when the baseline's runs spent more than `stall_share` of their
    # CPU time (and at least `stall_min_s`) waiting on the core while running (wall - CPU):
    # the core was taken away (another real-time task, the hypervisor, a second timing
    # process). The baseline is our own -O3 build, so this cannot be a candidate's doing.
    # A stalled round is discarded and repeated, its time charged to no budget (reported
    # as `stalled_s`), up to `max_stalled_rounds` times per test; after that it is kept
    # and the `stalled` warning is raised.
    stall_share: float = 0.5
    stall_min_s: float = 0.02
    max_stalled_rounds: int = 3
    # Sequential stop: a test stops before the target once the answer is settled: its
    # interval at a Bonferroni-corrected level (confidence spread over `max_rounds` looks)
    # lies wholly on one side of every decision point (1.0, faster or slower, and PIE's
    # %Opt threshold 1.10), and its half-width is within `early_stop_half_width`. A
    # 2x answer needs no +-2% interval to be rewarded as 2x; an A/A pair never stops early.
    early_stop: bool = True
    early_stop_half_width: float = 0.05
    decision_points: tuple[float, ...] = (1.0, 1.10)
    # What the measurement is for. "target": a number for a person (`check --measure
    # time`, reports): every test runs to the target half-width unless the sequential rule
    # settles it. "decision": a reward or a strict metric, which needs only whether an
    # answer is faster, not, or slower, and the size of a real speedup to the reward's
    # resolution: a test also stops once its corrected interval lies inside +-
    # `equivalence_margin` of 1.0 (it cannot be faster or slower by more than that, so a
    # copy-like answer needs no +-2% interval to be paid nothing).
    precision: Literal["target", "decision"] = "target"
    equivalence_margin: float = 0.03
    # Under the decision precision, the same sequential question is also asked of the
    # program (decisions.program_decided): the reward reads the mean of an answer's test
    # ratios, not each test, so once both program statistics are settled (clear of every
    # decision point, or equivalent to 1.0) the answer's unfinished tests stop where they
    # stand (`stopped` = "program"). A 1 ms test at 9% noise a pair then no longer holds
    # the timing core for an answer its heavy tests have already decided. The next rounds
    # are planned for that verdict too (decisions.program_aims): the precision the program
    # still needs is shared out by cost, and a round takes at most a quarter of a test's
    # budget, so a heavy noisy test is looked at again instead of spending its budget on a
    # precision the verdict does not need.
    program_stop: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.target_half_width < 1:
            raise InputError(f"target_half_width must be in (0, 1), got {self.target_half_width}")
        if not 0 < self.confidence < 1:
            raise InputError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.min_pairs < 2 or self.max_pairs < self.min_pairs:
            raise InputError(
                f"need 2 <= min_pairs <= max_pairs, got {self.min_pairs} and {self.max_pairs}"
            )
        if self.short_test_pair_factor < 1:
            raise InputError("short_test_pair_factor must be at least 1")
        if self.warmup_pairs < 0 or self.max_rounds < 1 or self.budget_s <= 0:
            raise InputError("warmup_pairs >= 0, max_rounds >= 1 and budget_s > 0 are required")
        if self.metric not in ("cpu", "wall"):
            raise InputError(f"metric must be 'cpu' or 'wall', got {self.metric!r}")
        if self.candidate_budget_s <= 0:
            raise InputError(f"candidate_budget_s must be positive, got {self.candidate_budget_s}")
        if self.stall_share <= 0 or self.stall_min_s < 0 or self.max_stalled_rounds < 0:
            raise InputError("stall_share > 0, stall_min_s >= 0, max_stalled_rounds >= 0")
        if not 0 < self.early_stop_half_width < 1:
            raise InputError(
                f"early_stop_half_width must be in (0, 1), got {self.early_stop_half_width}"
            )
        if any(not (p > 0 and math.isfinite(p)) for p in self.decision_points):
            raise InputError(f"decision_points must be positive ratios: {self.decision_points}")
        if self.resolution is not None and not 0 <= self.resolution < 1:
            raise InputError(f"resolution must be in [0, 1) or None, got {self.resolution}")
        if not 0 <= self.min_resolution < 1:
            raise InputError(f"min_resolution must be in [0, 1), got {self.min_resolution}")
        if self.min_rounds < 1:
            raise InputError(f"min_rounds must be at least 1, got {self.min_rounds}")
        if self.precision not in ("target", "decision"):
            raise InputError(f"precision must be 'target' or 'decision', got {self.precision!r}")
        if not 0 < self.equivalence_margin < 1:
            raise InputError(f"equivalence_margin must be in (0, 1), got {self.equivalence_margin}")

    @property
    def rounds_needed(self) -> int:
        """Rounds a test's estimate must rest on before it may end (see min_rounds)."""
        return min(self.min_rounds, self.max_rounds)

    def resolution_for(self, tau: float) -> float:
        """The resolution of a test whose sandboxes differ by `tau` (spread.tau of its run
        length)."""
        if self.resolution is not None:
            return self.resolution
        return max(self.min_resolution, tau)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in self.__dataclass_fields__:
            v = getattr(self, k)
            if isinstance(v, SandboxSpread):
                v = v.to_dict()
            out[k] = list(v) if isinstance(v, tuple) else v
        return out
