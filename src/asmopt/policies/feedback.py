"""Compact feedback on an attempt, for refinement rounds and multi-turn environments, and
the rule of what a policy may be told.

A model revising its answer needs the few facts that explain the verdict: the first
assembler errors, the failing test and the kind of difference, or the measured speedup and
whether it is significant. Long text is cut so feedback never dominates the prompt.

What a policy is told (refinement prompts, the Gymnasium environment's observations and
info, the verl/TRL adapters' diagnostics) names the verdict, the failing test's name and
size class, the kind of difference (`compare.difference_kind`, without its line number),
the kind of limit that was hit, whether the failure came in a timed run, the assembler's or
linker's diagnostics and the speedup numbers at two significant digits. It never holds a
byte of a test's input, of its expected output, or of what the candidate printed (stdout or
stderr, in a correctness run or a timed run): feedback that quotes them lets a policy
rebuild hidden tests round by round (print a hash of stdin, read back which expected line
it is) and earn a reward with a lookup table. A person's message (`CheckResult.message`,
`TestVerdict.message`) quotes all of that; it reaches a policy verbatim only for tests the
program marks as examples (`Program.examples`), whose data the prompt shows anyway.

Nor does it hold a value the candidate chose or computed, since every such value is a
channel out of the sandbox a candidate can fill with bits of its input: an exit code is 8
bits a round ("exit code 122, expected 0" carries a byte of stdin), and with the signal,
the line where the output first differs, which timed run failed (and of how many), a
wall-clock deadline derived from its own correctness run, or which stream overflowed, a
fixed heavy input was learnt in 3 rounds and a drawn class's range in 6. So a failure is
told as its verdict kind only: `nonzero_exit` says that the exit code was not the expected
one, not the code (nor the expected one, which is test data); `crash` that a signal ended
the run, not which; `timeout` and `output_limit` which limit (CPU time, wall clock, the
batch's, the drawn inputs'; the output cap, the file size limit, the batch's share), not
its number; `wrong_output` the kind of difference, not its line; a timed run's failure
that it was a timed run (and on a fresh input), not which. A drawn input is named by its
size class, not its number (`CLASS~N`: the candidate chose which of them to fail). What
remains is a handful of bits a round, all of them our own labels: the verdict and its
kind, the failing fixed test's name and size class (which of the program's tests it chose
to fail first), timed or not, and the count of tests passed (`info`, verl's diagnostics:
what `supercoder-design1` pays as the reward itself).

Speedups are measured by us, but a correct candidate can still modulate its own run time
to write bits into them. The reward pays the speedup itself at full precision (`robust`:
log s when the interval excludes 1; the reference designs: s above 1), so feedback cannot
narrow that channel, only stop widening it: it gives the speedup and its interval at two
significant digits (`coarse_speedup`: 1.0, 1.1, 0.95), enough to tell faster from slower
(the significance note is computed from the unrounded interval, as the reward is), and the
environment's `info` and verl's diagnostics round them alike. Nothing policy-facing holds
run times (verl's `seconds` is left out for that reason).

The failure text is therefore rebuilt from fixed phrases: a person's message is matched
against the phrases the judge, the evaluator and the timing engine write, and each match is
replaced by our own fixed text (no number of the message is kept); anything else becomes
the verdict's generic phrase. Build diagnostics are shown as they are: they quote the
candidate's own assembly, fixed before any input is read, and the toolchain sandbox holds
no test file that a `.include` or `.incbin` could read (docs/sandbox.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from asmopt.compare import DIFFERENCE_KIND
from asmopt.judge import ALL_VERDICTS, Verdict
from asmopt.measure.speedup import INTERVAL_NAME

if TYPE_CHECKING:
    from asmopt.evaluate import CheckResult
    from asmopt.judge import TestVerdict
    from asmopt.programs.model import Program

MAX_FEEDBACK_CHARS = 1200
# Significant digits of every speedup a policy is told (coarse_speedup).
SPEEDUP_DIGITS = 2

# Verdicts whose message is the candidate's own text or diagnostics, never test data.
_BUILD_VERDICTS = frozenset({Verdict.EXTRACTION_ERROR, Verdict.ASSEMBLE_ERROR, Verdict.LINK_ERROR})

_GENERIC: dict[Verdict | None, str] = {
    Verdict.TIMEOUT: "a time limit was exceeded",
    Verdict.CRASH: "the program was killed by a signal",
    Verdict.NONZERO_EXIT: "the program exited with an unexpected exit code",
    Verdict.WRONG_OUTPUT: "the output differs from the expected output",
    Verdict.OUTPUT_LIMIT: "the program wrote more output than allowed",
    Verdict.SANDBOX_VIOLATION: "the program was stopped by the sandbox",
}
# (pattern, fixed text): a message starting with one of our phrases is told as the fixed
# text beside it, which keeps the kind of what happened and drops every number and name in
# the phrase (an exit code, a signal, a deadline derived from the candidate's own run, the
# stream that overflowed: values the candidate chose, see the module docstring).
_SAFE: dict[Verdict | None, tuple[tuple[re.Pattern[str], str], ...]] = {
    Verdict.TIMEOUT: (
        (re.compile(r"exceeded the CPU time limit"), "exceeded the CPU time limit"),
        (re.compile(r"exceeded the wall-clock limit"), "exceeded the wall-clock limit"),
        (
            re.compile(r"exceeded the whole batch's wall-clock limit"),
            "exceeded the whole batch's wall-clock limit",
        ),
        (
            re.compile(r"exceeded the drawn inputs' overall wall-clock limit"),
            "exceeded the drawn inputs' overall wall-clock limit",
        ),
    ),
    # Decided by the binary before it reads any input, so it says nothing of a test; the
    # errno after it is left out all the same.
    Verdict.CRASH: (
        (re.compile(r"the binary could not be executed"), "the binary could not be executed"),
    ),
    Verdict.OUTPUT_LIMIT: (
        (
            re.compile(r"(?:stdout|stderr) exceeded \d+ bytes; the program was stopped"),
            "its output exceeded the output cap; the program was stopped",
        ),
        (
            re.compile(r"wrote a file larger than \d+ bytes"),
            "it wrote a file larger than the file size limit",
        ),
        (
            re.compile(r"it wrote more than its share of the batch's output cap"),
            "it wrote more than its share of the batch's output cap",
        ),
    ),
    Verdict.SANDBOX_VIOLATION: (
        (
            re.compile(r"the program interfered with the sandbox's launcher"),
            "the program interfered with the sandbox's launcher",
        ),
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
        (
            re.compile(r"the program interfered with the launcher"),
            "the program interfered with the launcher",
        ),
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
        re.compile(r"a timed run used .{1,40} of CPU against .{1,40} in its own correctness run"),
        "a timed run used far less CPU than its own correctness run on the same input: it "
        "skipped work when it could have been timed",
    ),
)
# The timing engine's "X failed in timing run N of M[ on a fresh input]: VERDICT: ...". N
# and M are not kept: the candidate chose when to fail, and M grows with how its timings
# vary.
_TIMED = re.compile(
    r"(candidate|baseline) failed in timing run \d+ of \d+( on a fresh input)?: (\w+): "
)
# A difference kind's line number: the candidate chose where its output first differs (and
# past the expected end, it is the expected output's length).
_KIND_LINE = re.compile(r" \(line \d+\)| from line \d+")
# Verdict names a timed run's failure may carry (the baseline's, said in a few words).
_VERDICT_NAMES = frozenset({*_GENERIC, Verdict.INFRA_ERROR})
_CHARGED = "; the baseline alone passes this test in a fresh sandbox"
_KIND_PREFIX = re.compile(rf"(?:{DIFFERENCE_KIND.pattern})(?=; |$)")


def _cut(text: str, limit: int = MAX_FEEDBACK_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 15] + "\n[... cut ...]"


def coarse_speedup(value: float | None) -> float | None:
    """A speedup (or an interval bound) as a policy may be told it: two significant digits
    (None, and anything not a positive finite number, as they are). The reward pays the
    speedup at full precision already; a finer number here would only widen the channel a
    candidate opens by modulating its own run time (module docstring)."""
    if value is None or not math.isfinite(value) or value <= 0:
        return value
    return float(f"{value:.{SPEEDUP_DIGITS}g}")


def _two_digits(value: float) -> str:
    """`coarse_speedup` written out with its digits: 1.0, 0.95, 12, 120."""
    rounded = coarse_speedup(value)
    if rounded is None or not math.isfinite(rounded) or rounded <= 0:
        return f"{value:.{SPEEDUP_DIGITS}g}"
    decimals = max(0, SPEEDUP_DIGITS - 1 - math.floor(math.log10(rounded)))
    return f"{rounded:.{decimals}f}"


def format_feedback(
    verdict: Verdict,
    detail: str = "",
    speedup: float | None = None,
    low: float | None = None,
    high: float | None = None,
    is_copy: bool = False,
) -> str:
    """The feedback text around `detail`, which must already be fit for a policy: build it
    with `check_feedback` or `message_feedback`, which keep test data out of it."""
    lines = [f"Verdict: {verdict}."]
    if verdict == Verdict.PASS:
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
                f"All tests passed. Measured speedup {_two_digits(speedup)}x "
                f"({INTERVAL_NAME} {_two_digits(low)}-{_two_digits(high)}): {note}."
            )
        else:
            lines.append("All tests passed.")
    elif detail:
        lines.append(detail.strip())
    return _cut("\n".join(lines))


def safe_failure(verdict: Verdict | None, message: str, difference: str = "") -> str:
    """What a policy may be told about one failing test run: `message` (a person's, quoting
    anything) reduced to the fixed text of the phrase it starts with, `difference` (the kind
    of a wrong output, without its line) when it is one, else the verdict's generic phrase.
    A timed run's failure says that it was one, never which (None: a verdict the timed
    run's message does not name, told as a failure and no more)."""
    timed = _TIMED.match(message)
    if timed is not None:
        who, fresh, inner = timed.groups()
        rest = message[timed.end() :]
        where = "in a timed run" + (" on a fresh input" if fresh else "")
        if who == "baseline":
            kind = inner if inner in _VERDICT_NAMES else "a failure"
            if _CHARGED in rest:
                return (
                    f"the baseline, run beside this answer, failed {where} ({kind}) and "
                    "passes alone in a fresh sandbox, so the failure is charged to this answer"
                )
            return f"the baseline failed {where} ({kind})"
        return f"{where}: {safe_failure(_named_verdict(inner), rest)}"
    if verdict == Verdict.WRONG_OUTPUT:
        if DIFFERENCE_KIND.fullmatch(difference):
            return _KIND_LINE.sub("", difference)
        kind = _KIND_PREFIX.match(message)
        return _KIND_LINE.sub("", kind.group(0)) if kind is not None else _GENERIC[verdict]
    for pattern, fixed in _TIMED_CONSISTENCY:
        if pattern.search(message):
            return fixed
    for pattern, fixed in _SAFE.get(verdict, ()):
        if pattern.match(message):
            return fixed
    return _GENERIC.get(verdict, "the attempt failed")


