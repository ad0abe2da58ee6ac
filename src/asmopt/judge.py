"""The verdict taxonomy and the judgement of one run: what happened, and whose fault it is.

One enum for every verdict (docs/verdicts.md) and the groups rewards and rates use, so the
taxonomy is written down once. `classify_run` maps one sandboxed run of one test to a test
verdict, in a fixed order of precedence. `infra_error` is kept apart from every candidate
verdict: when our side fails the candidate is not blamed, and summaries count it separately.
Code carries a verdict as its member from here to where it is written (a StrEnum is
written as its value, "wrong_output", so stored and exported text is what it always was);
one read back from storage is parsed with `Verdict.parse`, which refuses a value that names
no verdict, naming it.

It sits below measure/ (timing judges every timed run with it) and above the sandbox.
"""

from __future__ import annotations

import hashlib
import signal as _signal
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from asmopt.compare import compare_output, difference_kind
from asmopt.errors import InputError, did_you_mean
from asmopt.programs.model import TestCase
from asmopt.sandbox.records import Limits, RunResult


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

    @classmethod
    def parse(cls, value: object, where: str) -> Verdict:
        """The verdict a value read back names (a results database's row, a stored JSON
        record): one that names none fails here, naming the value and `where` it was read,
        rather than going on as text that no comparison with a member matches."""
        try:
            return cls(value)
        except ValueError:
            names = [v.value for v in cls]
            hint = did_you_mean(str(value), names)
            raise InputError(
                f"{where}: unknown verdict {value!r}{hint} (known: {', '.join(names)})"
            ) from None

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
    # sha256 of what the run wrote to stdout: timed runs must agree with it (timing.py).
    stdout_sha256: str | None = None
    # For wrong_output: the kind of difference (compare.difference_kind), which names no
    # byte of either output: what a policy may be told (policies/feedback.py).
    difference: str = ""
    # The size class this test stands for (programs/generators.py), and for a drawn input
    # how to draw it again: {"class": ..., "seed": ...} (kept for a person, never shown to
    # a policy).
    size_class: str | None = None
    drawn: dict[str, Any] | None = None

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
        if self.difference:
            out["difference"] = self.difference
        if self.size_class is not None:
            out["size_class"] = self.size_class
        if self.drawn is not None:
            out["drawn"] = self.drawn
        return out


# A failure found in a run: its verdict and the message that explains it.
_Finding = tuple[Verdict, str]


def classify_run(test: TestCase, run: RunResult, limits: Limits) -> TestVerdict:
    """Map one sandboxed run to a test verdict, in a fixed order of precedence: our own
    failure, then the run's limits and the sandbox (_RUN_CHECKS), then its exit code and
    its output."""
    base = _run_facts(test, run)
    for check in _RUN_CHECKS:
        found = check(run, limits)
        if found is not None:
            verdict, message = found
            return TestVerdict(verdict=verdict, message=message, **base)
    if run.exit_code != test.expected_exit:
        return TestVerdict(
            verdict=Verdict.NONZERO_EXIT, message=_exit_code_message(test, run), **base
        )
    wrong = _output_difference(test, run)
    if wrong is not None:
        kind, message = wrong
        return TestVerdict(verdict=Verdict.WRONG_OUTPUT, message=message, difference=kind, **base)
    return TestVerdict(verdict=Verdict.PASS, **base)


def _run_facts(test: TestCase, run: RunResult) -> dict[str, Any]:
    """What every verdict of the run records, whatever it is."""
    return dict(
        test=test.name,
        exit_code=run.exit_code,
        signal=run.signal_name,
        user_time_s=run.user_time_s,
        sys_time_s=run.sys_time_s,
        wall_time_s=run.wall_time_s,
        peak_rss_kb=run.peak_rss_kb,
        stdout_sha256=hashlib.sha256(run.stdout).hexdigest(),
    )


def _infra_failure(run: RunResult, limits: Limits) -> _Finding | None:
    """Our side failed: nothing can be said of the program."""
    if run.infra_error:
        return Verdict.INFRA_ERROR, run.infra_error
    return None


def _exec_failure(run: RunResult, limits: Limits) -> _Finding | None:
    """The binary could not be started at all.

    The same launcher executed the baseline the same way: a binary that cannot even be
    started (a bogus interpreter path, a broken ELF header) is the binary's fault."""
    if run.exec_error:
        return Verdict.CRASH, f"the binary could not be executed: {run.exec_error}"
    return None


