"""What an executor hands the timing engine: each run's timing, a failed run, the round of
paired runs one sandbox session returned, and the executor protocols that return them.

They sit apart from the engine so that the sandbox executor (executor.py) and the engine
(engine.py) each read them without reading the other: the engine is tested with a mock
executor, the executor runs real sandboxes with no knowledge of the engine's statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from asmopt.judge import Verdict
from asmopt.measure.timing.config import TimingConfig
from asmopt.measure.timing.requests import CandidateRoundRequest, CandidateTest, RoundRequest
from asmopt.sandbox.launcher import LaunchRecord
from asmopt.sandbox.records import RunResult


@dataclass(frozen=True)
class RunTiming:
    """One run of one binary: what rusage and the launcher's clock said."""

    cpu_s: float
    wall_s: float
    involuntary_switches: int = 0

    @classmethod
    def from_record(cls, rec: LaunchRecord) -> RunTiming:
        return cls(
            cpu_s=rec.cpu_time_s,
            wall_s=rec.wall_time_s,
            involuntary_switches=rec.involuntary_switches,
        )

    def value(self, metric: str) -> float:
        return self.cpu_s if metric == "cpu" else self.wall_s


@dataclass(frozen=True)
class RunFailure:
    """A run that did not behave: the candidate's fault, or (baseline, sandbox) ours."""

    candidate_fault: bool
    message: str
    run_result: RunResult | None = None
    run_index: int = 0
    verdict: Verdict = Verdict.INFRA_ERROR  # for the candidate's record
    # The input of the failing run when it was drawn fresh (blame reruns the baseline on
    # it), and the kind of output difference (judge.TestVerdict.difference), never data.
    stdin: bytes | None = None
    difference: str = ""
    # Which draw of the test the failing pair ran (the executor's serial), so that a
    # person can draw that input again from the grading's seed.
    serial: int | None = None


@dataclass
class Round:
    """What one sandbox session returned: timed pairs (warm-ups already removed)."""

    pairs: list[tuple[RunTiming, RunTiming]]
    warmups: list[tuple[RunTiming, RunTiming]] = field(default_factory=list)
    seconds: float = 0.0
    env_pad: int = 0
    cpus: tuple[int, ...] = ()
    load_before: float | None = None
    load_after: float | None = None
    priority: str = "normal"
    failure: RunFailure | None = None
    # Seconds the batch waited for the timing core before it ran (never charged to a budget).
    waited_s: float = 0.0
    # Runs charged to this round: its candidate's own runs plus its share of baseline runs
    # shared with other candidates (0: not known, two a pair).
    charged_runs: float = 0.0

    def stall_seconds(self) -> float:
        """Seconds the baseline's runs of this round spent off the core while running."""
        runs = [b for b, _ in (*self.warmups, *self.pairs)]
        return sum(max(0.0, b.wall_s - b.cpu_s) for b in runs)

    def stalled(self, config: TimingConfig) -> bool:
        cpu = sum(b.cpu_s for b, _ in (*self.warmups, *self.pairs))
        lost = self.stall_seconds()
        return lost > config.stall_min_s and lost > config.stall_share * cpu


class PairExecutor(Protocol):
    """Runs `warmup + pairs` alternating pairs of baseline and candidate on one test."""

    def run_round(self, pairs: int, warmup_pairs: int) -> Round: ...


class BatchExecutor(Protocol):
    """Runs rounds for several tests at once (one sandbox): one `RoundRequest` per test;
    the answer maps each test index to its Round. A failure ends the batch: the failing
    test's Round carries it and later tests may be missing from the answer."""

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]: ...


class CandidatesExecutor(Protocol):
    """Runs rounds for several candidates of one program against its one baseline, on
    several tests at once: one `CandidateRoundRequest` per (candidate, test); the answer
    maps each `CandidateTest` to its Round. Candidates of a test share the baseline's runs:
    each of its pairs is (a baseline run, the candidate's run) and the same baseline run
    may stand in several candidates' pairs. A failure ends that candidate's part of the
    batch (its Round carries it); other Rounds may then be missing or empty (not run, or
    discarded because a neighbour misbehaved)."""

    def run_candidates(
        self, requests: Sequence[CandidateRoundRequest]
    ) -> dict[CandidateTest, Round]: ...
