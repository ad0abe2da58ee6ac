"""Which of a program's tests choose among answers and which score the chosen one.

A search (compiler flags, best-of-N, refinement) that picks its answer on the very tests
that then score it reports the maximum of its noise as a speedup. So every choice is made
on the selection split alone, and the evaluation scores the chosen answer on all tests
again, its selection tests marked; the rest are held out.
"""

from __future__ import annotations

from asmopt.programs.model import TestCase


def selection_split(tests: tuple[TestCase, ...]) -> list[TestCase]:
    """Every other test in name order, counting back from the last one (about half).

    Used to choose, never to score. Counting from the end keeps the heaviest test of suites
    that list tests from small to large (ours, and most hand-written ones) in the selection,
    so the choice is not made on tests too short to time."""
    ordered = sorted(tests, key=lambda t: t.name)
    return sorted(ordered[::-1][::2], key=lambda t: t.name)
