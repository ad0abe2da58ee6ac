"""Build (once) and locate the in-sandbox launcher, and parse what it reports.

The launcher is C so that nothing heavier than libc runs between the sandbox and the
untrusted program, and so its own start-up does not blur the timings it takes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from asmopt.cache import cache_root, require_writable
from asmopt.errors import EnvironmentProblem

LAUNCHER_SOURCE = Path(__file__).resolve().parent / "launcher.c"
_lock = threading.Lock()
_built: dict[str, Path] = {}


class LauncherBuildError(EnvironmentProblem):
    """The launcher could not be compiled: an installation problem on our side."""


# A known-good program: when a sandboxed run fails in a way that could be ours or the
# program's, the same sandbox path runs this; if it works, the failure was the program's.
PROBE_SOURCE = b"""#include <stdio.h>
int main(void) {
    char line[256];
    unsigned long sum = 0;
    while (fgets(line, sizeof line, stdin)) {
        for (char *p = line; *p; p++) sum = sum * 31 + (unsigned char)*p;
    }
    printf("probe %lu\\n", sum);
    return 0;
}
"""


def tool_failure(what: str, stderr: str, returncode: int) -> str:
    """One line for a trusted build step that failed: what failed, the tool's first line
    of diagnostics, and, when the disk is full, which temporary directory to free. gcc
    writes its intermediate files to $TMPDIR even when the output goes elsewhere (and
    Python's tempfile silently falls back to /tmp when $TMPDIR is full), so a full $TMPDIR
    shows up here first."""
    said = (stderr.strip().splitlines() or [f"exit status {returncode}"])[0][:500]
    hint = ""
    if "No space left on device" in stderr:
        where = os.environ.get("TMPDIR") or tempfile.gettempdir()
        hint = f"; the temporary directory ({where}) is full: free space there or set TMPDIR"
    return f"{what} failed: {said}{hint}"


def _compiler_version(cc: str) -> str:
    try:
        return subprocess.run(
            [cc, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError) as exc:
        raise LauncherBuildError(
            f"cannot run the C compiler {cc!r} to build the sandbox launcher ({exc}); "
            "install gcc (apt-get install gcc)"
        ) from None


def _build_cached(name: str, source: bytes, cc: str, flags: tuple[str, ...]) -> Path:
    """Compile trusted C `source` once per compiler version; return the cached executable."""
    version = _compiler_version(cc)
    key = hashlib.sha256(source + version.encode() + " ".join(flags).encode()).hexdigest()[:16]
    with _lock:
        if key in _built and _built[key].exists():
            return _built[key]
        out_dir = cache_root() / "launcher"
        target = out_dir / f"{name}-{key}"
        if not target.exists():
            require_writable(out_dir, "the launcher cache")  # one line, not a traceback
            src_dir = Path(tempfile.mkdtemp(dir=out_dir, prefix=".src-"))
            try:
                src = src_dir / f"{name}.c"
                src.write_bytes(source)
                tmp = src_dir / name
                proc = subprocess.run(
                    [cc, *flags, "-o", str(tmp), str(src)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                if proc.returncode != 0:
                    raise LauncherBuildError(
                        tool_failure(f"building the sandbox's {name}", proc.stderr, proc.returncode)
                    )
                os.chmod(tmp, 0o755)
                os.replace(tmp, target)
            finally:
                for leftover in src_dir.iterdir():
                    leftover.unlink()
                src_dir.rmdir()
        _built[key] = target
        return target


def launcher_path(cc: str = "gcc") -> Path:
    """Compile the launcher if needed and return the cached executable's path."""
    return _build_cached("asmopt-launch", LAUNCHER_SOURCE.read_bytes(), cc, ("-O2", "-Wall"))


def probe_path(cc: str = "gcc") -> Path:
    """The known-good probe program (see PROBE_SOURCE), compiled once."""
    return _build_cached("asmopt-probe", PROBE_SOURCE, cc, ("-O2",))


@dataclass(frozen=True)
class LaunchRecord:
    """One run of the program as the launcher saw it.

    `prog` is the index of the program that ran (0 unless several were alternated); the
    context-switch and page-fault counts come from the child's rusage and let a timing
    tell a run that was preempted (`nivcsw`) from one that was merely slow."""

    exit_code: int | None
    signal: int | None
    user_time_s: float
    sys_time_s: float
    peak_rss_kb: int
    wall_time_s: float
    prog: int = 0
    input: int = 0
    voluntary_switches: int = 0
    involuntary_switches: int = 0
    minor_faults: int = 0
    major_faults: int = 0
    log: bytes = b""
    # Bytes the run wrote (before any cap), why the launcher killed it (None when it ended
    # by itself: "wall", "stdout" or "stderr"), and the errno of a failed exec (0 if none).
    out_bytes: int = 0
    err_bytes: int = 0
    killed: str | None = None
    exec_errno: int = 0

    @property
    def cpu_time_s(self) -> float:
        return self.user_time_s + self.sys_time_s


@dataclass(frozen=True)
class LaunchReport:
    started: bool
    runs: tuple[LaunchRecord, ...]
    error: str | None
    done: bool


_KILL_REASONS = {"none": None, "wall": "wall", "stdout": "stdout", "stderr": "stderr"}


def _killed(word: str) -> str | None:
    if word not in _KILL_REASONS:
        raise ValueError(f"unknown kill reason {word!r}")
    return _KILL_REASONS[word]


def parse_report(text: str) -> LaunchReport:
    """Parse the launcher's report lines; unknown lines are ignored, never trusted."""
    started = done = False
    error: str | None = None
    runs: list[LaunchRecord] = []
    for line in text.splitlines():
        if line == "started":
            started = True
        elif line == "done":
            done = True
        elif line.startswith("error "):
            error = line[6:]
        elif line.startswith("log ") and runs:
            try:
                chunk = bytes.fromhex(line[4:])
            except ValueError:
                error = f"malformed launcher report line: {line[:200]!r}"
                continue
            runs[-1] = replace(runs[-1], log=runs[-1].log + chunk)
        elif line.startswith("run "):
            fields = dict(part.split("=", 1) for part in line[4:].split() if "=" in part)
            try:
                code = int(fields["exit"])
                sig = int(fields["signal"])
                runs.append(
                    LaunchRecord(
                        exit_code=code if code >= 0 else None,
                        signal=sig or None,
                        user_time_s=int(fields["utime_us"]) / 1e6,
                        sys_time_s=int(fields["stime_us"]) / 1e6,
                        peak_rss_kb=int(fields["maxrss_kb"]),
                        wall_time_s=int(fields["wall_ns"]) / 1e9,
                        prog=int(fields.get("prog", 0)),
                        input=int(fields.get("input", "0")),
                        voluntary_switches=int(fields.get("nvcsw", 0)),
                        involuntary_switches=int(fields.get("nivcsw", 0)),
                        minor_faults=int(fields.get("minflt", 0)),
                        major_faults=int(fields.get("majflt", 0)),
                        out_bytes=int(fields.get("out", 0)),
                        err_bytes=int(fields.get("err", 0)),
                        killed=_killed(fields.get("killed", "none")),
                        exec_errno=int(fields.get("exec_errno", 0)),
                    )
                )
            except (KeyError, ValueError):
                error = f"malformed launcher report line: {line[:200]!r}"
    return LaunchReport(started=started, runs=tuple(runs), error=error, done=done)
