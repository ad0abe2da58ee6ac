#!/usr/bin/env python3
"""Build (or check) the built-in benchmark suite.

The C sources live in ``src/asmopt/programs/builtin/programs/ID/main.c``. This script holds
each program's metadata and test inputs, and:

1. writes ``tests/tN.in`` and ``program.json`` (metadata, comparison and the input
   generator: how a grading draws fresh inputs of each size class) for every program;
2. compiles ``main.c`` with ``gcc -O0`` (the reference build), runs every test and writes
   ``tests/tN.out`` -- failing loudly on a crash, a non-zero exit or a timeout;
3. compiles with ``gcc -O3``, checks that every output matches the reference (by
   asmopt.compare, within the program's tolerance for numeric programs), optionally runs the
   light tests under ``-O3 -fsanitize=undefined,address``, and times the heavy tests (median
   of 3 runs), failing if a program has no test whose ``-O3`` run takes 50-500 ms;
4. writes ``suite.json`` (splits are fixed in the table below: 31 train, 7 validation, 7 test).

Everything is deterministic, so running it twice leaves the tree unchanged.

    python scripts/build_builtin_suite.py                 # build everything
    python scripts/build_builtin_suite.py --only lcs_dp   # one program (repeatable)
    python scripts/build_builtin_suite.py --check         # verify, write nothing
    python scripts/build_builtin_suite.py --clock cpu     # time by CPU use on a busy machine
    python scripts/build_builtin_suite.py --update-doc    # refresh docs/builtin_suite.md table
    python scripts/build_builtin_suite.py --check-generators 30   # validate the input generators
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from asmopt.compare import compare_output
from asmopt.programs.generators import GeneratorError, InputGenerator
from asmopt.programs.model import Comparison

ROOT = Path(__file__).resolve().parent.parent
SUITE_DIR = ROOT / "src" / "asmopt" / "programs" / "builtin"
PROGRAMS_DIR = SUITE_DIR / "programs"

SUITE_DESCRIPTION = (
    "Built-in benchmark suite: small C programs in the style of competitive-programming "
    "submissions and classic kernels (sorting, dynamic programming, graphs, number theory, "
    "strings, hashing, bit tricks, matrix and stencil loops, floating point). Each reads "
    "stdin and prints a few lines; expected outputs come from a gcc -O0 reference build."
)

CC = os.environ.get("CC", "gcc")
WARN = ["-Wall", "-Wextra", "-Werror"]
HEAVY_MIN_S = 0.050
HEAVY_MAX_S = 0.500
RUN_TIMEOUT_S = 20.0
SANITIZE_TIMEOUT_S = 60.0
MAX_INPUT_BYTES = 200_000
MAX_OUTPUT_BYTES = 4096


# --------------------------------------------------------------------------------------------
# Deterministic data for test inputs (independent of Python's `random`, so files never drift).
# --------------------------------------------------------------------------------------------

class Rng:
    """splitmix64."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def between(self, lo: int, hi: int) -> int:
        """Uniform-ish integer in [lo, hi]."""
        return lo + self.below(hi - lo + 1)

    def text(self, n: int, alphabet: str) -> str:
        return "".join(alphabet[self.below(len(alphabet))] for _ in range(n))


def related_strings(seed: int, n: int, alphabet: str, mutate: float) -> tuple[str, str]:
    """A random string and a mutated copy (substitutions, insertions, deletions)."""
    r = Rng(seed)
    a = r.text(n, alphabet)
    out = []
    per_mille = int(mutate * 1000)
    for ch in a:
        roll = r.below(1000)
        if roll < per_mille // 3:
            out.append(alphabet[r.below(len(alphabet))])
        elif roll < 2 * per_mille // 3:
            continue
        elif roll < per_mille:
            out.append(ch)
            out.append(alphabet[r.below(len(alphabet))])
        else:
            out.append(ch)
    return a, "".join(out)


_WORD_TEXT = (
    "the of and to in is was that for on with as by at from his her it an were are which "
    "this be or have had not but one all their they there been has when who will more no "
    "if out so what up into said time only can other new some could these two may first "
    "then do any like my now over such our man me even most made after also did many "
    "before must through back years where much your way well down should because each "
    "just those people how too little state good very make world still own see men work "
    "long get here between both life being under never day same another know while last "
    "might us great old year off come since against go came right used take three states "
    "himself few house use during without again place american around however home small "
    "found thought went say part once general high upon school every does got united left "
    "number course war until always away something fact though water less public put think "
    "almost hand enough far took head yet government system better set told nothing night "
    "end why called didn eyes find going look asked later knew point next program city "
    "business give group toward young days let room president side social given present "
    "several order national possible rather second face per among form important often "
    "things looked early white john case become large big need four within felt along "
    "children saw best church ever least power development light thing seemed family "
    "interest want members mind country area others done turned although open god service "
    "certain kind problem began different door thus help sense means whole matter perhaps "
    "itself york times human law line above name example action company local show whether "
    "five history gave today either act feet across taken past quite anything seen having "
    "death week experience body word half really field am car words already themselves"
)
WORDS = _WORD_TEXT.split()


def graph_edges(seed: int, n: int, m: int, wmax: int) -> list[tuple[int, int, int]]:
    """m directed edges on 1..n with weights 1..wmax; includes a ring so it is connected."""
    r = Rng(seed)
    edges = [(i, i % n + 1, r.between(1, wmax)) for i in range(1, n + 1)] if n > 1 else []
    while len(edges) < m:
        u, v = r.between(1, n), r.between(1, n)
        if u != v:
            edges.append((u, v, r.between(1, wmax)))
    return edges


def numbers(seed: int, n: int, lo: int, hi: int) -> list[int]:
    r = Rng(seed)
    return [r.between(lo, hi) for _ in range(n)]


def wrap_ints(values: list[int], per_line: int = 16) -> str:
    rows = [" ".join(map(str, values[i:i + per_line])) for i in range(0, len(values), per_line)]
    return "\n".join(rows) + ("\n" if rows else "")


# --------------------------------------------------------------------------------------------
# Input generators: how every grading draws fresh inputs of each size class
# (asmopt.programs.generators; docs/suite_format.md, "Input generators"). A fixed test's
# answer can be memorised; a drawn one cannot. Each program's classes draw its own
# parameters (seeds over their whole range, every distribution selector, sizes around the
# fixed test of that class); the heavy class stays within about 0.6-1.4x of the heavy test's
# -O3 cost, so timing costs what it did (checked by --check-generators).
# --------------------------------------------------------------------------------------------

U32 = 2**32 - 1
U64 = 2**64 - 1
SEED32 = {"int": [0, U32]}
SEED64 = {"int": [0, U64]}
CLASSES = ("edge", "small", "medium", "large", "heavy")
# Fixed test -> the class it stands for (tests in a spec's `heavy` tuple are heavy too).
TEST_CLASSES = {"t1": "edge", "t2": "edge", "t3": "small", "t4": "medium", "t5": "large",
                "t6": "heavy"}


def between(lo: int | str, hi: int | str) -> dict[str, object]:
    """An integer in [lo, hi] (bounds may be expressions over earlier vars)."""
    return {"int": [lo, hi]}


def decimal(lo: float, hi: float, digits: int) -> dict[str, object]:
    return {"float": [lo, hi], "digits": digits}


def one_of(*values: object) -> dict[str, object]:
    return {"choice": list(values)}


def expr(value: int | str) -> dict[str, object]:
    return {"value": value}


def text(length: int | str = 0, alphabet: str = "ab",
         between_expr: tuple[int, int] | None = None) -> dict[str, object]:
    """`length` characters of `alphabet`; `between_expr=(lo, hi)` draws the length inline
    (`text` cannot name a var drawn in the same breath, so the length is an expression
    over a helper var when it varies: see `_inline_lengths`)."""
    if between_expr is not None:
        return {"text": {"length": {"__between__": list(between_expr)}, "alphabet": alphabet}}
    return {"text": {"length": length, "alphabet": alphabet}}


def mutate(of: str, rate: float | str, alphabet: str) -> dict[str, object]:
    return {"mutate": {"of": of, "rate": rate, "alphabet": alphabet}}


def ints(count: int | str, lo: int | str, hi: int | str, per_line: int = 0) -> dict[str, object]:
    body: dict[str, object] = {"count": count, "range": [lo, hi], "sep": " "}
    if per_line:
        body["per_line"] = per_line
    return {"ints": body}


def repeat(count: int | str, template: str, **variables: dict[str, object]) -> dict[str, object]:
    return {"repeat": {"count": count, "template": template,
                       "vars": _inline_lengths(variables)}}


def _inline_lengths(variables: dict[str, dict[str, object]]) -> dict[str, dict[str, object]]:
    """Expand `text(between_expr=...)`: a helper var `NAME_len` drawn just before NAME."""
    out: dict[str, dict[str, object]] = {}
    for name, rule in variables.items():
        body = rule.get("text")
        if isinstance(body, dict) and isinstance(body.get("length"), dict):
            out[f"{name}_len"] = {"int": body["length"]["__between__"]}
            rule = {"text": {**body, "length": f"{name}_len"}}
        out[name] = rule
    return out


def klass(template: str, **variables: dict[str, object] | int) -> dict[str, object]:
    """One size class: a template and its vars, drawn in the order written (a bare number
    is a constant)."""
    rules = {k: (expr(v) if isinstance(v, int) else v) for k, v in variables.items()}
    return {"template": template, "vars": _inline_lengths(rules)}  # type: ignore[arg-type]


def generator(*classes: dict[str, object]) -> dict[str, object]:
    """The five classes edge, small, medium, large, heavy (the `tests` mapping is added by
    `Spec.inputs_spec`, from the spec's tests)."""
    if len(classes) != len(CLASSES):
        raise ValueError(f"expected {len(CLASSES)} classes, got {len(classes)}")
    return {"version": 1, "classes": dict(zip(CLASSES, classes, strict=True))}


PRINTABLE = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
             " !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# word_freq: a Zipf-like skew by repetition (a uniform choice over a list where the first
