"""Answers right only inside the samples' limits: do a program's drawn inputs reach past them?

A learnt generator grows counts, strings and value ranges past what the program's fixed
tests show, so that an answer which assumes the samples' n, their values or their string
lengths fails. Whether it does is measured here, on the drawn inputs themselves, for three
answers that are the program wherever an input stays inside the samples' limits (every
fixed test does) and bend any other input into them first:

* `range`: every integer clamped to the range of the fixed tests' integers (an answer that
  assumes the values the samples show);
* `prefix`: every word (a token that is not a number) cut to the fixed tests' longest word
  (an answer that compares only a prefix of a string);
* `size`: the input cut after as many tokens as the largest fixed test holds (an answer
  that reads only as much as the samples hold: their n, their number of test cases).

Such an answer's output on an input is the program's output on the bent input, so no
answer is built: the baseline runs on the bent copies of the drawn inputs the bend
changes, and a draw *matches* where the output is the baseline's on the original (a draw
the bend leaves alone matches by right). A grading passes such an answer only if every
draw of every class matches, so the probability is bounded, as a constant answer's is
(asmopt.entropy), by the product over classes of a 95% upper bound on each class's match
rate, raised to the drawn inputs per class.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

ATTACKS = ("range", "prefix", "size")
_INT = re.compile(r"^-?\d+$")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_TOKEN = re.compile(rb"\S+")
_PIECES = re.compile(rb"(\s+)")
# Integers of 19 digits or more are left alone (they may not fit in a long long).
_LONGEST_INT = 18


@dataclass(frozen=True)
class SampleLimits:
    """The fixed tests' limits, over all of them (so each attack is the program on every
    fixed test): the range of their integers, their longest word, their most tokens."""

    lo: int
    hi: int
    word: int
    tokens: int

    @classmethod
    def of(cls, samples: Sequence[bytes]) -> SampleLimits:
        ints: list[int] = []
        words: list[int] = []
        tokens = 0
        for sample in samples:
            found = [t.decode("utf-8", "replace") for t in _TOKEN.findall(sample)]
            ints += [int(t) for t in found if _INT.match(t) and len(t) <= _LONGEST_INT]
            words += [len(t) for t in found if not _NUMBER.match(t)]
            tokens = max(tokens, len(found))
        return cls(min(ints, default=0), max(ints, default=0), max(words, default=1), tokens)


def bend(data: bytes, kind: str, limits: SampleLimits) -> bytes:
    """`data` as the `kind` attack sees it: bent into the samples' limits."""
    if kind not in ATTACKS:
        raise ValueError(f"unknown attack {kind!r} (have {', '.join(ATTACKS)})")
    out: list[bytes] = []
    tokens = 0
    for piece in _PIECES.split(data):
        if not piece or piece.isspace():
            out.append(piece)
            continue
        tokens += 1
        if kind == "size" and tokens > limits.tokens:
            break
        text = piece.decode("utf-8", "replace")
        if kind == "range" and _INT.match(text) and len(text) <= _LONGEST_INT:
            out.append(str(min(max(int(text), limits.lo), limits.hi)).encode())
        elif kind == "prefix" and not _NUMBER.match(text) and len(piece) > limits.word:
            out.append(piece[: limits.word])
        else:
            out.append(piece)
    return b"".join(out)
