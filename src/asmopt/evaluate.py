"""(program, candidate assembly) -> verdict, per test and overall.

The failure taxonomy is fixed and documented (docs/verdicts.md). `infra_error` is kept
apart from every candidate verdict: when our side fails (no sandbox, compiler missing, the
grader raised) the candidate is not blamed, and summaries count it separately.
"""

from __future__ import annotations

import hashlib
import logging
import signal as _signal
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from asmopt.compare import compare_output
from asmopt.measure.speedup import ProgramSpeedup, TestSpeedup
from asmopt.programs.model import Program, TestCase
from asmopt.sandbox.runner import Limits, RunResult, Sandbox, SandboxUnavailable
from asmopt.toolchain import BuildResult, Toolchain

log = logging.getLogger(__name__)


class Verdict(StrEnum):
    PASS = "pass"
    ASSEMBLE_ERROR = "assemble_error"
    LINK_ERROR = "link_error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    NONZERO_EXIT = "nonzero_exit"
    WRONG_OUTPUT = "wrong_output"
    OUTPUT_LIMIT = "output_limit"
    SANDBOX_VIOLATION = "sandbox_violation"
    INFRA_ERROR = "infra_error"
    EXTRACTION_ERROR = "extraction_error"

    @property
    def is_candidate_failure(self) -> bool:
        return self not in (Verdict.PASS, Verdict.INFRA_ERROR)

    @property
    def built(self) -> bool:
        return self not in (
            Verdict.ASSEMBLE_ERROR,
            Verdict.LINK_ERROR,
            Verdict.EXTRACTION_ERROR,
            Verdict.INFRA_ERROR,
        )


@dataclass
class TestVerdict:
    __test__ = False

    test: str
    verdict: Verdict
    message: str = ""
    exit_code: int | None = None
    signal: str | None = None
    user_time_s: float = 0.0
    sys_time_s: float = 0.0
    wall_time_s: float = 0.0
    peak_rss_kb: int = 0
    # Filled in by the measurement step (eval_suite) for answers that pass every test.
    speedup: TestSpeedup | None = None
    # sha256 of what the run wrote to stdout: timed runs must agree with it (timing.py).
    stdout_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "test": self.test,
            "verdict": str(self.verdict),
            "message": self.message,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "user_time_s": self.user_time_s,
            "sys_time_s": self.sys_time_s,
            "wall_time_s": self.wall_time_s,
            "peak_rss_kb": self.peak_rss_kb,
        }
        if self.speedup is not None:
            out["speedup"] = self.speedup.to_dict()
        return out


@dataclass
class CheckResult:
    """Overall correctness of one candidate on one program."""

    program_id: str
    verdict: Verdict
    message: str = ""
    tests: list[TestVerdict] = field(default_factory=list)
    build_seconds: float = 0.0
    binary: Path | None = None
    # The answer's speedup over the baseline (measure/speedup.py), or None when not judged.
    speedup: ProgramSpeedup | None = None

    @property
    def correct(self) -> bool:
        return self.verdict == Verdict.PASS

    @property
    def built(self) -> bool:
        return self.verdict.built or (self.verdict == Verdict.INFRA_ERROR and bool(self.tests))

    @property
    def passed(self) -> int:
        return sum(t.verdict == Verdict.PASS for t in self.tests)

    @property
    def total(self) -> int:
        return len(self.tests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program_id,
            "verdict": str(self.verdict),
            "message": self.message,
            "passed": self.passed,
            "total": self.total,
            "build_seconds": self.build_seconds,
            "speedup": self.speedup.to_dict() if self.speedup is not None else None,
            "tests": [t.to_dict() for t in self.tests],
        }