# words recur), with some capitalised and punctuated forms; and odd tokens for the edge.
ZIPF_WORDS: list[str] = [w for i, w in enumerate(WORDS) for _ in range(max(1, 8 // (1 + i // 10)))]
ZIPF_WORDS += [w.capitalize() for w in WORDS[:40]] + ["It's", "don't", "o'clock", "THE"]
WORD_SEPS = (" ",) * 12 + (", ", ". ", "\n", "! ", "; ")
ODD_TOKENS = ("a", "A", "it's", "'", "''", "don't", "x1y", "123", "Hello", "hello", "HELLO",
              "caf\u00e9", "e-mail", "zz", "a'b'c")
# word_freq's text: random words of 2-10 letters (a vocabulary of 26^10, so nearly every one
# is new and the table holds thousands of distinct words), half of them after a common word
# of ZIPF_WORDS (the English head: a third of all tokens). WORD_HEAD is that choice: no
# common word, or one with ZIPF_WORDS' skew.
WORD_LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORD_HEAD: dict[str, object] = {
    "choice": [""] + [w + " " for w in dict.fromkeys(ZIPF_WORDS)],
    "weights": [len(ZIPF_WORDS)] + [ZIPF_WORDS.count(w) for w in dict.fromkeys(ZIPF_WORDS)]}


def word_text(seed: int, records: int) -> str:
    """word_freq's fixed texts, drawn as its classes draw theirs: `records` times an
    optional common word (half the time), a random word of 2-10 letters and a separator."""
    r = Rng(seed)
    out = []
    for _ in range(records):
        if r.below(2):
            out.append(ZIPF_WORDS[r.below(len(ZIPF_WORDS))] + " ")
        out.append(r.text(r.between(2, 10), WORD_LETTERS))
        out.append(WORD_SEPS[r.below(len(WORD_SEPS))])
    return "".join(out)


# mandelbrot: edge windows that straddle the set's boundary at 16-80 iterations (the whole
# set, reversed, the main cardioid's edge, its cusp, the period-2 bulb), so both inside
# points and jittered escaping ones show (windows wholly inside, wholly outside or
# degenerate give outputs that hardly depend on the seed: fixed tests); and heavy windows
# measured at 0.88-1.13x the heavy test's cost at 640x480, 2000 iterations.
MANDEL_EDGE_WINDOWS = ("-2 -1.5 1 1.5", "1 1.5 -2 -1.5", "-1.5 -1 0.5 1", "-0.2 0.6 0.2 1.0",
                       "0.2 -0.1 0.4 0.1", "-1.3 -0.2 -1.1 0.2")
MANDEL_HEAVY_WINDOWS = ("-0.7454 0.1123 -0.7446 0.1131", "0.28259 0.01068 0.28391 0.01168",
                        "-0.10072 0.65124 -0.09975 0.65196", "-0.74764 0.10975 -0.74469 0.11197",
                        "-0.74574 0.11356 -0.74480 0.11427", "-0.74717 0.09852 -0.74534 0.09990",
                        "-1.25251 0.01844 -1.25138 0.01929")
# mandelbrot's small, medium and large windows: centres near the set's boundary (found by a
# search over random points whose escape time at 20000 iterations is 40 or more, kept where
# windows 3e-5 to 3e-3 wide around them, at 300 and 1500 iterations, spend at most 10% of
# their iterations on points that never escape and vary their escape times with a
# coefficient of variation of 0.1 or more), half of them mirrored below the real axis. A
# choice holds numbers, not pairs, so each centre is one number, the 1e-6 grid points
# X = (cx + 2.5) * 1e6 and Y = (cy + 1.5) * 1e6 as X * 1e7 + Y (a float holds it exactly).
MANDEL_CENTRES = ((-0.580315, 0.488884), (-0.719902, -0.288192), (-0.419748, 0.60054),
                  (-1.074362, -0.248206), (-0.647236, 0.410095), (-0.645008, -0.406086),
                  (-0.701042, 0.355962), (-0.642605, -0.406201), (0.386873, 0.135645),
                  (-0.417533, -0.605312), (-1.268295, 0.049048), (-0.380761, -0.653191),
                  (0.377379, 0.291947), (-0.507722, -0.61228), (0.321982, 0.438687))
MANDEL_CENTRE_CODES = tuple(float(round((x + 2.5) * 1e6) * 10**7 + round((y + 1.5) * 1e6))
                            for x, y in MANDEL_CENTRES)


def mandel_window_class(w: tuple[int, int], h: tuple[int, int], maxit: tuple[int, int],
                        span: tuple[int, int]) -> dict[str, object]:
    """A window whose longer side is `span` x 1e-7 (drawn log-uniformly; pixels are square)
    around one of MANDEL_CENTRES, the centre shifted by up to 30% of the window each way."""
    return klass("{W} {H} {maxit} {x0} {y0} {x1} {y1} {seed}\n", W=between(*w), H=between(*h),
                 maxit=between(*maxit), centre=one_of(*MANDEL_CENTRE_CODES),
                 span={"int": list(span), "log": True}, ox=between(-300, 300),
                 oy=between(-300, 300), cx=expr("centre // 10000000 / 1000000 - 2.5"),
                 cy=expr("centre % 10000000 / 1000000 - 1.5"),
                 w=expr("span / 10000000 * W / max(W, H)"),
                 h=expr("span / 10000000 * H / max(W, H)"),
                 x0=expr("cx + (ox / 1000 - 0.5) * w"), x1=expr("x0 + w"),
                 y0=expr("cy + (oy / 1000 - 0.5) * h"), y1=expr("y0 + h"),
                 seed=SEED64)


# --------------------------------------------------------------------------------------------
# Program table.
# --------------------------------------------------------------------------------------------

Input = str | Callable[[], str]


@dataclass
class Spec:
    id: str
    category: str
    split: str
    description: str
    tests: list[Input]
    heavy: tuple[str, ...] = ()  # test names expected to take 50-500 ms at -O3 (default: last)
    compare: dict[str, object] | None = None
    inputs: dict[str, object] | None = None  # generator(...): the classes of fresh inputs

    def heavy_tests(self) -> tuple[str, ...]:
        return self.heavy or (f"t{len(self.tests)}",)

    def test_names(self) -> list[str]:
        return [f"t{i}" for i in range(1, len(self.tests) + 1)]

    def inputs_spec(self) -> dict[str, object] | None:
        """The `inputs` object of program.json: the classes plus which class each fixed
        test stands for (TEST_CLASSES; a heavy test is always `heavy`)."""
        if self.inputs is None:
            return None
        heavy = set(self.heavy_tests())
        tests = {name: "heavy" if name in heavy else TEST_CLASSES[name]
                 for name in self.test_names()}
        return {**self.inputs, "tests": tests}

    def generator(self) -> InputGenerator:
        """The validated generator (a malformed spec fails here, naming the rule)."""
        data = self.inputs_spec()
        if data is None:
            raise GeneratorError(f"{self.id}: no input generator")
        return InputGenerator.from_dict(data, f"{self.id}.inputs")


def numeric(abs_tol: float = 1e-6, rel_tol: float = 1e-6) -> dict[str, object]:
    return {"mode": "numeric", "abs_tol": abs_tol, "rel_tol": rel_tol}


SPECS: list[Spec] = []


def spec(*args: object, **kwargs: object) -> None:
    SPECS.append(Spec(*args, **kwargs))  # type: ignore[arg-type]


# ---- sorting ---------------------------------------------------------------------------------

spec("quicksort_int", "sorting", "train",
     "Median-of-three quicksort with insertion-sort cutoff on generated ints (4 distributions)",
     ["0 1 0\n", "1 7 0\n", "1000 3 1\n", "50000 11 2\n", "200000 5 3\n", "1800000 42 0\n"],
     inputs=generator(
         # Never empty, and long enough that the few-values and descending modes still give
         # a seed-dependent order (n = 0 and n = 1 are the fixed t1 and t2).
         klass("{n} {seed} {mode}\n", n=between(8, 40), seed=SEED64, mode=one_of(0, 1, 2, 3)),
         klass("{n} {seed} {mode}\n", n=between(41, 5000), seed=SEED64, mode=one_of(0, 1, 2, 3)),
         klass("{n} {seed} {mode}\n", n=between(20000, 100000), seed=SEED64,
               mode=one_of(0, 1, 2, 3)),
         klass("{n} {seed} {mode}\n", n=between(150000, 300000), seed=SEED64,
               mode=one_of(0, 1, 2, 3)),
         # Modes 1-3 sort 3-6x faster: the heavy class keeps the heavy test's distribution.
         klass("{n} {seed} 0\n", n=between(1700000, 1900000), seed=SEED64)))
spec("mergesort_u64", "sorting", "train",
     "Recursive top-down merge sort of 64-bit keys; distinct count and longest equal run",
     ["0 1 64\n", "1 2 64\n", "17 3 4\n", "10000 4 20\n", "300000 5 64\n", "1400000 6 40\n"],
     inputs=generator(
         # Never empty, and keys wide enough that the sorted order carries the seed
         # (n = 0, n = 1 and 4-bit keys are fixed tests).
         klass("{n} {seed} {bits}\n", n=between(4, 40), seed=SEED64,
               bits=one_of(8, 12, 32, 63, 64)),
         klass("{n} {seed} {bits}\n", n=between(10, 3000), seed=SEED64, bits=between(1, 64)),
         klass("{n} {seed} {bits}\n", n=between(5000, 30000), seed=SEED64, bits=between(1, 64)),
         klass("{n} {seed} {bits}\n", n=between(200000, 400000), seed=SEED64,
               bits=between(1, 64)),
         # Few bits (many duplicates) merge faster; from 24 bits on the cost is flat.
         klass("{n} {seed} {bits}\n", n=between(1300000, 1500000), seed=SEED64,
               bits=between(24, 64))))
spec("radix_sort_u32", "sorting", "validation",
     "LSD radix sort (4 x 8-bit counting passes) of 32-bit keys, then gap statistics",
     ["0 1 0\n", "37 5 31\n", "1000 9 20\n", "100000 13 0\n",
      "1000000 12297829382473034410 8\n", "8000000 16045690984833335023 0\n"],
     inputs=generator(
         # Small but never empty, and at most 24 bits of shift: n keys of 8 or more bits
         # (n = 0 and 1-bit keys, whose outputs carry no seed, are the fixed t1 and t2).
         klass("{n} {seed} {shift}\n", n=between(8, 40), seed=SEED64,
               shift=one_of(0, 1, 8, 16, 24)),
         klass("{n} {seed} {shift}\n", n=between(41, 5000), seed=SEED64, shift=between(0, 31)),
         klass("{n} {seed} {shift}\n", n=between(50000, 200000), seed=SEED64,
               shift=between(0, 31)),
         klass("{n} {seed} {shift}\n", n=between(700000, 1300000), seed=SEED64,
               shift=between(0, 31)),
         klass("{n} {seed} {shift}\n", n=between(7500000, 8500000), seed=SEED64,
               shift=between(0, 31))))
spec("heapsort_int", "sorting", "train",
     "Heapsort plus a streaming top-k with a bounded min-heap",
     ["0 3 1\n", "1 1 2\n", "10 20 3\n", "5000 100 4\n", "200000 1000 5\n",
      "1000000 5000 6\n"],
     inputs=generator(
         # Never empty: n = 0 (no data, one output) is the fixed t1.
         klass("{n} {k} {seed}\n", n=between(1, 20), k=between(0, 25), seed=SEED64),
         klass("{n} {k} {seed}\n", n=between(10, 2000), k=between(0, "n + 5"), seed=SEED64),
         klass("{n} {k} {seed}\n", n=between(2000, 20000), k=between(1, 1000), seed=SEED64),
         klass("{n} {k} {seed}\n", n=between(100000, 300000), k=between(1, 5000),
               seed=SEED64),
         klass("{n} {k} {seed}\n", n=between(950000, 1050000), k=between(1000, 10000),
               seed=SEED64)))
spec("qsort_records", "sorting", "test",
     "libc qsort of small structs with multi-key comparators; scoreboard ranks and groups",
     ["0 1\n", "1 2\n", "40 3\n", "3000 4\n", "50000 5\n", "350000 6\n"],
     inputs=generator(
         # Never empty: n = 0 and n = 1 are the fixed t1 and t2.
         klass("{n} {seed}\n", n=between(2, 60), seed=SEED64),
         klass("{n} {seed}\n", n=between(20, 500), seed=SEED64),
         klass("{n} {seed}\n", n=between(1000, 10000), seed=SEED64),
         klass("{n} {seed}\n", n=between(30000, 80000), seed=SEED64),
         klass("{n} {seed}\n", n=between(320000, 380000), seed=SEED64)))

# ---- dynamic programming --------------------------------------------------------------------


def lcs_input(seed: int, n: int, alphabet: str, mutate: float) -> Callable[[], str]:
    def make() -> str:
        a, b = related_strings(seed, n, alphabet, mutate)
        return f"{a}\n{b}\n"
    return make


spec("lcs_dp", "dynamic_programming", "train",
     "Longest common subsequence of two stdin strings with a two-row table, prefix LCS "
     "values and a hash of the table's last row and column",
     ["\n\n", "a\na\n", "ABCBDAB\nBDCABA\n", lcs_input(1, 300, "ACGT", 0.2),
      lcs_input(2, 2000, "abcdefghij", 0.3), lcs_input(3, 9000, "ACGT", 0.25)],
     inputs=generator(
         # Short related and unrelated lines (B may hold a letter A lacks) that print the
         # prefix rows; 36+ letters of four, and never B = A, so every draw's LCS values
         # and profile carry its strings (empty and equal lines are t1/t2).
         klass("{a}\n{b}\n", a=text(between_expr=(36, 60), alphabet="ABCD"),
               r=one_of(0.2, 0.5, 1.0), b=mutate("a", "r", "ABCDE")),
         # Mutation rates of 0.1 and up: a copy left unchanged (B = A) carries no data.
         klass("{a}\n{b}\n", n=between(40, 400), a=text("n", "ACGT"),
               r=one_of(0.1, 0.2, 0.5), b=mutate("a", "r", "ACGT")),
         # Medium and large are sized like t4 and t5 (n = 300, 2000): a timed pair of a
         # test costs what the test does, so fresh inputs keep the timing cost flat.
         klass("{a}\n{b}\n", n=between(250, 350), a=text("n", "ACGT"),
               r=one_of(0.1, 0.2, 0.3), b=mutate("a", "r", "ACGT")),
         klass("{a}\n{b}\n", n=between(1800, 2200), a=text("n", "abcdefghij"),
               r=one_of(0.1, 0.3, 0.6), b=mutate("a", "r", "abcdefghij")),
         klass("{a}\n{b}\n", n=between(8600, 9400), a=text("n", "ACGT"),
               r=one_of(0.2, 0.25, 0.3), b=mutate("a", "r", "ACGT"))))


def edit_input(seed: int, pairs: list[tuple[int, str, float]]) -> Callable[[], str]:
    def make() -> str:
        out = [str(len(pairs))]
        for k, (n, alphabet, mutate) in enumerate(pairs):
            a, b = related_strings(seed * 100 + k, n, alphabet, mutate)
            out += [a, b]
        return "\n".join(out) + "\n"
    return make


spec("edit_distance", "dynamic_programming", "validation",
     "Levenshtein distance of string pairs read from stdin (two-row DP), with a hash of "
     "the table's last row and column",
     ["1\n\n\n", "4\nkitten\nsitting\nflaw\nlawn\nabc\n\nabcab\nabcab\n",
      edit_input(1, [(50, "ab", 0.3), (80, "abcdef", 0.1), (120, "xyz", 0.5)]),
      edit_input(2, [(1000, "ACGT", 0.1), (1500, "abcdefghijklmnop", 0.3)]),
      edit_input(3, [(3000, "ACGT", 0.05)] * 2 + [(4000, "abcdefgh", 0.2)]),
      edit_input(4, [(7000, "ACGT", 0.15), (6000, "abcdefghijklmnopqrstuvwxyz", 0.25)])],
     inputs=generator(
         # Several pairs of short lines, the second often longer: a pair runs on the rows
         # the one before it left. At least two pairs of 18+ letters that differ (equal
         # and empty lines are in t1/t2), so every draw's distances and profiles carry
         # its strings.
         klass("{q}\n{pairs}", q=between(2, 8),
               pairs=repeat("q", "{a}\n{b}{c}\n", n=between(18, 28), a=text("n", "abcd"),
                            r=one_of(0.3, 0.6, 1.0), b=mutate("a", "r", "abcd"),
                            c=text(between_expr=(0, 12), alphabet="abcde"))),
         klass("{q}\n{pairs}", q=between(2, 6),
               pairs=repeat("q", "{a}\n{b}\n", n=between(20, 150), a=text("n", "abcdef"),
                            r=one_of(0.05, 0.1, 0.3, 0.5), b=mutate("a", "r", "abcdef"))),
         klass("{q}\n{pairs}", q=between(1, 3),
               pairs=repeat("q", "{a}\n{b}\n", n=between(800, 1600), a=text("n", "ACGT"),
                            r=one_of(0.05, 0.1, 0.3), b=mutate("a", "r", "ACGT"))),
         klass("{q}\n{pairs}", q=between(2, 3),
               pairs=repeat("q", "{a}\n{b}\n", n=between(2500, 4000), a=text("n", "abcdefgh"),
                            r=one_of(0.05, 0.2), b=mutate("a", "r", "abcdefgh"))),
         # The heavy test's two pairs (7000 and 6000 characters), so the cost stays put.
         klass("2\n{a}\n{b}\n{c}\n{d}\n", n=between(6700, 7300), a=text("n", "ACGT"),
               b=mutate("a", 0.15, "ACGT"), m=between(5700, 6300),
               c=text("m", "abcdefghijklmnopqrstuvwxyz"),
               d=mutate("c", 0.25, "abcdefghijklmnopqrstuvwxyz"))))
spec("knapsack_01", "dynamic_programming", "train",
     "0/1 knapsack over generated items with a one-dimensional table",
     ["0 0 1\n", "1 10 2\n", "20 100 3\n", "200 5000 4\n", "1000 30000 5\n",
      "2000 60000 6\n"],
     inputs=generator(
         klass("{n} {cap} {seed}\n", n=between(2, 6), cap=between(16, 40), seed=SEED64),
         klass("{n} {cap} {seed}\n", n=between(5, 50), cap=between(10, 500), seed=SEED64),
         klass("{n} {cap} {seed}\n", n=between(100, 400), cap=between(1000, 8000), seed=SEED64),
         klass("{n} {cap} {seed}\n", n=between(700, 1300), cap=between(20000, 40000),
               seed=SEED64),
         klass("{n} {cap} {seed}\n", n=between(1900, 2100), cap=between(57000, 63000),
               seed=SEED64)))
spec("lis_nlogn", "dynamic_programming", "test",
     "Longest increasing subsequence by patience sorting with binary search, reconstructed",
     ["0 1\n", "1 2\n", "100 3\n", "10000 4\n", "500000 5\n", "1600000 6\n"],
     inputs=generator(
         # Never empty: n = 0 and n = 1 are the fixed t1 and t2.
         klass("{n} {seed}\n", n=between(2, 40), seed=SEED64),
         klass("{n} {seed}\n", n=between(50, 1000), seed=SEED64),
         klass("{n} {seed}\n", n=between(5000, 30000), seed=SEED64),
         klass("{n} {seed}\n", n=between(300000, 700000), seed=SEED64),
         klass("{n} {seed}\n", n=between(1500000, 1700000), seed=SEED64)))


def coin_input(n: int, coins: list[int]) -> str:
    return f"{n} {len(coins)}\n{' '.join(map(str, coins))}\n"


spec("coin_change_ways", "dynamic_programming", "train",
     "Coin change: ways modulo 1e9+7 and minimum coins for every amount up to N",
     [coin_input(0, []), coin_input(1, [2]), coin_input(100, [1, 5, 10, 25, 50]),
      coin_input(10000, [3, 7, 11, 13, 29, 97]),
      coin_input(200000, numbers(11, 20, 2, 500)),
      coin_input(2000000, sorted(set(numbers(12, 40, 2, 5000))))],
     inputs=generator(
         # Every class draws enough coins that the coin set alone carries over 64 bits (no
         # table of answers fits in a binary); no coins, a lone coin and N = 0 are t1/t2.
         # Edge: small amounts with coins around N (some larger, some repeated).
         klass("{N} {k}\n{coins}\n", N=between(40, 120), k=between(12, 16),
               coins=ints("k", 1, 48)),
         klass("{N} {k}\n{coins}\n", N=between(500, 2000), k=between(10, 16),
               coins=ints("k", 1, 100)),
         klass("{N} {k}\n{coins}\n", N=between(5000, 20000), k=between(9, 12),
               coins=ints("k", 2, 200)),
         klass("{N} {k}\n{coins}\n", N=between(100000, 300000), k=between(10, 25),
               coins=ints("k", 2, 500)),
         klass("{N} {k}\n{coins}\n", N=between(1900000, 2100000), k=between(38, 42),
               coins=ints("k", 2, 5000))))

# ---- graphs ---------------------------------------------------------------------------------

spec("dijkstra_heap", "graph", "train",
     "Dijkstra with a binary heap (lazy deletion) on a generated sparse digraph, several sources",
     ["1 0 1 1\n", "2 1 2 2\n", "10 30 3 3\n", "5000 30000 4 3\n", "100000 600000 5 2\n",
      "110000 660000 6 2\n"],
     inputs=generator(
         # Small graphs with edges to spare and three or more sources, so that (all but
         # never) some source reaches others, every draw's distances carry the seed and
         # most changes of m move some distance (one vertex, no edges and a single source
         # are t1/t2).
         klass("{n} {m} {seed} {sources}\n", n=between(5, 8), m=between("3 * n", "6 * n"),
               seed=SEED64, sources=between(3, 4)),
         klass("{n} {m} {seed} {sources}\n", n=between(5, 50), m=between("3 * n", "6 * n"),
               seed=SEED64, sources=between(2, 4)),
         klass("{n} {m} {seed} {sources}\n", n=between(2000, 8000), m=between("4 * n", "8 * n"),
               seed=SEED64, sources=between(2, 4)),
         klass("{n} {m} {seed} {sources}\n", n=between(80000, 120000), m=expr("6 * n"),
               seed=SEED64, sources=between(1, 2)),
         klass("{n} {m} {seed} 2\n", n=between(104000, 116000), m=expr("6 * n"), seed=SEED64)))
spec("bfs_grid", "graph", "train",
     "BFS flood fill of a generated grid maze: regions, corner distance, largest-region distances",
     ["1 1 0 1\n", "1 5 30 2\n", "10 10 30 3\n", "300 400 35 4\n",
      "1000 1000 25 15564440312192434176\n", "2000 2000 30 9007199254740993\n"],
     inputs=generator(
         # One-row and one-column mazes take their own paths; every drawn maze has 48 cells
         # or more and walls to place (empty and all-wall mazes, the same for every seed,
         # are fixed tests).
         klass("{H} {W} {pct} {seed}\n", H=one_of(1, 2, 3, 4, 7, 48, 64),
               W=between("max(1, 48 // H)", "max(2, 72 // H)"), pct=between(15, 60),
               seed=SEED64),
         klass("{H} {W} {pct} {seed}\n", H=between(8, 30), W=between(8, 30),
               pct=between(10, 60), seed=SEED64),
         klass("{H} {W} {pct} {seed}\n", H=between(100, 400), W=between(100, 400),
               pct=between(10, 50), seed=SEED64),
         klass("{H} {W} {pct} {seed}\n", H=between(800, 1200), W=between(800, 1200),
               pct=between(15, 45), seed=SEED64),
         klass("{H} {W} {pct} {seed}\n", H=between(1900, 2100), W=between(1900, 2100),
               pct=between(25, 35), seed=SEED64)))
spec("scc_kosaraju", "graph", "train",
     "Strongly connected components by Kosaraju with iterative DFS, condensation statistics",
     ["1 0 1\n", "2 2 2\n", "50 120 3\n", "20000 40000 4\n", "200000 500000 5\n",
      "400000 1200000 6\n"],
     inputs=generator(
         # Small sparse graphs with a real component structure: a dense small graph is
         # often strongly connected, and then its output is n's alone (a single vertex and
         # a two-vertex graph are the fixed t1 and t2).
         klass("{n} {m} {seed}\n", n=between(8, 24), m=between("n // 2", "n + n // 4"),
               seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(20, 100), m=between("n", "3 * n"), seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(10000, 30000), m=between("n", "3 * n"),
               seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(150000, 250000), m=between("2 * n", "3 * n"),
               seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(380000, 420000), m=expr("3 * n"), seed=SEED64)))


def floyd_input(seed: int, n: int, m: int, wmax: int) -> Callable[[], str]:
    def make() -> str:
        edges = graph_edges(seed, n, m, wmax) if n else []
        return f"{n} {len(edges)}\n" + "".join(f"{u} {v} {w}\n" for u, v, w in edges)
    return make


def sparse_floyd_input(seed: int, n: int, m: int) -> Callable[[], str]:
    """Random edges without the ring, so many pairs stay unreachable."""
    def make() -> str:
        r = Rng(seed)
        edges = [(r.between(1, n), r.between(1, n), r.between(0, 50)) for _ in range(m)]
        return f"{n} {m}\n" + "".join(f"{u} {v} {w}\n" for u, v, w in edges)
    return make


spec("floyd_warshall", "graph", "test",
     "Floyd-Warshall all-pairs shortest paths on a weighted digraph read from stdin",
     ["0 0\n", "1 1\n1 1 5\n", "4 5\n1 2 3\n2 3 4\n3 1 1\n1 3 10\n4 4 0\n",
      sparse_floyd_input(1, 60, 90), floyd_input(2, 150, 1200, 100),
      floyd_input(3, 540, 5400, 1000)],
     inputs=generator(
         # Self-loops, parallel edges and zero weights on a few vertices, with edges enough
         # that every draw's distances carry its edge list (no vertices or edges: t1/t2).
         klass("{n} {m}\n{edges}", n=between(5, 8), m=between("2 * n", "3 * n"),
               edges=repeat("m", "{u} {v} {w}\n", u=between(1, "n"),
                            v=between(1, "n"), w=between(0, 50))),
         klass("{n} {m}\n{edges}", n=between(10, 30), m=between("n", "3 * n"),
               edges=repeat("m", "{u} {v} {w}\n", u=between(1, "n"), v=between(1, "n"),
                            w=between(0, 50))),
         # Medium and large are sized like t4 and t5 (n = 60, 150: the work is n^3).
         klass("{n} {m}\n{edges}", n=between(55, 65), m=between("n", "2 * n"),
               edges=repeat("m", "{u} {v} {w}\n", u=between(1, "n"), v=between(1, "n"),
                            w=between(0, 100))),
         klass("{n} {m}\n{edges}", n=between(140, 160), m=between("6 * n", "9 * n"),
               edges=repeat("m", "{u} {v} {w}\n", u=between(1, "n"), v=between(1, "n"),
                            w=between(1, 1000))),
         klass("{n} {m}\n{edges}", n=between(520, 560), m=expr("10 * n"),
               edges=repeat("m", "{u} {v} {w}\n", u=between(1, "n"), v=between(1, "n"),
                            w=between(1, 1000)))))
spec("kruskal_mst", "graph", "train",
     "Kruskal minimum spanning forest: counting sort by weight, union-find with path halving",
     ["1 0 10 1\n", "2 1 5 2\n", "20 40 100 3\n", "10000 30000 1000 4\n",
      "200000 1000000 100000 5\n", "450000 1800000 1000000 6\n"],
     inputs=generator(
         # Small but with a real choice of edges: a single vertex and a single edge are the
         # fixed t1 and t2.
         klass("{n} {m} {maxw} {seed}\n", n=between(6, 16), m=between("n", "3 * n"),
               maxw=between(20, 1000), seed=SEED64),
         klass("{n} {m} {maxw} {seed}\n", n=between(10, 50), m=between("n", "3 * n"),
               maxw=between(1, 200), seed=SEED64),
         klass("{n} {m} {maxw} {seed}\n", n=between(5000, 15000), m=expr("3 * n"),
               maxw=between(100, 5000), seed=SEED64),
         klass("{n} {m} {maxw} {seed}\n", n=between(150000, 250000), m=expr("5 * n"),
               maxw=between(1000, 200000), seed=SEED64),
         klass("{n} {m} {maxw} {seed}\n", n=between(430000, 470000), m=expr("4 * n"),
               maxw=between(800000, 1200000), seed=SEED64)))
spec("max_flow_dinic", "graph", "validation",
     "Dinic maximum flow on a generated layered network, recursive blocking flow, min-cut check",
     ["1 1 1 1 1\n", "2 2 1 5 2\n", "4 5 3 10 3\n", "20 50 4 100 4\n",
      "40 150 5 1000 10760600709663615745\n", "45 300 5 2 8077600247326566543\n"],
     inputs=generator(
         # Small networks whose arcs (at least 2 x 3 x 2 of them) carry the seed: one layer
         # or one node per layer has no drawn arcs at all (fixed t1, t2).
         klass("{layers} {width} {degree} {maxcap} {seed}\n", layers=between(2, 4),
               width=between(3, 6), degree=between(2, 3), maxcap=between(5, 100), seed=SEED64),
         klass("{layers} {width} {degree} {maxcap} {seed}\n", layers=between(3, 6),
               width=between(4, 20), degree=between(2, 4), maxcap=between(5, 100), seed=SEED64),
         klass("{layers} {width} {degree} {maxcap} {seed}\n", layers=between(10, 25),
               width=between(30, 80), degree=between(3, 5), maxcap=between(50, 500),
               seed=SEED64),
         klass("{layers} {width} {degree} {maxcap} {seed}\n", layers=between(30, 40),
               width=between(80, 150), degree=5, maxcap=between(500, 2000), seed=SEED64),
         # With capacities up to 1000 the number of phases, hence the cost, varies 3x with
         # the seed alone; with capacities of 1-2 (the heavy test's) it stays within about
         # 0.7-1.3x of the heavy test.
         klass("45 300 5 {maxcap} {seed}\n", maxcap=between(1, 2), seed=SEED64)))

# ---- number theory --------------------------------------------------------------------------

spec("sieve_primes", "number_theory", "train",
     "Segmented odd-only byte sieve of a seeded window [L, L+N) below 2^40: prime count, sum, "
     "twins, largest gap",
     ["0 1\n", "1 2\n", "1000 3\n", "1000000 4\n", "10000000 5\n", "40000000 6\n"],
     inputs=generator(
         # Windows of 600+ numbers near or below 2^40 always hold a prime (the largest prime
         # gap below 1.3e12 is 540), so every draw's statistics carry the window.
         klass("{N} {seed}\n", N=between(600, 2000), seed=SEED64),
         klass("{N} {seed}\n", N=between(2000, 20000), seed=SEED64),
         klass("{N} {seed}\n", N=between(500000, 2000000), seed=SEED64),
         klass("{N} {seed}\n", N=between(5000000, 15000000), seed=SEED64),
         klass("{N} {seed}\n", N=between(38000000, 42000000), seed=SEED64)))
spec("miller_rabin32", "number_theory", "test",
     "Deterministic Miller-Rabin for 32-bit numbers (64-bit mulmod) over an arithmetic "
     "progression modulo 2^32 and seeded samples",
     # t1, t2 and t6 are contiguous windows (step 1; t2 wraps past 2^32 - 1 to 0).
     ["0 10 1 1 0\n", "4294967200 200 1 2 5\n", "1000 1000 3 3 100\n",
      "1000000000 100000 2654435769 4 10000\n", "3000000000 200000 12345679 5 200000\n",
      "2000000000 1200000 1 6 1000000\n"],
     inputs=generator(
         # Drawn classes step by a drawn odd 32-bit stride: a count of primes over a
         # contiguous window is a difference of prime counts, which a table of pi(x) every
         # few hundred thousand values would answer without testing the window; a
         # progression with one of 2^31 strides shares no prefix of its work with another.
         # Edge: progressions from 0 or running past 2^32 - 1 with small strides, so the
         # small primes and the wrap show; enough samples that some are prime.
         klass("{lo} {count} {step} {seed} {samples}\n", base=one_of(0, 4294967200),
               off=between(0, 95), lo=expr("base + off"), count=between(1, 120),
               half=between(0, 40), step=expr("2 * half + 1"), seed=SEED64,
               samples=between(30, 80)),
         klass("{lo} {count} {step} {seed} {samples}\n", lo=SEED32,
               count=between(100, 2000), half=between(0, 2**31 - 1),
               step=expr("2 * half + 1"), seed=SEED64, samples=between(0, 1000)),
         klass("{lo} {count} {step} {seed} {samples}\n", lo=SEED32,
               count=between(50000, 150000), half=between(0, 2**31 - 1),
               step=expr("2 * half + 1"), seed=SEED64, samples=between(5000, 20000)),
         klass("{lo} {count} {step} {seed} {samples}\n", lo=SEED32,
               count=between(150000, 250000), half=between(0, 2**31 - 1),
               step=expr("2 * half + 1"), seed=SEED64, samples=between(100000, 300000)),
         klass("{lo} {count} {step} {seed} {samples}\n", lo=SEED32,
               count=between(1100000, 1300000), half=between(0, 2**31 - 1),
               step=expr("2 * half + 1"), seed=SEED64, samples=between(900000, 1100000))))
spec("gcd_pairs", "number_theory", "train",
     "Sum of gcd over all pairs of n seeded values up to m with Euclid's algorithm, checked "
     "against totient and Moebius sieves",
     ["0 1 1\n", "1 10 2\n", "10 1000 3\n", "300 60000 4\n", "800 300000 5\n",
      "1700 1000000 6\n"],
     inputs=generator(
         # n >= 3 values in a wide range: every draw's pairs carry the seed's data.
         klass("{n} {m} {seed}\n", n=between(3, 12), m=between(10000, 50000), seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(13, 120), m=between(1000, 20000), seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(150, 400), m=between(20000, 100000),
               seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(500, 1000), m=between(100000, 500000),
               seed=SEED64),
         klass("{n} {m} {seed}\n", n=between(1650, 1750), m=between(900000, 1100000),
               seed=SEED64)))
spec("collatz_longest", "number_theory", "train",
     "Longest Collatz chain among N seeded starts below 2^40 with a lazily filled memo table; "
     "peak value and length histogram",
     # t3-t5: seeds whose longest length is reached by two starts (the smaller one found
     # second in t3 and t4, first in t5), so the tie rule (smallest start) is tested.
     ["0 1\n", "1 2\n", "100 240\n", "1000 61\n", "10000 14\n", "120000 6\n"],
     inputs=generator(
         klass("{N} {seed}\n", N=between(2, 20), seed=SEED64),
         klass("{N} {seed}\n", N=between(20, 500), seed=SEED64),
         klass("{N} {seed}\n", N=between(1000, 4000), seed=SEED64),
         klass("{N} {seed}\n", N=between(10000, 30000), seed=SEED64),
         klass("{N} {seed}\n", N=between(114000, 126000), seed=SEED64)))
spec("bigint_factorial", "number_theory", "train",
     "Randomised factorial: product of N seeded 32-bit factors in base 1e9 limbs; digit count, "
     "digit sum, leading digits, trailing zeros",
     ["0 1\n", "1 2\n", "16 3\n", "640 4\n", "3200 5\n", "11200 6\n"],
     inputs=generator(
         klass("{N} {seed}\n", N=between(1, 13), seed=SEED64),
         klass("{N} {seed}\n", N=between(14, 200), seed=SEED64),
         klass("{N} {seed}\n", N=between(320, 1300), seed=SEED64),
         klass("{N} {seed}\n", N=between(1900, 4500), seed=SEED64),
         klass("{N} {seed}\n", N=between(10800, 11600), seed=SEED64)))

# ---- strings --------------------------------------------------------------------------------


def kmp_input(n: int, seed: int, alphabet: int, patterns: list[str]) -> str:
    return f"{n} {seed} {alphabet} {len(patterns)}\n" + "".join(p + "\n" for p in patterns)


spec("kmp_search", "strings", "train",
     "Knuth-Morris-Pratt search of stdin patterns in a generated text with planted prefixes",
     [kmp_input(0, 1, 2, ["a"]), kmp_input(1, 2, 1, ["a", "aa"]),
      kmp_input(200, 3, 2, ["ab", "aba", "abab", "bbbb"]),
      kmp_input(100000, 4, 4, ["abcabd", "aaaa", "dcba", "abcdabcdabce"]),
      kmp_input(1000000, 5, 3, ["abcab", "aabbaabbc", "cccccccc", "abacabadabacaba"]),
      kmp_input(4500000, 6, 2, ["abaababaab", "aaaaaaab", "babbabbbabbbba", "ab",
                                 "aabaabaaabaabaaab", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbba"])],
     inputs=generator(
         # A short text with short patterns that match in it, so the match positions carry
         # the text (an empty text, a one-letter alphabet are the fixed t1 and t2).
         klass("{n} {seed} {alphabet} {q}\n{patterns}", n=between(24, 64), seed=SEED64,
               alphabet=between(2, 3), q=between(2, 4),
               patterns=repeat("q", "{p}\n", p=text(between_expr=(1, 4), alphabet="ab"))),
         # At least two letters and two patterns: with one letter, or one long pattern that
         # never occurs, the output would not depend on the text.
         klass("{n} {seed} {alphabet} {q}\n{patterns}", n=between(100, 1000), seed=SEED64,
               alphabet=between(2, 4), q=between(2, 6),
               patterns=repeat("q", "{p}\n", p=text(between_expr=(1, 10), alphabet="abcd"))),
         klass("{n} {seed} {alphabet} {q}\n{patterns}", n=between(50000, 150000), seed=SEED64,
               alphabet=between(2, 6), q=between(2, 8),
               patterns=repeat("q", "{p}\n", p=text(between_expr=(2, 15), alphabet="abcdef"))),
         klass("{n} {seed} {alphabet} {q}\n{patterns}", n=between(700000, 1300000),
               seed=SEED64, alphabet=between(2, 4), q=between(3, 8),
               patterns=repeat("q", "{p}\n", p=text(between_expr=(2, 20), alphabet="abcd"))),
         klass("{n} {seed} 2 6\n{patterns}", n=between(4300000, 4700000), seed=SEED64,
               patterns=repeat(6, "{p}\n", p=text(between_expr=(2, 30), alphabet="ab")))))
spec("suffix_array", "strings", "test",
     "Suffix array by prefix doubling with counting sorts, Kasai LCP, distinct substrings",
     ["0 1 2\n", "1 2 3\n", "12 3 2\n", "5000 4 4\n", "100000 13835058055282163729 2\n",
      "1000000 7640891576956012809 4\n"],
     inputs=generator(
         # Short strings of two to four letters, at least 20 bits each (n = 0 and 1 are the
         # fixed t1 and t2; a one-letter string is the same for every seed, so none is drawn).
         klass("{n} {seed} {alphabet}\n", n=between(20, 48), seed=SEED64,
               alphabet=between(2, 4)),
         klass("{n} {seed} {alphabet}\n", n=between(50, 500), seed=SEED64,
               alphabet=between(2, 26)),
         klass("{n} {seed} {alphabet}\n", n=between(3000, 10000), seed=SEED64,
               alphabet=between(2, 26)),
         klass("{n} {seed} {alphabet}\n", n=between(70000, 150000), seed=SEED64,
               alphabet=between(2, 26)),
         klass("{n} {seed} {alphabet}\n", n=between(950000, 1050000), seed=SEED64,
               alphabet=between(3, 6))))


def word_input(rounds: int, seed: int, records: int) -> Callable[[], str]:
    """word_freq's input: `rounds`, a 64-bit salt seed made from `seed`, word_text."""
    return lambda: f"{rounds} {Rng(seed ^ 0x5A17).next()}\n" + word_text(seed, records)


# word_freq's edge words: the odd tokens (each four times) among the whole vocabulary, so a
# short text still carries over 64 bits of words.
WORD_EDGE_TOKENS = ODD_TOKENS * 4 + tuple(WORDS)


def word_class(rounds: int, lo: int, hi: int) -> dict[str, object]:
    """`rounds` salts (a cost multiplier, fixed per class) over lo-hi records of word_text."""
    return klass("{rounds} {seed}\n{words}", rounds=rounds, seed=SEED64, count=between(lo, hi),
                 words=repeat("count", "{c}{w}{sep}", c=WORD_HEAD,
                              w=text(between_expr=(2, 10), alphabet=WORD_LETTERS),
                              sep=one_of(*WORD_SEPS)))


spec("word_freq", "strings", "train",
     "Word frequencies of stdin text in an open-addressing table with FNV-1a salted per round "
     "from a seed; probe total, slot checksum and top 10",
     ["1 1\n", "1 2\nHello, hello world. It's a World!\n", word_input(2, 3, 200),
      word_input(5, 4, 3300), word_input(20, 5, 13000), word_input(200, 6, 18000)],
     inputs=generator(
         # The salts come from a drawn 64-bit seed, and most words from a vocabulary of
         # random words (word_text): with salts fixed per round and ~330 words, each round's
         # table layout was fixed, so a round's probe total was the word count plus each
         # word's count times its displacement in that round (a table of 260 x 330 slot
         # numbers, or one pass plus per-round corrections, skipped 80-99.6% of the work).
         # Now a third of the tokens are common words and nearly every other one is new
         # (t6: 16,824 distinct of 27,046 words), so each round hashes and places
         # thousands of distinct words under a salt no table holds. The counts and top 10
         # do not depend on the salts; the probe total and the checksum of the slots taken
         # do, in every draw (the edge class's texts are too short for collisions, so the
         # checksum carries the seed there).
         # `rounds`, a cost multiplier, is fixed per class. Edge: case folding,
         # apostrophes, digits and other bytes that split words, among ordinary words
         # (empty text is t1).
         klass("{rounds} {seed}\n{words}", rounds=2, seed=SEED64, count=between(12, 30),
               words=repeat("count", "{w}{sep}", w=one_of(*WORD_EDGE_TOKENS),
                            sep=one_of(" ", " ", "\n", ", ", "--", "\t"))),
         word_class(2, 35, 330),
         word_class(5, 2000, 5300),
         word_class(20, 10000, 16700),
         word_class(200, 17400, 18600)))
spec("manacher_palindrome", "strings", "train",
     "Manacher's algorithm: longest palindrome and palindromic substring count",
     ["0 1 2\n", "25 2 1\n", "100 53 2\n", "10000 4 3\n", "1000000 5 2\n",
      "10000000 6 4\n"],
     inputs=generator(
         # Short but never empty, and at least two letters: the empty string and a
         # one-letter alphabet (whose output is n's alone) are fixed tests.
         klass("{n} {seed} {alphabet}\n", n=between(16, 48), seed=SEED64, alphabet=between(2, 4)),
         # Small alphabets make long palindromes, which take the algorithm's other paths.
         klass("{n} {seed} {alphabet}\n", n=between(30, 1000), seed=SEED64,
               alphabet=one_of(2, 2, 2, 3, 4, 26)),
         klass("{n} {seed} {alphabet}\n", n=between(5000, 50000), seed=SEED64,
               alphabet=one_of(2, 2, 2, 3, 4, 26)),
         klass("{n} {seed} {alphabet}\n", n=between(700000, 1300000), seed=SEED64,
               alphabet=between(2, 26)),
         klass("{n} {seed} {alphabet}\n", n=between(9500000, 10500000), seed=SEED64,
               alphabet=between(3, 6))))
spec("base64_roundtrip", "strings", "train",
     "Base64 encode and decode of generated buffers with round-trip verification",
     ["0 1\n", "1 2\n", "100 3\n", "100000 4\n", "3000000 5\n", "6000000 6\n"],
     inputs=generator(
         klass("{n} {seed}\n", n=between(0, 10), seed=SEED64),
         klass("{n} {seed}\n", n=between(11, 1000), seed=SEED64),
         klass("{n} {seed}\n", n=between(10000, 200000), seed=SEED64),
         klass("{n} {seed}\n", n=between(2000000, 4000000), seed=SEED64),
         klass("{n} {seed}\n", n=between(5700000, 6300000), seed=SEED64)))

# ---- hashing --------------------------------------------------------------------------------

spec("hash_table_open", "hashing", "train",
     "Open-addressing hash map (linear probing, backward-shift delete) under a mixed workload",
     ["1 0 1 1\n", "1 30 1 2\n", "8 1000 150 3\n", "16 200000 40000 4\n",
      "20 2000000 700000 5\n", "21 2000000 1200000 6\n"],
     inputs=generator(
         # Tiny tables that fill up (inserts refused), never an empty workload (no ops, and
         # a one-slot table over a key range of one, are the fixed t1 and t2).
         klass("{lg} {ops} {range} {seed}\n", lg=between(2, 4), ops=between(12, 60),
               range=between(2, 40), seed=SEED64),
         klass("{lg} {ops} {range} {seed}\n", lg=between(5, 10), ops=between(100, 3000),
               range=between(10, 2000), seed=SEED64),
         klass("{lg} {ops} {range} {seed}\n", lg=between(12, 18), ops=between(50000, 300000),
               range=between(10000, 300000), seed=SEED64),
         klass("{lg} {ops} {range} {seed}\n", lg=between(18, 21), ops=between(1000000, 2000000),
               range=between(200000, 1500000), seed=SEED64),
         klass("21 {ops} {range} {seed}\n", ops=between(1900000, 2100000),
               range=between(1100000, 1300000), seed=SEED64)))
spec("crc32_table", "hashing", "validation",
     "Table-driven CRC-32 and Adler-32 over a generated xorshift64* stream, bitwise CRC "
     "cross-check",
     ["0 1\n", "1 2\n", "1000 3\n", "100000 4\n", "10000000 5\n", "40000000 6\n"],
     inputs=generator(
         # The stream is xorshift64*, not plain xorshift64: xorshift64 output is linear over
         # GF(2) in its start state and CRC-32 is affine, so the CRCs were a 32x64 bit matrix
         # (a function of `total` alone) applied to the state, found by a matrix power in
         # microseconds; the multiply by an odd constant breaks the linearity, so every
         # byte has to be made and folded in.
         # Short streams of at least 8 bytes (one whole 64-bit word of the stream, so the
         # CRC and Adler sums carry the seed); total 0 and 1 are t1/t2.
         klass("{total} {seed}\n", total=between(8, 40), seed=SEED64),
         # Around the 4096-byte cross-check and the 64 KiB chunk.
         klass("{total} {seed}\n", total=one_of(4095, 4096, 4097, 65535, 65536, 65537, 1000),
               seed=SEED64),
         klass("{total} {seed}\n", total=between(70000, 1000000), seed=SEED64),
         klass("{total} {seed}\n", total=between(5000000, 15000000), seed=SEED64),
         klass("{total} {seed}\n", total=between(38000000, 42000000), seed=SEED64)))
spec("sha256_blocks", "hashing", "train",
     "SHA-256 of a stdin message, of a generated buffer, and a hash chain",
     ["0 0 1\n\n", "3 1 2\nabc\n",
      "100 10 3\nabcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq\n",
      "100000 1000 4\nThe quick brown fox jumps over the lazy dog\n",
      "2000000 20000 5\n" + "a" * 1000 + "\n", "20000000 100000 6\nasmopt\n"],
     inputs=generator(
         # Buffer and message lengths around the 55/56/64-byte padding boundaries.
         klass("{n} {chain} {seed}\n{msg}\n", n=between(0, 130), chain=between(0, 3),
               seed=SEED64, len=between(0, 130), msg=text("len", PRINTABLE)),
         klass("{n} {chain} {seed}\n{msg}\n", n=between(100, 5000), chain=between(1, 100),
               seed=SEED64, len=between(0, 200), msg=text("len", PRINTABLE)),
         klass("{n} {chain} {seed}\n{msg}\n", n=between(50000, 300000),
               chain=between(500, 3000), seed=SEED64, len=between(0, 1000),
               msg=text("len", PRINTABLE)),
         klass("{n} {chain} {seed}\n{msg}\n", n=between(1500000, 2500000),
               chain=between(10000, 30000), seed=SEED64, len=between(0, 4000),
               msg=text("len", PRINTABLE)),
         klass("{n} {chain} {seed}\n{msg}\n", n=between(19000000, 21000000),
               chain=between(90000, 110000), seed=SEED64, len=between(0, 64),
               msg=text("len", PRINTABLE))))
spec("bloom_filter", "hashing", "train",
     "Bloom filter with double hashing; measured vs expected false-positive rate",
     ["6 1 0 0 1\n", "6 3 5 10 2\n", "12 4 300 2000 3\n", "20 7 100000 100000 4\n",
      "24 5 1000000 1000000 5\n", "24 6 2000000 3000000 6\n"],
     compare=numeric(1e-4, 1e-6),
     inputs=generator(
         # No insert, or k = 31 or 32 saturating a 64-bit filter, says nothing of the seed:
         # those stay fixed tests.
         klass("{lg} {k} {ins} {q} {seed}\n", lg=between(6, 8), k=one_of(1, 2, 3, 4, 8),
               ins=between(1, 10), q=between(0, 20), seed=SEED64),
         klass("{lg} {k} {ins} {q} {seed}\n", lg=between(8, 14), k=between(1, 8),
               ins=between(10, 2000), q=between(100, 5000), seed=SEED64),
         klass("{lg} {k} {ins} {q} {seed}\n", lg=between(16, 20), k=between(2, 10),
               ins=between(50000, 150000), q=between(50000, 150000), seed=SEED64),
         klass("{lg} {k} {ins} {q} {seed}\n", lg=between(22, 25), k=between(3, 8),
               ins=between(500000, 1500000), q=between(500000, 1500000), seed=SEED64),
         klass("24 6 {ins} {q} {seed}\n", ins=between(1900000, 2100000),
               q=between(2800000, 3200000), seed=SEED64)))

# ---- bit manipulation -----------------------------------------------------------------------

spec("popcount_swar", "bit_manipulation", "train",
     "Portable SWAR popcount, bit reversal, ctz/clz, parity and Gosper's hack over a stream",
     ["0 1\n", "1 2\n", "100 3\n", "100000 4\n", "1000000 5\n", "8000000 6\n"],
     inputs=generator(
         klass("{n} {seed}\n", n=between(1, 10), seed=SEED64),
         klass("{n} {seed}\n", n=between(11, 1000), seed=SEED64),
         klass("{n} {seed}\n", n=between(50000, 200000), seed=SEED64),
         klass("{n} {seed}\n", n=between(700000, 1300000), seed=SEED64),
         klass("{n} {seed}\n", n=between(7600000, 8400000), seed=SEED64)))
spec("nqueens_bitmask", "bit_manipulation", "validation",
     "N-queens with blocked squares and seeded cell weights by recursive bitmask search: "
     "counts, heaviest placement, weight sum",
     ["1 0 1\n", "3 0 2\n", "8 0 3\n", "10 5 4\n", "12 10 5\n", "14 12 6\n"],
     inputs=generator(
         # Boards that keep placements (n >= 5, few blocks): every draw has weights to sum.
         klass("{n} {blocked} {seed}\n", n=between(5, 8), blocked=between(0, 3), seed=SEED64),
         klass("{n} {blocked} {seed}\n", n=between(7, 9), blocked=between(0, 8), seed=SEED64),
         klass("{n} {blocked} {seed}\n", n=between(9, 11), blocked=between(0, 10), seed=SEED64),
         klass("{n} {blocked} {seed}\n", n=between(11, 12), blocked=between(5, 15),
               seed=SEED64),
         klass("14 {blocked} {seed}\n", blocked=between(10, 14), seed=SEED64)))


def subset_input(seed: int, n: int, lo: int, hi: int, targets: list[int]) -> str:
    vals = numbers(seed, n, lo, hi)
    return (f"{n}\n{' '.join(map(str, vals))}\n{len(targets)}\n"
            + " ".join(map(str, targets)) + "\n")


spec("subset_sum_mitm", "bit_manipulation", "train",
     "Meet-in-the-middle subset sums (sorted by merging) for targets from stdin",
     ["0\n1\n0\n", "1\n5\n3\n0 5 6\n", subset_input(3, 10, 1, 20, [0, 17, 50, 1000]),
      subset_input(4, 24, 1, 1000, [5000, 6000, 12345]),
      subset_input(5, 34, 1, 1 << 20, [1 << 22, 5000000, 12345678]),
      subset_input(6, 42, 1, 1 << 30, [10**10, 2 * 10**10, 123456789012, 7 * 10**9, 3**20])],
     inputs=generator(
         # A few small values (zeros and equal sums: ways above one) and several targets
         # around half the total, so every draw's answers carry its values (no values or
         # targets: t1/t2).
         klass("{n}\n{values}\n{q}\n{targets}\n", n=between(6, 10), values=ints("n", 0, 200),
               q=between(2, 4), targets=ints("q", 0, "n * 100")),
         klass("{n}\n{values}\n{q}\n{targets}\n", n=between(8, 14),
               values=ints("n", 1, 100), q=between(2, 5), targets=ints("q", 0, "n * 100")),
         klass("{n}\n{values}\n{q}\n{targets}\n", n=between(18, 26),
               values=ints("n", 1, 1000), q=between(1, 5), targets=ints("q", 0, "n * 1000")),
         klass("{n}\n{values}\n{q}\n{targets}\n", n=between(30, 36),
               values=ints("n", 1, 1048576), q=between(1, 5),
               targets=ints("q", 0, "n * 1048576")),
         klass("42\n{values}\n5\n{targets}\n", values=ints(42, 1, 1073741824),
               targets=ints(5, 0, 45097156608))))
spec("life_bitboard", "bit_manipulation", "train",
     "Game of Life on a torus, 64 cells per word, bit-parallel neighbour counting",
     ["3 1 0 50 1\n", "4 1 2 100 2\n", "16 1 10 35 3\n", "128 4 50 30 4\n",
      "512 8 100 30 5\n", "1024 16 1500 30 6\n"],
     inputs=generator(
         # Densities that leave a live, seed-dependent board: a full board (one output
         # whatever the seed) is the fixed t2.
         klass("{H} {WW} {gens} {density} {seed}\n", H=between(3, 6), WW=between(1, 2),
               gens=between(0, 5), density=between(25, 60), seed=SEED64),
         klass("{H} {WW} {gens} {density} {seed}\n", H=between(8, 32), WW=between(1, 2),
               gens=between(1, 30), density=between(15, 60), seed=SEED64),
         klass("{H} {WW} {gens} {density} {seed}\n", H=between(64, 200), WW=between(2, 6),
               gens=between(20, 80), density=between(10, 60), seed=SEED64),
         klass("{H} {WW} {gens} {density} {seed}\n", H=between(400, 600), WW=between(6, 10),
               gens=between(80, 120), density=between(10, 60), seed=SEED64),
         klass("1024 16 {gens} {density} {seed}\n", gens=between(1350, 1650),
               density=between(15, 60), seed=SEED64)))

# ---- matrices and stencils ------------------------------------------------------------------

spec("matmul_int", "matrix", "train",
     "Dense 32-bit integer matrix product (i-k-j order, wrapping), then matrix-vector checks",
     ["0 1\n", "1 2\n", "7 3\n", "64 4\n", "200 9223372036854775813\n",
      "850 14627333968358193854\n"],
     inputs=generator(
         # n = 0 (no output data) is the fixed t1.
         klass("{n} {seed}\n", n=between(1, 9), seed=SEED64),
         klass("{n} {seed}\n", n=between(10, 40), seed=SEED64),
         klass("{n} {seed}\n", n=between(50, 100), seed=SEED64),
         klass("{n} {seed}\n", n=between(150, 250), seed=SEED64),
         klass("{n} {seed}\n", n=between(820, 880), seed=SEED64)))
spec("prefix_sum_2d", "matrix", "validation",
     "2D prefix sums: random rectangle queries, best k x k square, best column strip",
     ["1 1 1 1 1\n", "2 3 5 2 2\n", "20 30 100 5 3\n", "300 400 100000 20 4\n",
      "1000 1000 1000000 50 5\n", "1500 1500 2000000 64 6\n"],
     inputs=generator(
         # k larger than the grid (no square fits), no queries.
         klass("{H} {W} {queries} {k} {seed}\n", H=between(1, 4), W=between(1, 4),
               queries=between(0, 10), k=between(1, 5), seed=SEED64),
         klass("{H} {W} {queries} {k} {seed}\n", H=between(10, 40), W=between(10, 40),
               queries=between(10, 500), k=between(1, 10), seed=SEED64),
         klass("{H} {W} {queries} {k} {seed}\n", H=between(200, 400), W=between(200, 400),
               queries=between(50000, 150000), k=between(5, 30), seed=SEED64),
         klass("{H} {W} {queries} {k} {seed}\n", H=between(800, 1200), W=between(800, 1200),
               queries=between(500000, 1500000), k=between(20, 80), seed=SEED64),
         klass("{H} {W} {queries} {k} {seed}\n", H=between(1450, 1550), W=between(1450, 1550),
               queries=between(1800000, 2200000), k=between(40, 90), seed=SEED64)))
spec("conv2d_int", "matrix", "train",
     "8-bit image filters with clamped borders: 5x5 Gaussian blur, saturating sharpen, Sobel",
     ["1 1 1 1\n", "2 3 2 2\n", "16 16 1 3\n", "200 300 2 4\n",
      "512 512 3 13066443718877599295\n", "1200 1400 5 10376293541461622847\n"],
     inputs=generator(
         # Thin images (one to six rows, clamped borders everywhere) of 24 pixels or more,
         # so every draw carries the noise of many pixels (1x1 and 2x3 are the fixed t1, t2).
         klass("{H} {W} {passes} {seed}\n", H=between(1, 6),
               W=between("max(3, 24 // H)", "max(5, 40 // H)"), passes=between(0, 3),
               seed=SEED64),
         klass("{H} {W} {passes} {seed}\n", H=between(10, 40), W=between(10, 40),
               passes=between(1, 3), seed=SEED64),
         klass("{H} {W} {passes} {seed}\n", H=between(100, 300), W=between(100, 300),
               passes=between(1, 3), seed=SEED64),
         klass("{H} {W} {passes} {seed}\n", H=between(400, 600), W=between(400, 600),
               passes=between(2, 4), seed=SEED64),
         klass("{H} {W} 5 {seed}\n", H=between(1150, 1250), W=between(1350, 1450),
               seed=SEED64)))

# ---- floating point -------------------------------------------------------------------------

spec("matmul_double", "floating_point", "train",
     "Cache-blocked double-precision matrix product; trace and Frobenius norm",
     ["0 1\n", "1 2\n", "5 3\n", "64 4\n", "250 5\n", "860 6\n"],
     compare=numeric(1e-6, 1e-7),
     inputs=generator(
         # n = 0 and n = 1 (one product) are the fixed t1 and t2.
         klass("{n} {seed}\n", n=between(2, 9), seed=SEED64),
         # Around the 32-wide tile.
         klass("{n} {seed}\n", n=between(10, 70), seed=SEED64),
         klass("{n} {seed}\n", n=between(50, 100), seed=SEED64),
         klass("{n} {seed}\n", n=between(200, 300), seed=SEED64),
         klass("{n} {seed}\n", n=between(830, 890), seed=SEED64)))
spec("jacobi_heat", "floating_point", "test",
     "Jacobi iteration of the 2D heat equation (5-point stencil) with a source term, from a "
     "seeded random start with noisy fixed edges",
     ["3 0 1.0 1\n", "3 5 10.0 2\n", "17 100 500.0 3\n", "101 1000 1000.0 4\n",
      "300 1500 2000.0 11936128518282651045\n", "700 500 2000000.0 15183679024914425207\n"],
     compare=numeric(1e-6, 1e-6),
     inputs=generator(
         # Every grid size from 3 to 12: odd and even interior widths take different paths
         # through the vectorised stencil; n = 5 and 6 (the only sizes on which one of its
         # branches shows) are drawn most often.
         klass("{n} {iters} {strength} {seed}\n",
               n=one_of(3, 4, 5, 5, 5, 6, 6, 6, 7, 8, 9, 10, 11, 12),
               iters=between(0, 60), strength=decimal(0, 1000, 1), seed=SEED64),
         klass("{n} {iters} {strength} {seed}\n", n=between(13, 40), iters=between(10, 300),
               strength=decimal(0, 2000, 2), seed=SEED64),
         klass("{n} {iters} {strength} {seed}\n", n=between(60, 150),
               iters=between(300, 1500), strength=decimal(0, 5000, 1), seed=SEED64),
         klass("{n} {iters} {strength} {seed}\n", n=between(250, 350),
               iters=between(1000, 2000), strength=decimal(0, 10000, 1), seed=SEED64),
         klass("{n} {iters} {strength} {seed}\n", n=between(680, 720),
               iters=between(470, 530), strength=decimal(1000, 3000000, 1), seed=SEED64)))
spec("nbody_sim", "floating_point", "validation",
     "Softened N-body leapfrog integration over an array of structs; energy and momentum",
     ["1 0 0.01 1\n", "2 10 0.01 2\n", "5 100 0.005 3\n", "50 200 0.002 4\n",
      "200 200 0.001 5\n", "600 150 0.0005 6\n"],
     compare=numeric(1e-6, 1e-6),
     inputs=generator(
         klass("{n} {steps} {dt} {seed}\n", n=between(1, 3), steps=between(0, 20),
               dt=decimal(0.001, 0.02, 4), seed=SEED64),
         klass("{n} {steps} {dt} {seed}\n", n=between(4, 20), steps=between(20, 200),
               dt=decimal(0.001, 0.01, 4), seed=SEED64),
         klass("{n} {steps} {dt} {seed}\n", n=between(30, 80), steps=between(100, 300),
               dt=decimal(0.001, 0.005, 4), seed=SEED64),
         klass("{n} {steps} {dt} {seed}\n", n=between(150, 250), steps=between(150, 250),
               dt=decimal(0.0005, 0.002, 4), seed=SEED64),
         klass("{n} {steps} {dt} {seed}\n", n=between(580, 620), steps=between(140, 160),
               dt=decimal(0.0003, 0.0008, 4), seed=SEED64)))
spec("mandelbrot", "floating_point", "train",
     "Escape-time Mandelbrot set with seeded jittered sampling of windows on the set's "
     "boundary: iteration totals per band and smooth-colouring mean",
     ["1 1 1 -2 -1.5 1 1.5 1\n", "4 3 50 1 1 2 2 2\n", "80 60 200 -2 -1.5 1 1.5 3\n",
      "400 300 500 -0.75 0.05 -0.7 0.1 4\n", "800 600 1000 -2.2 -1.4 0.8 1.4 5\n",
      "640 480 2000 -0.7454 0.1123 -0.7446 0.1131 6\n"],
     compare=numeric(1e-6, 1e-4),
     inputs=generator(
         # Windows straddling the set (nothing but inside points, t1, or nothing but fast
         # escapes, t2, are fixed tests), each pixel sampled at a point the seed draws.
         klass("{W} {H} {maxit} {window} {seed}\n", W=between(3, 8), H=between(3, 8),
               maxit=between(16, 80), window=one_of(*MANDEL_EDGE_WINDOWS), seed=SEED64),
         # Small, medium and large windows straddle the boundary too (MANDEL_CENTRES), 3e-4
         # to 3e-3, 1e-4 to 1e-3 and 3e-5 to 3e-4 wide: random large windows spent 93-99%
         # of their iterations on points inside the set, which the closed-form
         # main-cardioid and period-2 bulb tests skip, so the seed-dependent work was 1-7%
         # of a run. Measured with an instrumented copy, the iterations spent on points
         # that reach maxit are on average 1.1% (at most 13%) of the total over 200 small
         # draws, 0.3% (at most 5.2%) over 100 medium and under 0.1% (at most 0.3%) over
         # 50 large ones; maxit stays above the windows' escape times (300 or more), so a
         # draw's answer is its escape times. Median iterations per draw: small 3.6e5
         # (was 1.9e5), medium 7.9e6 (was 1.3e7), large 5.8e7 (was 2.0e8, nearly all of
         # it inside the set; the fixed t5 takes 8.9e7). t3-t5 stay whole-set and
         # seahorse-valley views: fixed tests, whose answers are fixed anyway.
         mandel_window_class((20, 100), (20, 100), (300, 800), (3000, 30000)),
         mandel_window_class((200, 400), (150, 300), (400, 1200), (1000, 10000)),
         mandel_window_class((600, 900), (450, 700), (500, 1500), (300, 3000)),
         # The cost depends on where the window is: windows measured to cost what the
         # heavy test's does, at jittered sizes and iteration limits; the seed moves every
         # sample within its pixel, which leaves the cost as it was.
         klass("{W} {H} {maxit} {window} {seed}\n", W=between(620, 660), H=between(465, 495),
               maxit=between(1900, 2100), window=one_of(*MANDEL_HEAVY_WINDOWS),
               seed=SEED64)))
spec("fft_convolve", "floating_point", "train",
     "Polynomial product by iterative radix-2 complex FFT, rounded and cross-checked",
     ["0 1\n", "1 2\n", "3 3\n", "1000 4\n", "100000 11400714819323198485\n",
      "250000 17293822569102704642\n"],
     inputs=generator(
         # n = 0 (no coefficients) is the fixed t1; from n = 3 a draw carries 60 bits.
         klass("{n} {seed}\n", n=between(3, 10), seed=SEED64),
         klass("{n} {seed}\n", n=between(11, 1000), seed=SEED64),
         klass("{n} {seed}\n", n=between(1000, 20000), seed=SEED64),
         klass("{n} {seed}\n", n=between(60000, 131072), seed=SEED64),
         # The transform length is the power of two >= 2n: stay within the heavy test's.
         klass("{n} {seed}\n", n=between(235000, 262144), seed=SEED64)))

# ---- data structures ------------------------------------------------------------------------

spec("lru_cache", "data_structures", "train",
     "LRU cache: pointer-linked recency list and chained hash table over a skewed trace",
     ["1 1 1 1\n", "2 10 3 2\n", "16 1000 100 3\n", "1000 200000 20000 4\n",
      "50000 2000000 1000000 5\n", "100000 2000000 1500000 6\n"],
     inputs=generator(
         # A short trace over a key space larger than the cache, so hits, evictions and the
         # final order carry the trace (tiny key spaces are the fixed t1 and t2).
         klass("{cap} {req} {space} {seed}\n", cap=between(2, 8), req=between(40, 200),
               space=between(16, 200), seed=SEED64),
         klass("{cap} {req} {space} {seed}\n", cap=between(5, 100), req=between(100, 5000),
               space=between(10, 1000), seed=SEED64),
         klass("{cap} {req} {space} {seed}\n", cap=between(500, 5000),
               req=between(100000, 300000), space=between(5000, 50000), seed=SEED64),
         klass("{cap} {req} {space} {seed}\n", cap=between(20000, 80000),
               req=between(1500000, 2000000), space=between(500000, 1500000), seed=SEED64),
         klass("{cap} {req} {space} {seed}\n", cap=between(90000, 110000),
               req=between(1900000, 2100000), space=between(1400000, 1600000), seed=SEED64)))
spec("segment_tree", "data_structures", "test",
     "Recursive lazy segment tree: range add, range sum and range minimum",
     ["1 0 1\n", "1 5 2\n", "10 50 3\n", "1000 20000 4\n", "50000 100000 5\n",
      "200000 200000 6\n"],
     inputs=generator(
         klass("{n} {ops} {seed}\n", n=between(1, 8), ops=between(0, 20), seed=SEED64),
         klass("{n} {ops} {seed}\n", n=between(10, 100), ops=between(10, 500), seed=SEED64),
         klass("{n} {ops} {seed}\n", n=between(500, 5000), ops=between(10000, 50000),
               seed=SEED64),
         klass("{n} {ops} {seed}\n", n=between(30000, 80000), ops=between(80000, 150000),
               seed=SEED64),
         klass("{n} {ops} {seed}\n", n=between(190000, 210000), ops=between(190000, 210000),
               seed=SEED64)))


def fenwick_input(seed: int, n: int, lo: int, hi: int, ops: int) -> Callable[[], str]:
    return lambda: f"{n}\n{wrap_ints(numbers(seed, n, lo, hi))}{ops} {seed}\n"


spec("fenwick_inversions", "data_structures", "train",
     "Fenwick trees over a stdin list: inversion count, then updates and order statistics",
     ["0\n0 1\n", "1\n42\n10 2\n", "5\n5 4 3 2 1\n100 3\n",
      fenwick_input(4, 1000, -50, 50, 10000), fenwick_input(5, 10000, -10**9, 10**9, 1000000),
      fenwick_input(6, 20000, 0, 10**6, 4000000)],
     inputs=generator(
         # All equal (a one-value range), int extremes, an empty list.
         # n = 0 or no operations says nothing of the seed: those stay fixed tests.
         klass("{n}\n{a}\n{ops} {seed}\n", n=between(1, 8), lo=one_of(-2147483648, -3, 0),
               hi=one_of(0, 3, 2147483647), a=ints("n", "lo", "hi"), ops=between(4, 20),
               seed=SEED64),
         klass("{n}\n{a}\n{ops} {seed}\n", n=between(9, 200), span=one_of(2, 10, 1000),
               a=ints("n", "-span", "span", per_line=16), ops=between(10, 1000), seed=SEED64),
         klass("{n}\n{a}\n{ops} {seed}\n", n=between(500, 2000), span=one_of(50, 1000000000),
               a=ints("n", "-span", "span", per_line=16), ops=between(5000, 20000),
               seed=SEED64),
         klass("{n}\n{a}\n{ops} {seed}\n", n=between(5000, 15000),
               a=ints("n", -1000000000, 1000000000, per_line=16),
               ops=between(500000, 1500000), seed=SEED64),
         klass("{n}\n{a}\n{ops} {seed}\n", n=between(19000, 21000),
               a=ints("n", 0, 1000000, per_line=16), ops=between(3800000, 4200000),
               seed=SEED64)))


# --------------------------------------------------------------------------------------------
# Building and running.
# --------------------------------------------------------------------------------------------

@dataclass
class RunResult:
    stdout: bytes
    seconds: float  # wall-clock
    cpu_seconds: float  # user + system time of the child


class BuildError(RuntimeError):
    pass


def compile_c(src: Path, out: Path, opt: list[str]) -> None:
    cmd = [CC, *opt, *WARN, "-o", str(out), str(src), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or proc.stderr.strip():
        raise BuildError(f"{' '.join(cmd)} failed:\n{proc.stderr}")


def lint_c(src: Path) -> None:
    cmd = [CC, "-std=c11", "-pedantic", *WARN, "-fsyntax-only", str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or proc.stderr.strip():
        raise BuildError(f"{' '.join(cmd)} failed:\n{proc.stderr}")


def run_binary(exe: Path, stdin: bytes, timeout: float, what: str,
               env: dict[str, str] | None = None) -> RunResult:
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([str(exe)], input=stdin, capture_output=True, timeout=timeout,
                              env=env)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what}: timed out after {timeout:.0f} s") from None
    dt = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-2000:]
        raise BuildError(f"{what}: exit status {proc.returncode}\n{tail}")
    if proc.stderr:
        tail = proc.stderr.decode(errors="replace")[-2000:]
        raise BuildError(f"{what}: wrote to stderr\n{tail}")
    return RunResult(proc.stdout, dt, cpu)


def outputs_match(spec_: Spec, expected: bytes, actual: bytes) -> bool:
    """The suite's own comparison (asmopt.compare, what judges every answer), so a program
    is accepted here exactly when its -O3 build would pass in an evaluation."""
    return compare_output(expected, actual, Comparison.from_dict(spec_.compare)) is None


def write_if_changed(path: Path, data: bytes, check: bool, problems: list[str]) -> None:
    old = path.read_bytes() if path.exists() else None
    if old == data:
        return
    if check:
        problems.append(f"{path.relative_to(ROOT)} is {'missing' if old is None else 'stale'}")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def program_json(s: Spec) -> bytes:
    doc: dict[str, object] = {"metadata": {"category": s.category, "description": s.description,
                                           "heavy_tests": list(s.heavy_tests())}}
    if s.compare:
        doc["compare"] = s.compare
    if s.inputs is not None:
        doc["inputs"] = s.generator().to_dict()
    return (json.dumps(doc, indent=2) + "\n").encode()


def suite_json(specs: list[Spec]) -> bytes:
    doc = {
        "format": "asmopt-suite",
        "version": 1,
        "name": "builtin",
        "description": SUITE_DESCRIPTION,
        "programs": [{"id": s.id, "split": s.split} for s in sorted(specs, key=lambda s: s.id)],
    }
    return (json.dumps(doc, indent=2) + "\n").encode()


@dataclass
class Timing:
    wall_ms: float  # median wall-clock time of the -O3 runs
    cpu_ms: float  # median user+system time of the -O3 runs
    o0_wall_ms: float  # the single -O0 reference run


@dataclass
class Report:
    id: str
    heavy: dict[str, Timing] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def build_program(s: Spec, work: Path, check: bool, sanitize: bool, reps: int,
                  clock: str) -> Report:
    rep = Report(s.id)
    pdir = PROGRAMS_DIR / s.id
    src = pdir / "main.c"
    if not src.exists():
        rep.problems.append(f"{src.relative_to(ROOT)} not found")
        return rep
    try:
        lint_c(src)
        exe0, exe3, exes = work / f"{s.id}.O0", work / f"{s.id}.O3", work / f"{s.id}.san"
        compile_c(src, exe0, ["-O0"])
        compile_c(src, exe3, ["-O3"])
        if sanitize:
            compile_c(src, exes, ["-O3", "-g", "-fsanitize=undefined,address",
                                  "-fno-sanitize-recover=all"])
    except BuildError as exc:
        rep.problems.append(str(exc))
        return rep

    write_if_changed(pdir / "program.json", program_json(s), check, rep.problems)
    names = [f"t{i}" for i in range(1, len(s.tests) + 1)]
    heavy = set(s.heavy_tests())
    if len(names) < 5:
        rep.problems.append(f"only {len(names)} tests (need 5)")
    tests_dir = pdir / "tests"
    if tests_dir.is_dir():
        stray = sorted(p.name for p in tests_dir.iterdir()
                       if p.suffix in (".in", ".out") and p.stem not in names)
        for name in stray:
            if check:
                rep.problems.append(f"stray test file tests/{name}")
            else:
                (tests_dir / name).unlink()
    san_env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
                   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    for name, inp in zip(names, s.tests, strict=True):
        stdin = (inp() if callable(inp) else inp).encode()
        if len(stdin) > MAX_INPUT_BYTES:
            rep.problems.append(f"{name}: input is {len(stdin)} bytes (limit {MAX_INPUT_BYTES})")
        write_if_changed(tests_dir / f"{name}.in", stdin, check, rep.problems)
        try:
            ref = run_binary(exe0, stdin, RUN_TIMEOUT_S, f"{s.id}/{name} (-O0)")
            if len(ref.stdout) > MAX_OUTPUT_BYTES:
                rep.problems.append(f"{name}: output is {len(ref.stdout)} bytes")
            if not ref.stdout.strip():
                rep.problems.append(f"{name}: empty output")
            if check and (tests_dir / f"{name}.out").exists():
                stored = (tests_dir / f"{name}.out").read_bytes()
                if not outputs_match(s, stored, ref.stdout):
                    rep.problems.append(f"{name}: stored output differs from the -O0 reference")
            write_if_changed(tests_dir / f"{name}.out", ref.stdout, check, rep.problems)
            runs: list[RunResult] = []
            for _ in range(reps if name in heavy else 1):
                got = run_binary(exe3, stdin, RUN_TIMEOUT_S, f"{s.id}/{name} (-O3)")
                if not outputs_match(s, ref.stdout, got.stdout):
                    rep.problems.append(f"{name}: -O3 output differs from -O0 reference")
                    break
                runs.append(got)
            if name in heavy and runs:
                rep.heavy[name] = Timing(
                    wall_ms=1000 * statistics.median(r.seconds for r in runs),
                    cpu_ms=1000 * statistics.median(r.cpu_seconds for r in runs),
                    o0_wall_ms=1000 * ref.seconds)
            elif sanitize and name not in heavy:
                got = run_binary(exes, stdin, SANITIZE_TIMEOUT_S, f"{s.id}/{name} (sanitizers)",
                                 env=san_env)
                if not outputs_match(s, ref.stdout, got.stdout):
                    rep.problems.append(f"{name}: sanitizer build output differs")
        except BuildError as exc:
            rep.problems.append(str(exc))

    def pick(t: Timing) -> float:
        return t.cpu_ms if clock == "cpu" else t.wall_ms

    if not any(HEAVY_MIN_S * 1000 <= pick(t) <= HEAVY_MAX_S * 1000 for t in rep.heavy.values()):
        rep.problems.append(
            f"no heavy test in 50-500 ms ({clock} time) at -O3 ("
            + ", ".join(f"{n}: {pick(t):.0f} ms" for n, t in rep.heavy.items()) + ")")
    return rep


# --------------------------------------------------------------------------------------------
# Checking the input generators: drawn inputs must be as valid as the fixed tests.
# --------------------------------------------------------------------------------------------

HEAVY_COST_RANGE = (0.6, 1.4)  # a heavy draw's -O3 cost over the heavy test's
SANITIZE_ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0",
                "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


@dataclass
class GeneratorReport:
    id: str
    draws: dict[str, int] = field(default_factory=dict)  # class -> inputs checked
    heavy_ms: list[float] = field(default_factory=list)  # the heavy test, beside each draw
    heavy_ratios: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Valid heavy draws (seed, stdin), timed afterwards one at a time (`time_heavy_draws`).
    heavy_draws: list[tuple[int, bytes]] = field(default_factory=list)


def _show(stdin: bytes) -> str:
    head = stdin[:60].decode(errors="replace")
    return repr(head) + ("..." if len(stdin) > 60 else "")


def _binaries(s: Spec, work: Path) -> tuple[Path, Path, Path]:
    return work / f"{s.id}.g0", work / f"{s.id}.g3", work / f"{s.id}.gsan"


def check_generator(s: Spec, work: Path, per_light: int, per_heavy: int,
                    seeds: random.Random) -> GeneratorReport:
    """Draw `per_light` inputs of every light class and `per_heavy` of the heavy class and
    check each as the fixed tests are checked: -O0 and -O3 agree (by the program's own
    comparison), both exit 0 without stderr within the time limit, the output is not a
    refusal ("bad input") and within the output limit, and light draws run clean under
    -fsanitize=undefined,address. Failing draws name their seed, so they can be drawn again
    with `InputGenerator.draw(class, seed)`."""
    rep = GeneratorReport(s.id)
    try:
        gen = s.generator()
    except GeneratorError as exc:
        rep.problems.append(str(exc))
        return rep
    unmapped = [t for t in s.test_names() if gen.class_of(t) is None]
    if unmapped:
        rep.problems.append(f"tests without a class: {', '.join(unmapped)}")
    exe0, exe3, exes = _binaries(s, work)
    try:
        src = PROGRAMS_DIR / s.id / "main.c"
        compile_c(src, exe0, ["-O0"])
        compile_c(src, exe3, ["-O3"])
        compile_c(src, exes, ["-O3", "-g", "-fsanitize=undefined,address",
                              "-fno-sanitize-recover=all"])
    except BuildError as exc:
        rep.problems.append(str(exc))
        return rep
    san_env = dict(os.environ, **SANITIZE_ENV)
    comparison = Comparison.from_dict(s.compare)
    for klass_name in gen.class_names:
        heavy = klass_name == "heavy"
        for _ in range(per_heavy if heavy else per_light):
            seed = seeds.getrandbits(64)
            where = f"{klass_name} seed {seed}"
            try:
                stdin = gen.draw(klass_name, seed)
                ref = run_binary(exe0, stdin, RUN_TIMEOUT_S, f"{where} (-O0)")
                if not ref.stdout.strip() or ref.stdout.startswith(b"bad "):
                    raise BuildError(f"{where}: refused or empty output "
                                     f"{ref.stdout[:40]!r} for {_show(stdin)}")
                if len(ref.stdout) > MAX_OUTPUT_BYTES:
                    raise BuildError(f"{where}: output is {len(ref.stdout)} bytes")
                out3 = run_binary(exe3, stdin, RUN_TIMEOUT_S, f"{where} (-O3)").stdout
                diff = compare_output(ref.stdout, out3, comparison)
                if diff is not None:
                    raise BuildError(f"{where}: -O3 differs from -O0: {diff} "
                                     f"for {_show(stdin)}")
                if heavy:
                    rep.heavy_draws.append((seed, stdin))
                else:
                    san = run_binary(exes, stdin, SANITIZE_TIMEOUT_S, f"{where} (sanitizers)",
                                     env=san_env)
                    diff = compare_output(ref.stdout, san.stdout, comparison)
                    if diff is not None:
                        raise BuildError(f"{where}: sanitizer build differs: {diff}")
            except (BuildError, GeneratorError) as exc:
                rep.problems.append(str(exc).splitlines()[0])
            rep.draws[klass_name] = rep.draws.get(klass_name, 0) + 1
    return rep


def time_heavy_draws(s: Spec, rep: GeneratorReport, work: Path, clock: str, reps: int) -> None:
    """Every heavy draw must cost 0.6-1.4x what the heavy test costs at -O3, so a timed run
    on a fresh input costs what the fixed one did. The draw and the heavy test run in turn,
    `reps` times each, and each keeps its fastest run: load on a shared machine only ever
    adds time, so it cancels out of the ratio (run with nothing else of ours running)."""
    exe3 = _binaries(s, work)[1]
    fixed = [(inp() if callable(inp) else inp).encode()
             for name, inp in zip(s.test_names(), s.tests, strict=True)
             if name in s.heavy_tests()]

    def seconds(r: RunResult) -> float:
        return r.cpu_seconds if clock == "cpu" else r.seconds

    for seed, stdin in rep.heavy_draws:
        mine, theirs = [], []
        try:
            for k in range(reps):
                mine.append(seconds(run_binary(exe3, stdin, RUN_TIMEOUT_S, "heavy draw")))
                theirs.append(seconds(run_binary(exe3, fixed[k % len(fixed)], RUN_TIMEOUT_S,
                                                 "heavy test")))
        except BuildError as exc:
            rep.problems.append(f"heavy seed {seed}: {str(exc).splitlines()[0]}")
            continue
        ms, fixed_ms = 1000 * min(mine), 1000 * min(theirs)
        ratio = ms / fixed_ms if fixed_ms else float("inf")
        rep.heavy_ms.append(fixed_ms)
        rep.heavy_ratios.append(ratio)
        lo, hi = HEAVY_COST_RANGE
        if not lo <= ratio <= hi:
            rep.problems.append(f"heavy seed {seed}: costs {ms:.0f} ms, {ratio:.2f}x the "
                                f"heavy test's {fixed_ms:.0f} ms")


def check_generators(chosen: list[Spec], per_light: int, per_heavy: int, clock: str,
                     reps: int, jobs: int) -> int:
    """--check-generators: the draws of every chosen program (programs in parallel), then
    the cost of the heavy draws (one run at a time, so the timings do not disturb each
    other); one line per program."""
    seeds = random.Random(secrets.randbits(64))
    per_program = [random.Random(seeds.getrandbits(64)) for _ in chosen]
    with tempfile.TemporaryDirectory(prefix="asmopt-gen-") as tmp:
        work = Path(tmp)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            reports = list(pool.map(
                lambda sr: check_generator(sr[0], work, per_light, per_heavy, sr[1]),
                zip(chosen, per_program, strict=True)))
        failures = 0
        ratios: list[float] = []
        for s, rep in zip(chosen, reports, strict=True):
            time_heavy_draws(s, rep, work, clock, reps)
            counts = " ".join(f"{k} {n}" for k, n in rep.draws.items())
            cost = (f"heavy {min(rep.heavy_ratios):.2f}-{max(rep.heavy_ratios):.2f}x of "
                    f"{statistics.median(rep.heavy_ms):.0f} ms" if rep.heavy_ratios else "")
            print(f"{'FAIL' if rep.problems else 'ok':4} {s.id:24} {counts}  {cost}", flush=True)
            for p in rep.problems:
                print(f"     - {p}", flush=True)
            failures += bool(rep.problems)
            ratios += rep.heavy_ratios
    if ratios:
        print(f"heavy draws over the heavy test ({clock} time): min {min(ratios):.2f}x, "
              f"median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x "
              f"({len(ratios)} draws)")
    print(f"{len(chosen) - failures}/{len(chosen)} generators ok")
    return 1 if failures else 0


DOC_PATH = ROOT / "docs" / "builtin_suite.md"
DOC_START = "<!-- program-table:start -->"
DOC_END = "<!-- program-table:end -->"


def doc_table(specs: list[Spec], reports: dict[str, Report]) -> str:
    rows = ["| id | category | split | what it does | heavy test | -O3 wall (ms) | -O3 cpu (ms) |"
            " -O0 wall (ms) |",
            "|---|---|---|---|---|---:|---:|---:|"]
    walls, cpus = [], []
    for s in sorted(specs, key=lambda s: (s.category, s.id)):
        rep = reports.get(s.id)
        for name in s.heavy_tests():
            t = rep.heavy.get(name) if rep else None
            cells = (f"{t.wall_ms:.0f} | {t.cpu_ms:.0f} | {t.o0_wall_ms:.0f}" if t
                     else "- | - | -")
            if t:
                walls.append(t.wall_ms)
                cpus.append(t.cpu_ms)
            rows.append(f"| `{s.id}` | {s.category} | {s.split} | {s.description} | {name} | "
                        f"{cells} |")
    if walls:
        rows.append("")
        for label, xs in (("wall", walls), ("CPU", cpus)):
            rows.append(f"Heavy-test -O3 {label} time over {len(xs)} programs: "
                        f"min {min(xs):.0f} ms, median {statistics.median(xs):.0f} ms, "
                        f"max {max(xs):.0f} ms.  ")
    return "\n".join(rows)


GEN_DOC_START = "<!-- generator-table:start -->"
GEN_DOC_END = "<!-- generator-table:end -->"


def _bound(value: object) -> str:
    if isinstance(value, int) and value in (U32, U64):
        return "2^32-1" if value == U32 else "2^64-1"
    return str(value).replace(" ", "")


def _describe_var(name: str, rule: dict[str, object]) -> str:
    """One var of a class, short: `n 0-40`, `mode 0/1/2/3`, `a: n chars of ACGT`."""
    if "int" in rule:
        lo, hi = rule["int"]  # type: ignore[misc]
        return f"{name} {_bound(lo)}-{_bound(hi)}"
    if "float" in rule:
        lo, hi = rule["float"]  # type: ignore[misc]
        return f"{name} {lo}-{hi}"
    if "choice" in rule:
        drawn = list(rule["choice"])  # type: ignore[call-overload]
        values = list(dict.fromkeys(drawn))
        if len(values) > 8 and all(isinstance(v, int) for v in values):
            often = [v for v in values if drawn.count(v) > 1]
            return (f"{name} {min(values)}-{max(values)}"
                    + (f" ({', '.join(map(str, often))} most often)" if often else ""))
        if len(values) > 8 or any(isinstance(v, str) and len(v) > 12 for v in values):
            return f"{name} one of {len(set(map(str, values)))}"
        return f"{name} " + "/".join(_bound(v) for v in values)
    if "value" in rule:
        return f"{name} = {_bound(rule['value'])}"
    body = dict(rule[next(iter(rule))])  # type: ignore[call-overload]
    if "text" in rule:
        alphabet = str(body["alphabet"])
        shown = alphabet if len(alphabet) <= 10 else f"{len(alphabet)} letters"
        return f"{name}: {body['length']} chars of {shown}"
    if "mutate" in rule:
        return f"{name}: {body['of']} mutated at rate {body['rate']}"
    if "ints" in rule:
        lo, hi = body["range"]
        return f"{name}: {body['count']} ints in {_bound(lo)}..{_bound(hi)}"
    inner = ", ".join(_describe_var(k, v) for k, v in dict(body["vars"]).items()
                      if k != "seed")
    return f"{name}: {body['count']} x ({inner})"


def generator_table(specs: list[Spec]) -> str:
    """docs/builtin_suite.md's table of what each class draws (seeds left out: every seed
    is drawn over its type's whole range)."""
    rows = ["| id | " + " | ".join(CLASSES) + " |", "|---|" + "---|" * len(CLASSES)]
    for s in sorted(specs, key=lambda s: (s.category, s.id)):
        classes = dict(s.inputs["classes"]) if s.inputs else {}  # type: ignore[call-overload]
        cells = []
        for name in CLASSES:
            body = classes.get(name, {})
            cells.append("; ".join(_describe_var(k, v) for k, v in body.get("vars", {}).items()
                                   if k != "seed") or "-")
        rows.append(f"| `{s.id}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _replace_between(text: str, start: str, end: str, body: str) -> str:
    a, b = text.index(start) + len(start), text.index(end)
    return text[:a] + "\n" + body + "\n" + text[b:]


def update_doc(specs: list[Spec], reports: dict[str, Report]) -> None:
    text = _replace_between(DOC_PATH.read_text(), DOC_START, DOC_END, doc_table(specs, reports))
    if GEN_DOC_START in text:
        text = _replace_between(text, GEN_DOC_START, GEN_DOC_END, generator_table(SPECS))
    DOC_PATH.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", default=[], metavar="ID",
                    help="build only this program (repeatable); suite.json is still written")
    ap.add_argument("--check", action="store_true",
                    help="verify that the files on disk are up to date; write nothing")
    ap.add_argument("--no-sanitize", action="store_true",
                    help="skip the -fsanitize=undefined,address runs of the light tests")
    ap.add_argument("--reps", type=int, default=3, help="timed -O3 runs per heavy test")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="which time the 50-500 ms check uses (cpu is steadier on a busy machine)")
    ap.add_argument("--update-doc", action="store_true",
                    help="rewrite the program table in docs/builtin_suite.md with these timings")
    ap.add_argument("--list", action="store_true", help="list the programs and exit")
    ap.add_argument("--check-generators", type=int, metavar="N", default=0,
                    help="draw N inputs of every light class (3 of the heavy one) from random "
                         "seeds and check them like the fixed tests; write nothing")
    ap.add_argument("--heavy-draws", type=int, default=3, metavar="N",
                    help="heavy inputs drawn and timed per program by --check-generators")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="programs checked in parallel by --check-generators")
    args = ap.parse_args(argv)

    ids = [s.id for s in SPECS]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        print(f"duplicate program ids: {sorted(dupes)}", file=sys.stderr)
        return 2
    if args.list:
        for s in SPECS:
            print(f"{s.id:24} {s.category:20} {s.split:10} {s.description}")
        return 0
    unknown = [i for i in args.only if i not in ids]
    if unknown:
        print(f"unknown program ids: {', '.join(unknown)}", file=sys.stderr)
        return 2
    chosen = [s for s in SPECS if not args.only or s.id in args.only]
    if shutil.which(CC) is None:
        print(f"compiler {CC!r} not found", file=sys.stderr)
        return 2
    if args.check_generators:
        return check_generators(chosen, args.check_generators, args.heavy_draws, args.clock,
                                max(args.reps, 5), args.jobs)

    failures = 0
    reports: dict[str, Report] = {}
    with tempfile.TemporaryDirectory(prefix="asmopt-builtin-") as tmp:
        for s in chosen:
            rep = build_program(s, Path(tmp), args.check, not args.no_sanitize, args.reps,
                                args.clock)
            reports[s.id] = rep
            heavy = ", ".join(f"{n} {t.wall_ms:.0f} ms wall, {t.cpu_ms:.0f} ms cpu "
                              f"(-O0 {t.o0_wall_ms:.0f} ms)" for n, t in rep.heavy.items())
            status = "FAIL" if rep.problems else "ok"
            print(f"{status:4} {s.id:24} {heavy}", flush=True)
            for p in rep.problems:
                print(f"     - {p}", flush=True)
            failures += bool(rep.problems)
    problems: list[str] = []
    write_if_changed(SUITE_DIR / "suite.json", suite_json(SPECS), args.check, problems)
    on_disk = ({p.name for p in PROGRAMS_DIR.iterdir() if p.is_dir()}
               if PROGRAMS_DIR.is_dir() else set())
    extra = sorted(on_disk - set(ids))
    if extra:
        problems.append(f"program directories not in the table: {', '.join(extra)}")
    for p in problems:
        print(f"suite: {p}")
    walls = [t.wall_ms for r in reports.values() for t in r.heavy.values()]
    cpus = [t.cpu_ms for r in reports.values() for t in r.heavy.values()]
    if walls:
        print(f"heavy -O3 wall: min {min(walls):.0f} ms, median {statistics.median(walls):.0f} ms, "
              f"max {max(walls):.0f} ms; cpu: min {min(cpus):.0f}, median "
              f"{statistics.median(cpus):.0f}, max {max(cpus):.0f} ms ({len(walls)} tests)")
    if args.update_doc and not args.check:
        update_doc(SPECS, reports)
    print(f"{len(chosen) - failures}/{len(chosen)} programs ok")
    return 1 if failures or problems else 0


if __name__ == "__main__":
    sys.exit(main())
