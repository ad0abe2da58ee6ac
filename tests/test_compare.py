"""Output comparison modes, with the first difference named."""

from __future__ import annotations

import pytest

from asmopt.compare import compare_output
from asmopt.programs import Comparison

EXACT = Comparison()
WS = Comparison("whitespace")
NUM = Comparison("numeric", abs_tol=1e-6, rel_tol=1e-4)


@pytest.mark.parametrize(
    ("expected", "actual", "cmp", "ok", "needle"),
    [
        (b"1\n2\n", b"1\n2\n", EXACT, True, ""),
        (b"1\n2\n", b"1\n3\n", EXACT, False, "line 2: expected '2', got '3'"),
        (b"1\n2\n", b"1\n2", EXACT, False, "trailing newlines"),
        (b"1\n", b"1\n2\n", EXACT, False, "line 2"),
        (b"1\n", b"", EXACT, False, "no output"),
        (b"a  b\n c\n", b"a b c", WS, True, ""),
        (b"a b\n", b"a c\n", WS, False, "token 2"),
        (b"x=1.000000\n", b"x=1.0000004\n", NUM, True, ""),
        (b"x=1000.0\n", b"x=1000.05\n", NUM, True, ""),  # relative
        (b"x=1000.0\n", b"x=1000.5\n", NUM, False, "token 2"),
        (b"sum 3 ok\n", b"sum 3 bad\n", NUM, False, "expected 'ok'"),
        (b"1e10 nan inf\n", b"1.00001e10 nan inf\n", NUM, True, ""),
        (b"nan\n", b"1\n", NUM, False, "token 1"),
        (b"1 2\n", b"1\n", NUM, False, "ended early"),
    ],
)
def test_compare(expected: bytes, actual: bytes, cmp: Comparison, ok: bool, needle: str) -> None:
    diff = compare_output(expected, actual, cmp)
    if ok:
        assert diff is None
    else:
        assert diff is not None and needle in diff
