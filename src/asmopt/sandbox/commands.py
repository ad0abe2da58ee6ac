"""The command lines that start a sandbox: bubblewrap's options (its namespaces, mounts and
environment) for the two profiles, the launcher's options, and the user a run starts as.

Program profile (`program_bwrap`): an empty tmpfs root with only the runtime libraries (and
a trusted tool's `ro_binds`) and the launcher bound read-only, a size-limited /tmp, a
minimal /dev, no /proc unless a trusted tool asks for one, a cleared environment with fixed
values and the padding. Toolchain profile (`toolchain_bwrap`): the system's program and
library trees read-only with this package and the suites masked, the work directory
writable at /build. Every command ends in the launcher and its per-run limits
(`launcher_args`, `launch_tail`); what the runs execute on which input is plan.py's. The
report descriptor is a placeholder (`REPORT_FD`) that execution.py replaces once the pipe
exists. Nothing here starts a process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from asmopt.sandbox.host import system_tree_binds
from asmopt.sandbox.plan import RunPlan, program_args
from asmopt.sandbox.records import Limits, ToolRun

NOBODY_UID = 65534
NOBODY_GID = 65534
# A padding variable of random length (below batch.ENV_PAD_MAX bytes) is in every program's
# environment, so its stack starts at a different offset in each sandbox (Mytkowicz et al.
# 2009: environment size alone can shift run time by several percent).
ENV_PAD_NAME = "PAD"
REPORT_FD = "{report_fd}"  # replaced by the real descriptor number when the pipe exists


@dataclass(frozen=True)
class Setup:
    """What every command of one `Sandbox` (runner.py) is built with: the bubblewrap binary
    (None: not installed), whether runs go without bubblewrap (`unsafe`), whether we are
    root (runs then start as nobody), the runtime libraries its check found (None before)
    and the paths masked from the toolchain."""

    bwrap: str | None
    unsafe: bool
    as_root: bool
    libs: list[tuple[str, str]] | None
    hide: Sequence[Path]


def user_kwargs(setup: Setup) -> dict[str, object]:
    """The user and groups the sandbox starts as (subprocess.Popen's keywords)."""
    if setup.as_root and not setup.unsafe:
        return {"user": NOBODY_UID, "group": NOBODY_GID, "extra_groups": []}
    return {}


def bwrap_base(bwrap: str | None, tmp_size: int) -> list[str]:
    """bubblewrap and the options both profiles start with."""
    assert bwrap is not None
    return [
        bwrap,
        "--unshare-all",
        # Kept by the launcher only, to give each run its own pid and mount namespace
        # (a capability within the sandbox's own user namespace; programs drop it).
        "--cap-add",
        "CAP_SYS_ADMIN",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--dev",
        "/dev",
        "--size",
        str(tmp_size),
        "--tmpfs",
        "/tmp",
    ]


def launcher_args(
    limits: Limits,
    stdin_path: str,
    runs: int,
    seccomp: bool,
    *,
    isolate: bool,
    fresh_tmp: bool,
    walls: Sequence[float] | None = None,
) -> list[str]:
    """Per-run limits for the launcher; it enforces them on each run separately.

    `walls` is one deadline for every run or one per program (by index), as
    `batch.check_run_request` returns them; default: the limits' wall time."""
    walls = walls or [limits.wall_seconds]
    return [
        "--report-fd",
        REPORT_FD,
        "--cpu",
        str(limits.cpu_seconds),
        "--as",
        str(limits.address_space),
        "--fsize",
        str(limits.file_size),
        "--nproc",
        str(limits.max_processes),
        "--nofile",
        str(limits.max_open_files),
        "--stdin",
        stdin_path,
        "--runs",
        str(runs),
        "--seccomp",
        "1" if seccomp else "0",
        "--isolate",
        "1" if isolate else "0",
        "--fresh-tmp",
        str(limits.tmp_size if fresh_tmp else 0),
        "--run-wall-ms",
        ",".join(str(max(1, int(w * 1000))) for w in walls),
        "--stdout-cap",
        str(limits.stdout_cap),
        "--stderr-cap",
        str(limits.stderr_cap),
    ]


def launch_tail(
    limits: Limits,
    walls: Sequence[float],
    what: RunPlan,
    program_argv: list[str],
    unsafe: bool,
) -> list[str]:
    """The launcher's arguments: per-run limits, what each run executes on which input,
    then the program's argv."""
    # Per-run namespaces and a fresh /tmp need the capability bubblewrap's user
    # namespace gives the launcher: without bubblewrap (unsafe mode) they are off.
    args = launcher_args(
        limits,
        "/dev/null",
        len(what.order),
        True,
        isolate=not unsafe,
        fresh_tmp=not unsafe,
        walls=walls,
    )
    prog_args = program_args(
        what.exec_fds, what.input_fds, what.order, what.feed, what.marker, what.log_fd
    )
    return [*args, *prog_args, "--", *program_argv]


def program_command(
    setup: Setup,
    launch: Path,
    tail: list[str],
    run_dir: Path,
    env_pad: int,
    tool: ToolRun,
) -> tuple[list[str], dict[str, str] | None, str | None]:
    """(command, environment, working directory) that start the launcher: inside the
    program profile of bubblewrap, or, unsafe, directly in the run directory."""
    if setup.unsafe:
        env = {**os.environ, ENV_PAD_NAME: "x" * env_pad, **dict(tool.env)}
        return [str(launch), *tail], env, str(run_dir)
    cmd = program_bwrap(setup, launch, env_pad, tool)
    cmd += ["/sandbox/launch", *tail]
    return cmd, None, None


def program_bwrap(
    setup: Setup,
    launch: Path,
    env_pad: int,
    tool: ToolRun,
) -> list[str]:
    """The bubblewrap command of the untrusted-program profile, up to the launcher:
    only the runtime libraries (and a tool's `ro_binds`) and the launcher are visible,
    everything read-only, a cleared environment with fixed values and the padding."""
    assert setup.libs is not None
    cmd = bwrap_base(setup.bwrap, 1 << 20)
    if tool.mount_proc:
        cmd += ["--proc", "/proc"]
    for inside, real in setup.libs:
        cmd += ["--ro-bind", real, inside]
    for real, inside in tool.ro_binds:
        cmd += ["--ro-bind", real, inside]
    cmd += [
        "--ro-bind",
        str(launch),
        "/sandbox/launch",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        "/tmp",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C",
        "--setenv",
        ENV_PAD_NAME,
        "x" * env_pad,
    ]
    for name, value in tool.env:
        cmd += ["--setenv", name, value]
    return cmd


def toolchain_bwrap(setup: Setup, work: Path, launch: Path, tmp_size: int) -> list[str]:
    """The bubblewrap command of the toolchain profile, up to the launcher: the system's
    programs and libraries read-only (with this package and the suites masked), the
    work directory writable at /build, a cleared environment with fixed values."""
    cmd = bwrap_base(setup.bwrap, tmp_size) + ["--proc", "/proc"]
    cmd += system_tree_binds()
    for hidden in setup.hide:
        if any(str(hidden).startswith(t + "/") for t in ("/usr", "/lib", "/lib64", "/bin")):
            cmd += ["--tmpfs", str(hidden)]
    if Path("/usr/local").is_dir():
        cmd += ["--tmpfs", "/usr/local"]
    return cmd + [
        "--bind",
        str(work),
        "/build",
        "--ro-bind",
        str(launch),
        "/sandbox/launch",
        "--chdir",
        "/build",
        "--clearenv",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "LANG",
        "C",
        "--setenv",
        "TMPDIR",
        "/tmp",
        "--setenv",
        "HOME",
        "/tmp",
    ]
