"""The plan of one program sandbox's runs, as the launcher is told it and as it comes back.

The launcher's options for what each run executes on which input (`program_args`,
`RunPlan`), the whole sandbox's backstop limits over all its runs (`whole_sandbox_limits`),
each run's own output split at the run marker (`with_run_context`), and the toolchain run's
stdin as its sandbox sees it (`toolchain_stdin`). None of it depends on how bubblewrap is
started, so it lives apart from commands.py, batch.py and toolchain_run.py, which build and
start what it describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from asmopt.sandbox.records import Limits, RunResult


def program_args(
    exec_fds: Sequence[int],
    input_fds: Sequence[int],
    order: Sequence[int],
    feed: Sequence[int],
    marker: str | None,
    log_fd: int | None,
) -> list[str]:
    """The launcher's options for what it runs: each binary and input by descriptor, the
    binary (`order`, one digit per run) and input (`feed`, comma-separated indexes) of each run."""
    args: list[str] = []
    for fd in exec_fds:
        args += ["--exec-fd", str(fd)]
    for fd in input_fds:
        args += ["--stdin-fd", str(fd)]
    args += ["--order", "".join(str(k) for k in order)]
    args += ["--feed", ",".join(str(k) for k in feed)]
    if marker is not None:
        args += ["--marker", marker]
    if log_fd is not None:
        args += ["--log-fd", str(log_fd)]
    return args


@dataclass(frozen=True)
class RunPlan:
    """What the runs of one program sandbox execute: each binary and input by descriptor,
    the binary (`order`) and input (`feed`) of each run, the run marker and log descriptor."""

    exec_fds: Sequence[int]
    input_fds: Sequence[int]
    order: Sequence[int]
    feed: Sequence[int]
    marker: str | None
    log_fd: int | None


def whole_sandbox_limits(
    limits: Limits, runs: int, per_run_wall: float, max_total_output: int
) -> Limits:
    """The whole sandbox's limits: every run's deadline plus start-up, and every run's
    output; a backstop only, since the launcher enforces each run's own."""
    return replace(
        limits,
        wall_seconds=runs * (per_run_wall + 0.5) + 30.0,
        stdout_cap=min(max_total_output, runs * (limits.stdout_cap + 64)),
        stderr_cap=min(16 << 20, runs * limits.stderr_cap),
    )


def with_run_context(
    result: RunResult, env_pad: int, cpus: Sequence[int] | None, marker: str | None
) -> RunResult:
    """`result` with the padding and cores it ran with, and each run's own output where
    a marker split it."""
    result.env_pad = env_pad
    result.cpus = tuple(sorted(cpus)) if cpus else ()
    if marker is not None:
        result.segments = _segments(result.stdout, marker)
    return result


def _segments(stdout: bytes, marker: str) -> tuple[bytes, ...]:
    """Each run's own output, from stdout where the launcher wrote `marker` after every run
    (empty when no marker was written)."""
    parts = stdout.split(marker.encode() + b"\n")
    return tuple(parts[:-1]) if len(parts) > 1 else ()


def toolchain_stdin(work: Path, stdin_file: str | None) -> str:
    """The toolchain run's stdin as the sandbox sees it: a file of the work directory, or
    /dev/null."""
    if stdin_file is None:
        return "/dev/null"
    if "/" in stdin_file or not (work / stdin_file).is_file():
        raise ValueError(f"stdin_file must name a file in the work directory: {stdin_file}")
    return f"/build/{stdin_file}"
