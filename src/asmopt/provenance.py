"""Where and when a result was made: date, commit, machine, tools and library versions.

The one environment fingerprint of the project: recorded in every evaluation run's store,
every trained model's summary, the study and the benchmarks, because a result is only worth
what one can trace back to the code and machine that produced it. A leaf: anyone may
import it, it imports nothing of asmopt but its version.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

_HERE = str(Path(__file__).resolve().parent)


def git_commit(full: bool = False) -> str:
    """Hash of the checkout asmopt runs from (short unless `full`), with `+dirty` when
    tracked files differ from it; "unknown" outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "-C", _HERE, "rev-parse", *([] if full else ["--short"]), "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", _HERE, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head + ("+dirty" if dirty else "")) if head else "unknown"


def _cpuinfo_field(name: str) -> str | None:
    """The first `name : value` of /proc/cpuinfo, or None where it cannot be read."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    return _cpuinfo_field("model name") or platform.processor() or "unknown"


def cpu_flags() -> str:
    """The CPU's feature flags, sorted, or "" where they cannot be read: two machines of one
    CPU model (virtual machines especially) can offer different instructions."""
    return " ".join(sorted((_cpuinfo_field("flags") or "").split()))


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def stamp() -> dict[str, str]:
    """Date and commit: enough to find the code a model was trained with."""
    return {"date": now(), "git_commit": git_commit()}


def environment() -> dict[str, Any]:
    import torch
    import transformers

    return {
        **stamp(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def machine() -> dict[str, Any]:
    """The machine's side of a measurement: CPU, kernel, frequency policy, SMT, ASLR, load."""
    return {
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "boost": _read("/sys/devices/system/cpu/cpufreq/boost"),
        "smt": _read("/sys/devices/system/cpu/smt/active"),
        "aslr": _read("/proc/sys/kernel/randomize_va_space"),
        "loadavg": list(os.getloadavg()),
    }


def environment_fingerprint(
    *,
    compiler: str,
    sandbox: str,
    measure: str,
    timing: dict[str, Any] | None = None,
    valgrind: str | None = None,
) -> dict[str, Any]:
    """Everything about the machine and tools that could change a measurement."""
    from asmopt import __version__

    return {
        **machine(),
        "asmopt": __version__,
        "git": git_commit(full=True),
        "compiler": compiler,
        "sandbox": sandbox,
        "measure": measure,
        "timing": timing,
        "valgrind": valgrind,
        "recorded": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
