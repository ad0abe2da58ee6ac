"""Which of a program's tests choose among answers and which are held out to score them."""

from __future__ import annotations

from asmopt.programs import load_builtin_suite
from asmopt.programs.selection import selection_split


def test_selection_split_is_every_other_test_from_the_last() -> None:
    program = load_builtin_suite().select()[0]
    names = sorted(t.name for t in program.tests)
    chosen = [t.name for t in selection_split(program.tests)]
    assert chosen == sorted(names[::-1][::2]) and names[-1] in chosen
