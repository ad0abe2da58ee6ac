"""Output comparison: exact, whitespace-insensitive, and fpcmp-style numeric tolerance.

Each comparison returns None when the outputs agree, else a one-line description of the
first difference, so a user sees at once *where* a candidate went wrong. That description
quotes both outputs and is for a person; `difference_kind` names only the kind of the
difference and where it is, which is what a policy may be told.
"""

from __future__ import annotations

import hashlib
import math
import re

from asmopt.programs.model import Comparison

_NUMBER = re.compile(
    rb"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE
)


def _show(line: bytes, limit: int = 80) -> str:
    text = line.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _first_line_diff(expected: bytes, actual: bytes) -> str:
    if not actual and expected:
        first = expected.split(b"\n")[0]
        return f"no output; expected {_show(first)} on line 1"
    if expected.rstrip(b"\n") == actual.rstrip(b"\n"):
        want = len(expected) - len(expected.rstrip(b"\n"))
        got = len(actual) - len(actual.rstrip(b"\n"))
        return f"only the trailing newlines differ: expected {want}, got {got}"
    exp_lines = expected.split(b"\n")
    act_lines = actual.split(b"\n")
    for i in range(max(len(exp_lines), len(act_lines))):
        e = exp_lines[i] if i < len(exp_lines) else None
        a = act_lines[i] if i < len(act_lines) else None
        if e != a:
            if e is None:
                return f"line {i + 1}: unexpected extra output {_show(a or b'')}"
            if a is None:
                return f"line {i + 1}: output ended early; expected {_show(e)}"
            return f"line {i + 1}: expected {_show(e)}, got {_show(a)}"
    return "outputs differ"


def _numbers_close(e: float, a: float, cmp: Comparison) -> bool:
    if math.isnan(e) or math.isnan(a):
        return math.isnan(e) and math.isnan(a)
    if math.isinf(e) or math.isinf(a):
        return e == a
    diff = abs(e - a)
    if diff <= cmp.abs_tol:
        return True
    return e != 0 and diff / abs(e) <= cmp.rel_tol


def _tokens(data: bytes) -> list[bytes]:
    """Split into numbers and runs of other non-space text, dropping whitespace."""
    out: list[bytes] = []
    for chunk in data.split():
        pos = 0
        for m in _NUMBER.finditer(chunk):
            if m.start() > pos:
                out.append(chunk[pos : m.start()])
            out.append(m.group())
            pos = m.end()
        if pos < len(chunk):
            out.append(chunk[pos:])
    return out


def _as_float(tok: bytes) -> float | None:
    if not _NUMBER.fullmatch(tok):
        return None
    try:
        return float(tok)
    except ValueError:
        return None


def hashed_output(actual: bytes, exit_code: int) -> str:
    """The MD5 digest llvm-test-suite's HashProgramOutput.sh records for a run: `md5sum` of
    the output file, which its `timeit --append-exitstatus` ends with `exit N\\n` (no
    separator of its own)."""
    return hashlib.md5(actual + b"exit %d\n" % exit_code, usedforsecurity=False).hexdigest()


def compare_output(
    expected: bytes, actual: bytes, cmp: Comparison, exit_code: int = 0
) -> str | None:
    """None if `actual` is acceptable for `expected` under `cmp`, else the first difference.

    `exit_code` is the run's exit status; only the `md5` mode uses it, because the suite it
    comes from hashes the status line together with the output."""
    if cmp.mode == "md5":
        want = expected.strip().decode("ascii", "replace").lower()
        got = hashed_output(actual, exit_code)
        if got == want:
            return None
        return (
            f"output hash differs: expected md5 {want}, got {got} "
            f"(over {len(actual)} bytes of output plus 'exit {exit_code}')"
        )
    if cmp.mode == "exact":
        return None if expected == actual else _first_line_diff(expected, actual)
    if cmp.mode == "whitespace":
        if expected.split() == actual.split():
            return None
        return _first_line_diff(b"\n".join(expected.split()), b"\n".join(actual.split())).replace(
            "line", "token", 1
        )
    exp_toks, act_toks = _tokens(expected), _tokens(actual)
    for i in range(max(len(exp_toks), len(act_toks))):
        if i >= len(exp_toks):
            return f"token {i + 1}: unexpected extra output {_show(act_toks[i])}"
        if i >= len(act_toks):
            return f"token {i + 1}: output ended early; expected {_show(exp_toks[i])}"
        e_tok, a_tok = exp_toks[i], act_toks[i]
        e_num, a_num = _as_float(e_tok), _as_float(a_tok)
        if e_num is not None and a_num is not None:
            if not _numbers_close(e_num, a_num, cmp):
                return (
                    f"token {i + 1}: expected {e_tok.decode(errors='replace')}, got "
                    f"{a_tok.decode(errors='replace')} (abs_tol {cmp.abs_tol:g}, "
                    f"rel_tol {cmp.rel_tol:g})"
                )
        elif e_tok != a_tok:
            return f"token {i + 1}: expected {_show(e_tok)}, got {_show(a_tok)}"
    return None


