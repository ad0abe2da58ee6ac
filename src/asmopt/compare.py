"""Output comparison: exact, whitespace-insensitive, and fpcmp-style numeric tolerance.

Each comparison returns None when the outputs agree, else a one-line description of the
first difference, so a user sees at once *where* a candidate went wrong.
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
