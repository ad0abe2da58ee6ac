"""Structures a program's own test inputs show, which a uniform draw almost never hits.

A yes/no problem asks about a structure: are a string's halves anagrams of each other
(a lapindrome)? Did anyone in a queue move more than two places? Its samples show both
answers on purpose, but a uniform draw of the same shape lands on one side nearly always
(a random string of 1,000 letters is no lapindrome, a random permutation of 100 is always
"too chaotic"), so a constant answer passes the drawn inputs and the drawn inputs reach
half the program. Where a sample shows such a structure and a uniform draw of its size
shows it with probability under `MAX_CHANCE`, the learnt rule plants it in half the draws
(`plant` in programs/generators.py): both answers are drawn, and the entropy bound counts
the planted branch's bits only (the likelier branch bounds the mixture).

Only structures the generator can draw are looked for: a string that is a palindrome or
whose second half is a shuffle of its first (`halves`), a list that is a few adjacent
swaps from sorted (`near`), and a list in which one value never comes twice within a few
places (`spaced`: people in a queue at least six places apart).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from functools import cache, lru_cache
from itertools import pairwise
from typing import NamedTuple

# A structure counts as shown by a sample only if a uniform draw of the sample's length
# shows it by chance with at most this probability: a five-letter palindrome over two
# letters (chance 1/4) says nothing about the problem.
MAX_CHANCE = 1 / 8
# Draws that estimate a string structure's chance (a fixed seed: learning is deterministic).
CHANCE_DRAWS = 400
# The shortest string or list a structure is read from.
MIN_LENGTH = 4


def is_palindrome(text: Sequence[object]) -> bool:
    return list(text) == list(text)[::-1]


def has_anagram_halves(text: Sequence[object]) -> bool:
    """The first half's characters are the second half's in some order (a middle character
    of an odd length belongs to neither)."""
    half = len(text) // 2
    return Counter(text[:half]) == Counter(text[len(text) - half :])


_TEXT_TESTS = {"palindrome": is_palindrome, "halves": has_anagram_halves}


@cache
def _chance(shape: str, length: int, letters: int) -> float:
    """How often a uniform string of `length` over `letters` letters has `shape`: exact
    for a palindrome, estimated from CHANCE_DRAWS draws for the halves."""
    if shape == "palindrome":
        return float(letters) ** -(length // 2)
    rng = random.Random(length * 1009 + letters)
    test = _TEXT_TESTS[shape]
    hits = sum(
        test([rng.randrange(letters) for _ in range(length)]) for _ in range(CHANCE_DRAWS)
    )
    return hits / CHANCE_DRAWS


def text_shape(samples: Sequence[str], alphabet: str) -> str | None:
    """The shape to plant in a string column whose samples are `samples` (drawn over
    `alphabet`): `halves` where a sample has anagram halves without being a palindrome,
    else `palindrome` where a sample is one, each only where chance would rarely show it;
    None where no sample shows either."""
    letters = len(set(alphabet))
    if letters < 2:
        return None
    shown = set()
    for text in samples:
        if len(text) < MIN_LENGTH:
            continue
        for shape, test in _TEXT_TESTS.items():
            if test(text) and _chance(shape, len(text), letters) <= MAX_CHANCE:
                shown.add((shape, is_palindrome(text)))
    if ("halves", False) in shown:
        return "halves"
    if any(shape == "palindrome" for shape, _ in shown):
        return "palindrome"
    return None


def inversions(numbers: Sequence[int]) -> int:
    """Pairs out of ascending order (merge sort: a sample list may hold thousands)."""
    def count(items: list[int]) -> tuple[list[int], int]:
        if len(items) < 2:
            return items, 0
        mid = len(items) // 2
        left, a = count(items[:mid])
        right, b = count(items[mid:])
        merged, crossed, i, j = [], a + b, 0, 0
        while i < len(left) and j < len(right):
            if right[j] < left[i]:
                merged.append(right[j])
                crossed += len(left) - i
                j += 1
            else:
                merged.append(left[i])
                i += 1
        return merged + left[i:] + right[j:], crossed

    return count(list(numbers))[1]


@lru_cache(maxsize=256)
def is_near_sorted(numbers: tuple[int, ...]) -> bool:
    """Unsorted, but at most half as many pairs out of order as a random order has on
    average (n (n - 1) / 4): `1 2 5 3 4 7 8 6`, not `5 1 2 3 7 8 6 4`. From five values
    on (a random order of four or fewer is this close by chance too often). Cached: every
    learning level asks it of the same sample lists, some of 100,000 values."""
    n = len(numbers)
    if n < MIN_LENGTH + 1 or list(numbers) == sorted(numbers):
        return False
    return inversions(numbers) <= n * (n - 1) / 8


# `spaced` is read only from lists this long at most (a longer list's prefix shows the same
# gap, by chance less often): the count of spaced strings is exact in integers.
SPACED_PREFIX = 256


@cache
def spaced_chance(length: int, gap: int) -> float:
    """How often a uniform list of `length` values over two values has no two of one of
    them (the mark) closer than `gap` places: f(L) / 2^L, where f(L) = f(L - 1) + f(L - gap)
    counts the strings (the last place empty, or marked with the gap - 1 before it empty)."""
    counts = [1]
    for size in range(1, length + 1):
        counts.append(counts[size - 1] + counts[max(0, size - gap)])
    return counts[length] / 2**length


def least_gap(numbers: Sequence[int], mark: int) -> int | None:
    """The fewest places between two `mark`s of a list (None: fewer than two)."""
    at = [i for i, v in enumerate(numbers) if v == mark]
    if len(at) < 2:
        return None
    return min(b - a for a, b in pairwise(at))


class Spaced(NamedTuple):
    """A value kept apart in lists of two values: the mark, the fewest places between two
    of it, and the two values (lowest first) the lists take."""

    mark: int
    gap: int
    values: tuple[int, int]


def spaced_shape(lists: Sequence[Sequence[int]]) -> Spaced | None:
    """Where a sample list of two values keeps one of them (the mark) at least
    `gap` places apart, with gap >= 2 and a chance of at most MAX_CHANCE that a uniform
    draw of its length would: the widest such gap over the samples (the sample that answers
    "spaced" where the narrower ones do not) and its mark; None where none shows it. The
    lists read are those over the pair of values most lists of two values take."""
    pairs = Counter(
        frozenset(numbers)
        for numbers in lists
        if len(numbers) >= MIN_LENGTH and len(set(numbers)) == 2
    )
    if not pairs:
        return None
    pair = pairs.most_common(1)[0][0]
    low, high = sorted(pair)
    best: Spaced | None = None
    for numbers in lists:
        if len(numbers) < MIN_LENGTH or not set(numbers) <= pair:
            continue
        head = numbers[:SPACED_PREFIX]
        for mark in sorted(pair):
            gap = least_gap(numbers, mark)
            if gap is None or gap < 2 or least_gap(head, mark) is None:
                continue
            if spaced_chance(len(head), gap) <= MAX_CHANCE and (best is None or gap > best.gap):
                best = Spaced(mark, gap, (low, high))
    return best
