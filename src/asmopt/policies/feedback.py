"""Compact feedback on an attempt, for refinement rounds and multi-turn environments, and
the rule of what a policy may be told.

A model revising its answer needs the few facts that explain the verdict: the first
assembler errors, the failing test and the kind of difference, or the measured speedup and
whether it is significant. Long text is cut so feedback never dominates the prompt.

What a policy is told (refinement prompts, the Gymnasium environment's observations and
info, the verl/TRL adapters' diagnostics) names the verdict, the failing test's name and
size class, the kind of difference (`compare.difference_kind`), the exit code or signal,
the limit that was hit, the assembler's or linker's diagnostics and the speedup numbers.
It never holds a byte of a test's input, of its expected output, or of what the candidate
printed (stdout or stderr, in a correctness run or a timed run): feedback that quotes them
lets a policy rebuild hidden tests round by round (print a hash of stdin, read back which
expected line it is) and earn a reward with a lookup table. A person's message
(`CheckResult.message`, `TestVerdict.message`) quotes all of that; it reaches a policy
verbatim only for tests the program marks as examples (`Program.examples`), whose data the
prompt shows anyway.

The failure text is therefore rebuilt from fixed phrases: a person's message is matched
against the phrases the judge, the evaluator and the timing engine write, and only what
matches (our own words and numbers) is kept; anything else becomes the verdict's generic
phrase. Build diagnostics are shown as they are: they quote the candidate's own assembly,
and the toolchain sandbox holds no test file that a `.include` or `.incbin` could read
(docs/sandbox.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from asmopt.compare import DIFFERENCE_KIND
from asmopt.measure.speedup import INTERVAL_NAME

if TYPE_CHECKING:
    from asmopt.evaluate import CheckResult
    from asmopt.judge import TestVerdict
    from asmopt.programs.model import Program

MAX_FEEDBACK_CHARS = 1200

# Verdicts whose message is the candidate's own text or diagnostics, never test data.
_BUILD_VERDICTS = frozenset({"extraction_error", "assemble_error", "link_error"})

_GENERIC = {
    "timeout": "a time limit was exceeded",
    "crash": "the program was killed by a signal",
    "nonzero_exit": "the program exited with an unexpected exit code",
    "wrong_output": "the output differs from the expected output",
    "output_limit": "the program wrote more output than allowed",
    "sandbox_violation": "the program was stopped by the sandbox",
}
_NUM = r"[0-9][0-9.e+]*"
# (pattern, fixed text or None): a match at the start of a message is kept as matched (our
# words and numbers only), or replaced by the fixed text where the matched part holds a
# number the candidate controls (a CPU time it chose) or our own inner detail.
_SAFE: dict[str, tuple[tuple[re.Pattern[str], str | None], ...]] = {
    "timeout": (
        (re.compile(rf"exceeded the CPU time limit of {_NUM}s"), None),
        (re.compile(rf"exceeded the wall-clock limit of {_NUM}s"), None),
        (re.compile(r"exceeded the whole batch's wall-clock limit"), None),
        (re.compile(r"exceeded the drawn inputs' overall wall-clock limit"), None),
    ),
    "crash": (
        (
            re.compile(r"killed by SIGXCPU after "),
            "killed by SIGXCPU far below the CPU time limit: the signal did not come from "
            "the limit",
        ),
        (
            re.compile(
                r"killed by (?:SIG[A-Z0-9]+|signal \d+)"
                r"(?: \(near the memory limit: likely out of memory\))?"
            ),
            None,
        ),
        (re.compile(r"the binary could not be executed(?:: [A-Z0-9]+ \([A-Za-z ,'-]+\))?"), None),
    ),
    "nonzero_exit": ((re.compile(r"exit code -?\d+, expected \d+"), None),),
    "output_limit": (
        (re.compile(r"(?:stdout|stderr) exceeded \d+ bytes; the program was stopped"), None),
        (re.compile(r"wrote a file larger than \d+ bytes"), None),
        (re.compile(r"it wrote more than its share of the batch's output cap"), None),
    ),
    "sandbox_violation": (
        (re.compile(r"the program interfered with the sandbox's launcher"), None),
        (
            re.compile(r"forbidden system call \(new process, exec, network, tracing or "),
            "forbidden system call (new process, exec, network, tracing or signalling another "
            "process); killed by the sandbox's seccomp filter",
        ),
        (
            re.compile(r"the sandbox failed during this program's run \("),
            "the sandbox failed during this program's run, and a known-good program ran fine "
            "in a fresh sandbox right after, so the failure is the program's",
        ),
        (re.compile(r"the program interfered with the launcher"), None),
    ),
}
# Timing-engine phrases that may follow a test name (searched anywhere: the text kept is
# fixed, so a candidate that prints the phrase gains nothing).
_TIMED_CONSISTENCY = (
    (
        re.compile(r"its timed runs wrote \d+ output\(s\) different from its own correctness run"),
        "its timed runs wrote output different from its own correctness run: a program must "
        "not behave differently when timed",
    ),
    (
        re.compile(r"its timed runs used .{1,40} of CPU \(median\) against "),
        "its timed runs used far less CPU than its own correctness run on the same input: "
        "it skipped work when it could have been timed",
    ),
)
_TIMED = re.compile(r"(candidate|baseline) failed in timing run (\d+) of (\d+): (\w+): ")
_CHARGED = "; the baseline alone passes this test in a fresh sandbox"
_KIND_PREFIX = re.compile(rf"(?:{DIFFERENCE_KIND.pattern})(?=; |$)")


def _cut(text: str, limit: int = MAX_FEEDBACK_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 15] + "\n[... cut ...]"


def format_feedback(
    verdict: str,
    detail: str = "",
    speedup: float | None = None,
    low: float | None = None,
    high: float | None = None,
    is_copy: bool = False,
) -> str:
    """The feedback text around `detail`, which must already be fit for a policy: build it
    with `check_feedback` or `message_feedback`, which keep test data out of it."""
    lines = [f"Verdict: {verdict}."]
    if verdict == "pass":
        if is_copy:
            lines.append(
                "Your answer is the baseline itself (after removing comments, "
                "whitespace and label names); it earns nothing. Change the code."
            )
        elif speedup is not None and low is not None and high is not None:
            if low > 1.0:
                note = "significantly faster than the baseline"
            elif high < 1.0:
                note = "significantly SLOWER than the baseline"
            else:
                note = "not distinguishable from the baseline"
            lines.append(
                f"All tests passed. Measured speedup {speedup:.3f}x "
                f"({INTERVAL_NAME} {low:.3f}-{high:.3f}): {note}."
            )
        else:
            lines.append("All tests passed.")
    elif detail:
        lines.append(detail.strip())
    return _cut("\n".join(lines))


def safe_failure(verdict: str, message: str, difference: str = "") -> str:
    """What a policy may be told about one failing test run: `message` (a person's, quoting
    anything) reduced to the fixed phrases it starts with, `difference` (the kind of a
    wrong output) when it is one, else the verdict's generic phrase."""
    timed = _TIMED.match(message)
    if timed is not None:
        who, run, runs, inner = timed.groups()
        rest = message[timed.end() :]
        where = f"in timed run {run} of {runs}"
        if who == "baseline":
            if _CHARGED in rest:
                return (
                    f"the baseline, run beside this answer, failed {where} ({inner}) and "
                    "passes alone in a fresh sandbox, so the failure is charged to this answer"
                )
            return f"the baseline failed {where} ({inner})"
        return f"{where}: {safe_failure(inner, rest)}"
    if verdict == "wrong_output":
        if DIFFERENCE_KIND.fullmatch(difference):
            return difference
        kind = _KIND_PREFIX.match(message)
        return kind.group(0) if kind is not None else _GENERIC[verdict]
    for pattern, fixed in _TIMED_CONSISTENCY:
        if pattern.search(message):
            return fixed
    for pattern, fixed in _SAFE.get(verdict, ()):
        found = pattern.match(message)
        if found is not None:
            return fixed or found.group(0)
    return _GENERIC.get(verdict, "the attempt failed")


