"""Learn a format-preserving input generator from an imported program's own test inputs.

An imported program (CodeNet, SuperCoder rows, a plain directory) comes with a few fixed
test inputs, and a fixed input's answer can be memorised or replayed. This module writes,
for each fixed test, a declarative generator class (programs/generators.py; origin
`learnt`, data only, never code) that draws inputs *of the same shape*: the same lines,
the same whitespace, the same literal text, with numbers and strings varied where that is
safe. The trusted -O3 baseline's output on a drawn input is then its expected output.

How a test input becomes a class:

* The text is split into lines and each line into atoms: whitespace and punctuation stay
  literal; integers, decimals (with their number of decimals), words and strings are the
  values that may vary.
* Consecutive lines of the same shape form a table (one range per column); a line of four
  or more numbers with one separator is a list (one range per line). Everything else is a
  scalar.
* **Count-like integers stay fixed.** A number that equals the count of what follows (the
  numbers after it on its line, the numbers of a later line or of the next lines together,
  the length of a later run of lines, give or take one, the length of a later string, the
  number of lines left) is kept as written, and so is a first line holding one number no
  larger than the lines that follow (a test-case count), and a last line of zeros (a
  terminating sentinel). Keeping counts fixed keeps the structure consistent: the count
  always equals the items drawn. Where a count on a line (alone, or beside other values:
  `n k`, `n m`) governs the next line's list or string, or the run of lines after it, or
  starts its line and counts the rest of it (`k a1 .. ak`), it can grow (below), what it
  governs drawn at the drawn length.
* **Rows keep their relations.** In a table of three or more rows, a column never above
  the next (`l r`) is drawn from that column's value up, and a column never above an
  integer of an earlier line that it reaches at least half of (an index into a list of
  n) is drawn up to that integer as drawn, less one for indices from 0. A column in
  order down four or more rows (a ledger's days; by chance at most 1/8) stays in order
  (`across`), and a table no count governs whose last row alone holds 0 or -1 in a
  column (the row that ends the input) grows before that row, which stays last.
* **Lists keep their order.** A list of five or more values given sorted (either way) is
  drawn sorted the same way; a list that is a shuffle of 1..n is drawn as a permutation of
  1..(its drawn length) (`ints` rules with `order` / `distinct`).
* **Both answers of a structure the samples show.** A string column with a sample that
  is a palindrome or whose halves are anagrams, and a list a few swaps from sorted, draw
  that structure in half the draws (`plant`, data/shapes.py), so a yes/no question about
  it is answered both ways. Rows of one word of several lengths take one rule (lengths
  from the shortest sample up), so the rows are one run a count can grow.
* Keywords stay literal: a word that repeats in the input, that shares its line with a
  number (a command and its arguments: `add 3`), or an answer word (`YES`). In a table, a
  column of repeating words is a keyword column. A word that is a string literal of the
  source (`"OCT"`) is what the program compares against: it is drawn among the source's
  literals of its shape, never invented (below).
* Numbers are drawn within the range observed: per table column, per list line, pooled
  over the tests of the same shape. A scalar seen with one value v is drawn in [1, v]
  (or [v, -1]): never larger than what the test exercised, never of another sign.
  Integers stay integers, decimals keep their number of decimals. Strings keep their
  length and are drawn from the characters seen in their column.

Before anything is learnt, every fixed test is judged as a drawn input would be
(`vet_fixed_tests`): a test on which the -O0, -O3 and sanitizer builds do not all behave
and agree depends on undefined behaviour, so it is dropped by name (the report's
`dropped_tests`), and a program left with no test is dropped from the import
(`ill_defined_tests`). A test whose files give no exit code expects 0; where every build
ends it with the same other code by itself (an error message for a bad input, then
`exit(1)`), the test expects that code instead (`exit_codes_taken`), its class is learnt
apart from the tests that end normally, and it is checked but not timed
(`_error_tests_checked_not_timed`).

Nine levels, each more conservative than the last, are learnt per test: `keywords` (all
of the above, with source keywords drawn), `grown` (sizes past the sample: a governing
count drawn up to GROW_FACTOR times the test's, integer ranges widened to the next power
of ten, the limit a statement would plausibly give), `grown_few` (the same, but test
cases that grow inside grow little in number: for a program that takes at most ten
of them), `grown4` (the same as `grown`, sizes grown at
most four times), `grown4_seen` (sizes grown at most four times, ranges as seen: for
values the program bounds, a width in 1..2, where the sizes may still grow), `past`
(sizes just past the sample's, up to one and a half times them, ranges as seen: for
programs whose own limits, an `assert(t < 11)` or a `char w[31]`, refuse more), `full`
(counts and ranges as seen),
`bulk` (scalars kept literal; only table and list values vary) and `values` (table and
list values drawn only from the values observed there). A sample's five numbers carry
neither the entropy a timed class needs (asmopt.entropy) nor a run worth timing, so the
most daring level that the program accepts is the one kept. `accept_generator`
keeps, per class, the first level whose drawn inputs all pass (the -O0 and -O3 builds
agree under the test's comparison and exit as the test expects, both within the time
limit, and a `-fsanitize=undefined,address` build runs them clean and prints the same);
a class no level passes is dropped, and a program left without classes keeps its fixed
inputs only (`Program.fixed_inputs`). What was drawn, accepted and tried per class is the
program's `metadata.inputs_report`.

The sanitizer build runs in the program sandbox with two limits relaxed for it alone: an
address-space limit of 64 TiB (AddressSanitizer reserves terabytes of shadow memory,
never touched) and the sandbox's own /proc (the runtime reads /proc/self/maps); its
runtimes are linked statically, so no library beyond the usual ones is made visible.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.compare import compare_output
from asmopt.data.checking_classes import MAX_CHECKING_CLASSES, checking_name
from asmopt.data.checking_classes import variants as checking_variants
from asmopt.data.normalize import strip_comments
from asmopt.data.shapes import Spaced, is_near_sorted, spaced_shape, text_shape
from asmopt.errors import InputError
from asmopt.programs.generators import (
    GENERATOR_VERSION,
    GeneratorError,
    InputGenerator,
    derive_seed,
)
from asmopt.programs.model import Comparison, Program, TestCase

if TYPE_CHECKING:
    from asmopt.sandbox.records import Limits, RunResult
    from asmopt.sandbox.runner import Sandbox
    from asmopt.toolchain import Toolchain

LEVELS: tuple[str, ...] = (
    "keywords", "grown", "grown_few", "grown4", "grown4_seen", "past", "full", "bulk", "values"
)
# The `grown` level's sizes: a count that governs a following list or run of lines is drawn
# in [max(v, target // 2), target], target = v * GROW_FACTOR within [GROW_MIN, GROW_MAX]
# (v: the count in the test). A sample's five numbers are too few to carry the 64 bits of
# entropy a timed class needs (asmopt.entropy) or to time; sixty-four in [1, 10] carry 212,
# and the acceptance below drops the level where the program cannot take them.
GROW_FACTOR = 16
GROW_MIN = 64
GROW_MAX = 4096
# Per growing level, (factor, least target, largest target) of `_grown_length`. A program
# that refuses the `grown` sizes (its limits are in its source: `assert(t < 11)` after a
# sample of 6, a `char w[31]`) is tried at four times the sample's, then just past it
# (one and a half times, at least one more), before its sizes stay the sample's.
GROWTH: dict[str, tuple[float, int, int]] = {
    "keywords": (GROW_FACTOR, GROW_MIN, GROW_MAX),
    "grown": (GROW_FACTOR, GROW_MIN, GROW_MAX),
    "grown_few": (GROW_FACTOR, GROW_MIN, GROW_MAX),
    "grown4": (4, 16, 256),
    "grown4_seen": (4, 16, 256),
    "past": (1.5, 0, 64),
}
# The most values (list items, characters) a grown input of records draws in all, where
# each record grows inside: 64 records of up to 128 values each.
RECORD_ITEMS = 8192
# The share of draws a structure the samples show is planted in (data/shapes.py): half,
# so that each answer of the question it decides is drawn about equally often.
PLANTED_SHARE = 0.5
# String literals of the source that may be keywords an input names (`OCT`, `add`, `P=NP`):
# one token, no whitespace or format directive, at most this long.
MAX_KEYWORD_LEN = 32
PER_CLASS = 16
CPU_SECONDS = 5
# A probe of this many draws runs first: a class whose first draws fail costs no more.
PROBE_DRAWS = 4
# Inputs larger than this are not learnt from (the cost of tokenising grows with them and
# no spec of that size is worth storing): such tests keep their fixed input.
MAX_LEARN_BYTES = 4 << 20
# A class with more vars than this (lines that cannot be folded into a `repeat`) is too
# large to store; that level is skipped.
MAX_VARS = 4000
MAX_CHOICES = 64
# How many lines after a scalar are searched for what it might count.
COUNT_WINDOW = 4
SANITIZE_FLAGS: tuple[str, ...] = (
    "-O1",
    "-fsanitize=undefined,address",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-static-libasan",
    "-static-libubsan",
    "-static-libgcc",
)
SANITIZE_ADDRESS_SPACE = 1 << 46
_SANITIZER_EXIT = 97
SANITIZE_ENV: tuple[tuple[str, str], ...] = (
    # Leak checking stops the world with ptrace, which the sandbox refuses, and a leak is
    # no undefined behaviour.
    ("ASAN_OPTIONS", f"detect_leaks=0:exitcode={_SANITIZER_EXIT}:abort_on_error=0"),
    ("UBSAN_OPTIONS", f"halt_on_error=1:exitcode={_SANITIZER_EXIT}:print_stacktrace=0"),
)
_SANITIZER_TEXT = re.compile(rb"runtime error:|ERROR: AddressSanitizer|ERROR: UndefinedBehavior")
# A program that names none of these reads no stdin: drawn inputs would change nothing.
_READS_STDIN = re.compile(
    r"\b(?:scanf|getchar|getchar_unlocked|fgets|gets|fread|read|getline|getdelim|stdin|"
    r"getc|fgetc|fgetc_unlocked|getc_unlocked|fscanf|vscanf|vfscanf|STDIN_FILENO)\b"
)
# Words a program compares against, never data: kept literal wherever they appear.
_ANSWER_WORDS = frozenset(
    (
        "YES",
        "NO",
        "Yes",
        "No",
        "yes",
        "no",
        "TRUE",
        "FALSE",
        "True",
        "False",
        "true",
        "false",
        "END",
        "End",
        "end",
        "EOF",
        "eof",
    )
)

# ---------------------------------------------------------------------------- atoms
_TOKEN = re.compile(r"\s+|\S+")
_INT = re.compile(r"-?\d+")
_DEC = re.compile(r"-?\d+\.\d+")
_WORD = re.compile(r"[A-Za-z]+")
_NUMBER_PIECE = re.compile(r"(\d+(?:\.\d+)?)")
_SHORT_CODE = re.compile(r"[A-Za-z]{1,2}[1-9]\d?|[1-9]\d?[A-Za-z]{1,2}")
_LETTERS_OR_DIGITS = re.compile(r"[A-Za-z]+|\d+")


@dataclass
class Atom:
    """One piece of a line: literal text (`lit`) or a value (`int`, `dec`, `word`, `str`).

    `fixed` values are written as seen (counts, sentinels, keywords); `col` names the
    column a value's range is pooled over; `free_length`: a string whose length no number
    of the input states, so the `grown` level may draw it longer."""

    kind: str
    text: str
    fixed: bool = False
    col: tuple[Any, ...] | None = None
    free_length: bool = False

    @property
    def value(self) -> bool:
        return self.kind != "lit"

    @property
    def digits(self) -> int:
        return len(self.text.partition(".")[2]) if self.kind == "dec" else 0


@dataclass
class Line:
    atoms: list[Atom]
    newline: str  # "\n", or "" for a last line without one

    def values(self) -> list[Atom]:
        return [a for a in self.atoms if a.value]

    def signature(self) -> tuple[Any, ...]:
        return (
            tuple(a.kind if a.value else ("lit", a.text) for a in self.atoms),
            self.newline,
        )


def _classify(token: str) -> list[Atom]:
    """The atoms of one whitespace-free token."""
    if _INT.fullmatch(token):
        digits = token.lstrip("-")
        # Leading zeros, very long digit runs and bit strings (not 1000...) are text.
        if (
            (len(digits) > 1 and digits[0] == "0")
            or len(digits) > 18
            or (len(digits) >= 4 and set(digits) <= {"0", "1"} and "1" in digits[1:])
        ):
            return [Atom("str", token)]
        return [Atom("int", token)]
    if _DEC.fullmatch(token):
        return [Atom("dec", token)]
    if _WORD.fullmatch(token):
        return [Atom("word", token)]
    has_digit = any(c.isdigit() for c in token)
    if not has_digit:
        return [Atom("str", token)]
    if not any(c.isalpha() for c in token):
        # Numbers joined by punctuation (12:30, 3/4, (1,2)): the numbers vary, the rest stays.
        atoms = []
        for k, piece in enumerate(_NUMBER_PIECE.split(token)):
            if not piece:
                continue
            if k % 2:
                atoms.append(Atom("dec" if "." in piece else "int", piece))
            else:
                atoms.append(Atom("lit", piece))
        return atoms
    if token.isalnum() and len(token) >= 4:
        return [Atom("str", token)]
    if _SHORT_CODE.fullmatch(token):
        # A letter run and a digit run (a chess square `e4`, a seat `B12`, `3a`): the
        # letters are a word (a column of them draws from the letters seen), the number an
        # int, so both vary as the column shows.
        return [
            Atom("word" if piece[0].isalpha() else "int", piece)
            for piece in _LETTERS_OR_DIGITS.findall(token)
        ]
    return [Atom("lit", token)]


def parse_lines(text: str) -> list[Line]:
    """The input as lines of atoms (the last line has newline "" when the text does not end
    in one; an empty text has no lines)."""
    lines: list[Line] = []
    parts = text.split("\n")
    for k, raw in enumerate(parts):
        last = k == len(parts) - 1
        if last and raw == "":
            break
        atoms: list[Atom] = []
        for m in _TOKEN.finditer(raw):
            tok = m.group(0)
            atoms.extend([Atom("lit", tok)] if tok.isspace() else _classify(tok))
        lines.append(Line(atoms, "" if last else "\n"))
    return lines


# ---------------------------------------------------------------------------- structure
def _list_sep(line: Line) -> str | None:
    """The separator of a list line (four or more numbers joined by one whitespace text,
    perhaps indented, perhaps with trailing whitespace), else None."""
    vals = line.values()
    if len(vals) < 4 or any(a.kind not in ("int", "dec") for a in vals):
        return None
    body = list(line.atoms)
    if body and not body[0].value:
        if not body[0].text.isspace():
            return None
        body = body[1:]
    if body and not body[-1].value:
        if not body[-1].text.isspace():
            return None
        body = body[:-1]
    if len(body) != 2 * len(vals) - 1:
        return None
    seps = {body[j].text for j in range(1, len(body), 2)}
    if len(seps) != 1:
        return None
    sep = seps.pop()
    return sep if sep.isspace() else None


@dataclass
class Block:
    kind: str  # "table" (a run of lines of one shape) or "line"
    lines: list[Line]
    is_list: bool

    def skeleton(self) -> tuple[Any, ...]:
        sig = self.lines[0].signature()
        if self.is_list:
            sig = ("list", _list_sep(self.lines[0]), self.lines[0].newline)
        return (self.kind, sig)


def _blocks(lines: list[Line]) -> list[Block]:
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        j = i + 1
        sig = lines[i].signature()
        while j < len(lines) and lines[j].signature() == sig:
            j += 1
        run = lines[i:j]
        kind = "table" if len(run) >= 2 else "line"
        blocks.append(Block(kind, run, _list_sep(run[0]) is not None))
        i = j
    return blocks


def _own_length_column(block: Block) -> bool:
    """Whether every line of the block starts with the number of values after it (`k a1
    .. ak` records): in a table of equal lines that is every row's, or one row's first
    value equals its length by chance (`2 5 100` among `1 2 100`, `3 4 100`)."""
    if block.kind != "table":
        return True
    return all(
        (vals := line.values()) and vals[0].text == str(len(vals) - 1) for line in block.lines
    )


class _Counts:
    """What the lines of one input show about counts: each line's number of values and
    strings' lengths, the runs of lines of one shape, and the values counted so far."""

    def __init__(self, lines: list[Line], blocks: list[Block]) -> None:
        self.n = len(lines)
        self.nvals = [len(line.values()) for line in lines]
        self.strlens = [
            {len(a.text) for a in line.values() if a.kind in ("str", "word")} for line in lines
        ]
        self.block_of: dict[int, Block] = {}
        self.run_at: dict[int, int] = {}  # line index -> length of the run starting there
        k = 0
        for b in blocks:
            self.run_at[k] = len(b.lines)
            for line in b.lines:
                self.block_of[id(line)] = b
            k += len(b.lines)
        self.prefix = [0]
        for x in self.nvals:
            self.prefix.append(self.prefix[-1] + x)
        self.last_prefix = {p: k for k, p in enumerate(self.prefix)}
        self._strings: dict[int, list[tuple[int, int]]] = {}  # id(values) -> (at, length)

    def like(self, v: int, k: int, j: int, vals: list[Atom]) -> bool:
        """Whether value v (atom j of line k) counts what follows it: the values after it
        on its line, or (within the next few lines) a line's values, a string's length, a
        run of lines (give or take one), the next lines' values together, the lines left."""
        if v == len(vals) - j - 1 and v > 0:
            return True
        strings = self._strings.get(id(vals))
        if strings is None:  # once per line: a line of 5,000 numbers has none to scan
            strings = [(i, len(a.text)) for i, a in enumerate(vals) if a.kind in ("str", "word")]
            self._strings[id(vals)] = strings
        if any(length == v for i, length in strings if i > j):
            return True
        return self.after(v, k)

    def after(self, v: int, k: int) -> bool:
        """Whether v counts what follows line k (for the head of a table that it counts, k
        is the table's last line: `ns nq`, ns lines `l r`, then nq lines)."""
        n, prefix = self.n, self.prefix
        for m in range(k + 1, min(n, k + 1 + COUNT_WINDOW)):
            if v == self.nvals[m] or v in self.strlens[m]:
                return True
            run = self.run_at.get(m)
            if run is not None and v in (run, run - 1, run + 1):
                return True
        if self.last_prefix.get(prefix[k + 1] + v, -1) > k + 1:
            return True
        remaining = n - k - 1
        return v in (remaining, remaining - 1, prefix[-1] - prefix[k + 1])


