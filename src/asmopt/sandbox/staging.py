"""A sandboxed run staged on the host's disk before any program starts.

Each run gets a directory of the host's $TMPDIR (`make_run_dir`) holding copies of the
binaries, the inputs and the launcher (`stage_run`); the binaries and inputs reach the
launcher only as read-only descriptors. A failure here is ours, never the program's
(`staged`, `RunStagingFailed`): nothing a program does can reach the host's disk before its
run, and during its run it writes only to its own in-memory /tmp and to pipes.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from asmopt.sandbox.records import RunStagingFailed

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


def make_run_dir() -> Path:
    """A fresh directory for one sandbox's files, readable by the user its runs start as."""
    run_dir = Path(tempfile.mkdtemp(prefix="asmopt-run-"))
    os.chmod(run_dir, 0o755)
    return run_dir


def stage_run(
    run_dir: Path,
    launcher: Path,
    binaries: Sequence[str | os.PathLike[str]],
    inputs: Sequence[bytes],
    fds: list[int],
) -> tuple[list[int], Path]:
    """Copies of the binaries, the inputs and the launcher in the run directory.

    Binaries and inputs are opened read-only and their descriptors appended to `fds`
    as they are opened (binaries first, by index), so the caller closes every one even
    when staging fails halfway; the programs reach the launcher only as descriptors.
    Returns (the inputs' descriptors, the launcher's copy)."""
    for k, binary in enumerate(binaries):
        prog = run_dir / f"prog{k}"
        shutil.copyfile(binary, prog)
        os.chmod(prog, 0o755)
        fds.append(os.open(prog, os.O_RDONLY))
    input_fds: list[int] = []
    for k, data in enumerate(inputs):
        path = run_dir / f"stdin{k}"
        path.write_bytes(data)
        input_fds.append(os.open(path, os.O_RDONLY))
    fds += input_fds
    launch = run_dir / "launch"
    shutil.copyfile(launcher, launch)
    os.chmod(launch, 0o755)
    return input_fds, launch
