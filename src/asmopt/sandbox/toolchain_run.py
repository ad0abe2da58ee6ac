"""One toolchain command in its sandbox: the compiler (or a profile-collecting build of a
program's own C source) with the work directory, and nothing else of ours, writable.

The work directory is handed to the user the run starts as, the launcher staged in a
directory of its own (staging.py), the command built in the toolchain profile
(commands.py) and started through the sandbox's one way of starting a sandbox
(`Sandbox._execute`, runner.py); unsafe, the launcher runs directly in the work directory.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from asmopt.sandbox.commands import NOBODY_GID, NOBODY_UID, Setup, launcher_args, toolchain_bwrap
from asmopt.sandbox.plan import toolchain_stdin
from asmopt.sandbox.records import Limits, RunResult
from asmopt.sandbox.staging import make_run_dir


def run_toolchain(
    setup: Setup,
    launcher: Path,
    execute: Callable[..., RunResult],
    argv: Sequence[str],
    work_dir: str | os.PathLike[str],
    limits: Limits,
    stdin_file: str | None,
    seccomp: bool,
) -> RunResult:
    """`Sandbox.run_toolchain` once the sandbox is checked: run `argv` with `work_dir`
    writable at /build, started with `execute` (`Sandbox._execute`)."""
    work = Path(work_dir).resolve()
    stdin_inside = toolchain_stdin(work, stdin_file)
    outer = replace(limits, wall_seconds=limits.wall_seconds + 30.0)
    if setup.unsafe:
        stdin_path = str(work / stdin_file) if stdin_file else "/dev/null"
        args = launcher_args(limits, stdin_path, 1, seccomp, isolate=False, fresh_tmp=False)
        cmd = [str(launcher), *args, "--", *argv]
        return execute(cmd, outer, cwd=str(work))
    if setup.as_root:
        for path in [work, *work.rglob("*")]:
            os.chown(path, NOBODY_UID, NOBODY_GID)
    launch_dir = make_run_dir()
    try:
        launch = launch_dir / "launch"
        shutil.copyfile(launcher, launch)
        os.chmod(launch, 0o755)
        cmd = toolchain_bwrap(setup, work, launch, limits.tmp_size)
        cmd += [
            "/sandbox/launch",
            # The compiler's own process tree runs in a pid namespace of its own; /tmp is
            # the sandbox's (one run, nothing to keep apart).
            *launcher_args(limits, stdin_inside, 1, seccomp, isolate=True, fresh_tmp=False),
            "--",
            *argv,
        ]
        return execute(cmd, outer, marker=str(launch_dir))
    finally:
        shutil.rmtree(launch_dir, ignore_errors=True)
