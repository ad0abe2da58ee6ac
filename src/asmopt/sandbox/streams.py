"""What a sandbox writes, read while it runs, and what the sandbox's result makes of it.

The grader reads a sandbox's stdout, stderr and the launcher's report pipe at once, each
within its cap, until they end, the whole sandbox's deadline passes or an output goes over
its cap (`Streams`); then the report and the outputs become one `RunResult`, with what went
wrong on our side said in it (`result_of`, `explain_failure`). It lives apart from
execution.py, which starts the sandbox, and ending.py, which ends it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from dataclasses import replace

from asmopt.sandbox.launcher import LaunchReport
from asmopt.sandbox.placement import leave_realtime
from asmopt.sandbox.reaping import Process, child_processes
from asmopt.sandbox.records import Limits, RunResult

# Bytes of the launcher's report kept (a backstop: it writes a few lines per run).
REPORT_CAP = 4 << 20


class Streams:
    """What a sandbox has written on stdout, stderr and its report pipe, each within its
    cap, and how the reading ended."""

    def __init__(self, limits: Limits) -> None:
        self.buffers = {"out": bytearray(), "err": bytearray(), "rep": bytearray()}
        self.caps = {"out": limits.stdout_cap, "err": limits.stderr_cap, "rep": REPORT_CAP}
        self.over = {"out": False, "err": False, "rep": False}
        self.timed_out = False
        self.read_all = False
        self.inner: set[Process] = set()  # bubblewrap's child: its pid namespace's init

    @property
    def output_over(self) -> bool:
        """Whether stdout or stderr went over its cap."""
        return self.over["out"] or self.over["err"]

    @property
    def cut_short(self) -> bool:
        """Whether the sandbox was stopped: its deadline passed or an output cap was hit."""
        return self.timed_out or self.output_over

    def read(
        self,
        sel: selectors.BaseSelector,
        proc: subprocess.Popen[bytes],
        deadline: float,
        bwrapped: bool,
    ) -> None:
        """Read until every stream has ended (`read_all`), the deadline passes
        (`timed_out`) or stdout or stderr goes over its cap."""
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.timed_out = True
                return
            for key, _ in sel.select(timeout=min(remaining, 0.5)):
                name = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                if name == "rep" and not self.buffers["rep"] and bwrapped:
                    # The launcher has started (at the inherited real-time priority):
                    # bubblewrap's outer process only waits from now on, and its child,
                    # the init of the sandbox's pid namespace, exists.
                    leave_realtime(proc.pid)
                    self.inner = child_processes(proc.pid)
                self._keep(name, chunk)
            if self.output_over:
                return
        self.read_all = True

    def _keep(self, name: str, chunk: bytes) -> None:
        """Add `chunk` to stream `name`, up to its cap (marking it over when cut)."""
        buf = self.buffers[name]
        room = self.caps[name] - len(buf)
        if len(chunk) > room:
            buf += chunk[: max(room, 0)]
            self.over[name] = True
        else:
            buf += chunk

    def drain_report(self, report_r: int) -> None:
        """Read what is left of the report once the sandbox is ended (bounded)."""
        with contextlib.suppress(OSError):
            os.set_blocking(report_r, False)
            while len(self.buffers["rep"]) < self.caps["rep"]:
                chunk = os.read(report_r, 65536)
                if not chunk:
                    break
                self.buffers["rep"] += chunk


def result_of(
    streams: Streams, report: LaunchReport, priority: str, outer_wall_s: float
) -> RunResult:
    """The sandbox's result: its outputs, and the exit status and times of its last run."""
    result = RunResult(
        priority=priority,
        stdout=bytes(streams.buffers["out"]),
        stderr=bytes(streams.buffers["err"]),
        stdout_truncated=streams.over["out"],
        stderr_truncated=streams.over["err"],
        timed_out=streams.timed_out,
        outer_wall_s=outer_wall_s,
        records=report.runs,
    )
    if not report.runs:
        return result
    last = RunResult.from_record(report.runs[-1])
    return replace(
        result,
        exit_code=last.exit_code,
        signal=last.signal,
        timed_out=result.timed_out or last.timed_out,
        stdout_truncated=result.stdout_truncated or last.stdout_truncated,
        stderr_truncated=result.stderr_truncated or last.stderr_truncated,
        exec_error=last.exec_error,
        user_time_s=last.user_time_s,
        sys_time_s=last.sys_time_s,
        wall_time_s=last.wall_time_s,
        peak_rss_kb=last.peak_rss_kb,
    )


def explain_failure(
    result: RunResult,
    report: LaunchReport,
    streams: Streams,
    stuck: str | None,
    returncode: int | None,
) -> None:
    """Say in `result` what went wrong on our side (`infra_error`), or that the launcher
    vanished mid-run (`launcher_lost`: only something inside the sandbox could do that)."""
    if stuck is not None:
        result.infra_error = stuck
    elif report.error is not None:
        result.infra_error = f"sandbox launcher: {report.error}"
    elif not report.started:
        if streams.cut_short:
            return
        msg = result.stderr.decode("utf-8", "replace").strip()[:500]
        result.infra_error = f"the sandbox did not start (exit {returncode}): {msg}"
    elif not report.done and not streams.cut_short:
        result.launcher_lost = True