def _mark_fixed(lines: list[Line], blocks: list[Block]) -> None:
    """Keep count-like integers, sentinels and keywords as written (see the module
    docstring): varying them would break the structure the program parses."""
    counts = _Counts(lines, blocks)
    n, nvals, block_of = counts.n, counts.nvals, counts.block_of
    words = Counter(a.text for line in lines for a in line.values() if a.kind == "word")
    for k, line in enumerate(lines):
        block = block_of[id(line)]
        vals = line.values()
        # A table's first line may hold its own count (n, then n lines of one number),
        # unless the line before already counts the table (3, then 3 lines `a b`; `5 3`,
        # then 3 lines `a b k`).
        head = block.kind == "table" and line is block.lines[0]
        if head and k > 0 and str(len(block.lines)) in [a.text for a in lines[k - 1].values()]:
            head = False
        # The values of a table's head that count the table itself (`n`, then n lines of
        # the head's shape): its other values may count what follows the table.
        own_sizes = (len(block.lines) - 1, n - k - 1, n - k - 2)
        own = (
            {j for j, a in enumerate(vals) if a.kind == "int" and int(a.text) in own_sizes}
            if head
            else set()
        )
        for j, a in enumerate(vals):
            if a.kind == "int":
                v = int(a.text)
                if block.kind == "line" and not block.is_list:
                    a.fixed = counts.like(v, k, j, vals)
                elif len(vals) == 1 and k + 1 < n and nvals[k + 1] == v:
                    # alone on its line in a run of such lines (`3` test cases, then `4`),
                    # but counting the list on the next line
                    a.fixed = _list_sep(lines[k + 1]) is not None
                elif j == 0 and v >= 2 and v == len(vals) - 1 and _own_length_column(block):
                    a.fixed = True  # a record that starts with its own length: k a1 .. ak
                elif j in own:
                    # a count whose items have its own shape (n, then n lines of one number)
                    a.fixed = True
                elif own:
                    # beside the head's own count, a count of what follows the table
                    a.fixed = counts.after(v, k + len(block.lines) - 1)
            elif a.kind == "word" and block.kind != "table":
                has_number = any(b.kind in ("int", "dec") for b in vals)
                if has_number or words[a.text] > 1 or a.text in _ANSWER_WORDS:
                    a.fixed = True
    if n and nvals[0] == 1 and lines[0].values()[0].kind == "int":
        v = int(lines[0].values()[0].text)
        if 1 <= v <= n - 1:
            lines[0].values()[0].fixed = True
    stated = {int(a.text) for line in lines for a in line.values() if a.kind == "int"}
    for line in lines:
        for a in line.values():
            a.free_length = a.kind in ("str", "word") and len(a.text) not in stated
    _mark_sentinel(lines)


def _terminator_line(lines: list[Line]) -> Line | None:
    """The last line with values, where it holds only zeros (or -1s) and others come before
    it: the line that ends the input."""
    tail = [line for line in lines if line.values()]
    if len(tail) >= 2 and all(
        a.kind == "int" and int(a.text) in (0, -1) for a in tail[-1].values()
    ):
        return tail[-1]
    return None


def _mark_sentinel(lines: list[Line]) -> None:
    """A last line of zeros (or -1s) after others ends the input: kept as written."""
    last = _terminator_line(lines)
    for a in last.values() if last is not None else ():
        a.fixed = True


# The widest rows of numbers read as records of fields (`s w1 w2 w3`) rather than as one
# list, where their columns show different ranges (`_record_rows`).
MAX_RECORD_WIDTH = 8


def _record_rows(block: Block) -> bool:
    """Whether a table of list lines is a table of records: every row holds the same
    number of values (at most MAX_RECORD_WIDTH), and some column never reaches half the
    largest value of the table (a height in 1..8 beside widths in 1..2). Pooled as one
    list, a width would be drawn as 8; the rows of a grid of one quantity stay pooled."""
    if block.kind != "table" or not block.is_list:
        return False
    rows = [line.values() for line in block.lines]
    width = len(rows[0])
    if width > MAX_RECORD_WIDTH or any(len(r) != width for r in rows):
        return False
    if any(a.kind != "int" for r in rows for a in r):
        return False
    columns = [[int(r[j].text) for r in rows] for j in range(width)]
    top = max(max(c) for c in columns)
    return top > 0 and any(2 * max(c) <= top for c in columns) and min(map(min, columns)) >= 0


def _assign_columns(blocks: list[Block]) -> None:
    for b_idx, block in enumerate(blocks):
        records = _record_rows(block)
        for line in block.lines:
            for j, a in enumerate(line.atoms):
                if not a.value:
                    continue
                if block.is_list and not records:
                    a.col = ("tl" if block.kind == "table" else "l", b_idx)
                elif block.kind == "table":
                    a.col = ("t", b_idx, j)
                else:
                    a.col = ("s", b_idx, j)


@dataclass
class _Column:
    kind: str
    texts: list[str] = field(default_factory=list)
    free: int = 0  # strings among them whose length no number of their input states

    def add(self, atom: Atom) -> None:
        if self.kind != atom.kind:
            # ints and decimals in one column are decimals
            if {self.kind, atom.kind} == {"int", "dec"}:
                self.kind = "dec"
            else:
                self.kind = "mixed"
        self.texts.append(atom.text)
        self.free += atom.free_length

    # Summaries, computed once the column is complete: a rule is asked for every atom.
    @cached_property
    def counts(self) -> Counter[str]:
        return Counter(self.texts)

    @cached_property
    def choices(self) -> list[str]:
        return _choices(self.texts)

    @cached_property
    def int_choices(self) -> list[int]:
        return sorted({int(t) for t in self.choices})

    @cached_property
    def int_range(self) -> tuple[int, int]:
        values = [int(t) for t in self.texts]
        return min(values), max(values)

    @cached_property
    def dec_range(self) -> tuple[float, float, int]:
        values = [float(t) for t in self.texts]
        return min(values), max(values), max(len(t.partition(".")[2]) for t in self.texts)

    @cached_property
    def alphabet(self) -> str:
        return "".join(sorted(set("".join(self.texts))))

    @cached_property
    def longest(self) -> int:
        return max(map(len, self.texts), default=0)

    @cached_property
    def varied_lengths(self) -> bool:
        """Strings of several lengths, most of them stated by no number (a table of
        words: each row's length is its own)."""
        return len({len(t) for t in self.texts}) >= 2 and 2 * self.free >= len(self.texts)

    @cached_property
    def text_shape(self) -> str | None:
        return text_shape(self.texts, self.alphabet)


@dataclass
class _Parsed:
    test: TestCase
    lines: list[Line]
    blocks: list[Block]

    def skeleton(self) -> tuple[Any, ...]:
        return tuple(b.skeleton() for b in self.blocks)


def _digits_as_text(lines: list[Line]) -> None:
    """Every integer of a program that reads only text becomes a string of digits, but a
    last line of zeros or -1s after others, which still ends the input (`_mark_sentinel`)."""
    keep = _terminator_line(lines)
    for line in lines:
        if line is keep:
            continue
        line.atoms = [Atom("str", a.text) if a.kind == "int" else a for a in line.atoms]


def _parse_test(test: TestCase, text_only: bool = False) -> _Parsed | None:
    """The test's input as lines, blocks and columns; `text_only`: the program reads its
    input only as strings (`reads_only_text`), so its numbers are digits."""
    if not test.stdin or len(test.stdin) > MAX_LEARN_BYTES:
        return None
    try:
        text = test.stdin.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = parse_lines(text)
    if text_only:
        _digits_as_text(lines)
    blocks = _blocks(lines)
    _mark_fixed(lines, blocks)
    _assign_columns(blocks)
    return _Parsed(test, lines, blocks)


