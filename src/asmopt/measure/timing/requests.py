"""What the timing engine asks an executor for, and how it names an answer.

Named tuples rather than bare `(int, int, int)` ones: the integers are indexes and counts
that are easy to swap, and a name on each says which is which. Being tuples, they still
unpack positionally and a `(candidate, test)` key is found by a plain tuple too.
"""

from __future__ import annotations

from typing import NamedTuple


class RoundRequest(NamedTuple):
    """One round of one test for a single-candidate executor (`BatchExecutor`)."""

    test: int  # index of the test in the measurement's list of tests
    pairs: int  # timed (baseline, candidate) pairs wanted
    warmup_pairs: int  # pairs run first and discarded


class CandidateTest(NamedTuple):
    """Which candidate on which test: the key of a Round in a multi-candidate batch."""

    candidate: int  # index of the candidate among those measured together
    test: int  # index of the test


class CandidateRoundRequest(NamedTuple):
    """One round of one candidate on one test (`CandidatesExecutor`)."""

    candidate: int  # index of the candidate among those measured together
    test: int  # index of the test
    pairs: int  # timed (baseline, candidate) pairs wanted
    warmup_pairs: int  # pairs run first and discarded

    @property
    def key(self) -> CandidateTest:
        """The (candidate, test) its Round is answered under."""
        return CandidateTest(self.candidate, self.test)

    def for_test(self) -> RoundRequest:
        """The same request without its candidate (for a single-candidate executor)."""
        return RoundRequest(self.test, self.pairs, self.warmup_pairs)
