"""`asmopt doctor`: what this machine gives asmopt, in one screen.

Every measurement depends on things outside the package: bubblewrap and the kernel's
namespaces (the sandbox), gcc (the toolchain), which cores time and which lock files every
asmopt process on the machine shares, whether real-time priority is permitted, valgrind
(instruction mode), and how much one timing sandbox differs from the next here (the
between-sandbox spread the timing engine allows for). When a result looks odd, this is
the first thing to run; it changes nothing but creates the lock directory if it is
missing, and with `--calibrate` measures the spread again (a few seconds per timing core).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from typing import Any

from asmopt.cli.common import emit_json


def _sandbox() -> tuple[bool, str]:
    from asmopt.sandbox.records import SandboxUnavailable
    from asmopt.sandbox.runner import default_sandbox

    try:
        default_sandbox().check()
    except SandboxUnavailable as exc:
        return False, str(exc)
    return True, "isolated runs work (bubblewrap, pid and mount namespace per run)"


def _toolchain() -> tuple[bool, str]:
    from asmopt.toolchain import ToolchainError, default_toolchain

    try:
        return True, default_toolchain().identity().splitlines()[0]
    except (ToolchainError, OSError, IndexError) as exc:
        return False, str(exc)


def _valgrind() -> tuple[bool, str]:
    from asmopt.measure.valgrind import Valgrind, ValgrindUnavailable

    try:
        return True, Valgrind.locate().version
    except ValgrindUnavailable as exc:
        return False, str(exc)


def _realtime() -> str:
    """What timing priority this process could get (see sandbox/placement.py)."""
    if os.geteuid() == 0:
        return "realtime (SCHED_FIFO): running as root"
    soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
    if soft == resource.RLIM_INFINITY or soft >= 2:
        return f"realtime (SCHED_FIFO): RLIMIT_RTPRIO {soft}"
    return "normal or nice -20 only: SCHED_FIFO needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= 2"


def _spread(lock: Any, calibrate: bool) -> dict[str, Any]:
    """The between-sandbox spread: measured now with `calibrate`, else the stored one."""
    from asmopt.measure.timing.calibration import machine_spread, stored_spread

    if calibrate:
        from asmopt.sandbox.runner import default_sandbox

        found = machine_spread(default_sandbox(), lock, refresh=True)
    else:
        found = stored_spread(lock)
        if found is None:
            return {
                "measured": False,
                "detail": "not measured yet on this boot: measured "
                "before the first timing, or now with `asmopt doctor --calibrate`",
            }
    return {
        "measured": not found.source.startswith("default"),
        "source": found.source,
        "df": found.df,
        "points": [
            {"run_ms": round(s * 1e3, 3), "sd_pct": round(t * 100, 3)} for s, t in found.points
        ],
    }


def diagnose(calibrate: bool = False) -> dict[str, Any]:
    from asmopt import __version__
    from asmopt.cache import cache_root
    from asmopt.measure.timing.cores import CoreLayout, CoreLock, lock_states

    report: dict[str, Any] = {"version": __version__, "python": sys.version.split()[0]}
    for key, probe in (("sandbox", _sandbox), ("toolchain", _toolchain), ("valgrind", _valgrind)):
        ok, detail = probe()
        report[key] = {"ok": ok, "detail": detail}
    try:
        layout = CoreLayout.detect()
        lock = CoreLock(layout)
    except (ValueError, OSError) as exc:
        report["timing"] = {"ok": False, "detail": str(exc)}
    else:
        report["timing"] = {
            "ok": True,
            "timing_cores": list(layout.timing),
            "general_cores": list(layout.general),
            "isolated": layout.isolated,
            "lock_dir": str(lock.lock_dir),
            "locks": [
                {"cpu": cpu, "file": str(path), "held_by": holder}
                for cpu, path, holder in lock_states(lock)
            ],
            "priority": _realtime(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "spread": _spread(lock, calibrate),
        }
    report["cache_dir"] = str(cache_root())
    return report


def cmd_doctor(args: argparse.Namespace) -> int:
    report = diagnose(calibrate=args.calibrate)
    if args.json:
        emit_json(report)
    else:
        print(f"asmopt {report['version']} (Python {report['python']})")
        for key in ("sandbox", "toolchain", "valgrind"):
            part = report[key]
            print(f"{key:10s} {'ok ' if part['ok'] else 'NO '} {part['detail']}")
        timing = report["timing"]
        if not timing["ok"]:
            print(f"timing     NO  {timing['detail']}")
        else:
            isolated = "" if timing["isolated"] else " (NOT isolated: timings share a core)"
            print(
                f"timing     ok  cores {timing['timing_cores']}, other work on "
                f"{timing['general_cores']}{isolated}; load average {timing['load_average']}"
            )
            print(f"           priority: {timing['priority']}")
            print(f"           machine-wide locks in {timing['lock_dir']}:")
            for entry in timing["locks"]:
                who = entry["held_by"] or "free"
                print(f"             cpu {entry['cpu']}: {entry['file']}: {who}")
            spread = timing["spread"]
            if not spread["measured"]:
                detail = spread.get("detail", spread.get("source"))
                print(f"           between-sandbox spread: {detail}")
            else:
                points = ", ".join(
                    f"{p['sd_pct']:.2f}% at {p['run_ms']:.3g} ms" for p in spread["points"]
                )
                print(f"           between-sandbox spread (sd): {points}; {spread['source']}")
        print(f"cache      {report['cache_dir']}")
    essential = ("sandbox", "toolchain", "timing")
    return 0 if all(report[k]["ok"] for k in essential) else 1


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "doctor",
        parents=[common],
        help="check the sandbox, compiler, timing cores and their machine-wide locks",
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="measure the between-sandbox timing spread again (A/A, a few seconds per core)",
    )
    p.set_defaults(func=cmd_doctor)