def _quotable(name: str, message: str, program: Program | None) -> bool:
    """Whether a person's message on test `name` may reach a policy whole: only for a test
    the program shows the model as an example, and not for a timed run's failure (timed
    runs may be fed freshly drawn inputs in that test's place)."""
    examples = getattr(program, "examples", ()) or ()
    return name in examples and _TIMED.match(message) is None


def _test_line(name: str, size_class: str | None, detail: str) -> str:
    where = f"test {name}" + (f" (size class {size_class})" if size_class else "")
    return f"{where}: {detail}"


def _not_ours(verdict: str) -> str:
    return (
        "the grader failed on our side (not your answer's fault); this attempt is not counted"
        if verdict == "infra_error"
        else "the attempt failed"
    )


def failure_feedback(test: TestVerdict, program: Program | None = None) -> str:
    """One failing test as a policy may see it: name, size class, and the safe description
    of what went wrong (the full message only for a test the program marks as an example)."""
    verdict = str(test.verdict)
    generic = _GENERIC.get(verdict, "the attempt failed")
    if _quotable(test.test, test.message, program):
        return _test_line(test.test, test.size_class, test.message or generic)
    detail = safe_failure(verdict, test.message, test.difference)
    # A record whose message is not one of ours still has the numbers a policy may see.
    if detail == generic and verdict == "nonzero_exit" and test.exit_code is not None:
        detail = f"exit code {test.exit_code}"
    elif detail == generic and verdict == "crash" and test.signal:
        detail = f"killed by {test.signal}"
    return _test_line(test.test, test.size_class, detail)