def _quotable(name: str, message: str, program: Program | None) -> bool:
    """Whether a person's message on test `name` may reach a policy whole: only for a test
    the program shows the model as an example, and not for a timed run's failure (timed
    runs may be fed freshly drawn inputs in that test's place)."""
    examples = getattr(program, "examples", ()) or ()
    return name in examples and _TIMED.match(message) is None


def _test_line(name: str, size_class: str | None, detail: str) -> str:
    """`test NAME (size class C): detail`; a drawn input (`CLASS~N`, fresh.drawn_name) is
    named by its class alone: its number says which draw the candidate chose to fail."""
    if "~" in name:
        where = f"a drawn input (size class {size_class or name.split('~', 1)[0]})"
    else:
        where = f"test {name}" + (f" (size class {size_class})" if size_class else "")
    return f"{where}: {detail}"


def _named_verdict(name: str) -> Verdict | None:
    """The verdict a word of one of our messages names, or None where it names none."""
    return Verdict(name) if name in ALL_VERDICTS else None


def _not_ours(verdict: Verdict) -> str:
    return (
        "the grader failed on our side (not your answer's fault); this attempt is not counted"
        if verdict == Verdict.INFRA_ERROR
        else "the attempt failed"
    )


def failure_feedback(test: TestVerdict, program: Program | None = None) -> str:
    """One failing test as a policy may see it: name (a drawn input's class only), size
    class, and the safe description of what went wrong (the full message only for a test
    the program marks as an example)."""
    verdict = test.verdict
    generic = _GENERIC.get(verdict, "the attempt failed")
    if _quotable(test.test, test.message, program):
        return _test_line(test.test, test.size_class, test.message or generic)
    # Not test.exit_code or test.signal: values the candidate chose (module docstring).
    detail = safe_failure(verdict, test.message, test.difference)
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
    verdict = check.verdict
    if verdict == Verdict.PASS:
        return format_feedback(verdict, "", speedup, low, high, is_copy)
    if verdict in _BUILD_VERDICTS:
        return format_feedback(verdict, check.message)
    if verdict == Verdict.INFRA_ERROR:
        return format_feedback(verdict, _not_ours(verdict))
    failing = next((t for t in check.tests if t.verdict == verdict), None)
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
    verdict: Verdict,
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
    if verdict == Verdict.PASS:
        return format_feedback(verdict, "", speedup, low, high, is_copy)
    if verdict in _BUILD_VERDICTS:
        return format_feedback(verdict, message)
    if verdict == Verdict.INFRA_ERROR or verdict not in _GENERIC:
        return format_feedback(verdict, _not_ours(verdict))
    named = _named_test(message, program)
    if named is None:
        return format_feedback(verdict, _GENERIC[verdict])
    name, size_class = named
    rest = message[len(f"test {name}: ") :]
    if _quotable(name, rest, program):
        return format_feedback(verdict, _test_line(name, size_class, rest))
    return format_feedback(verdict, _test_line(name, size_class, safe_failure(verdict, rest)))
