"""What a sandboxed run is asked and what it returns: the records every caller of the sandbox
passes and reads (`Limits`, `ToolRun`, `RunResult`) and the errors of our side
(`SandboxUnavailable`, `RunStagingFailed`).

They live apart from the `Sandbox` (runner.py) because most callers, the judge, the timing
engine, the reward paths, only build limits and read results, and need nothing of how a
sandbox is started or ended.
"""

from __future__ import annotations

import errno
import os
import signal
from dataclasses import dataclass, field

from asmopt.errors import EnvironmentProblem
from asmopt.sandbox.launcher import LaunchRecord

# Every untrusted program sees this argv[0], whatever it is and however it is run.
PROGRAM_ARGV0 = "/sandbox/prog"


@dataclass(frozen=True)
class ToolRun:
    """What a trusted tool run inside the sandbox needs beyond a program's plain run
    (valgrind, a sanitizer build), where the executed binary is the tool: its argv[0],
    environment entries, read-only binds of the files it opens (the program among them),
    a descriptor number whose writes the launcher collects per run (`LaunchRecord.log`),
    and a /proc of the sandbox's own (valgrind and AddressSanitizer read
    /proc/self/maps). The default is a program's plain run.

    That /proc shows every process of the sandbox, bubblewrap's and the launcher's command
    lines among them, which hold a run marker: a candidate that read it could forge where
    one run's output ends. So a marker is refused with `mount_proc` unless the binaries are
    `trusted` (built from a suite's own source, as the importer's sanitizer builds are)."""

    argv0: str = PROGRAM_ARGV0
    env: tuple[tuple[str, str], ...] = ()
    ro_binds: tuple[tuple[str, str], ...] = ()
    log_fd: int | None = None
    mount_proc: bool = False
    trusted: bool = False


PLAIN_RUN = ToolRun()


class SandboxUnavailable(EnvironmentProblem):
    """bubblewrap is missing or cannot create namespaces here; the message says how to fix it."""


class RunStagingFailed(SandboxUnavailable):
    """Our side could not prepare a sandboxed run (its directory, the copies of the binaries,
    the inputs, the launcher) before any program started: a full TMPDIR, a quota, a
    permission. Never the program's: nothing it did can reach the host's disk before its
    run, and during its run it writes only to its own in-memory /tmp and to pipes."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandboxed run. Sizes in bytes, times in seconds."""

    cpu_seconds: int = 10
    wall_seconds: float = 20.0
    address_space: int = 2 << 30
    file_size: int = 16 << 20
    tmp_size: int = 64 << 20
    max_processes: int = 64
    max_open_files: int = 64
    stdout_cap: int = 4 << 20
    stderr_cap: int = 64 << 10

    def __post_init__(self) -> None:
        for name in (
            "cpu_seconds",
            "address_space",
            "file_size",
            "tmp_size",
            "max_processes",
            "max_open_files",
            "stdout_cap",
            "stderr_cap",
        ):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"limit {name} must be positive, got {getattr(self, name)!r}")
        if self.wall_seconds <= 0:
            raise ValueError(f"limit wall_seconds must be positive, got {self.wall_seconds!r}")


TOOLCHAIN_LIMITS = Limits(
    cpu_seconds=60,
    wall_seconds=120.0,
    address_space=4 << 30,
    file_size=256 << 20,
    tmp_size=512 << 20,
    max_processes=256,
    max_open_files=256,
    stdout_cap=1 << 20,
    stderr_cap=1 << 20,
)


@dataclass
class RunResult:
    """What happened to one sandboxed run (or to each of `runs` back-to-back runs)."""

    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    user_time_s: float = 0.0
    sys_time_s: float = 0.0
    wall_time_s: float = 0.0
    peak_rss_kb: int = 0
    outer_wall_s: float = 0.0
    infra_error: str | None = None
    launcher_lost: bool = False
    records: tuple[LaunchRecord, ...] = field(default_factory=tuple)
    # With a run marker: each run's own stdout, in run order (None without a marker).
    segments: tuple[bytes, ...] | None = None
    # The program could not be executed at all (its errno's name and message), e.g. an ELF
    # whose interpreter path is too long: the binary's fault, never the sandbox's.
    exec_error: str | None = None
    env_pad: int = 0
    cpus: tuple[int, ...] = ()
    priority: str = "normal"

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    @property
    def cpu_time_s(self) -> float:
        return self.user_time_s + self.sys_time_s

    @classmethod
    def from_record(cls, rec: LaunchRecord, stdout: bytes = b"", stderr: bytes = b"") -> RunResult:
        """One run of a multi-run sandbox, as if it had run alone."""
        return cls(
            exit_code=rec.exit_code,
            signal=rec.signal,
            timed_out=rec.killed == "wall",
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=rec.killed == "stdout",
            stderr_truncated=rec.killed == "stderr",
            user_time_s=rec.user_time_s,
            sys_time_s=rec.sys_time_s,
            wall_time_s=rec.wall_time_s,
            peak_rss_kb=rec.peak_rss_kb,
            exec_error=_errno_text(rec.exec_errno) if rec.exec_errno else None,
            records=(rec,),
        )

    def each_run(self) -> list[RunResult]:
        """Every run of a multi-run sandbox as if it had run alone, each with its own
        output (the segments a marker split; empty where there are none)."""
        segments = list(self.segments or ())
        return [
            RunResult.from_record(rec, segments[i] if i < len(segments) else b"")
            for i, rec in enumerate(self.records)
        ]


def _errno_text(err: int) -> str:
    name = errno.errorcode.get(err, f"errno {err}")
    return f"{name} ({os.strerror(err)})"