def check_feedback(
    check: CheckResult,
    program: Program | None = None,
    *,
    speedup: float | None = None,
    low: float | None = None,
    high: float | None = None,
    is_copy: bool = False,
) -> str:
    """Feedback on a judged candidate (`evaluate.CheckResult`), fit for a policy."""
    verdict = str(check.verdict)
    if verdict == "pass":
        return format_feedback(verdict, "", speedup, low, high, is_copy)
    if verdict in _BUILD_VERDICTS:
        return format_feedback(verdict, check.message)
    if verdict == "infra_error":
        return format_feedback(verdict, _not_ours(verdict))
    failing = next((t for t in check.tests if str(t.verdict) == verdict), None)
    if failing is None:
        failing = next((t for t in check.tests if t.verdict.is_candidate_failure), None)
    if failing is None:  # no test to name: the message is a person's, so say only the verdict
        return format_feedback(verdict, _GENERIC.get(verdict, "the attempt failed"))
    return format_feedback(verdict, failure_feedback(failing, program))


def _size_class(program: Program | None, name: str) -> str | None:
    """The size class a fixed test stands for (None where the program draws no inputs)."""
    of = getattr(program, "size_class", None)
    return of(name) if callable(of) else None


def _named_test(message: str, program: Program | None) -> tuple[str, str | None] | None:
    """(test, size class) of a `test NAME: ...` message: NAME one of the program's tests
    (the longest that fits), or a drawn input `CLASS~N` of one of its size classes (the
    name fresh.drawn_name gives it). None when the message names neither."""
    names: Sequence[str] = [t.name for t in program.tests] if program is not None else ()
    fits = [n for n in names if message.startswith(f"test {n}: ")]
    if fits:
        name = max(fits, key=len)
        return name, _size_class(program, name)
    classes = getattr(getattr(program, "inputs", None), "class_names", ()) or ()
    for size_class in sorted(classes, key=len, reverse=True):
        drawn = re.match(rf"test ({re.escape(size_class)}~\d+): ", message)
        if drawn is not None:
            return drawn.group(1), size_class
    return None


def message_feedback(
    verdict: str,
    message: str,
    program: Program | None,
    *,
    speedup: float | None = None,
    low: float | None = None,
    high: float | None = None,
    is_copy: bool = False,
) -> str:
    """Feedback from a verdict and a person's message alone (a reward service's result,
    which keeps no per-test record), fit for a policy.

    The message of a failing test reads `test NAME: ...` (evaluate.py); NAME is taken only
    when it is one of `program`'s tests or drawn inputs, and what follows is reduced by
    `safe_failure`."""
    if verdict == "pass":
        return format_feedback(verdict, "", speedup, low, high, is_copy)
    if verdict in _BUILD_VERDICTS:
        return format_feedback(verdict, message)
    if verdict == "infra_error" or verdict not in _GENERIC:
        return format_feedback(verdict, _not_ours(verdict))
    named = _named_test(message, program)
    if named is None:
        return format_feedback(verdict, _GENERIC[verdict])
    name, size_class = named
    rest = message[len(f"test {name}: ") :]
    if _quotable(name, rest, program):
        return format_feedback(verdict, _test_line(name, size_class, rest))
    return format_feedback(verdict, _test_line(name, size_class, safe_failure(verdict, rest)))