# ---------------------------------------------------------------------------- kinds
# What a policy may be told about a wrong output: the kind of difference and where, never
# a byte of either side (docs/verdicts.md, "What a policy is told"). Every phrase
# difference_kind returns matches DIFFERENCE_KIND, so text that claims to be a kind can be
# checked before it is passed on (policies/feedback.py).
DIFFERENCE_KIND = re.compile(
    r"no output"
    r"|md5 digest differs"
    r"|output differs"
    r"|trailing newlines differ"
    r"|whitespace differs(?: \(line \d+\))?"
    r"|output is shorter \(missing (?:lines|tokens) from line \d+\)"
    r"|extra output after the expected end \(line \d+\)"
    r"|a number differs(?: beyond tolerance)? \(line \d+\)"
    r"|text differs \(line \d+\)"
)


def _lines(data: bytes) -> list[bytes]:
    """The lines of `data`, a final newline ending the last line rather than starting one."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _line_kind(e: bytes, a: bytes, line: int) -> str:
    """How two lines that differ differ: only in whitespace, only in numbers, or in text."""
    if e.split() == a.split():
        return f"whitespace differs (line {line})"
    e_toks, a_toks = _tokens(e), _tokens(a)
    if len(e_toks) == len(a_toks) and all(
        x == y or (_as_float(x) is not None and _as_float(y) is not None)
        for x, y in zip(e_toks, a_toks, strict=True)
    ):
        return f"a number differs (line {line})"
    return f"text differs (line {line})"


def _token_lines(data: bytes, split: bool) -> list[int]:
    """For each token of `data` (whitespace-separated, or numbers and text as `_tokens`
    splits them), the 1-based line it is on."""
    out: list[int] = []
    for n, line in enumerate(data.split(b"\n"), start=1):
        out.extend([n] * len(line.split() if split else _tokens(line)))
    return out


def difference_kind(
    expected: bytes, actual: bytes, comparison: Comparison, exit_code: int = 0
) -> str:
    """The kind of difference between `expected` and `actual` under `comparison`, naming
    no byte of either ("" when `compare_output` accepts `actual`).

    `compare_output` quotes both sides so that a person sees what went wrong; this is the
    version a policy may be told. Quoting the expected line teaches a policy the test's
    answer, and quoting what it printed lets a candidate that prints its stdin (or a hash
    of it) read the hidden input back. Line numbers and the shape of the difference are
    enough to act on and quote no byte of either output; a policy is told the shape alone
    (policies/feedback.py): the line is where the candidate chose to differ, and past the
    expected end it is the expected output's length."""
    if compare_output(expected, actual, comparison, exit_code) is None:
        return ""
    if not actual:
        return "no output"
    if comparison.mode == "md5":
        return "md5 digest differs"
    if comparison.mode == "exact":
        if expected.rstrip(b"\n") == actual.rstrip(b"\n"):
            return "trailing newlines differ"
        exp_lines, act_lines = _lines(expected), _lines(actual)
        if expected.split() == actual.split():
            # Only whitespace differs; a line number when no line break moved.
            if len(exp_lines) != len(act_lines):
                return "whitespace differs"
            pairs = enumerate(zip(exp_lines, act_lines, strict=True), start=1)
            first = next((n for n, (e, a) in pairs if e != a), None)
            return "whitespace differs" if first is None else f"whitespace differs (line {first})"
        for i in range(max(len(exp_lines), len(act_lines))):
            if i >= len(act_lines):
                return f"output is shorter (missing lines from line {i + 1})"
            if i >= len(exp_lines):
                return f"extra output after the expected end (line {i + 1})"
            if exp_lines[i] != act_lines[i]:
                return _line_kind(exp_lines[i], act_lines[i], i + 1)
        return "output differs"  # not reached: kept so that a difference is never ""
    whitespace = comparison.mode == "whitespace"
    exp_toks = expected.split() if whitespace else _tokens(expected)
    act_toks = actual.split() if whitespace else _tokens(actual)
    exp_at, act_at = _token_lines(expected, whitespace), _token_lines(actual, whitespace)
    for i in range(max(len(exp_toks), len(act_toks))):
        if i >= len(act_toks):
            return f"output is shorter (missing tokens from line {exp_at[i]})"
        if i >= len(exp_toks):
            return f"extra output after the expected end (line {act_at[i]})"
        e_tok, a_tok = exp_toks[i], act_toks[i]
        if whitespace:
            if e_tok == a_tok:
                continue
            numbers = _as_float(e_tok) is not None and _as_float(a_tok) is not None
            kind = "a number differs" if numbers else "text differs"
            return f"{kind} (line {exp_at[i]})"
        e_num, a_num = _as_float(e_tok), _as_float(a_tok)
        if e_num is not None and a_num is not None:
            if not _numbers_close(e_num, a_num, comparison):
                return f"a number differs beyond tolerance (line {exp_at[i]})"
        elif e_tok != a_tok:
            return f"text differs (line {exp_at[i]})"
    return "output differs"
