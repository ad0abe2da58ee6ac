"""Whether this host can isolate untrusted programs, found before any of them runs.

A `Sandbox` (runner.py) checks once (`HostSupport.check`): bubblewrap is installed, the
runtime libraries are found, and a known-good probe runs isolated through the same path as
every untrusted program (bubblewrap, the launcher's pid and mount namespace and fresh /tmp
per run), so a machine where any of that is refused is found here, not in the middle of an
evaluation. The same probe decides blame later (`HostSupport.probe_failure`). What is
missing is said with the fix (`FIX_HINT`); a full disk is said as such.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from asmopt.sandbox.commands import NOBODY_UID
from asmopt.sandbox.host import runtime_libraries
from asmopt.sandbox.launcher import LauncherBuildError, probe_path
from asmopt.sandbox.records import Limits, RunResult, RunStagingFailed, SandboxUnavailable
from asmopt.sandbox.staging import NO_SPACE

UNSAFE_ENV = "ASMOPT_UNSAFE_NO_SANDBOX"

FIX_HINT = (
    "install bubblewrap (as root: apt-get install bubblewrap) and make sure unprivileged "
    "user namespaces are enabled (sysctl kernel.unprivileged_userns_clone=1 and "
    "user.max_user_namespaces > 0). Trusted baselines only: set "
    f"{UNSAFE_ENV}=1 to run WITHOUT isolation (never for model-written code)."
)


class HostSupport:
    """What the host gives the program sandbox, found by `check`: the runtime libraries
    and the probe program, and whether an isolated run of the probe worked."""

    def __init__(self) -> None:
        self.libs: list[tuple[str, str]] | None = None
        self.probe: Path | None = None
        self.checked = False

    def check(self, bwrap: str | None, run_binaries: Callable[..., RunResult]) -> None:
        """Raise SandboxUnavailable unless an isolated run of the trusted probe, through
        `run_binaries` (`Sandbox.run_binaries`), works; once it has, return at once."""
        if self.checked:
            return
        if bwrap is None:
            raise SandboxUnavailable(
                "bubblewrap ('bwrap') is not installed, so untrusted binaries cannot be run "
                "safely. Fix: " + FIX_HINT
            )
        self.libs = runtime_libraries()
        try:
            self.probe = probe_path()
        except LauncherBuildError as exc:
            raise SandboxUnavailable(str(exc)) from None
        self.checked = True  # run_binaries calls check() itself
        why = self.probe_failure(run_binaries, Limits(wall_seconds=30.0))
        if why is not None and why.startswith(NO_SPACE):
            self.checked = False  # a full disk is not a missing sandbox: say which
            raise SandboxUnavailable(why)
        if why is not None:
            self.checked = False
            raise SandboxUnavailable(
                f"bubblewrap cannot create an isolated sandbox here: {why}. The launcher "
                "needs CAP_SYS_ADMIN inside bubblewrap's user namespace (bwrap --cap-add) to "
                "give each run its own pid and mount namespace (user.max_user_namespaces > 0, "
                f"no AppArmor/SELinux rule against it). Fix: {FIX_HINT}"
            )

    def probe_failure(self, run_binaries: Callable[..., RunResult], limits: Limits) -> str | None:
        """None when the probe runs and answers as it should, else what went wrong."""
        assert self.probe is not None
        try:
            result = run_binaries([self.probe], [0], stdin=b"probe\n", limits=limits)
        except RunStagingFailed as exc:
            return str(exc)
        except OSError as exc:
            return f"bubblewrap could not be started: {exc}"
        if result.infra_error:
            return result.infra_error
        if result.exit_code != 0 or not result.stdout.startswith(b"probe "):
            return (
                f"the probe program failed (exit {result.exit_code}, {result.signal_name}, "
                f"stderr {result.stderr.decode('utf-8', 'replace').strip()[:300]!r})"
            )
        return None


def description(bwrap: str | None, as_root: bool, unsafe: bool) -> str:
    """One line saying how untrusted programs are confined here (`Sandbox.describe`)."""
    if unsafe:
        return "UNSAFE: no sandbox (trusted code only)"
    version = "bwrap"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        version = subprocess.run(
            [bwrap or "bwrap", "--version"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    return (
        f"{version}, uid {NOBODY_UID if as_root else os.getuid()}, per-run pid/mount "
        "namespaces and /tmp, seccomp allowlist, rlimits"
    )
