"""What a sandbox takes from the host machine.

The program profile shows only the loader and the C and math libraries, found by asking
the loader about a trusted probe built here (`runtime_libraries`); the toolchain profile
shows the system's program and library trees read-only (`system_tree_binds`). The command
lines that use them are commands.py's; a run's staging on the host's disk is staging.py's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from asmopt.sandbox.launcher import tool_failure
from asmopt.sandbox.records import SandboxUnavailable


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
