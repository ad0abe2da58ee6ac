"""A sample's deadlines in the reward service, and whose time a deadline hit was.

The rule: a candidate's time is the candidate's. A candidate that sleeps (or spins) must
get `timeout` and its penalty, never reach a deadline of the service: a deadline hit is
excluded as our `infra_error` (reward None), so a candidate that could cause one would
escape its penalty, hold a worker for the whole deadline and force a pool restart.

So, in three layers:

* Each test's own wall limit (`Limits.wall_seconds`) is the candidate's: a run killed at it
  is a `timeout`, and the reward path's check stops at the first failing test (the verdict
  is the first failure's either way), so a sleeper costs one wall limit, not one per test.
* The service's deadline for a sample is computed from the sample's own limits
  (`sample_deadline`): its build steps to the toolchain's limits, every run its check may
  make to its wall limit, and a margin for our own work; for its timing, the timing
  budget. An honest sample, or a sleeping one, never reaches it. A `ScoreConfig.deadline_s`
  set by hand replaces it (an upper bound on each of a sample's two tasks); the
  candidate's runs then get a share of it (`SampleDeadline.candidate_s`), enforced in the
  worker by cutting their wall limits (`evaluate.RunBudget`), so that the worker itself
  returns the candidate's `timeout` before the deadline.
* The service's kill at the deadline (pebble ending the worker, the thread and Ray
  back-ends giving up) is a last resort. The worker records its phase in its task's
  directory (`Progress`); where the kill came during the candidate's own build or runs and
  a known-good program runs fine in a fresh sandbox right after, the hit is the
  candidate's `timeout` (`deadline_verdict`), else our `infra_error`.

Every task runs in a directory of its own under one root of the service's (`TaskDirs`),
which the service removes when the task ends however it ends; on the process pool (and
Ray) the worker's temporary files (sandbox run directories, build directories) go there
too (`run_task`), so a worker killed mid-run leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import tempfile
import time
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from asmopt import typed_config
from asmopt.errors import InputError
from asmopt.evaluate import RunBudget
from asmopt.fresh import draw_count
from asmopt.judge import Verdict
from asmopt.programs.model import Program
from asmopt.sandbox.records import TOOLCHAIN_LIMITS, Limits

if TYPE_CHECKING:
    from asmopt.measure.timing import TimingConfig
    from asmopt.reward.service import ScoreConfig

# One toolchain step (assemble, link, compile) to its own limit: the launcher's wall limit
# and the grader's 30 s backstop around it (Sandbox.run_toolchain).
BUILD_STEP_S = TOOLCHAIN_LIMITS.wall_seconds + 30.0
# A sandbox's start and teardown around one run (bubblewrap, the launcher, the reaping).
RUN_OVERHEAD_S = 1.0
# Our own work beside the builds and runs: the baseline's build, blame probes, the grader.
OUR_WORK_S = 60.0
# What the worker keeps of a deadline for finishing after its last run (a killed run's
# teardown, the verdict, the reward): a tenth of the deadline, at most this.
MAX_RESERVE_S = 10.0

PROGRESS_FILE = "progress.json"
# The phases of a check that are the candidate's own time (evaluate.RunBudget.phase).
CANDIDATE_PHASES = frozenset({"build", "runs"})


def run_limits(config: ScoreConfig) -> Limits:
    """The per-run limits of a sample's runs: the config's, else the sandbox's defaults
    (what every reward worker's sandbox uses: `default_sandbox()`)."""
    return config.limits if config.limits is not None else Limits()


def limits_of(settings: Mapping[str, Any]) -> Limits:
    """Limits from a mapping of their fields (`limits: {wall_seconds: 2}` in a config),
    every other field the default; a misspelt key or a mistyped value fails here, naming
    `limits.KEY`."""
    hints = typing.get_type_hints(Limits)
    names = [f.name for f in fields(Limits)]
    values = {}
    for key, value in settings.items():
        if key not in names:
            raise InputError(f"unknown limits setting 'limits.{key}'; known: {', '.join(names)}")
        values[key] = typed_config.coerce(f"limits.{key}", value, hints[key])
    try:
        return replace(Limits(), **values)
    except ValueError as exc:
        raise InputError(f"limits: {exc}") from None


@dataclass(frozen=True)
class SampleDeadline:
    """A sample's deadlines: `check_s` for its check task (build and tests), `time_s` for
    its timing task (waiting for a timing core included), each from the moment a worker
    takes it; `candidate_s`, the share of the check that the candidate's own runs may use
    in all; `reserve_s`, what the worker keeps for finishing after its last run.
    `computed`: from the sample's limits (else `ScoreConfig.deadline_s`)."""

    check_s: float
    time_s: float
    candidate_s: float
    reserve_s: float
    computed: bool


def sample_deadline(program: Program, config: ScoreConfig, workers: int = 1) -> SampleDeadline:
    """The deadlines of one sample of `program` (see the module docstring).

    The check: the candidate's assemble and link steps, each to the toolchain's limits
    (BUILD_STEP_S: an assembler it keeps busy is its own), every run the check may make
    to its wall limit (the fixed tests, and on each drawn input the candidate's run and the
    baseline's), each with RUN_OVERHEAD_S for its sandbox, and OUR_WORK_S. The timing:
    twice what the timing may charge (its `candidate_budget_s`, or twice `budget_s` a test
    where less: stalled rounds are repeated uncharged), once more for each other worker
    that may hold the timing core ahead of it, with the rebuilds and OUR_WORK_S.

    A `deadline_s` set by hand replaces both; the candidate's runs then get half of it, or
    all but what the rest of the check is allowed where that is more (never more than
    their wall limits together)."""
    limits = run_limits(config)
    tests = len(program.tests)
    drawn = draw_count(program, config.fresh_inputs.per_class)
    candidate_s = (tests + drawn) * limits.wall_seconds
    rest_s = (
        2 * BUILD_STEP_S
        + (tests + 2 * drawn) * RUN_OVERHEAD_S
        + drawn * limits.wall_seconds
        + OUR_WORK_S
    )
    if config.deadline_s is None:
        check_s = candidate_s + rest_s
        time_s = _timing_s(tests, config.timing, workers)
        return SampleDeadline(check_s, time_s, candidate_s, _reserve(check_s), True)
    given = float(config.deadline_s)
    share = min(candidate_s, max(given / 2, given - rest_s))
    return SampleDeadline(given, given, share, _reserve(given), False)


def _timing_s(tests: int, timing: TimingConfig, workers: int) -> float:
    charged = min(timing.candidate_budget_s, 2.0 * timing.budget_s * tests)
    own = 2.0 * charged + tests * timing.max_rounds * RUN_OVERHEAD_S
    return 2 * BUILD_STEP_S + max(1, workers) * own + OUR_WORK_S


def _reserve(deadline_s: float) -> float:
    return min(MAX_RESERVE_S, 0.1 * deadline_s)


def check_budget(
    program: Program, config: ScoreConfig, start: float, task_dir: str | None
) -> RunBudget:
    """The budget a sample's check runs under in the worker: the candidate's share, the
    deadline less the reserve (from `start`, when the worker took the task), and its phases
    reported to the task's directory."""
    deadline = sample_deadline(program, config)
    return RunBudget(
        candidate_s=deadline.candidate_s,
        until=start + deadline.check_s - deadline.reserve_s,
        report=Progress(task_dir),
    )


# ---------------------------------------------------------------------------- progress
class Progress:
    """Where a task is, kept in its task directory for the service: a worker ended from
    outside says nothing more, and the service must still tell whose time the deadline
    was. Writing never fails the task (a directory removed under a thread left behind)."""

    def __init__(self, task_dir: str | None) -> None:
        self.path = os.path.join(task_dir, PROGRESS_FILE) if task_dir else None

    def __call__(self, phase: str) -> None:
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            tmp = f"{self.path}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"phase": phase, "at": time.time()}, f)
            os.replace(tmp, self.path)


def last_phase(task_dir: str | None) -> str | None:
    """The phase a task last reported (None: none, or no directory to read)."""
    if not task_dir:
        return None
    try:
        with open(os.path.join(task_dir, PROGRESS_FILE), encoding="utf-8") as f:
            phase = json.load(f).get("phase")
    except (OSError, ValueError, AttributeError):
        return None
    return phase if isinstance(phase, str) else None


def deadline_verdict(
    task_dir: str | None, known_good: Callable[[], str | None]
) -> tuple[Verdict, str]:
    """(verdict, why) for a task ended at its deadline: `timeout` where it was in the
    candidate's own build or runs and `known_good` (a known-good program in a fresh
    sandbox, under the sample's limits: None when it runs fine) says the sandbox works;
    else `infra_error` (the time went to our side, or our side is failing)."""
    phase = last_phase(task_dir)
    if phase not in CANDIDATE_PHASES:
        where = f"in our own work ({phase})" if phase else "before its check began"
        return Verdict.INFRA_ERROR, f"{where}: excluded, the machine may be overloaded"
    what = "build" if phase == "build" else "runs"
    try:
        probe = known_good()
    except Exception as exc:  # the probe itself could not run: ours
        probe = f"{type(exc).__name__}: {exc}"
    if probe is not None:
        return Verdict.INFRA_ERROR, (
            f"during the candidate's {what}, but a known-good program fails too ({probe}): excluded"
        )
    return Verdict.TIMEOUT, (
        f"during the candidate's own {what}, and a known-good program runs fine in a fresh "
        "sandbox: the time was the candidate's"
    )


# ---------------------------------------------------------------------------- task dirs
class TaskDirs:
    """One directory per task under one root of the service's (`asmopt-reward-*` in the
    temporary directory), removed when its task ends, and the root when the service
    closes: a killed worker cannot clean up after itself."""

    def __init__(self) -> None:
        self._root: str | None = None
        self._serial = itertools.count()

    def new(self) -> str:
        """A fresh task directory. Searchable by all, as the sandbox's own run directories
        are (sandbox/staging.make_run_dir): run as root, the sandbox runs as nobody and must reach
        the run directories inside it."""
        if self._root is None or not os.path.isdir(self._root):
            self._root = tempfile.mkdtemp(prefix="asmopt-reward-")
            os.chmod(self._root, 0o755)
        path = os.path.join(self._root, f"task-{next(self._serial)}")
        os.mkdir(path)
        os.chmod(path, 0o755)
        return path

    @staticmethod
    def remove(path: str | None) -> None:
        """Remove a task's directory. A killed worker's sandbox may still be going away
        (bubblewrap dies with its parent, not at the same instant), so try for a while."""
        if not path:
            return
        for attempt in range(20):
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.exists(path):
                return
            time.sleep(0.05 * (attempt + 1))

    def close(self) -> None:
        root, self._root = self._root, None
        self.remove(root)


def run_task(fn: Callable[..., Any], task_dir: str, own_tmp: bool, args: tuple[Any, ...]) -> Any:
    """`fn(*args, task_dir=task_dir)` in a worker. With `own_tmp` (a worker that runs one
    task at a time: a pool process, a Ray worker), Python's temporary directory is the
    task's own for the task's length, so every run and build directory it makes is inside
    it and goes when the service removes it, even when the worker is killed mid-run.
    Threads share one process (and its temporary directory): there the task directory
    holds the progress file only."""
    if not own_tmp:
        return fn(*args, task_dir=task_dir)
    os.makedirs(task_dir, exist_ok=True)  # a Ray worker on another node
    previous = tempfile.tempdir
    tempfile.tempdir = task_dir
    try:
        return fn(*args, task_dir=task_dir)
    finally:
        tempfile.tempdir = previous
