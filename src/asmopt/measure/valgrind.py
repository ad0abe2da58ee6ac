"""Deterministic mode: count executed instructions under valgrind instead of timing.

The same binary on the same input executes the same number of instructions every time, so
the ratio baseline count / candidate count is exact and repeatable: useful for debugging,
for continuous integration on noisy shared machines, and as a reward that does not depend
on the machine.

Its bias, stated once: fewer instructions is not always faster. It ignores
* latency and throughput: a `div` counts as much as an `add`, one AVX2 instruction as
  much as a scalar one, so vectorisation is rewarded but instruction selection is not;
* memory: cache misses, prefetching and alignment are invisible, so a candidate that
  trades cache-friendly access for fewer instructions looks faster than it is;
* branches: a mispredicted branch costs ~15 cycles and counts 1;
* start-up: the dynamic loader and libc initialisation are counted (about 100k
  instructions), identical for both binaries, which pulls ratios of short tests to 1.0.
Timed mode is the honest one; this one is the reproducible one.

Valgrind cannot execute some instructions (AVX-512 in 3.19, some newer extensions). A
candidate that uses them gets the status "unmeasurable" with the bytes valgrind rejected,
never a wrong count. A program can detect that it runs under valgrind (client requests,
CPUID), so this mode is not a defence against a candidate that games its measurement.

Valgrind runs inside the same sandbox profile as every untrusted program (seccomp, rlimits,
no network), with its own files bound read-only and a private /proc (it reads
/proc/self/maps). Its report goes to a descriptor the launcher collects, placed at the top
of the descriptor limit, in the range valgrind reserves for itself and guards against the
program's own system calls, so the program cannot forge the count. Exactly one count line
must appear.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from asmopt.errors import EnvironmentProblem
from asmopt.measure.speedup import MeasureMode, MeasureStatus, TestSpeedup
from asmopt.programs.model import TestCase
from asmopt.sandbox.records import PROGRAM_ARGV0, Limits, RunResult, ToolRun
from asmopt.sandbox.runner import Sandbox

_LIB_DIRS = (
    "/usr/libexec/valgrind",
    "/usr/lib/x86_64-linux-gnu/valgrind",
    "/usr/lib/valgrind",
    "/usr/local/libexec/valgrind",
    "/usr/local/lib/valgrind",
)
_TOOL = "cachegrind-amd64-linux"
_IREFS = re.compile(r"^==\d+== I\s+refs:\s+([\d,]+)\s*$", re.MULTILINE)
_UNHANDLED = re.compile(r"unhandled instruction bytes: ([0-9A-Fa-fx ]+)")


class ValgrindUnavailable(EnvironmentProblem):
    """valgrind (with cachegrind) is not installed; the message says how to install it."""


@dataclass(frozen=True)
class Valgrind:
    lib_dir: Path
    tool: Path
    version: str

    @classmethod
    def locate(cls) -> Valgrind:
        env_dir = os.environ.get("VALGRIND_LIB")
        for d in ([env_dir] if env_dir else []) + list(_LIB_DIRS):
            tool = Path(d) / _TOOL
            if tool.is_file():
                break
        else:
            raise ValgrindUnavailable(
                "--measure instructions needs valgrind with cachegrind "
                "(apt-get install valgrind); or use --measure time"
            )
        version = "valgrind"
        if shutil.which("valgrind"):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                version = subprocess.run(
                    ["valgrind", "--version"], capture_output=True, text=True, timeout=30
                ).stdout.strip()
        return cls(lib_dir=Path(d), tool=tool, version=version)


@dataclass
class CountResult:
    """Instructions executed by one run, or why there is no count."""

    status: MeasureStatus
    count: int | None = None
    message: str = ""
    candidate_fault: bool = False
    run: RunResult | None = None


def _valgrind_limits(limits: Limits) -> Limits:
    # Valgrind reserves address space for itself and runs programs 20-50x slower.
    return Limits(
        cpu_seconds=limits.cpu_seconds * 60,
        wall_seconds=limits.wall_seconds * 60,
        address_space=max(limits.address_space, 16 << 30),
        file_size=limits.file_size,
        tmp_size=limits.tmp_size,
        max_processes=limits.max_processes,
        max_open_files=max(limits.max_open_files, 256),
        stdout_cap=limits.stdout_cap,
        stderr_cap=limits.stderr_cap,
    )


def count_instructions(
    sandbox: Sandbox,
    binary: str | os.PathLike[str],
    test: TestCase,
    limits: Limits | None = None,
    valgrind: Valgrind | None = None,
) -> CountResult:
    """Run `binary` on `test` under cachegrind and return its instruction count.

    The environment padding is fixed (0) here: the count depends on stack alignment through
    libc's string routines, and the point of this mode is that it does not vary."""
    vg = valgrind or Valgrind.locate()
    vg_limits = _valgrind_limits(limits or sandbox.limits)
    run = _run_under_cachegrind(sandbox, vg, binary, test, vg_limits)
    if run.infra_error:
        return CountResult(MeasureStatus.INFRA_ERROR, message=f"valgrind: {run.infra_error}")
    log = run.records[0].log.decode("utf-8", "replace") if run.records else ""
    refused = _unmeasurable(log, run)
    if refused is not None:
        return refused
    failed = _failed_run(test, run, vg_limits)
    if failed is not None:
        return failed
    return _count_from_log(log, run)