def _output_cap_failure(run: RunResult, limits: Limits) -> _Finding | None:
    """The run wrote more than its stdout or stderr cap."""
    if run.stdout_truncated or run.stderr_truncated:
        which = "stdout" if run.stdout_truncated else "stderr"
        cap = limits.stdout_cap if run.stdout_truncated else limits.stderr_cap
        return Verdict.OUTPUT_LIMIT, f"{which} exceeded {cap} bytes; the program was stopped"
    return None


def _time_limit_failure(run: RunResult, limits: Limits) -> _Finding | None:
    """The run went past its wall-clock or CPU time limit.

    The CPU rlimit sends SIGXCPU at the soft limit and SIGKILL one second later; the
    kernel checks it at timer-tick granularity, so the CPU time reported can fall short
    of the limit by a tick or two. Either signal far below the limit was sent some other
    way (by the program itself)."""
    cpu_limit_hit = run.signal in (_signal.SIGXCPU, _signal.SIGKILL) and (
        run.cpu_time_s >= limits.cpu_seconds * 0.75
    )
    if not (run.timed_out or cpu_limit_hit):
        return None
    why = (
        f"CPU time limit of {limits.cpu_seconds}s"
        if cpu_limit_hit
        else f"wall-clock limit of {limits.wall_seconds:g}s"
    )
    return Verdict.TIMEOUT, f"exceeded the {why}"


def _sandbox_failure(run: RunResult, limits: Limits) -> _Finding | None:
    """The program went at the sandbox: its launcher, or a forbidden system call."""
    if run.launcher_lost:
        return Verdict.SANDBOX_VIOLATION, "the program interfered with the sandbox's launcher"
    if run.signal == _signal.SIGSYS:
        return Verdict.SANDBOX_VIOLATION, (
            "forbidden system call (new process, exec, network, tracing or signalling "
            "another process); killed by the sandbox's seccomp filter"
        )
    return None


def _signal_failure(run: RunResult, limits: Limits) -> _Finding | None:
    """Any other signal that ended the run: its file size limit, or a crash."""
    if run.signal == _signal.SIGXFSZ:
        return Verdict.OUTPUT_LIMIT, f"wrote a file larger than {limits.file_size} bytes"
    if run.signal == _signal.SIGXCPU:
        return Verdict.CRASH, (
            f"killed by SIGXCPU after {run.cpu_time_s:.3g}s of CPU, far below the "
            f"{limits.cpu_seconds}s limit: the signal did not come from the limit"
        )
    if run.signal is not None:
        note = ""
        if run.peak_rss_kb * 1024 >= 0.9 * limits.address_space:
            note = " (near the memory limit: likely out of memory)"
        return Verdict.CRASH, f"killed by {run.signal_name}{note}"
    return None


# The checks on how a run ended, in their order of precedence.
_RUN_CHECKS = (
    _infra_failure,
    _exec_failure,
    _output_cap_failure,
    _time_limit_failure,
    _sandbox_failure,
    _signal_failure,
)


def _exit_code_message(test: TestCase, run: RunResult) -> str:
    """Why an exit code other than the expected one fails, with stderr's first line."""
    stderr = run.stderr.decode("utf-8", "replace").strip().splitlines()
    tail = f"; stderr: {stderr[0][:200]!r}" if stderr else ""
    return f"exit code {run.exit_code}, expected {test.expected_exit}{tail}"


def _output_difference(test: TestCase, run: RunResult) -> tuple[str, str] | None:
    """(kind of difference, message) where the output is not the expected one, else None.

    The message quotes both outputs (for a person); the kind names no byte of either (for
    a policy). The message starts with the kind, so text that carries only the message (a
    reward service's result) still yields it (policies/feedback.py)."""
    diff = compare_output(test.expected_stdout, run.stdout, test.compare, run.exit_code or 0)
    if diff is None:
        return None
    kind = (
        difference_kind(test.expected_stdout, run.stdout, test.compare, run.exit_code or 0)
        or "output differs"
    )
    return kind, f"{kind}; {diff}"


# Verdict groups, as rewards and rates use them.
BUILD_FAILURES = frozenset({Verdict.EXTRACTION_ERROR, Verdict.ASSEMBLE_ERROR, Verdict.LINK_ERROR})
RUNTIME_FAILURES = frozenset(
    {
        Verdict.CRASH,
        Verdict.NONZERO_EXIT,
        Verdict.TIMEOUT,
        Verdict.SANDBOX_VIOLATION,
        Verdict.OUTPUT_LIMIT,
    }
)
ALL_VERDICTS = frozenset(Verdict)
