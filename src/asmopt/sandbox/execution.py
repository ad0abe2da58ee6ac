"""One sandbox started, watched to its end and made into a `RunResult`.

The sandbox is started from a command commands.py built, pinned and prioritised around the
spawn only (placement.py), registered so that a cancelled evaluation ends it (live.py);
its stdout, stderr and the launcher's report are read until they end or the whole
sandbox's deadline passes (streams.py); then it exits by itself or is ended (ending.py),
and only once every process of it is gone does its result come back.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Sequence

from asmopt.sandbox import live as live_processes
from asmopt.sandbox.commands import REPORT_FD, Setup, user_kwargs
from asmopt.sandbox.ending import end_sandbox, kill_group
from asmopt.sandbox.launcher import parse_report
from asmopt.sandbox.placement import Priority, thread_placement
from asmopt.sandbox.reaping import exits_by_itself
from asmopt.sandbox.records import Limits, RunResult
from asmopt.sandbox.streams import Streams, explain_failure, result_of

# A sandbox whose output has all been read exits by itself within this (bubblewrap exits
# once its pid namespace is empty); otherwise it is ended (`ending.end_sandbox`).
SELF_EXIT_S = 5.0


def execute(
    cmd: list[str],
    limits: Limits,
    setup: Setup,
    *,
    cwd: str | None = None,
    pass_fds: Sequence[int] = (),
    cpus: Sequence[int] | None = None,
    env: dict[str, str] | None = None,
    priority: Priority = "normal",
    marker: str | None = None,
) -> RunResult:
    """Start the sandbox, collect its output and report, enforce the overall deadline.

    `limits` here are the WHOLE sandbox's (wall deadline, total output caps); the
    launcher enforces each run's own. This process never runs candidate code and sits
    on another core than a timed run, so it always gets to kill a runaway sandbox.

    It returns only once every process of the sandbox is gone (or says, in the
    result's `infra_error` and a log warning, which are not): a caller holding a timing
    core's lock releases it afterwards, so nothing of this sandbox is left on the core.
    `marker` is a path that every bubblewrap process of this sandbox has on its command
    line (its run directory), to find them once their parent is gone.

    Wide because it is `Sandbox._execute` (runner.py) with the sandbox's `setup` added,
    and every keyword is a setting of one start that the program and toolchain runs pass
    differently."""
    report_r, report_w = os.pipe()
    cmd = [str(report_w) if part == REPORT_FD else part for part in cmd]
    start = time.monotonic()
    try:
        # Affinity is inherited at fork: pin this thread around the spawn only, so the
        # sandbox (and everything in it) runs on `cpus` and this process does not.
        with thread_placement(cpus, priority) as achieved:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(report_w, *pass_fds),
                start_new_session=True,
                cwd=cwd,
                env=env,
                **user_kwargs(setup),  # type: ignore[arg-type]
            )
    except OSError as exc:
        os.close(report_r)
        os.close(report_w)
        return RunResult(infra_error=f"could not start the sandbox: {exc}")
    os.close(report_w)
    streams = Streams(limits)

    def cancel() -> None:  # a cancelled evaluation ends it (sandbox/live.py)
        if proc.returncode is None:
            kill_group(proc)

    with live_processes.registered(proc.pid, cancel):
        stuck = collect_until_gone(
            proc, report_r, streams, start + limits.wall_seconds, cmd[0] == setup.bwrap, marker
        )
    report = parse_report(streams.buffers["rep"].decode("utf-8", "replace"))
    result = result_of(streams, report, achieved, time.monotonic() - start)
    explain_failure(result, report, streams, stuck, proc.returncode)
    return result


def collect_until_gone(
    proc: subprocess.Popen[bytes],
    report_r: int,
    streams: Streams,
    deadline: float,
    bwrapped: bool,
    marker: str | None,
) -> str | None:
    """Read the sandbox's stdout, stderr and report until they end, the deadline passes
    or an output cap is reached; then see that every process of it is gone. Returns
    None then, else one line naming those left (`ending.end_sandbox`)."""
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    rep_file = os.fdopen(report_r, "rb", buffering=0)
    sel.register(rep_file, selectors.EVENT_READ, "rep")
    try:
        streams.read(sel, proc, deadline, bwrapped)
    finally:
        ended = streams.read_all and not (streams.timed_out or streams.output_over)
        if ended:
            # Every output has ended, so the launcher has exited, after reaping each
            # run's init (which is reapable only once its pid namespace is empty).
            # bubblewrap exits by itself then, and its namespace's init soon after.
            ended = exits_by_itself(proc, streams.inner, SELF_EXIT_S)
        stuck = None if ended else end_sandbox(proc, marker, streams.inner)
        streams.drain_report(report_r)
        sel.close()
        rep_file.close()
        proc.stdout.close()
        proc.stderr.close()
    return stuck
