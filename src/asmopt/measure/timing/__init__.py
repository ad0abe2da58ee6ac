"""Interleaved, adaptive timing of a candidate against its baseline, test by test.

Procedure (docs/measurement.md has the reasoning and the numbers behind the defaults):

1. Both binaries run in ONE sandbox, in adjacent pairs, counterbalanced (A B, B A, A B,
   ...), through the launcher, which executes each from the same descriptor with the same
   argv, environment, stdin and working directory, each run in a fresh pid namespace with
   a fresh /tmp (see sandbox/launcher.c). All tests of a program share the sandbox of a
   batch, their inputs passed as descriptors. Sandbox start-up is outside the timed
   region: the launcher times each run from exec to exit.
2. The first `warmup_pairs` pairs of every test's first round are discarded, and so is
   that whole round (the pilot) where it disagrees with the later rounds. The program cannot tell
   a warm-up from a timed run: they are the same in every respect it can observe.
3. Every run's output is checked against the expected output, so skipping work when timed
   is caught as a wrong answer.
4. The metric is user + system CPU time of the child from rusage. Unlike wall time it does
   not grow when another process shares the core, which is what broke the reference
   harness's numbers under load; wall time is recorded next to it, and a round whose
   baseline lost the core for long (wall far above CPU) is discarded and repeated.
5. After each batch every test's paired log-ratios give an interval (summary.py, with
   stats.py: trimmed means per round, rounds combined by a random-effects model whose
   between-round variance pools the rounds' own with this machine's measured
   between-sandbox spread, spread.py). A test stops when its relative half-width is
   within `target_half_width`, when its answer is settled (sequential rule; with
   `precision="decision"` also when it is equivalent to the baseline), or when its pair,
   round or time budget is spent (it is then flagged unreliable); never on fewer than two
   rounds' pairs; waiting for the core is charged to no budget.
6. The whole sandbox is pinned to a timing core held under a machine-wide lock
   (`CoreLock`), at real-time priority when permitted, so no two timings share a core,
   here or in another process, and nothing of normal priority preempts a timed run;
   correctness runs and builds use the other cores.

Several candidates of one program measured in one run (best-of-N samples, compiler-flag
variants) share the baseline's runs (`time_candidates`): a test's runs come in blocks, the
baseline once and each candidate still measuring once, in a cyclic order rotated by one
place per block (A B1 .. Bk, B1 .. Bk A, ...); each candidate pairs its run with the
block's baseline run and keeps its own statistics, stopping rule, budget and failure.

The engine (`measure_candidates`; `measure_tests` for one candidate, `measure_pairs` for
one test) only sees an executor that returns paired samples, so its statistics are tested
with a mock executor and no real timing. It runs the rounds and decides when each test
stops; summary.py turns a test's state (state.py) into its interval, warnings and record.
"""

from __future__ import annotations

from asmopt.measure.timing.calibration import machine_spread
from asmopt.measure.timing.config import TimingConfig
from asmopt.measure.timing.cores import (
    CoreLayout,
    CoreLock,
    TimingCancelled,
    default_core_lock,
    default_lock_dir,
    general_affinity,
)
from asmopt.measure.timing.engine import (
    TimingOutcome,
    measure_candidates,
    measure_pairs,
    measure_tests,
)
from asmopt.measure.timing.executor import (
    MAX_ROUND_OUTPUT,
    MAX_SHARED_CANDIDATES,
    SandboxExecutor,
    SharedSandboxExecutor,
)
from asmopt.measure.timing.judging import (
    CANDIDATE_WALL_FACTOR,
    CANDIDATE_WALL_MIN_S,
    INCONSISTENT_CPU_FACTOR,
    INCONSISTENT_CPU_SLACK_S,
    ReferenceRun,
    time_candidates,
    time_test,
    time_tests,
)
from asmopt.measure.timing.requests import CandidateRoundRequest, CandidateTest, RoundRequest
from asmopt.measure.timing.rounds import (
    BatchExecutor,
    CandidatesExecutor,
    PairExecutor,
    Round,
    RunFailure,
    RunTiming,
)
from asmopt.measure.timing.spread import DEFAULT_SPREAD, SandboxSpread
from asmopt.measure.timing.summary import TOO_FAST_S

__all__ = [
    "CANDIDATE_WALL_FACTOR",
    "CANDIDATE_WALL_MIN_S",
    "DEFAULT_SPREAD",
    "INCONSISTENT_CPU_FACTOR",
    "INCONSISTENT_CPU_SLACK_S",
    "MAX_ROUND_OUTPUT",
    "MAX_SHARED_CANDIDATES",
    "TOO_FAST_S",
    "BatchExecutor",
    "CandidateRoundRequest",
    "CandidateTest",
    "CandidatesExecutor",
    "CoreLayout",
    "CoreLock",
    "PairExecutor",
    "ReferenceRun",
    "Round",
    "RoundRequest",
    "RunFailure",
    "RunTiming",
    "SandboxExecutor",
    "SandboxSpread",
    "SharedSandboxExecutor",
    "TimingCancelled",
    "TimingConfig",
    "TimingOutcome",
    "default_core_lock",
    "default_lock_dir",
    "general_affinity",
    "machine_spread",
    "measure_candidates",
    "measure_pairs",
    "measure_tests",
    "time_candidates",
    "time_test",
    "time_tests",
]
