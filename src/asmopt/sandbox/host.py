"""What a sandbox takes from the host machine, and the staging of a run on the host's disk.

The program profile shows only the loader and the C and math libraries, found by asking
the loader about a trusted probe built here (`runtime_libraries`); the toolchain profile
shows the system's program and library trees read-only (`system_tree_binds`). A run is
staged in a directory of the host's $TMPDIR before any program starts, so a failure there
is ours, never the program's (`staged`, `RunStagingFailed`). Apart from the `Sandbox`
(runner.py) because none of it depends on how bubblewrap is started.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from asmopt.sandbox.launcher import tool_failure
from asmopt.sandbox.records import RunStagingFailed, SandboxUnavailable


def _probe_step(cmd: list[str], timeout_s: float) -> str:
    """Run one step of the probe; its failure is a SandboxUnavailable in one line
    (`launcher.tool_failure`: a full $TMPDIR is named as such)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(
            f"the sandbox's library probe could not run {cmd[0]}: {exc}"
        ) from None
    if proc.returncode == 0:
        return proc.stdout
    what = f"the sandbox's library probe ({cmd[0]})"
    raise SandboxUnavailable(tool_failure(what, proc.stderr, proc.returncode))


def runtime_libraries() -> list[tuple[str, str]]:
    """(path inside the sandbox, real file) for the loader and the C/math libraries.

    Found by asking the loader about a trusted probe built here, never the candidate."""
    probe_dir = Path(tempfile.mkdtemp(prefix="asmopt-probe-"))
    try:
        src = probe_dir / "p.c"
        # `volatile` keeps gcc from folding sqrt at compile time, and --no-as-needed keeps
        # libm in the probe's dependencies: otherwise no libm is found and every program
        # that links it fails to load in the sandbox.
        src.write_text(
            "#include <math.h>\nint main(void){volatile double x = 4.0; return (int)sqrt(x)-2;}\n"
        )
        build = ["gcc", str(src), "-o", str(probe_dir / "p"), "-Wl,--no-as-needed", "-lm"]
        _probe_step(build, 60)
        out = _probe_step(["ldd", str(probe_dir / "p")], 30)
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
    libs: list[tuple[str, str]] = []
    for line in out.splitlines():
        parts = line.split()
        path = next((p for p in parts if p.startswith("/")), None)
        if path is None:
            continue
        libs.append((path, str(Path(path).resolve())))
    if not any("libc.so" in p for p, _ in libs):
        raise SandboxUnavailable(f"could not find libc for the sandbox from ldd output: {out!r}")
    return libs


def system_tree_binds() -> list[str]:
    """bubblewrap options that show the system's program and library trees read-only
    (a symbolic link as the same link), and the loader's configuration."""
    cmd: list[str] = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        p = Path(top)
        if p.is_symlink():
            cmd += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            cmd += ["--ro-bind", top, top]
    for etc in (
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/alternatives",
    ):
        cmd += ["--ro-bind-try", etc, etc]
    return cmd


NO_SPACE = "no space left on the device for a sandboxed run's temporary files"

_T = TypeVar("_T")


def staged(step: Callable[[], _T]) -> _T:
    """Run one staging step of a sandboxed run; an OSError there is ours (RunStagingFailed),
    named with the directory and, for a full disk, the fix."""
    try:
        return step()
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # name the directory, not a file in it
            raise RunStagingFailed(
                f"{NO_SPACE}: {tempfile.gettempdir()}; free disk space or set TMPDIR to "
                "another file system, and rerun"
            ) from exc
        where = exc.filename2 or exc.filename or tempfile.gettempdir()
        raise RunStagingFailed(
            f"could not prepare a sandboxed run in {where}: {exc.strerror or exc}"
        ) from exc
