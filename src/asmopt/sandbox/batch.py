"""A batch of runs in one program sandbox: several binaries, one run per entry of `order`.

The request is checked against the launcher's own limits before anything starts
(`check_run_request`: MAX_BINARIES binaries, MAX_INPUTS inputs, one deadline for all or one
per binary, a marker that stays secret); then the run is staged (staging.py), its command
built (commands.py, with the launcher's plan of the runs from plan.py) and started through
the sandbox's one way of starting a sandbox (`Sandbox._execute`, runner.py), and the run
directory and every descriptor of it are gone again before the result comes back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from asmopt.sandbox.commands import Setup, launch_tail, program_command
from asmopt.sandbox.placement import Priority
from asmopt.sandbox.plan import RunPlan, whole_sandbox_limits, with_run_context
from asmopt.sandbox.records import Limits, RunResult, ToolRun
from asmopt.sandbox.staging import make_run_dir, stage_run, staged

# The padding variable's length is below this (commands.ENV_PAD_NAME).
ENV_PAD_MAX = 4096
MAX_INPUTS = 256  # inputs one sandbox takes (launcher.c MAX_INPUTS): a fresh one per timed pair
MAX_BINARIES = 9  # its --order names a binary with one digit (launcher.c MAX_PROGS)


def check_run_request(
    n_binaries: int,
    order: Sequence[int],
    stdin: bytes | Sequence[bytes],
    feed: Sequence[int] | None,
    marker: str | None,
    limits: Limits,
    run_wall_s: float | Sequence[float] | None,
    tool: ToolRun,
) -> tuple[list[bytes], list[int], list[float]]:
    """The arguments of `Sandbox.run_binaries`, checked before anything is started (the
    launcher's own limits: MAX_BINARIES binaries, MAX_INPUTS inputs; no secret marker in
    a sandbox whose /proc shows it). Returns (inputs, the input index of each run, each
    binary's per-run deadline, or one for all)."""
    if not n_binaries or n_binaries > MAX_BINARIES:
        raise ValueError(f"between 1 and {MAX_BINARIES} binaries, got {n_binaries}")
    if not order or any(not 0 <= k < n_binaries for k in order):
        raise ValueError(f"order must be a non-empty list of indexes below {n_binaries}")
    if marker is not None and (not marker or not marker.isalnum()):
        raise ValueError("marker must be a non-empty alphanumeric string")
    inputs = [stdin] if isinstance(stdin, bytes | bytearray) else list(stdin)
    if not 1 <= len(inputs) <= MAX_INPUTS:
        raise ValueError(f"between 1 and {MAX_INPUTS} inputs, got {len(inputs)}")
    feed = list(feed) if feed is not None else [0] * len(order)
    if len(feed) != len(order) or any(not 0 <= k < len(inputs) for k in feed):
        raise ValueError("feed must give an input index below len(stdin) for every run")
    walls = (
        [limits.wall_seconds]
        if run_wall_s is None
        else [float(run_wall_s)]
        if isinstance(run_wall_s, int | float)
        else [float(w) for w in run_wall_s]
    )
    if not walls or len(walls) > n_binaries or any(w <= 0 for w in walls):
        raise ValueError(
            f"run_wall_s must be positive, one value or one per binary, got {run_wall_s}"
        )
    if marker is not None and tool.mount_proc and not tool.trusted:
        raise ValueError(
            "a run marker cannot be secret in a sandbox with its own /proc (the launcher's "
            "command line shows it): run a candidate under such a tool without a marker"
        )
    return inputs, feed, walls


@dataclass(frozen=True)
class Batch:
    """The runs of one program sandbox, as `Sandbox.run_binaries` was asked them and
    `check_run_request` checked them: the binaries, which of them each run executes
    (`order`) on which input (`feed`), each binary's per-run deadline (`walls`), the
    per-run `limits`, the program's argv, the run marker, the padding, the trusted tool,
    the cores and priority, and the cap on all runs' stdout together."""

    binaries: Sequence[str | os.PathLike[str]]
    order: Sequence[int]
    argv: Sequence[str]
    inputs: list[bytes]
    feed: list[int]
    walls: list[float]
    limits: Limits
    marker: str | None
    env_pad: int
    tool: ToolRun
    cpus: Sequence[int] | None
    priority: Priority
    max_total_output: int


def run_batch(
    batch: Batch, setup: Setup, launcher: Path, execute: Callable[..., RunResult]
) -> RunResult:
    """Stage the batch, start its sandbox with `execute` (`Sandbox._execute`) and clean up:
    the descriptors of the binaries and inputs are closed and the run directory removed,
    whatever happened."""
    limits, walls, marker, tool = batch.limits, batch.walls, batch.marker, batch.tool
    outer = whole_sandbox_limits(limits, len(batch.order), max(walls), batch.max_total_output)
    fds: list[int] = []
    run_dir = staged(make_run_dir)
    try:
        input_fds, launch = staged(
            lambda: stage_run(run_dir, launcher, batch.binaries, batch.inputs, fds)
        )
        what = RunPlan(
            fds[: len(batch.binaries)], input_fds, batch.order, batch.feed, marker, tool.log_fd
        )
        tail = launch_tail(limits, walls, what, [tool.argv0, *batch.argv], setup.unsafe)
        cmd, env, cwd = program_command(setup, launch, tail, run_dir, batch.env_pad, tool)
        result = execute(
            cmd,
            outer,
            cwd=cwd,
            pass_fds=fds,
            cpus=batch.cpus,
            env=env,
            priority=batch.priority,
            marker=str(run_dir),
        )
        return with_run_context(result, batch.env_pad, batch.cpus, marker)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(run_dir, ignore_errors=True)
