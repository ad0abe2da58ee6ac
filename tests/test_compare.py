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


def test_md5_hashes_the_output_with_the_exit_line() -> None:
    """llvm-test-suite's HASH_PROGRAM_OUTPUT digest covers the output followed by
    `exit N\\n`: the same output with another exit status, or a digest of the output alone,
    does not match."""
    import hashlib

    md5 = Comparison("md5")
    out = b"0.00 0.50\n1.00 1.50\n"
    digest = hashlib.md5(out + b"exit 0\n").hexdigest().encode()
    assert compare_output(digest + b"\n", out, md5, exit_code=0) is None
    assert compare_output(digest.upper(), out, md5, exit_code=0) is None  # case, whitespace
    diff = compare_output(digest, out, md5, exit_code=1)
    assert diff is not None and "output hash differs" in diff and "exit 1" in diff
    alone = hashlib.md5(out).hexdigest().encode()
    assert compare_output(alone, out, md5, exit_code=0) is not None
    assert compare_output(digest, out + b" ", md5, exit_code=0) is not None