# ---------------------------------------------------------------------------- rules
def _fmt(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _choices(texts: list[str]) -> list[str]:
    distinct = sorted(set(texts))
    if len(distinct) <= MAX_CHOICES:
        return distinct
    step = (len(distinct) - 1) / (MAX_CHOICES - 1)
    return [distinct[round(k * step)] for k in range(MAX_CHOICES)]


_STRING_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_DARING = ("keywords", "grown", "grown_few", "grown4", "grown4_seen", "past", "full")
_GROWN = tuple(GROWTH)
_LESS_GROWN = ("grown_few", "grown4", "grown4_seen", "past")
# Levels whose integer ranges widen to the next power of ten; `past` keeps the ranges seen
# (a program that refuses four times the sample's sizes has limits close to its sample).
_WIDENED = ("keywords", "grown", "grown_few", "grown4")


def keyword_vocabulary(program: Program) -> frozenset[str]:
    """The string literals of the source and its headers that could be keywords an input
    names: one token of at most MAX_KEYWORD_LEN characters, no whitespace, escape or
    format directive (`"OCT"`, `"add"`, `"P=NP"`; not `"%d\\n"`)."""
    found: set[str] = set()
    for text in _source_texts(program):
        for m in _STRING_LITERAL.finditer(text):
            word = m.group(1)
            if 0 < len(word) <= MAX_KEYWORD_LEN and not re.search(r"[\s%\\]", word):
                found.add(word)
    return frozenset(found)


def _shape(text: str) -> tuple[str, ...]:
    """What a keyword looks like (its letters' case, its digits, its punctuation): only a
    literal of the same shape can stand in for it (`OCT` for `DEC`, not for `query`)."""
    return tuple(sorted({"A" if c.isupper() else "a" if c.islower() else "9" if c.isdigit()
                         else c for c in text}))


def _keyword_rule(text: str, vocab: frozenset[str]) -> dict[str, Any] | None:
    """A keyword of the source is drawn among the source's literals of its shape, evenly:
    every side of the program's decision on it is drawn, and nothing the program would
    never compare against (a random `TCD` in place of `OCT`) is invented."""
    siblings = sorted(t for t in vocab if _shape(t) == _shape(text))
    return {"choice": siblings} if len(siblings) >= 2 else None


def _pow10_at_least(v: int) -> int:
    p = 1
    while p < v:
        p *= 10
    return p


def _widened(lo: int, hi: int) -> tuple[int, int]:
    """A range seen in a test, widened to the limit a statement would plausibly give: the
    next power of ten above, on each side of zero the range reaches. A positive low end
    stays: `3 <= n` is as plausible a limit as `1 <= n`, and a program that asserts it
    would refuse every grown size for a drawn n of 1."""
    return (
        -_pow10_at_least(-lo) if lo < 0 else lo,
        _pow10_at_least(hi) if hi > 0 else hi,
    )


def _rule(
    atom: Atom,
    column: _Column,
    level: str,
    keyword_col: bool,
    vocab: frozenset[str] = frozenset(),
) -> dict[str, Any] | None:
    """The generator rule an atom is drawn with at `level`, or None: written as seen."""
    if atom.col is None or column.kind == "mixed":
        return None
    if atom.kind in ("word", "str") and atom.text in vocab:
        return _keyword_rule(atom.text, vocab) if level == "keywords" else None
    if atom.fixed:
        return None
    bulk = atom.col[0] in ("t", "tl", "l")
    if not bulk and level not in _DARING:
        return None
    if keyword_col:
        values = column.counts
        if level not in _DARING or len(values) < 2:
            return None
        names = sorted(values)
        return {"choice": names, "weights": [values[v] for v in names]}
    if level == "values":
        options = column.choices
        if len(options) < 2:
            return None
        if column.kind == "int":
            return {"choice": column.int_choices}
        if column.kind == "str" or column.kind == "word":
            same = [t for t in options if len(t) == len(atom.text)]
            return {"choice": same} if len(same) >= 2 else None
        return {"choice": options}
    if column.kind == "int":
        lo, hi = column.int_range
        if lo == hi:
            if bulk:
                return None
            if lo >= 2:
                lo = 1
            elif hi <= -2:
                hi = -1
            else:
                return None
        if level in _WIDENED:
            lo, hi = _widened(lo, hi)
        return {"int": [lo, hi]}
    if column.kind == "dec":
        lo, hi, digits = column.dec_range
        step = 10.0**-digits
        if lo == hi:
            if bulk:
                return None
            if lo >= 2 * step:
                lo = step
            elif hi <= -2 * step:
                hi = -step
            else:
                return None
        return {"float": [_fmt(lo), _fmt(hi)], "digits": digits}
    alphabet = column.alphabet
    if len(alphabet) < 2:
        return None
    length: int | dict[str, list[int]] = len(atom.text)
    if level in _GROWN and atom.col[0] == "t" and column.varied_lengths:
        # One rule for every row, so that the rows are a run a count can grow: from the
        # shortest sample string up, past the longest where the level's target is above
        # it (one more, a program whose limit is the longest refuses only rare draws).
        most = _widened_text_most(_level_most(column.longest, level), len(alphabet), level)
        length = {_GROWN_LENGTH: [min(map(len, column.texts)), most]}
    elif level in _GROWN and atom.col[0] == "s" and atom.free_length:
        # Past the longest of the column's samples, not only this one's: an answer right
        # only up to the longest sample string must fail on every draw.
        seen = max(len(atom.text), column.longest)
        length = {_GROWN_LENGTH: _grown_text_length(seen, len(alphabet), level)}
    text: dict[str, Any] = {"length": length, "alphabet": alphabet}
    if column.text_shape is not None:  # both answers of what the samples ask (data/shapes.py)
        text["plant"] = {"shape": column.text_shape, "share": PLANTED_SHARE}
    return {"text": text}


# The bits a grown string's shortest draw should carry by itself (asmopt.entropy's bound for
# a timed class): a string of 2 letters grown from 5 to at most 80 draws as few as 40 bits.
GROWN_TEXT_BITS = 64


def _grown_text_length(n: int, letters: int, level: str) -> list[int]:
    """[least, most] length of a string of `letters` letters whose longest sample has n
    characters, at a growing level: past n where it can grow (an answer right only up to
    the samples' length must fail), from half the most up, as a grown count is drawn; at the
    widening levels the most is raised, within the level's largest target, until the
    shortest draw carries GROWN_TEXT_BITS."""
    most = _widened_text_most(_grown_length(n, level), letters, level)
    least = min(max(n + 1, (most + 1) // 2), most)  # half the most, rounded up
    return [least, most]


def _widened_text_most(most: int, letters: int, level: str) -> int:
    """`most`, raised at the widening levels (within the level's largest target) until a
    string of that many characters of `letters` letters carries twice GROWN_TEXT_BITS."""
    if level in _WIDENED and letters >= 2:
        needed = math.ceil(2 * GROWN_TEXT_BITS / math.log2(letters))
        most = max(most, min(needed, GROWTH[level][2]))
    return most


# A grown string's length range, drawn by a helper var just before it (`_expanded`).
_GROWN_LENGTH = "between"


def _level_most(n: int, level: str) -> int:
    """The most a size seen as n in the test may be at `level` (GROWTH): n times the
    level's factor, at least its least target and one more than n, within its largest
    target, and never below n."""
    factor, least, most = GROWTH[level]
    return max(n, min(max(math.ceil(n * factor), least, n + 1), most))


def _grown_length(n: int, level: str = "grown") -> int:
    """The most a grown size (a count, a string alone) seen as n in the test may be at
    `level`: `_level_most`, but at least n + 1 even where n is past the level's largest
    target, so that no growing level draws only the sample's size (an answer right only
    for it would pass)."""
    return max(n + 1, _level_most(n, level))


def _expanded(name: str, rule: dict[str, Any]) -> dict[str, Any]:
    """The vars one rule becomes under `name`: a grown string's length is a var of its
    own (`NAME_len`, not shown), drawn just before it."""
    body = rule.get("text")
    if isinstance(body, dict) and isinstance(body.get("length"), dict):
        lo, hi = body["length"][_GROWN_LENGTH]
        return {f"{name}_len": {"int": [lo, hi]}, name: {"text": {**body, "length": f"{name}_len"}}}
    return {name: rule}


def _literal(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


class _TooLarge(Exception):
    pass


class _Writer:
    """Fresh var names and the var budget of one class (`count_name`: the name a drawn
    count on the line being rendered gets)."""

    def __init__(self) -> None:
        self.n = 0
        self.count_name = "n"

    def name(self) -> str:
        self.n += 1
        if self.n > MAX_VARS:
            raise _TooLarge
        return f"v{self.n}"


@dataclass(frozen=True)
class _ListsSeen:
    """What the lists around a line show (`_list_contract`): `near`, a list of the same
    input is a few swaps from sorted; `spaced`, where a list of the program's inputs keeps
    a value apart (data/shapes.py)."""

    near: bool = False
    spaced: Spaced | None = None


def _line_pieces(
    line: Line, rules: list[dict[str, Any] | None], seen: _ListsSeen
) -> list[str | tuple[str, dict[str, Any]]]:
    """A line as literal text and value rules, with runs of three or more values of one
    rule and one separator folded into one `ints` / `repeat` rule, with what the lists
    around it show (`seen`)."""
    out: list[str | tuple[str, dict[str, Any]]] = []
    atoms = line.atoms
    i = 0
    while i < len(atoms):
        rule = rules[i]
        if rule is None:
            out.append(atoms[i].text)
            i += 1
            continue
        # collect value, sep, value, sep, ... with the same rule and separator
        j, count, sep = i, 1, None
        while (
            j + 2 < len(atoms)
            and not atoms[j + 1].value
            and atoms[j + 1].text.isspace()
            and (sep is None or atoms[j + 1].text == sep)
            and rules[j + 2] == rule
        ):
            sep = atoms[j + 1].text
            j += 2
            count += 1
        if count >= 3 and sep is not None:
            if "int" in rule:
                lo, hi = rule["int"]
                numbers = [int(atoms[k].text) for k in range(i, j + 1, 2)]
                contract = _list_contract(numbers, seen, (lo, hi))
                ints = {"count": count, "range": [lo, hi], "sep": sep, **contract}
                if ints.get("distinct"):  # a permutation of 1..count
                    ints["range"] = [1, count]
                out.append(("run", {"ints": ints}))
            else:
                out.append(
                    (
                        "run",
                        {
                            "repeat": {
                                "count": count,
                                "template": "{x}",
                                "vars": _expanded("x", rule),
                                "sep": sep,
                            }
                        },
                    )
                )
            i = j + 1
        else:
            out.append(("one", rule))
            i += 1
    return out


Piece = str | tuple[str, dict[str, Any]]
# The shortest list whose order is taken for a rule of its problem: 5 distinct values fall
# in one of the two sorted orders by chance with probability 2/120.
MIN_ORDERED = 5


def _list_contract(numbers: list[int], seen: _ListsSeen, span: tuple[int, int]) -> dict[str, Any]:
    """What a list's values show about its contract, as `ints` options: a permutation of
    1..n (`distinct`, drawn as one), a sorted list (`order`, kept sorted), a list a few
    adjacent swaps from sorted (`near`, planted in half the draws: data/shapes.py); a
    permutation is planted `near` also where another list of its input is (the samples of
    a queue problem mix lists that are and are not). A list of two values (its rule's
    range `span`, the very two the samples' lists take) is planted `spaced` where a list
    of the program's inputs keeps one of them apart, whether or not this one does (the
    lists of a record take one rule).
    Nothing for lists too short for it to be more than chance."""
    n = len(numbers)
    near = {"plant": {"shape": "near", "share": PLANTED_SHARE}}
    if seen.spaced is not None and tuple(span) == seen.spaced.values:
        mark, gap = seen.spaced.mark, seen.spaced.gap
        plant = {"shape": "spaced", "share": PLANTED_SHARE, "mark": mark, "gap": gap}
        return {"plant": plant}
    if n >= 4 and sorted(numbers) == list(range(1, n + 1)) and numbers != sorted(numbers):
        near_here = seen.near or is_near_sorted(tuple(numbers))
        return {"distinct": True, **(near if near_here else {})}
    if n < MIN_ORDERED or len(set(numbers)) < 2:
        return {}
    if numbers == sorted(numbers):
        return {"order": "asc"}
    if numbers == sorted(numbers, reverse=True):
        return {"order": "desc"}
    return near if is_near_sorted(tuple(numbers)) else {}


def _render(
    pieces: list[Piece], writer: _Writer, names: dict[int, str] | None = None
) -> tuple[str, dict[str, Any]]:
    """Template text and vars of a line's pieces; a `("count", rule)` piece is named
    `writer.count_name`, the name the list or lines it governs refer to. `names`, where
    given, receives each drawn piece's var name by piece index."""
    template: list[str] = []
    variables: dict[str, Any] = {}
    for at, piece in enumerate(pieces):
        if isinstance(piece, str):
            template.append(_literal(piece))
        else:
            if piece[0] == "count":
                name = writer.count_name
            elif piece[0] == "count_after":
                name = writer.count_name + _AFTER
            else:
                name = writer.name()
            variables.update(_expanded(name, piece[1]))
            template.append("{" + name + "}")
            if names is not None:
                names[at] = name
    return "".join(template), variables


def _lone_count(line: Line) -> int | None:
    """The count a line holds alone (a kept count-like integer, its line's only value),
    or None."""
    values = line.values()
    if len(values) == 1 and values[0].kind == "int" and values[0].fixed:
        v = int(values[0].text)
        return v if v >= 1 else None
    return None


def _grown_count(v: int, level: str = "grown", most: int | None = None) -> dict[str, Any]:
    """A grown count's rule: past the sample's own v wherever it can grow (an answer right
    only for the sample's size must fail), from half the most up, at most `most`
    (`_grown_length(v, level)` where not given)."""
    target = _grown_length(v, level) if most is None else most
    return {"int": [min(max(v + 1, target // 2), target), target]}


def _line_shapes(
    parsed: _Parsed,
    columns: dict[Any, _Column],
    keyword_cols: set[Any],
    level: str,
    vocab: frozenset[str],
    spaced: Spaced | None,
) -> tuple[list[tuple[str, list[Piece]]], bool]:
    """Each line's pieces (with a key that says which lines share a shape), and whether
    anything varies; `spaced`: the value the program's lists keep apart (`_ListsSeen`)."""
    shapes: list[tuple[str, list[Piece]]] = []
    varies = False
    # A keyword the input shows on lines of another shape (`add 3` beside `query`) heads
    # another kind of record: drawing it here would change the line's arity.
    # Each line's signature as a small number, hashed once: a line of 5,000 values has a
    # signature of 10,000 items, which a set would hash again for every value added.
    numbered: dict[tuple[Any, ...], int] = {}
    signatures = [numbered.setdefault(line.signature(), len(numbered)) for line in parsed.lines]
    seen_on: dict[str, set[int]] = {}
    for line, signature in zip(parsed.lines, signatures, strict=True):
        for a in line.values():
            seen_on.setdefault(a.text, set()).add(signature)
    seen = _ListsSeen(any(is_near_sorted(_ints_of(line)) for line in parsed.lines), spaced)
    for line, here in zip(parsed.lines, signatures, strict=True):
        line_vocab = frozenset(w for w in vocab if here in seen_on.get(w, {here}))
        rules = [
            _rule(a, columns[a.col], level, a.col in keyword_cols, line_vocab)
            if a.value and a.col is not None
            else None
            for a in line.atoms
        ]
        varies = varies or any(r is not None for r in rules)
        pieces = _line_pieces(line, rules, seen)
        if line.newline:
            pieces.append(line.newline)
        shapes.append((json.dumps(pieces, sort_keys=True), pieces))
    return shapes, varies


def _ints_of(line: Line) -> tuple[int, ...]:
    """The integers of a line that holds nothing else."""
    values = line.values()
    return tuple(int(a.text) for a in values) if all(a.kind == "int" for a in values) else ()


def _line_counts(line: Line) -> list[tuple[Atom, int]]:
    """The counts a line may hold, first to last: its kept count-like integers of at least
    1 (`n m`, where m counts the edges after it, holds m)."""
    return [
        (a, int(a.text))
        for a in line.values()
        if a.kind == "int" and a.fixed and int(a.text) >= 1
    ]


def _piece_atoms(line: Line, pieces: list[Piece]) -> dict[int, Atom]:
    """The atom each single-atom piece of a line stands for, by piece index (`_line_pieces`
    writes one piece per literal atom, one per drawn value and one per folded run, which
    stands for several and is left out)."""
    found: dict[int, Atom] = {}
    at = 0
    i = 0
    atoms = line.atoms
    while i < len(atoms) and at < len(pieces):
        piece = pieces[at]
        if not isinstance(piece, str) and piece[0] == "run":
            body = piece[1].get("ints") or piece[1].get("repeat") or {}
            count = body.get("count")
            if not isinstance(count, int):
                return found  # a run grown to a drawn length: nothing after it is known
            i += 2 * count - 1
        else:
            found[at] = atoms[i]
            i += 1
        at += 1
    return found


def _piece_index(line: Line, pieces: list[Piece], atom: Atom) -> int | None:
    """Where in a line's pieces an atom written as seen stands, or None."""
    for at, a in _piece_atoms(line, pieces).items():
        if a is atom:
            piece = pieces[at]
            return at if isinstance(piece, str) and piece == atom.text else None
    return None


def _governed(pieces: list[Piece], v: int) -> dict[str, Any] | None:
    """The rule body of the one drawn piece of a line, where that piece is a list of v
    values or a string of v characters (what a count on the line before can govern)."""
    drawn = [p for p in pieces if not isinstance(p, str)]
    if len(drawn) != 1:
        return None
    kind, rule = drawn[0]
    if kind == "run":
        body = rule.get("ints") or rule.get("repeat")
        return body if body is not None and body["count"] == v else None
    text = rule.get("text")
    if kind == "one" and isinstance(text, dict) and text.get("length") == v:
        return text
    return None


def _run_after(shapes: list[tuple[str, list[Piece]]], k: int, v: int) -> bool:
    """Whether exactly the v lines after line k share one shape with vars (a run of
    lines that a count on line k governs)."""
    run = shapes[k + 1 : k + 1 + v]
    if v < 2 or len(run) < v or any(key != run[0][0] for key, _ in run):
        return False
    if not any(not isinstance(p, str) for p in run[0][1]):
        return False
    return k + 1 + v >= len(shapes) or shapes[k + 1 + v][0] != run[0][0]


def _grow_counts(
    parsed: _Parsed, shapes: list[tuple[str, list[Piece]]], level: str = "grown"
) -> dict[int, int]:
    """At the growing levels: a count on a line that governs what follows (the next
    line's list or string of exactly that many values or characters, the run of exactly
    that many lines after it, or the rest of its own line: `k a1 .. ak`) becomes a drawn
    count, and what it governs follows it: a list's or string's length names the count's
    var (`_resolve_count`), a run of lines is repeated that many times (`_assemble`). The
    count still equals the items drawn. A second count on that line (`n q`: n rows, then
    q queries) grows too where it counts the run of lines right after what the first
    governs; the returned map says which line starts such a run -> the count's line."""
    later_runs: dict[int, int] = {}
    for k in range(len(parsed.lines)):
        if _grow_own_count(parsed, shapes, k, level) or k + 1 == len(parsed.lines):
            continue
        counts = _line_counts(parsed.lines[k])
        for c, (atom, v) in enumerate(counts):
            body = _governed(shapes[k + 1][1], v)
            if body is not None and k + 2 < len(shapes) and shapes[k + 2][0] == shapes[k + 1][0]:
                body = None  # the first row of a table (n, then an n x n grid): not one list
            if body is None and not _run_after(shapes, k, v):
                continue
            pieces = shapes[k][1]
            at = _piece_index(parsed.lines[k], pieces, atom)
            if at is None:
                continue
            if body is not None:
                body["count" if "count" in body else "length"] = _COUNT_REF
                if body.get("distinct"):  # a permutation stays one at the drawn length
                    body["range"] = [1, _COUNT_REF]
                shapes[k + 1] = (json.dumps(shapes[k + 1][1], sort_keys=True), shapes[k + 1][1])
            pieces[at] = ("count", _grown_count(v, level))
            end = k + (1 if body is not None else v)  # the last line the count governs
            for second, w in counts[c + 1 :]:
                there = _piece_index(parsed.lines[k], pieces, second)
                if there is not None and _run_after(shapes, end, w):
                    pieces[there] = ("count_after", _grown_count(w, level))
                    later_runs[end + 1] = k
                    break
            shapes[k] = (json.dumps(pieces, sort_keys=True), pieces)
            break  # one drawn count a line: its var is the line's count name
    return later_runs


def _grow_own_count(
    parsed: _Parsed, shapes: list[tuple[str, list[Piece]]], k: int, level: str
) -> bool:
    """Grow a line that starts with its own length (`k a1 .. ak`: a kept count, then one
    list of exactly that many values), unless lines of its shape stand beside it (a table
    of such records repeats one template); whether it did."""
    line = parsed.lines[k]
    values = line.values()
    neighbours = {shapes[m][0] for m in (k - 1, k + 1) if 0 <= m < len(shapes)}
    if not values or not values[0].fixed or shapes[k][0] in neighbours:
        return False
    v = int(values[0].text) if values[0].kind == "int" else 0
    pieces = shapes[k][1]
    at = _piece_index(line, pieces, values[0])
    body = _governed([p for i, p in enumerate(pieces) if i != at], v) if at is not None else None
    if v < 2 or at is None or body is None or "count" not in body:
        return False
    body["count"] = _OWN_COUNT_REF
    pieces[at] = ("count", _grown_count(v, level))
    shapes[k] = (json.dumps(pieces, sort_keys=True), pieces)
    return True


# A list's length that follows a drawn count: replaced by the count's var name on render;
# `_OWN_COUNT_REF` where the count starts the list's own line.
_COUNT_REF = "@count"
_OWN_COUNT_REF = "@own_count"
# The suffix of the var of a line's second count (`n q`: what follows the first's run).
_AFTER = "_after"


@dataclass(frozen=True)
class Reading:
    """How a program's source reads its input: `to_end`, in a loop that stops where the
    input ends (`reads_to_end`); `open_loop`, that or any loop no count bounds, which a
    value (a terminator) may end; `text_only`, only as text (`reads_only_text`), so a
    number the input shows is a string of digits to the program."""

    to_end: bool = False
    open_loop: bool = False
    text_only: bool = False


def _assemble(
    parsed: _Parsed,
    shapes: list[tuple[str, list[Piece]]],
    grow: bool,
    writer: _Writer | None = None,
    prefix: str = "",
    later_runs: dict[int, int] | None = None,
    level: str | None = None,
    reading: Reading = Reading(),
) -> dict[str, Any] | None:
    """Template and vars of a class from its lines' pieces: runs of two or more lines of
    one shape with vars fold into a `repeat` (at the `grown` level, one that a lone count
    before it governs draws its length with that count, as does one that a line's second
    count governs: `later_runs`, from `_grow_counts`; a run that no count governs grows at
    `level` where its last row ends it, `_sentinel_column`, where a terminator of zeros
    follows it, or where it ends the input of a program that reads until its input ends,
    `reading`: `reading_of`). `writer` and `prefix` keep the names of a record's vars
    apart from the class's."""
    writer = writer or _Writer()
    template: list[str] = []
    variables: dict[str, Any] = {}
    scalars: list[tuple[str, int]] = []  # drawn integers of the lines so far: (var, seen)
    try:
        i = 0
        while i < len(shapes):
            j = i + 1
            while j < len(shapes) and shapes[j][0] == shapes[i][0]:
                j += 1
            pieces = shapes[i][1]
            has_vars = any(not isinstance(p, str) for p in pieces)
            if j - i >= 2 and has_vars:
                count: int | str = j - i
                if grow and i > 0 and _counts_run(parsed.lines[i - 1], shapes[i - 1][1], j - i):
                    count = f"{prefix}n{i - 1}"  # the count var line i - 1 was rendered with
                elif grow and later_runs and i in later_runs:
                    count = f"{prefix}n{later_runs[i]}{_AFTER}"
                rows = parsed.lines[i:j]
                free = _free_rows(parsed.lines, (i, j), pieces, count, scalars, reading)
                end = free[1] if free else None
                if free:  # no count governs them: they grow
                    count = _grown_rows(free[0], level, f"{prefix}n{i}_rows", variables)
                inner_names: dict[int, str] = {}
                inner, inner_vars = _render(pieces, writer, inner_names)
                if grow:
                    _row_contract(
                        rows, pieces, inner_names, inner_vars, scalars,
                        count if isinstance(count, str) else None,
                        _most_rows(count, variables),
                    )
                else:  # sizes and ranges as seen; the rows' order is still the contract
                    _order_columns(
                        rows, pieces, inner_names, inner_vars, _most_rows(count, variables)
                    )
                name = writer.name()
                variables[name] = {
                    "repeat": {"count": count, "template": inner, "vars": inner_vars, "sep": ""}
                }
                template.append("{" + name + "}")
                if end is not None:
                    last = _sentinel_row(rows[-1], shapes[j - 1][1], end, inner_names, inner_vars)
                    text, vs = _render(last, writer)
                    template.append(text)
                    variables.update(vs)
            else:
                for k in range(i, j):
                    writer.count_name = f"{prefix}n{k}"
                    line_names: dict[int, str] = {}
                    text, vs = _render(shapes[k][1], writer, line_names)
                    template.append(text)
                    scalars += _drawn_ints(parsed.lines[k], shapes[k][1], line_names)
                    vs = _resolve_count(vs, f"{prefix}n{k}", _OWN_COUNT_REF)
                    vs = _resolve_count(vs, f"{prefix}n{k - 1}")
                    if grow and j - i == 1 and _ends_input(parsed.lines, k + 1, reading):
                        _grown_list(vs, scalars, level, f"{prefix}n{k}_items", variables)
                    variables.update(vs)
            i = j
    except _TooLarge:
        return None
    return {"template": "".join(template), "vars": variables}


# The values that end a table no count governs (`amount 0` after a ledger's transactions).
SENTINELS = ("0", "-1")


def _sentinel_column(rows: list[Line], pieces: list[Piece]) -> int | None:
    """The piece index of a drawn integer column whose value in the table's last row is a
    sentinel (SENTINELS) that none of the MIN_ROWS_FOR_RELATION or more rows before it
    holds there: the row that ends the input's table, as `0, 0` ends a ledger."""
    if len(rows) < MIN_ROWS_FOR_RELATION + 1:
        return None
    per_row = [_piece_atoms(row, pieces) for row in rows]
    for at, atom in sorted(per_row[-1].items()):
        if isinstance(pieces[at], str) or atom.kind != "int" or atom.text not in SENTINELS:
            continue
        if all(at in row and row[at].kind == "int" and row[at].text != atom.text
               for row in per_row[:-1]):
            return at
    return None


def _ends_input(lines: list[Line], end: int, reading: Reading) -> bool:
    """Whether a table whose rows stop before line `end` is the last thing its program
    reads: nothing follows it and the program reads until its input ends, or the input's
    last line is a terminator of zeros after it (`0 0`, kept as written: `_mark_sentinel`)
    and the program reads in a loop no count bounds (a matrix's last row of zeros, read
    by loops of five, is no terminator). Blank lines at the input's end follow nothing."""
    stop = len(lines)
    while stop > end and not "".join(a.text for a in lines[stop - 1].atoms).strip():
        stop -= 1
    if end == stop:
        return reading.to_end
    last = lines[end].values()
    return (
        reading.open_loop
        and end == stop - 1
        and bool(last)
        and all(a.fixed and a.kind == "int" and a.text in SENTINELS for a in last)
    )


def _grown_rows(
    seen: int, level: str | None, name: str, variables: dict[str, Any]
) -> int | str:
    """The drawn rows of a table no count governs (those before its sentinel row, or all
    of one a terminator or the input's end ends): as many as the test shows, or at a
    growing level a count var of their own (not shown), drawn past them as a count is
    (`_grown_count`)."""
    if level not in GROWTH:
        return seen
    variables[name] = _grown_count(seen, level)
    return name


def _free_rows(
    lines: list[Line],
    span: tuple[int, int],
    pieces: list[Piece],
    count: int | str,
    scalars: list[tuple[str, int]],
    reading: Reading,
) -> tuple[int, int | None] | None:
    """Of a table `lines[i:j]` (`span`) whose `count` no count rule took (an int): how
    many of its rows may grow and the piece index of the column its last row ends it by
    (`_sentinel_column`), or None where they stay as many as the test shows. Where its
    last row ends it, the rows before that one grow; where it ends the input of a program
    that reads until its input ends (`_ends_input`, `reading`), all of them. None where
    an integer before it is its length (a count the rules did not take is still one)."""
    i, j = span
    if not isinstance(count, int) or any(v == j - i for _, v in scalars):
        return None
    end = _sentinel_column(lines[i:j], pieces)
    if end is not None:
        return j - i - 1, end
    return (j - i, None) if _ends_input(lines, j, reading) else None


def _grown_list(
    line_vars: dict[str, Any],
    scalars: list[tuple[str, int]],
    level: str | None,
    name: str,
    variables: dict[str, Any],
) -> None:
    """A line's one list (`3 4 1 7 2`) that no count governs, where the line is the last
    thing its program reads (`_ends_input`): its length becomes a count var of its own
    (not shown), drawn past the sample's as a count is (`_grown_rows`), since the program
    takes as many values as come. Not where an integer before it equals its length (a
    count the rules did not take)."""
    lists = [
        body
        for rule in line_vars.values()
        for kind in ("ints", "repeat")
        if isinstance(body := rule.get(kind), dict)
    ]
    if len(lists) != 1 or not isinstance(lists[0]["count"], int):
        return
    seen = lists[0]["count"]
    if any(v == seen for _, v in scalars):
        return
    count = _grown_rows(seen, level, name, variables)
    lists[0]["count"] = count
    if lists[0].get("distinct") and lists[0].get("range") == [1, seen]:
        lists[0]["range"] = [1, count]  # a permutation: of 1..its drawn length


def _sentinel_row(
    row: Line, pieces: list[Piece], end: int, names: dict[int, str], rules: dict[str, Any]
) -> list[Piece]:
    """The pieces of a table's last row: its sentinel as written, and each column kept in
    order down the rows (`across`) at the end of its range, so that the row follows every
    drawn one (strictly, for a column with no value twice: the drawn rows then stop one
    short of that end)."""
    atoms = _piece_atoms(row, pieces)
    out = list(pieces)
    out[end] = atoms[end].text
    for at, name in names.items():
        rule = rules.get(name, {})
        way = rule.get("across")
        if way is None or at >= len(out) or isinstance(out[at], str):
            continue
        side = 1 if way == "asc" else 0
        bound = rule["int"][side]
        out[at] = str(bound) if isinstance(bound, int) else ("value", {"value": bound})
        if rule.get("distinct"):
            step = -1 if way == "asc" else 1
            rule["int"][side] = bound + step if isinstance(bound, int) else f"{bound} + {step}"
    return out


def _drawn_ints(line: Line, pieces: list[Piece], names: dict[int, str]) -> list[tuple[str, int]]:
    """The line's single integers, each as what a later bound may name (a drawn one's var,
    a kept one's value: `n`, a count) and the value the test shows."""
    atoms = _piece_atoms(line, pieces)
    found = []
    for at, atom in sorted(atoms.items()):
        if atom.kind != "int":
            continue
        if at in names and "int" in _rule_of(pieces[at]):
            found.append((names[at], int(atom.text)))
        elif isinstance(pieces[at], str) and _INT.fullmatch(atom.text):
            found.append((atom.text, int(atom.text)))
    return found


def _rule_of(piece: Piece) -> dict[str, Any]:
    return {} if isinstance(piece, str) else piece[1]


# A relation between a table's columns is taken for its problem's rule only when this many
# rows show it (3 unordered pairs fall in order by chance with probability 1/8).
MIN_ROWS_FOR_RELATION = 3
# A column's order down the rows (days of a ledger, times of a log) is taken for a rule of
# its problem when a shuffle of its values would fall in that order, or the other, with at
# most this chance: 4 distinct values, 1/12; 5 with two pairs tied, 1/15.
MAX_ORDER_CHANCE = 1 / 8


def _most_rows(count: int | str, variables: dict[str, Any]) -> int | None:
    """The most rows a table's count can draw: the count itself, or its var's upper
    bound where that is a number (None where it is not known)."""
    if isinstance(count, int):
        return count
    bounds = variables.get(count, {}).get("int")
    return bounds[1] if bounds and isinstance(bounds[1], int) else None


def _column_order(values: list[int]) -> str | None:
    """"asc" or "desc" where the column's order down the rows is a rule by
    MAX_ORDER_CHANCE, else None."""
    if len(set(values)) < 2:
        return None
    up, down = values == sorted(values), values == sorted(values, reverse=True)
    way = "asc" if up else "desc" if down else None
    ties = sum(math.lgamma(m + 1) for m in Counter(values).values())
    chance = 2 * math.exp(ties - math.lgamma(len(values) + 1))
    return way if way and chance <= MAX_ORDER_CHANCE else None


def _order_columns(
    rows: list[Line],
    pieces: list[Piece],
    names: dict[int, str],
    variables: dict[str, Any],
    most_rows: int | None,
    after: Collection[int] = (),
    bounded: Collection[int] = (),
) -> None:
    """Each integer column of a table whose values run in order down its rows
    (`_column_order`: days of a ledger, times of a log) drawn in that order (`across`),
    with no value twice where the rows show none twice and its range, a pair of numbers
    no later bound replaces (`bounded`), holds `most_rows` values and one to spare (a
    sentinel row's, `_sentinel_row`). A contract, not a size: kept at every level. A
    column drawn from the one before it (`after`) cannot be drawn first, and is not."""
    if len(rows) < MIN_ROWS_FOR_RELATION:
        return
    per_row = [_piece_atoms(row, pieces) for row in rows]
    for at, name in sorted(names.items()):
        rule = variables.get(name, {})
        bounds = rule.get("int")
        if at in after or not bounds or not all(
            at in atoms and atoms[at].kind == "int" for atoms in per_row
        ):
            continue
        seen = [int(atoms[at].text) for atoms in per_row]
        way = _column_order(seen)
        if way is None or not all(isinstance(b, int | str) for b in bounds):
            continue
        rule["across"] = way
        lo, hi = bounds
        numbers = isinstance(lo, int) and isinstance(hi, int) and at not in bounded
        wide = numbers and most_rows is not None and hi - lo >= most_rows
        if wide and len(set(seen)) == len(rows):
            rule["distinct"] = True


def _row_contract(
    rows: list[Line],
    pieces: list[Piece],
    names: dict[int, str],
    variables: dict[str, Any],
    scalars: list[tuple[str, int]],
    own_count: str | None = None,
    most_rows: int | None = None,
) -> None:
    """What a table's rows show about their contract, written into the row's rules:

    * a column whose values run in order down the rows (`_column_order`: days of a
      ledger, times of a log) is drawn in that order (`across`), with no value twice where
      the rows show none twice and its range holds `most_rows` values;
    * a column never above the one after it (`l r` queries, `start end` ranges) is drawn
      from the one before it up (its lower bound is that var);
    * a column never above a drawn integer of an earlier line (an index into a list of n,
      a position on a road of length n), and reaching at least half of it, is drawn up to
      that integer (less one where the column starts at 0: a 0-based index); the earlier
      integer seen as the smallest such bound is the one taken (never the count of these
      rows itself, which a row's values match by chance more often than they index).

    A relation needs MIN_ROWS_FOR_RELATION rows; where the rows show none, the rules stay."""
    if len(rows) < MIN_ROWS_FOR_RELATION:
        return
    per_row = [_piece_atoms(row, pieces) for row in rows]
    columns = [
        at
        for at in sorted(names)
        if "int" in _rule_of(pieces[at])
        and all(at in atoms and atoms[at].kind == "int" for atoms in per_row)
    ]
    seen = {at: [int(atoms[at].text) for atoms in per_row] for at in columns}
    columns = [at for at in columns if all(isinstance(x, int) for x in variables[names[at]]["int"])]
    bound_of: dict[int, str] = {}
    for at in columns:
        top = max(seen[at])
        bounds = [
            (v, name)
            for name, v in scalars
            if top >= 2 and top <= v <= 2 * top and name != own_count
        ]
        if bounds:
            bound_of[at] = min(bounds)[1]
    ordered = []
    for left, right in itertools.pairwise(columns):
        a, b = seen[left], seen[right]
        # Columns whose values do not even overlap (positions, then weights in the
        # hundreds) are in order by their ranges, not by a rule of the rows.
        if (
            all(x <= y for x, y in zip(a, b, strict=True))
            and any(x < y for x, y in zip(a, b, strict=True))
            and min(b) <= max(a)
        ):
            ordered.append((left, right))
            if right in bound_of:  # l <= r <= n: l is bounded as r is
                bound_of.setdefault(left, bound_of[right])
    after = {right for _, right in ordered}
    _order_columns(rows, pieces, names, variables, most_rows, after, set(bound_of))
    # Indices from 0 in any column of the rows: every bounded one is an index from 0.
    zero_based = any(min(seen[at]) == 0 for at in columns)
    for at, name in bound_of.items():
        rule = variables[names[at]]
        lo = rule["int"][0]
        top = f"{name} - 1" if zero_based else name
        rule["int"] = [f"min({lo}, {top})", top]
    for left, right in ordered:
        rule = variables[names[right]]
        rule["int"] = [names[left], f"max({names[left]}, {rule['int'][1]})"]


def _resolve_count(
    variables: dict[str, Any], count_name: str, ref: str = _COUNT_REF
) -> dict[str, Any]:
    """`variables` with a list's or a string's `ref` length replaced by the count var's
    name."""
    for rule in variables.values():
        for kind, key in (("ints", "count"), ("repeat", "count"), ("text", "length")):
            body = rule.get(kind)
            if isinstance(body, dict) and body.get(key) == ref:
                body[key] = count_name
        body = rule.get("ints")
        if isinstance(body, dict) and body["range"][1] == ref:
            body["range"] = [1, count_name]  # a permutation: of 1..its drawn length
    return variables


def _counts_run(line: Line, pieces: list[Piece], length: int) -> bool:
    """Whether `line` was given a drawn count (`_grow_counts`) for a run of `length`."""
    drawn = any(not isinstance(p, str) and p[0] == "count" for p in pieces)
    return drawn and any(v == length for _, v in _line_counts(line))


def _line_kind(line: Line) -> tuple[Any, ...]:
    """A line's shape, with a list of any length one shape (records differ in length)."""
    sep = _list_sep(line)
    return ("list", sep, line.newline) if sep is not None else line.signature()


def _records(parsed: _Parsed) -> int | None:
    """Lines per record where the input is a test-case count T >= 2 alone on its first
    line and then T records of two or more lines each of one structure (`3`, then three
    times `n` and a list of n numbers), else None."""
    lines = parsed.lines
    t = _lone_count(lines[0]) if lines else None
    rest = lines[1:]
    if t is None or t < 2 or not rest or len(rest) % t:
        return None
    size = len(rest) // t
    if size < 2:
        return None
    first = [_line_kind(line) for line in rest[:size]]
    for k in range(1, t):
        if [_line_kind(line) for line in rest[k * size : (k + 1) * size]] != first:
            return None
    return size


def _record_items(rules: dict[str, Any]) -> int | None:
    """The most values (list items, characters) a record's grown counts and lengths can
    draw together, or None where nothing in it grows."""
    most: dict[str, int] = {}
    grown = 0
    for name, rule in rules.items():
        if "int" in rule and all(isinstance(x, int) for x in rule["int"]):
            most[name] = rule["int"][1]
        size = rule.get("ints", rule.get("repeat", {})).get("count")
        size = rule.get("text", {}).get("length", size)
        if isinstance(size, str):
            grown += most.get(size, RECORD_ITEMS)
    return grown or None


def _grown_records(
    parsed: _Parsed,
    shapes: list[tuple[str, list[Piece]]],
    size: int,
    level: str = "grown",
    later_runs: dict[int, int] | None = None,
) -> dict[str, Any] | None:
    """At the `grown` level, an input of T records (`_records`): the first record's body
    (grown itself) repeated a drawn number of times, that number written where T was.
    Where the record grows inside, the count of records grows as far as RECORD_ITEMS
    values in all allow (at least to T + 1): each record adds an answer (many small
    answers carry the bits a few large ones cannot), while both grown in full would draw
    inputs of megabytes. At the `grown_few` level, for a program whose own limits take
    few records, their count grows less (in [T + 1, 2 T], at least 8)."""
    writer = _Writer()
    inner_runs = {  # the first record's, by its own line numbers
        start - 1: line - 1 for start, line in (later_runs or {}).items() if start <= size
    }
    record = _assemble(
        _Parsed(parsed.test, parsed.lines[1 : 1 + size], []), shapes[1 : 1 + size], True,
        writer, prefix="r", later_runs=inner_runs,
    )
    if record is None:
        return None
    t = _lone_count(parsed.lines[0]) or 0
    inner = _record_items(record["vars"])
    # Never the sample's own number of records: an answer right only for it must fail.
    if inner is None:
        count = _grown_count(t, level)
    elif level == "grown_few":  # a program that takes few records (`assert(t < 11)`)
        count = {"int": [t + 1, max(t + 1, min(max(2 * t, 8), _grown_length(t, level)))]}
    else:
        most = max(t + 1, min(_grown_length(t, level), RECORD_ITEMS // max(1, inner)))
        count = _grown_count(t, level, most)
    head = "".join(p for p in shapes[0][1] if isinstance(p, str))
    text = _literal(parsed.lines[0].values()[0].text)
    at = head.find(text)
    if at < 0:
        return None
    template = _literal(head[:at]) + "{t}" + _literal(head[at + len(text) :]) + "{records}"
    records = {"count": "t", "template": record["template"], "vars": record["vars"], "sep": ""}
    return {"template": template, "vars": {"t": count, "records": {"repeat": records}}}


# Rows that each state their own length (`n v1 .. vn`, a case a line) are one table where
# this many or more, of two or more lengths, end the input (`_own_count_rows`).
MIN_OWN_COUNT_ROWS = 3


def _own_count_row(line: Line) -> tuple[int, list[int], str] | None:
    """(n, the n integers after it, their separator) of a line that is an integer n >= 1
    and then exactly n integers, all joined by one whitespace text, else None."""
    atoms = line.atoms
    while atoms and not atoms[-1].value and atoms[-1].text.isspace():
        atoms = atoms[:-1]  # trailing whitespace
    values, gaps = atoms[0::2], atoms[1::2]
    if len(values) < 2 or any(a.kind != "int" for a in values):
        return None
    if any(a.value or not a.text.isspace() for a in gaps) or len({a.text for a in gaps}) != 1:
        return None
    n = int(values[0].text)
    if n < 1 or len(values) != n + 1:
        return None
    return n, [int(a.text) for a in values[1:]], gaps[0].text


def _own_count_rows(
    parsed: _Parsed,
    shapes: list[tuple[str, list[Piece]]],
    level: str,
    reading: Reading,
    later_runs: dict[int, int],
) -> dict[str, Any] | None:
    """At a growing level, an input whose last MIN_OWN_COUNT_ROWS or more lines each state
    their own length (`2 4 10`, `9 2 5 6 4 5 9 2 1 4`, `1 9`: a case a line, read until
    the input ends or up to a terminator of zeros, `_ends_input`) and show two or more
    lengths: the lines before them as `_assemble` draws them, then a table of rows
    `n v1 .. vn` whose number grows as a count does and whose lengths stay in the range
    the rows show (each row one more answer), values in the rows' pooled range (widened
    at the widening levels). None where the input does not end so, or no count-free
    table is there (a number before the rows that equals their number counts them)."""
    lines = parsed.lines
    end = len(lines) - 1 if _ends_input(lines, len(lines) - 1, reading) else len(lines)
    if not _ends_input(lines, end, reading):
        return None
    start = end
    while start > 0 and _own_count_row(lines[start - 1]) is not None:
        start -= 1
    rows = [row for line in lines[start:end] if (row := _own_count_row(line)) is not None]
    if len(rows) < MIN_OWN_COUNT_ROWS or len({n for n, _, _ in rows}) < 2:
        return None
    if any(v == len(rows) for line in lines[:start] for v in _ints_of(line)):
        return None
    writer = _Writer()
    head: dict[str, Any] | None = {"template": "", "vars": {}}
    if start:
        runs = {k: line for k, line in later_runs.items() if k < start}
        before = _Parsed(parsed.test, lines[:start], [])
        head = _assemble(before, shapes[:start], True, writer, later_runs=runs, level=level)
    if head is None:
        return None
    values = [v for _, items, _ in rows for v in items]
    lo, hi = min(values), max(values)
    if level in _WIDENED:
        lo, hi = _widened(lo, hi)
    lengths = [n for n, _, _ in rows]
    length, items, table = writer.name(), writer.name(), writer.name()
    variables = dict(head["vars"])
    count = _grown_rows(len(rows), level, f"n{start}_rows", variables)
    sep = rows[0][2]
    row_vars = {
        length: {"int": [min(lengths), max(lengths)]},
        items: {"ints": {"count": length, "range": [lo, hi], "sep": sep}},
    }
    template = "{" + length + "}" + _literal(sep) + "{" + items + "}\n"
    variables[table] = {
        "repeat": {"count": count, "template": template, "vars": row_vars, "sep": ""}
    }
    tail = ""  # the terminator, as written
    if end < len(lines):
        tail = "".join(_literal(p) for p in shapes[end][1] if isinstance(p, str))
    return {"template": head["template"] + "{" + table + "}" + tail, "vars": variables}


def _class_body(
    parsed: _Parsed,
    columns: dict[Any, _Column],
    keyword_cols: set[Any],
    level: str,
    vocab: frozenset[str],
    spaced: Spaced | None,
    reading: Reading = Reading(),
) -> dict[str, Any] | None:
    """The class of one test at one level, or None when nothing would vary; `reading`: how
    the program reads its input (`reading_of`)."""
    shapes, varies = _line_shapes(parsed, columns, keyword_cols, level, vocab, spaced)
    grow = level in _GROWN
    later_runs = _grow_counts(parsed, shapes, level) if grow else {}
    if not varies and not grow:
        return None
    size = _records(parsed) if grow else None
    body = _grown_records(parsed, shapes, size, level, later_runs) if size else None
    if grow and body is None:
        body = _own_count_rows(parsed, shapes, level, reading, later_runs)
    body = body or _assemble(
        parsed, shapes, grow, later_runs=later_runs, level=level, reading=reading
    )
    if body is None or (not varies and not body["vars"]):
        return None
    return body


def _class_name(test_name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.\-]", "_", test_name)[:56] or "c"
    if not base[0].isalnum():
        base = "c" + base
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}-{k}"
    taken.add(name)
    return name


@dataclass(frozen=True)
class LearntClass:
    """One class learnt from one test (or a group of tests of the same shape): its body at
    each level that varies something, most daring first."""

    name: str
    tests: tuple[str, ...]
    bodies: tuple[tuple[str, dict[str, Any]], ...]

    def generator(self, level: str) -> InputGenerator:
        body = dict(self.bodies)[level]
        return InputGenerator.from_dict(
            {
                "version": GENERATOR_VERSION,
                "classes": {self.name: body},
                "tests": {t: self.name for t in self.tests},
                "origin": "learnt",
            }
        )


def learn_classes(program: Program) -> list[LearntClass]:
    """Every class the program's test inputs give, each with its body per level (no class
    for a test with empty, non-UTF-8 or oversized input, or nothing that can vary)."""
    reading = reading_of(program)
    parsed = [
        p for p in (_parse_test(t, reading.text_only) for t in program.tests) if p is not None
    ]
    vocab = keyword_vocabulary(program)
    groups: dict[tuple[Any, ...], list[_Parsed]] = {}
    # Tests that end with different exit codes (a bad input's error and a good input's
    # answer) are drawn apart even where they look alike: a class's draws are judged by
    # the exit code of its test.
    for p in parsed:
        groups.setdefault((p.test.expected_exit, p.skeleton()), []).append(p)
    # A value kept apart in one test's lists is the problem's structure: every test's
    # lists of the same two values plant it (one sample in three says "YES").
    spaced = spaced_shape([_ints_of(line) for p in parsed for line in p.lines])
    found: dict[str, tuple[list[str], list[tuple[str, dict[str, Any]]]]] = {}
    order: list[str] = []
    for members in groups.values():
        columns: dict[Any, _Column] = {}
        for p in members:
            for line in p.lines:
                for a in line.values():
                    if a.col is None or a.fixed:
                        continue
                    if a.col not in columns:
                        columns[a.col] = _Column(a.kind)
                    columns[a.col].add(a)
        for p in members:  # fixed atoms still need a column entry to look up
            for line in p.lines:
                for a in line.values():
                    if a.col is not None and a.col not in columns:
                        columns[a.col] = _Column(a.kind, [a.text])
        keyword_cols = {
            key
            for key, col in columns.items()
            if key[0] == "t"
            and col.kind in ("word", "str")  # `X++` and `--X` are operations, as `add` is
            and (len(set(col.texts)) < len(col.texts) or set(col.texts) <= _ANSWER_WORDS)
        }
        for p in members:
            bodies: list[tuple[str, dict[str, Any]]] = []
            for level in LEVELS:
                body = _class_body(p, columns, keyword_cols, level, vocab, spaced, reading)
                if body is None:
                    continue
                if bodies and bodies[-1][1] == body:  # named by the plainest level giving it
                    if level not in _LESS_GROWN:  # a size that would not shrink: `grown`
                        bodies[-1] = (level, body)
                elif all(body != b for _, b in bodies):
                    bodies.append((level, body))
            if not bodies:
                continue
            key = json.dumps([p.test.expected_exit, bodies], sort_keys=True)
            if key not in found:
                found[key] = ([], bodies)
                order.append(key)
            found[key][0].append(p.test.name)
    taken: set[str] = set()
    classes = []
    for key in order:
        tests, bodies = found[key]
        classes.append(LearntClass(_class_name(tests[0], taken), tuple(tests), tuple(bodies)))
    return classes


def _source_texts(program: Program) -> tuple[str, ...]:
    """The program's source and its headers' texts, comments removed: a read left in a
    comment (`// while (scanf(...) != EOF)` of a template) or a word only a comment names
    says nothing of how the program reads."""
    return tuple(_uncommented(t) for t in (program.source, *program.header_files.values()))


@functools.lru_cache(maxsize=64)
def _uncommented(text: str) -> str:
    return strip_comments(text)


def reads_stdin(program: Program) -> bool:
    """Whether the source (or a header) names a way of reading standard input."""
    return any(_READS_STDIN.search(t) for t in _source_texts(program))


# A loop that reads until the input ends: `while (scanf("%d %d", &a, &b) == 2)`,
# `!= EOF`, `~scanf(...)`, `while (fgets(...))`, `(c = getchar()) != EOF`, `!feof(stdin)`,
# or an `if` that leaves a loop when a read fails (`if (scanf(...) != 2) break;`). A
# `return` there is an error check of one read (`Nespravny vstup`), not the input's end;
# an empty loop (`while ((c = getchar()) != EOF);`) only drains what is left.
_LOOP_HEAD = re.compile(r"\b(while|for|if)\s*\(")
_READ_CALL = re.compile(
    r"\b(?:scanf|fscanf|fgets|gets|getline|getdelim|getchar|getchar_unlocked|getc|fgetc|"
    r"fread|read|feof)\s*\("
)
_READ_FAILS = re.compile(
    r"\bEOF\b|(?:==|>=|>|!=|<)\s*[0-9]|\b[0-9]+\s*(?:==|!=|<=?|>=?)|~\s*\(?\s*f?scanf"
    r"|\bfeof\s*\(|\b(?:fgets|gets|getline|getdelim)\s*\("
)


def _condition(source: str, at: int) -> tuple[str, int]:
    """The text inside the parentheses that open at `at` (balanced), and the index past
    them."""
    depth, k = 0, at
    while k < len(source):
        if source[k] == "(":
            depth += 1
        elif source[k] == ")":
            depth -= 1
            if depth == 0:
                return source[at + 1 : k], k + 1
        k += 1
    return source[at + 1 :], len(source)


# A bound a loop's header sets (`i < 5`, `k <= N` with `#define N 4`), and the `#define`s
# of a number it may name.
_BOUND = re.compile(r"\b([A-Za-z_]\w*)\s*<=?\s*([A-Za-z_]\w*|\d+)\b")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+\(?(\d+)\)?[ \t]*$", re.M)
# A bound at least this large is a buffer's capacity (`i < MAXN && scanf(..) == 1`):
# reading up to it reads what comes. A smaller one is a count (`i < 5`).
MIN_CAPACITY = 1000


def _bounded(header: str, defines: dict[str, int], text: str) -> bool:
    """Whether a loop's header bounds it by a number under MIN_CAPACITY: a counter (a
    variable the source steps up somewhere in `text`: `i++`, `++i`, `i += 1`) kept below
    it. A value the loop reads and checks (`base <= 36`) is no count."""
    for m in _BOUND.finditer(header):
        counter, bound = m.groups()
        value = int(bound) if bound.isdigit() else defines.get(bound)
        if value is None or value >= MIN_CAPACITY:
            continue
        name = re.escape(counter)
        if re.search(rf"\b{name}\s*(?:\+\+|\+=)|\+\+\s*{name}\b", text):
            return True
    return False


_CHAR_LITERAL = re.compile(r"'(?:[^'\\\n]|\\.)*'")


def _enclosing_loop(text: str, at: int) -> str | None:
    """The header (inside its parentheses) of the innermost `for` or `while` loop whose
    body holds position `at`, or None. Literals are blanked first, so that a brace or a
    parenthesis inside one (`printf("(")`) leaves the nesting as it is."""
    blank = _STRING_LITERAL.sub(lambda m: '"' + " " * len(m.group(1)) + '"', text)
    blank = _CHAR_LITERAL.sub(lambda m: " " * len(m.group(0)), blank)
    nesting = blank.replace("{", "(").replace("}", ")")  # one kind of bracket, balanced
    found = None
    for head in re.finditer(r"\b(?:for|while)\s*\(", blank[:at]):
        header, past = _condition(blank, head.end() - 1)
        start = past + len(blank[past:]) - len(blank[past:].lstrip())
        if blank.startswith("{", start):
            end = _condition(nesting, start)[1]
        else:  # one statement: the `if` itself where it follows the header directly
            end = blank.find(";", at) + 1 if start == at else start
        if start <= at < end:
            found = header
    return found


def reads_to_end(program: Program) -> bool:
    """Whether the source reads its input in a loop that stops where the input ends, so a
    table of rows no count governs at the end of a test may hold more rows than the test
    shows (`_assemble`): the program itself takes as many as come. A loop that a small
    number also bounds (`i < 5 && scanf(..) == 1`, or a failed read's `break` inside
    `for (i = 0; i < 5; i++)`) reads at most that many."""
    for text in _source_texts(program):
        defines = {m.group(1): int(m.group(2)) for m in _DEFINE.finditer(text)}
        for head in _LOOP_HEAD.finditer(text):
            condition, past = _condition(text, head.end() - 1)
            if not _READ_CALL.search(condition) or not _READ_FAILS.search(condition):
                continue
            after = text[past:].lstrip()
            if head.group(1) == "if":
                loop = _enclosing_loop(text, head.start())
                if after.lstrip("{ \t\n").startswith("break") and not (
                    loop is not None and _bounded(loop, defines, text)
                ):
                    return True
            elif not after.startswith(";") and not _bounded(condition, defines, text):
                return True
    return False


# A loop no count bounds: `for (;;)`, `while (1)`, `while (true)`, `do { .. } while (1)`.
_OPEN_LOOP = re.compile(r"\bfor\s*\(\s*;\s*;\s*\)|\bwhile\s*\(\s*(?:1|true|TRUE)\s*\)")


# Reads whose conversions the format says (`_scanf_conversions`), and every other way a
# program may read or convert numbers, which leave the input's numbers numbers.
_SCANF_CALL = re.compile(r"\b(f?scanf)\s*\(")
_OTHER_READ = re.compile(
    r"\b(?:getchar|getchar_unlocked|getc|getc_unlocked|fgetc|fgetc_unlocked|fgets|gets|"
    r"getline|getdelim|fread|read|vscanf|vfscanf|sscanf|atoi|atol|atoll|atof|strtol|strtoll|"
    r"strtoul|strtoull|strtod|strtof|strtold|strtoimax|strtoumax)\s*\("
)
# A format of string literals only (`"%s %s"`, `"%" "s"`), as a call's first argument.
_FORMAT = re.compile(r'\s*(?:"(?:[^"\\\n]|\\.)*"\s*)+')
# A conversion of a scanf format (`%*5lld`, `%[^\n]`), or the `%%` that reads a `%`.
_CONVERSION = re.compile(r"%%|%\*?\d*(?:hh|h|ll|l|L|j|z|t|q)?([a-zA-Z\[])")


def _scanf_conversions(arguments: str, stream_first: bool) -> set[str] | None:
    """The conversion letters of one scanf call's format (`s`, `d`, `[`, ...), or None
    where the format is not one or more string literals only (a macro such as `SCNu8`,
    a variable)."""
    if stream_first:
        arguments = arguments.partition(",")[2]
    fmt = _FORMAT.match(arguments)
    rest = arguments[fmt.end() :].strip() if fmt else ""
    if fmt is None or (rest and not rest.startswith(",")):
        return None
    text = "".join(_STRING_LITERAL.findall(fmt.group(0)))
    return {m.group(1) for m in _CONVERSION.finditer(text) if m.group(1)}


def reads_only_text(program: Program) -> bool:
    """Whether the program reads its input only as strings: scanf calls whose formats
    convert only `%s`, `%c` and `%[`, at least one of them a string, and no other read
    or number conversion. A number the input shows is then text to the program (the
    digits of a message, a number too long for any integer type), drawn as digits
    whose length may grow, not as an integer within its samples' range."""
    conversions: set[str] = set()
    for text in _source_texts(program):
        if _OTHER_READ.search(text):
            return False
        for call in _SCANF_CALL.finditer(text):
            arguments, _ = _condition(text, call.end() - 1)
            found = _scanf_conversions(arguments, call.group(1) == "fscanf")
            if found is None:
                return False
            conversions |= found
    return bool(conversions & {"s", "["}) and conversions <= {"s", "c", "["}


def reading_of(program: Program) -> Reading:
    """How `program` reads its input, from its source and headers (`Reading`)."""
    to_end = reads_to_end(program)
    open_loop = to_end or any(_OPEN_LOOP.search(t) for t in _source_texts(program))
    return Reading(to_end, open_loop, reads_only_text(program))


def learn_generator(program: Program, level: str = LEVELS[0]) -> InputGenerator | None:
    """The learnt generator of `program` at `level` (each class at the most daring level it
    has that is no more daring than `level`), before acceptance, or None when no test
    gives a class. This is the spec only: `accept_generator` decides which classes are
    kept."""
    if level not in LEVELS:
        raise InputError(f"level must be one of {', '.join(LEVELS)}")
    if not reads_stdin(program):
        return None
    classes, tests = {}, {}
    allowed = LEVELS[LEVELS.index(level) :]
    for c in learn_classes(program):
        body = next((b for lv, b in c.bodies if lv in allowed), None)
        if body is None:
            continue
        classes[c.name] = body
        tests.update({t: c.name for t in c.tests})
    if not classes:
        return None
    return InputGenerator.from_dict(
        {"version": GENERATOR_VERSION, "classes": classes, "tests": tests, "origin": "learnt"}
    )


# ---------------------------------------------------------------------------- acceptance
@dataclass(frozen=True)
class AcceptConfig:
    """How drawn inputs are judged: `per_class` draws per level, each run within
    `cpu_seconds` of CPU (the sanitizer build gets `sanitize_factor` times as much)."""

    per_class: int = PER_CLASS
    cpu_seconds: int = CPU_SECONDS
    sanitize_factor: int = 4
    input_seed: int = 0


@dataclass
class _Builds:
    o0: Path
    o3: Path
    san: Path


def _limits(base: Limits, cpu: int) -> Limits:
    return replace(base, cpu_seconds=cpu, wall_seconds=2.0 * cpu + 3.0)


def _run_failure(run: RunResult, k: int, what: str) -> str | None:
    rec = run.records[k] if k < len(run.records) else None
    if rec is None:
        return f"{what}: no record of the run"
    if rec.killed == "wall" or rec.signal == 24:
        return f"{what}: over the time limit"
    if rec.killed in ("stdout", "stderr"):
        return f"{what}: printed more than the sandbox accepts"
    if rec.signal is not None:
        return f"{what}: killed by signal {rec.signal}"
    if rec.exec_errno:
        return f"{what}: could not be executed"
    return None


class _Judge:
    """Runs drawn inputs of one program through its three builds."""

    def __init__(
        self, program: Program, builds: _Builds, sandbox: Sandbox, config: AcceptConfig
    ) -> None:
        from asmopt.sandbox.records import Limits

        self.program = program
        self.builds = builds
        self.sandbox = sandbox
        self.config = config
        self.limits = _limits(Limits(), config.cpu_seconds)
        self.san_limits = replace(
            _limits(Limits(), config.cpu_seconds * config.sanitize_factor),
            address_space=SANITIZE_ADDRESS_SPACE,
        )

    def judge(self, test: TestCase, inputs: list[bytes]) -> tuple[int, str | None]:
        """(how many of `inputs` pass, the first failure). The test's own input runs first:
        a drawn output must be non-empty when the fixed input's is."""
        from asmopt.sandbox.runner import MAX_INPUTS

        if len(inputs) + 1 > MAX_INPUTS:
            inputs = inputs[: MAX_INPUTS - 1]
        cmp = test.compare if test.compare.mode != "md5" else Comparison("exact")
        order = [0, 1] * (len(inputs) + 1)
        run = self._run_both_builds(test, inputs, order)
        segments = list(run.segments or ())
        if len(segments) != len(order):
            return 0, f"the sandbox returned {len(segments)} outputs for {len(order)} runs"
        passed, first = _draws_both_builds_agree_on(run, segments, len(inputs), test, cmp)
        if not passed:
            return 0, first
        return self._judge_sanitized(test, inputs, passed, segments, cmp, first)

    def _run_both_builds(self, test: TestCase, inputs: list[bytes], order: list[int]) -> RunResult:
        """The -O0 and -O3 builds in turn on the test's own input, then on each draw."""
        feed = [0, 0] + [k + 1 for k in range(len(inputs)) for _ in (0, 1)]
        run = self.sandbox.run_binaries(
            [self.builds.o0, self.builds.o3],
            order,
            argv=test.argv,
            stdin=[test.stdin, *inputs],
            feed=feed,
            limits=self.limits,
            marker="asmoptmutatorend",
        )
        if run.infra_error:
            raise RuntimeError(f"sandbox: {run.infra_error}")
        return run

    def _judge_sanitized(
        self,
        test: TestCase,
        inputs: list[bytes],
        passed: list[int],
        segments: list[bytes],
        cmp: Comparison,
        first: str | None,
    ) -> tuple[int, str | None]:
        """(how many of the `passed` draws the sanitizer build also passes, the first
        failure): the sanitizer build, on the inputs both builds agreed on."""
        from asmopt.sandbox.records import ToolRun

        chosen = [inputs[k] for k in passed]
        san = self.sandbox.run_binaries(
            [self.builds.san],
            [0] * len(chosen),
            argv=test.argv,
            stdin=chosen,
            feed=list(range(len(chosen))),
            limits=self.san_limits,
            marker="asmoptmutatorend",
            tool=ToolRun(env=SANITIZE_ENV, mount_proc=True, trusted=True),  # the program's own
        )
        if san.infra_error:
            raise RuntimeError(f"sandbox: {san.infra_error}")
        san_out = list(san.segments or ())
        ok = 0
        for n, k in enumerate(passed):
            why = _sanitized_failure(san, san_out, n, segments[2 * (k + 1)], test, cmp)
            if why is None:
                ok += 1
            elif first is None or not first.startswith("draw"):
                first = f"draw {k}: {why}"
        return _with_sanitizer_report(san, ok, len(passed), first)


def _draws_both_builds_agree_on(
    run: RunResult, segments: list[bytes], draws: int, test: TestCase, cmp: Comparison
) -> tuple[list[int], str | None]:
    """The draws on which -O0 and -O3 both behave and agree, and the first failure."""
    base_out = segments[0]
    passed: list[int] = []
    first: str | None = None
    for k in range(draws):
        why = _builds_disagree(run, segments, 2 * (k + 1), test, cmp, base_out)
        if why is None:
            passed.append(k)
        elif first is None:
            first = f"draw {k}: {why}"
    return passed, first


def _builds_disagree(
    run: RunResult,
    segments: list[bytes],
    r0: int,
    test: TestCase,
    cmp: Comparison,
    base_out: bytes,
) -> str | None:
    """Why the -O0 run `r0` and the -O3 run after it fail a draw, or None: either run
    failing, an unexpected exit code, no output where the fixed input gives some, or
    outputs that differ."""
    r3 = r0 + 1
    why = _run_failure(run, r0, "-O0") or _run_failure(run, r3, "-O3")
    if why is not None:
        return why
    e0, e3 = run.records[r0].exit_code, run.records[r3].exit_code
    if e0 != test.expected_exit:
        return f"-O0 exits with {e0}, the test expects {test.expected_exit}"
    if e3 != e0:
        return f"-O3 exits with {e3}, -O0 with {e0}"
    if base_out and not segments[r0]:
        return "-O0 prints nothing (the input is probably not read as meant)"
    diff = compare_output(segments[r0], segments[r3], cmp, e3 or 0)
    if diff is not None:
        return f"-O0 and -O3 disagree: {diff}"
    return None


def _sanitized_failure(
    san: RunResult,
    san_out: list[bytes],
    n: int,
    o0_output: bytes,
    test: TestCase,
    cmp: Comparison,
) -> str | None:
    """Why the sanitizer build's run `n` fails its draw, or None: the run failing, the
    sanitizer's exit code, any other exit code, or an output unlike -O0's."""
    why = _run_failure(san, n, "sanitizer build")
    if why is not None:
        return why
    code = san.records[n].exit_code
    if code == _SANITIZER_EXIT and code != test.expected_exit:
        return "the sanitizer reports undefined behaviour or a memory error"
    if code != test.expected_exit:
        return f"sanitizer build exits with {code}"
    if n >= len(san_out) or compare_output(o0_output, san_out[n], cmp, code or 0) is not None:
        return "sanitizer build prints something else (uninitialised memory?)"
    return None


def _with_sanitizer_report(
    san: RunResult, ok: int, passed: int, first: str | None
) -> tuple[int, str | None]:
    """(ok, first) once the sanitizer's own report on stderr is counted: it is the
    failure where there was none (and one draw fewer passes), else it details it."""
    report = _SANITIZER_TEXT.search(san.stderr)
    if report is not None:
        line = next(x for x in san.stderr.splitlines() if _SANITIZER_TEXT.search(x))
        detail = line.decode("utf-8", "replace").strip()[:200]
        if first is None:
            first = f"sanitizer: {detail}"
            ok = min(ok, passed - 1)
        else:
            first += f" ({detail})"
    return ok, first


def _build(program: Program, toolchain: Toolchain) -> _Builds | str:
    paths = []
    for what, flags in (("-O0", ("-O0",)), ("-O3", ("-O3",)), ("sanitizer", SANITIZE_FLAGS)):
        result = toolchain.compile_binary(program, flags)
        if not result.ok or result.output is None:
            first = result.message.splitlines()[0] if result.message else result.stage
            return f"{what} build failed: {first}"
        paths.append(result.output)
    return _Builds(*paths)


def vet_fixed_tests(judge: _Judge) -> tuple[tuple[TestCase, ...], dict[str, str]]:
    """(the program's fixed tests on which the -O0, -O3 and sanitizer builds all behave and
    agree and print the given expected output, test name -> why for every other one).

    A fixed test whose output depends on undefined behaviour (an out-of-bounds index where
    -O0 prints 10258 and -O3 255) fails a correct faster answer for disagreeing on what no
    compiler promises, and every class learnt from it draws the same behaviour; so it is
    dropped by name before anything is learnt or marked fit. Each test is judged exactly
    as a drawn input of its own class is (`_Judge.judge`, with the test itself as the
    draw). A test whose given expected output the program itself does not print would fail
    every answer, the baseline's own included: where the two differ only in whitespace (a
    trailing space, a last newline: what a judge's token comparison ignores) the test is
    kept and compared so (`whitespace`; `relaxed_tests(...)` names them), else dropped."""
    kept: list[TestCase] = []
    dropped: dict[str, str] = {}
    for test in judge.program.tests:
        ok, why = judge.judge(test, [test.stdin])
        if why is not None and test.expected_exit == 0:
            # The plain layouts give no exit code, so 0 is only assumed: a program that
            # prints its error message for a bad input and exits 1 (as course and judge
            # solutions often do) is well defined where every build agrees on that code.
            code = _programs_exit_code(judge, test)
            if code is not None:
                retry = replace(test, expected_exit=code)
                ok_retry, why_retry = judge.judge(retry, [retry.stdin])
                if ok_retry == 1 and why_retry is None:
                    test, ok, why = retry, ok_retry, why_retry
        if ok == 1 and why is None:
            why, test = _given_output(judge, test)
        if why is None:
            kept.append(test)
        else:
            dropped[test.name] = (why or "the builds disagree").removeprefix("draw 0: ")
    return tuple(kept), dropped


_WHITESPACE = Comparison("whitespace")


def _programs_exit_code(judge: _Judge, test: TestCase) -> int | None:
    """The non-zero exit code the -O3 build ends the test with by itself (`exit(n)`, not a
    signal, a limit or the sanitizer's code), or None."""
    run = judge.sandbox.run_program(
        judge.builds.o3, argv=test.argv, stdin=test.stdin, limits=judge.limits
    )
    if run.infra_error:
        raise RuntimeError(f"sandbox: {run.infra_error}")
    rec = run.records[0] if run.records else None
    if rec is None or rec.signal is not None or rec.killed is not None or rec.exec_errno:
        return None
    code = rec.exit_code
    if code is None or code in (0, _SANITIZER_EXIT):
        return None
    return code


def exit_codes_taken(program: Program, vetted: Sequence[TestCase]) -> dict[str, int]:
    """Test name -> exit code, for each vetted test that now expects the exit code its
    program gives (every build agreeing on it) instead of the 0 its files assumed."""
    before = {t.name: t.expected_exit for t in program.tests}
    return {t.name: t.expected_exit for t in vetted if t.expected_exit != before.get(t.name)}


def _given_output(judge: _Judge, test: TestCase) -> tuple[str | None, TestCase]:
    """(why the test's given expected output is not the program's own, or None; the test,
    compared ignoring whitespace where that is all that differs)."""
    if not test.expected_stdout or test.compare.mode not in ("exact", "whitespace"):
        return None, test
    run = judge.sandbox.run_program(
        judge.builds.o3, argv=test.argv, stdin=test.stdin, limits=judge.limits
    )
    if run.infra_error:
        raise RuntimeError(f"sandbox: {run.infra_error}")
    if compare_output(test.expected_stdout, run.stdout, test.compare) is None:
        return None, test
    differs = compare_output(test.expected_stdout, run.stdout, _WHITESPACE)
    if differs is None:
        return None, replace(test, compare=_WHITESPACE)
    return f"the program does not print the given expected output ({differs})", test


def relaxed_tests(program: Program, vetted: Sequence[TestCase]) -> dict[str, str]:
    """Test name -> note, for each vetted test whose comparison was relaxed to whitespace."""
    before = {t.name: t.compare.mode for t in program.tests}
    return {
        t.name: "compared ignoring whitespace (the given output differs from the program's "
        "only in whitespace)"
        for t in vetted
        if t.compare.mode == "whitespace" and before.get(t.name) != "whitespace"
    }


def accept_generator(
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox,
    config: AcceptConfig | None = None,
) -> tuple[InputGenerator | None, dict[str, Any]]:
    """The learnt generator with only the classes whose drawn inputs all pass (module
    docstring), and the report stored as `metadata.inputs_report`."""
    config = config or AcceptConfig()
    start = time.monotonic()
    report: dict[str, Any] = {"generator": False, "classes": {}, "accepted": 0, "tried": 0}

    def done(
        gen: InputGenerator | None, reason: str | None = None
    ) -> tuple[InputGenerator | None, dict[str, Any]]:
        report["generator"] = gen is not None
        if reason:
            report["reason"] = reason
        report["seconds"] = round(time.monotonic() - start, 2)
        return gen, report

    # A program that reads no input gets no generator, so nothing of it is ever fit for
    # reward: its fixed tests are not judged here (an llvm-test-suite import would pay a
    # sanitizer build and runs per program for nothing).
    if all(not t.stdin for t in program.tests):
        return done(None, "no test has stdin")
    if not reads_stdin(program):
        return done(None, "the program does not read stdin")
    builds = _build(program, toolchain)
    if isinstance(builds, str):
        return done(None, builds)
    judge = _Judge(program, builds, sandbox, config)
    kept_tests, report["dropped_tests"] = vet_fixed_tests(judge)
    if not kept_tests:
        return done(None, "no fixed test is well defined (dropped_tests says why)")
    relaxed = relaxed_tests(program, kept_tests)
    if relaxed:
        report["relaxed_tests"] = relaxed
    codes = exit_codes_taken(program, kept_tests)
    if codes:
        report["exit_codes_taken"] = codes
    program = judge.program = replace(program, tests=kept_tests)
    if all(not t.stdin for t in program.tests):
        return done(None, "no well-defined test has stdin")
    classes = learn_classes(program)
    if not classes:
        return done(None, "no test input has values that can vary")
    tests = {t.name: t for t in program.tests}
    kept: dict[str, dict[str, Any]] = {}
    mapping: dict[str, str] = {}
    for learnt in classes:
        chosen = _accept_class(judge, learnt, tests[learnt.tests[0]], report)
        if chosen is not None:
            kept[learnt.name] = dict(learnt.bodies)[chosen]
            mapping.update({t: learnt.name for t in learnt.tests})
            room = MAX_CHECKING_CLASSES - (len(kept) - len(set(mapping.values())))
            kept.update(
                _checking_classes(judge, learnt, chosen, tests[learnt.tests[0]], report, kept, room)
            )
    if not kept:
        return done(None, "no class passed acceptance")
    mapping = _error_tests_checked_not_timed(program, mapping, report)
    gen = InputGenerator.from_dict(
        {"version": GENERATOR_VERSION, "classes": kept, "tests": mapping, "origin": "learnt"}
    )
    return done(gen)


def _error_tests_checked_not_timed(
    program: Program, mapping: dict[str, str], report: dict[str, Any]
) -> dict[str, str]:
    """The test -> class mapping without the tests that end with an error exit (a bad
    input's message, then `exit(1)`), where a test that ends normally stands for a class:
    their classes then stand for no test, so every grading checks their draws and nothing
    times them (as a checking class's). An error path's answer is one message whatever the
    input, so as a timed class it would read as a table of answers and make the program
    unfit; as a checked one it can only make a precomputed answer fail more. A program
    whose every test ends with an error keeps them: nothing else would be timed."""
    exits = {t.name: t.expected_exit for t in program.tests}
    errors = {name for name in mapping if exits.get(name, 0) != 0}
    if not errors or all(name in errors for name in mapping):
        return mapping
    report["checked_not_timed"] = sorted(errors)
    return {name: klass for name, klass in mapping.items() if name not in errors}


def _accept_class(
    judge: _Judge, learnt: LearntClass, test: TestCase, report: dict[str, Any]
) -> str | None:
    """The most daring level of one learnt class whose draws all pass, or None; every
    level tried is recorded in `report["classes"]` and its draws in the totals."""
    attempts: list[dict[str, Any]] = []
    chosen = None
    for level, _body in learnt.bodies:
        attempt = _try_level(judge, learnt, level, test)
        attempts.append(attempt)
        report["accepted"] += attempt["accepted"]
        report["tried"] += attempt["tried"]
        if "failure" not in attempt:
            chosen = level
            break
    entry: dict[str, Any] = {"tests": list(learnt.tests), "level": chosen, "attempts": attempts}
    entry["accepted"] = attempts[-1]["accepted"] if chosen else 0
    entry["tried"] = sum(a["tried"] for a in attempts)
    report["classes"][learnt.name] = entry
    return chosen


def _try_level(judge: _Judge, learnt: LearntClass, level: str, test: TestCase) -> dict[str, Any]:
    """Draw `per_class` inputs of the class at `level` and judge them: the attempt's record."""
    return _try_body(judge, learnt.name, dict(learnt.bodies)[level], level, test)


def _try_body(
    judge: _Judge, name: str, body: dict[str, Any], label: str, test: TestCase
) -> dict[str, Any]:
    """Draw `per_class` inputs of class `name` with `body` and judge them (a few first, the
    rest only if those pass): the attempt's record, with a `failure` where one failed."""
    config = judge.config
    try:  # refused at load where a grown class is too large
        gen = InputGenerator.from_dict(
            {"version": GENERATOR_VERSION, "classes": {name: body}, "origin": "learnt"}
        )
        draws = [
            gen.draw(name, derive_seed(config.input_seed, judge.program.id, name, label, k))
            for k in range(config.per_class)
        ]
    except GeneratorError as exc:
        return {"level": label, "accepted": 0, "tried": 0, "failure": f"cannot draw: {exc}"}
    if all(d == test.stdin for d in draws):
        return {
            "level": label,
            "accepted": 0,
            "tried": 0,
            "failure": "every draw equals the fixed input",
        }
    probe = draws[:PROBE_DRAWS]
    ok, why = judge.judge(test, probe)
    tried = len(probe)
    if why is None and len(draws) > len(probe):
        more, why = judge.judge(test, draws[len(probe) :])
        ok += more
        tried = len(draws)
    attempt: dict[str, Any] = {"level": label, "accepted": ok, "tried": tried}
    if why is not None:
        attempt["failure"] = why[:300]
    return attempt


def _checking_classes(
    judge: _Judge,
    learnt: LearntClass,
    chosen: str,
    test: TestCase,
    report: dict[str, Any],
    have: dict[str, dict[str, Any]],
    room: int,
) -> dict[str, dict[str, Any]]:
    """The checking variants of a class accepted at `chosen` whose draws all pass
    (data/checking_classes.py), by name: none draws what a class in `have` (those kept so
    far) draws, and no more than `room` of them; each tried is recorded in the class's
    report."""
    bodies = dict(learnt.bodies)
    sample = None  # the most daring body at the sample's sizes (`full`, or one plainer)
    if chosen in _GROWN:
        sample = next((b for level, b in learnt.bodies if level not in _GROWN), None)
    kept: dict[str, dict[str, Any]] = {}
    tried: dict[str, str] = {}
    for suffix, body in checking_variants(bodies[chosen], sample):
        name = checking_name(learnt.name, suffix)
        if body in have.values() or body in kept.values():
            tried[suffix] = "the same draws as a class kept before"
            continue
        if room <= 0:
            tried[suffix] = f"not tried: {MAX_CHECKING_CLASSES} checking classes kept before"
            continue
        try:
            attempt = _try_body(judge, name, body, suffix, test)
        except RuntimeError as exc:  # our sandbox failed: this variant only is lost
            tried[suffix] = f"not judged: {exc}"[:300]
            continue
        report["accepted"] += attempt["accepted"]
        report["tried"] += attempt["tried"]
        tried[suffix] = attempt.get("failure", "kept")
        if "failure" not in attempt:
            kept[name] = body
            room -= 1
    if tried:
        report["classes"][learnt.name]["checking"] = tried
    return kept


def fit_inputs(
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox,
    config: AcceptConfig | None = None,
) -> Program:
    """`program` with its accepted learnt generator (if any) and `metadata.inputs_report`.
    A program that already has a generator (declared, or carried by an exported row) is
    returned unchanged."""
    if program.inputs is not None:
        return program
    try:
        gen, report = accept_generator(program, toolchain, sandbox, config)
    except RuntimeError as exc:  # our side failed (sandbox, toolchain): not the program's
        gen, report = (
            None,
            {
                "generator": False,
                "classes": {},
                "accepted": 0,
                "tried": 0,
                "reason": f"not learnt: {exc}",
                "infra_error": True,
            },
        )
    meta = program.meta
    meta["inputs_report"] = report
    dropped = report.get("dropped_tests") or {}
    relaxed = report.get("relaxed_tests") or {}
    codes = report.get("exit_codes_taken") or {}
    tests = tuple(
        replace(
            replace(t, compare=_WHITESPACE) if t.name in relaxed else t,
            expected_exit=int(codes.get(t.name, t.expected_exit)),
        )
        for t in program.tests
        if t.name not in dropped
    ) or program.tests
    return replace(program, inputs=gen, tests=tests, metadata=tuple(sorted(meta.items())))


def summarize(report: dict[str, Any]) -> str:
    """One line per program for the import summary: accepted/tried per class."""
    if not report.get("classes"):
        return f"fixed inputs ({report.get('reason', 'nothing learnt')})"
    parts = []
    for name, c in report["classes"].items():
        tried = "+".join(f"{a['accepted']}/{a['tried']}" for a in c["attempts"]) or "0/0"
        folded = " folded" if name in (report.get("folded") or {}) else ""
        checking = "".join(
            f" +{suffix}" for suffix, why in (c.get("checking") or {}).items() if why == "kept"
        )
        parts.append(f"{name} {tried} {c['level'] or 'dropped'}{checking}{folded}")
    head = "generator" if report.get("generator") else "fixed inputs"
    return f"{head}: " + ", ".join(parts)


def learn_programs(
    programs: Sequence[Program],
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int = 2,
    progress: bool = False,
    config: AcceptConfig | None = None,
) -> list[Program]:
    """`fit_inputs` over many programs, `jobs` at a time, in the given order."""
    from asmopt.parallel import parallel_map

    return parallel_map(
        lambda p: fit_inputs(p, toolchain, sandbox, config),
        list(programs),
        jobs=jobs,
        desc="inputs",
        progress=progress,
    )


__all__ = [
    "LEVELS",
    "AcceptConfig",
    "LearntClass",
    "accept_generator",
    "exit_codes_taken",
    "fit_inputs",
    "learn_classes",
    "learn_generator",
    "learn_programs",
    "parse_lines",
    "reads_stdin",
    "summarize",
    "vet_fixed_tests",
]