def classify_run(test: TestCase, run: RunResult, limits: Limits) -> TestVerdict:
    """Map one sandboxed run to a test verdict, in a fixed order of precedence."""
    base = dict(
        test=test.name,
        exit_code=run.exit_code,
        signal=run.signal_name,
        user_time_s=run.user_time_s,
        sys_time_s=run.sys_time_s,
        wall_time_s=run.wall_time_s,
        peak_rss_kb=run.peak_rss_kb,
        stdout_sha256=hashlib.sha256(run.stdout).hexdigest(),
    )
    if run.infra_error:
        return TestVerdict(verdict=Verdict.INFRA_ERROR, message=run.infra_error, **base)
    if run.exec_error:
        # The same launcher executed the baseline the same way: a binary that cannot even be
        # started (a bogus interpreter path, a broken ELF header) is the binary's fault.
        return TestVerdict(
            verdict=Verdict.CRASH,
            message=f"the binary could not be executed: {run.exec_error}",
            **base,
        )
    if run.stdout_truncated or run.stderr_truncated:
        which = "stdout" if run.stdout_truncated else "stderr"
        cap = limits.stdout_cap if run.stdout_truncated else limits.stderr_cap
        return TestVerdict(
            verdict=Verdict.OUTPUT_LIMIT,
            message=f"{which} exceeded {cap} bytes; the program was stopped",
            **base,
        )
    # The CPU rlimit sends SIGXCPU at the soft limit and SIGKILL one second later; the
    # kernel checks it at timer-tick granularity, so the CPU time reported can fall short
    # of the limit by a tick or two. Either signal far below the limit was sent some other
    # way (by the program itself).
    cpu_limit_hit = run.signal in (_signal.SIGXCPU, _signal.SIGKILL) and (
        run.cpu_time_s >= limits.cpu_seconds * 0.75
    )
    if run.timed_out or cpu_limit_hit:
        why = (
            f"CPU time limit of {limits.cpu_seconds}s"
            if cpu_limit_hit
            else f"wall-clock limit of {limits.wall_seconds:g}s"
        )
        return TestVerdict(verdict=Verdict.TIMEOUT, message=f"exceeded the {why}", **base)
    if run.launcher_lost:
        return TestVerdict(
            verdict=Verdict.SANDBOX_VIOLATION,
            message="the program interfered with the sandbox's launcher",
            **base,
        )
    if run.signal == _signal.SIGSYS:
        return TestVerdict(
            verdict=Verdict.SANDBOX_VIOLATION,
            message=(
                "forbidden system call (new process, exec, network, tracing or signalling "
                "another process); killed by the sandbox's seccomp filter"
            ),
            **base,
        )
    if run.signal == _signal.SIGXFSZ:
        return TestVerdict(
            verdict=Verdict.OUTPUT_LIMIT,
            message=f"wrote a file larger than {limits.file_size} bytes",
            **base,
        )
    if run.signal == _signal.SIGXCPU:
        return TestVerdict(
            verdict=Verdict.CRASH,
            message=(
                f"killed by SIGXCPU after {run.cpu_time_s:.3g}s of CPU, far below the "
                f"{limits.cpu_seconds}s limit: the signal did not come from the limit"
            ),
            **base,
        )
    if run.signal is not None:
        note = ""
        if run.peak_rss_kb * 1024 >= 0.9 * limits.address_space:
            note = " (near the memory limit: likely out of memory)"
        return TestVerdict(
            verdict=Verdict.CRASH, message=f"killed by {run.signal_name}{note}", **base
        )
    if run.exit_code != test.expected_exit:
        stderr = run.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = f"; stderr: {stderr[0][:200]!r}" if stderr else ""
        return TestVerdict(
            verdict=Verdict.NONZERO_EXIT,
            message=(f"exit code {run.exit_code}, expected {test.expected_exit}{tail}"),
            **base,
        )
    diff = compare_output(test.expected_stdout, run.stdout, test.compare)
    if diff is not None:
        return TestVerdict(verdict=Verdict.WRONG_OUTPUT, message=diff, **base)
    return TestVerdict(verdict=Verdict.PASS, **base)