def _run_under_cachegrind(
    sandbox: Sandbox,
    vg: Valgrind,
    binary: str | os.PathLike[str],
    test: TestCase,
    vg_limits: Limits,
) -> RunResult:
    """One run of a copy of `binary` on `test`, executed by cachegrind in the sandbox.

    The report descriptor sits in the range valgrind keeps for itself (the top of the
    descriptor limit), where it refuses every system call of the program it runs: the
    program cannot write a forged count into it, nor close it."""
    log_fd = vg_limits.max_open_files - 1
    stage = Path(tempfile.mkdtemp(prefix="asmopt-vg-"))
    try:
        os.chmod(stage, 0o755)
        prog = stage / "prog"
        shutil.copyfile(binary, prog)
        os.chmod(prog, 0o755)
        return sandbox.run_binaries(
            [vg.tool],
            [0],
            argv=[
                "--tool=cachegrind",
                "--cache-sim=no",
                "--branch-sim=no",
                "--cachegrind-out-file=/dev/null",
                "--vgdb=no",
                f"--log-fd={log_fd}",
                PROGRAM_ARGV0,
                *test.argv,
            ],
            stdin=test.stdin,
            limits=vg_limits,
            env_pad=0,
            tool=ToolRun(
                argv0="valgrind",
                env=(("VALGRIND_LIB", str(vg.lib_dir)), ("VALGRIND_LAUNCHER", "valgrind")),
                ro_binds=((str(prog), PROGRAM_ARGV0), (str(vg.lib_dir), str(vg.lib_dir))),
                log_fd=log_fd,
                mount_proc=True,
            ),
        )
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _unmeasurable(log: str, run: RunResult) -> CountResult | None:
    """The result for a program with an instruction valgrind cannot execute, else None."""
    unhandled = _UNHANDLED.search(log)
    if not (unhandled or "Unrecognised instruction" in log):
        return None
    what = unhandled.group(1).strip() if unhandled else "an instruction"
    return CountResult(
        MeasureStatus.UNMEASURABLE,
        message=(
            f"valgrind cannot execute {what} (bytes it rejected); instruction counts are "
            "unavailable for this program; use --measure time"
        ),
        run=run,
    )


def _failed_run(test: TestCase, run: RunResult, vg_limits: Limits) -> CountResult | None:
    """The result for a run that failed its test under valgrind (the program's fault),
    else None."""
    from asmopt.judge import Verdict, classify_run

    verdict = classify_run(test, run, vg_limits)
    if verdict.verdict == Verdict.PASS:
        return None
    return CountResult(
        MeasureStatus.INFRA_ERROR,
        message=f"under valgrind: {verdict.verdict}: {verdict.message}",
        candidate_fault=True,
        run=run,
    )


def _count_from_log(log: str, run: RunResult) -> CountResult:
    """The one instruction count in valgrind's log (more than one: the program forged
    one; none: valgrind failed)."""
    counts = _IREFS.findall(log)
    if len(counts) > 1:
        return CountResult(
            MeasureStatus.INFRA_ERROR,
            message=f"valgrind's log holds {len(counts)} instruction counts, expected one: "
            "the program wrote into valgrind's report",
            candidate_fault=True,
            run=run,
        )
    if not counts:
        return CountResult(
            MeasureStatus.INFRA_ERROR,
            message="valgrind printed no instruction count; its log ended with: "
            + log.strip()[-300:],
            run=run,
        )
    return CountResult(MeasureStatus.MEASURED, count=int(counts[-1].replace(",", "")), run=run)


def instruction_speedup(test: str, base: CountResult, cand: CountResult) -> TestSpeedup:
    """Exact per-test ratio of instruction counts (baseline / candidate)."""
    for which, res in (("baseline", base), ("candidate", cand)):
        if res.status != MeasureStatus.MEASURED or not res.count:
            return TestSpeedup(
                test,
                MeasureMode.INSTRUCTIONS,
                res.status if res.status != MeasureStatus.MEASURED else MeasureStatus.INFRA_ERROR,
                reliable=False,
                message=f"{which}: {res.message}",
            )
    assert base.count and cand.count
    ratio = base.count / cand.count
    return TestSpeedup(
        test=test,
        mode=MeasureMode.INSTRUCTIONS,
        status=MeasureStatus.MEASURED,
        ratio=ratio,
        low=ratio,
        high=ratio,
        n=1,
        reliable=True,
        base_mean=float(base.count),
        cand_mean=float(cand.count),
        log_mean=math.log(ratio),
        log_se=0.0,
        df=math.inf,
        raw={"base_instructions": base.count, "cand_instructions": cand.count},
    )