def _overall(program_id: str, tests: list[TestVerdict]) -> CheckResult:
    failures = [t for t in tests if t.verdict.is_candidate_failure]
    if failures:
        first = failures[0]
        msg = f"test {first.test}: {first.message}"
        return CheckResult(program_id, first.verdict, msg, tests)
    infra = [t for t in tests if t.verdict == Verdict.INFRA_ERROR]
    if infra:
        return CheckResult(
            program_id, Verdict.INFRA_ERROR, f"test {infra[0].test}: {infra[0].message}", tests
        )
    return CheckResult(program_id, Verdict.PASS, f"all {len(tests)} tests passed", tests)


def check_binary(
    program: Program,
    binary: str | Path,
    sandbox: Sandbox,
    limits: Limits | None = None,
    tests: Sequence[TestCase] | None = None,
    stop_on_failure: bool = False,
) -> CheckResult:
    """Run every test of `program` against an already built binary."""
    limits = limits or sandbox.limits
    results: list[TestVerdict] = []
    for test in tests if tests is not None else program.tests:
        try:
            run = sandbox.run_program(binary, argv=test.argv, stdin=test.stdin, limits=limits)
            verdict = classify_run(test, run, limits)
        except SandboxUnavailable as exc:
            verdict = TestVerdict(test=test.name, verdict=Verdict.INFRA_ERROR, message=str(exc))
        except Exception as exc:  # the grader itself failed: ours, not the candidate's
            log.error("grader error on %s/%s: %s", program.id, test.name, traceback.format_exc())
            verdict = TestVerdict(
                test=test.name,
                verdict=Verdict.INFRA_ERROR,
                message=f"grader error: {type(exc).__name__}: {exc}",
            )
        if verdict.verdict == Verdict.INFRA_ERROR and not sandbox.unsafe:
            verdict = _blame(verdict, sandbox, limits)
        results.append(verdict)
        if stop_on_failure and verdict.verdict.is_candidate_failure:
            break
    result = _overall(program.id, results)
    result.binary = Path(binary)
    return result


def _blame(verdict: TestVerdict, sandbox: Sandbox, limits: Limits) -> TestVerdict:
    """An infra error during a candidate's run is the candidate's unless the sandbox also
    fails a known-good program right after: `infra_error` pays nothing and is retried, so a
    candidate that could cause one would gain by it."""
    try:
        probe = sandbox.self_test(limits)
    except Exception as exc:  # the probe itself could not run: ours
        probe = f"{type(exc).__name__}: {exc}"
    if probe is not None:
        verdict.message = f"{verdict.message} (a known-good program fails too: {probe})"
        return verdict
    verdict.verdict = Verdict.SANDBOX_VIOLATION
    verdict.message = (
        f"the sandbox failed during this program's run ({verdict.message}); a known-good "
        "program ran fine in a fresh sandbox right after, so the failure is the program's"
    )
    return verdict


def build_verdict(program_id: str, build: BuildResult) -> CheckResult:
    stage_verdict = {
        "assemble": Verdict.ASSEMBLE_ERROR,
        "link": Verdict.LINK_ERROR,
        "compile": Verdict.ASSEMBLE_ERROR,
        "infra": Verdict.INFRA_ERROR,
    }
    return CheckResult(
        program_id, stage_verdict[build.stage], build.message, build_seconds=build.seconds
    )


def check_candidate(
    program: Program,
    assembly: str | bytes,
    toolchain: Toolchain,
    sandbox: Sandbox | None = None,
    limits: Limits | None = None,
    stop_on_failure: bool = False,
) -> CheckResult:
    """Assemble, link and run a candidate against all of a program's tests."""
    sandbox = sandbox or toolchain.sandbox
    try:
        build = toolchain.assemble_and_link(assembly, program.ldflags)
    except Exception as exc:
        log.error("toolchain error on %s: %s", program.id, traceback.format_exc())
        return CheckResult(
            program.id, Verdict.INFRA_ERROR, f"toolchain error: {type(exc).__name__}: {exc}"
        )
    if not build.ok or build.output is None:
        return build_verdict(program.id, build)
    result = check_binary(program, build.output, sandbox, limits, stop_on_failure=stop_on_failure)
    result.build_seconds = build.seconds
    return result
