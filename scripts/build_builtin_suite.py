#!/usr/bin/env python3
"""Build (or check) the built-in benchmark suite.

The C sources live in ``src/asmopt/programs/builtin/programs/ID/main.c``. This script holds
each program's metadata and test inputs, and:

1. writes ``tests/tN.in`` and ``program.json`` for every program;
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
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from asmopt.compare import compare_output
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


def zipf_text(seed: int, n_words: int, vocab: int) -> str:
    """English-like text: words drawn with a Zipf-ish skew, some capitalised, punctuated."""
    r = Rng(seed)
    words = WORDS[:vocab]
    lines, line, length = [], [], 0
    for i in range(n_words):
        # Skewed index: min of two or three uniforms favours the front of the list.
        k = min(r.below(len(words)), r.below(len(words)), r.below(len(words)))
        w = words[k]
        if i == 0 or r.below(12) == 0:
            w = w.capitalize()
        if r.below(15) == 0:
            w += "," if r.below(2) else "."
        line.append(w)
        length += len(w) + 1
        if length > 70:
            lines.append(" ".join(line))
            line, length = [], 0
    if line:
        lines.append(" ".join(line))
    return "\n".join(lines) + "\n"


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

    def heavy_tests(self) -> tuple[str, ...]:
        return self.heavy or (f"t{len(self.tests)}",)


def numeric(abs_tol: float = 1e-6, rel_tol: float = 1e-6) -> dict[str, object]:
    return {"mode": "numeric", "abs_tol": abs_tol, "rel_tol": rel_tol}


SPECS: list[Spec] = []


def spec(*args: object, **kwargs: object) -> None:
    SPECS.append(Spec(*args, **kwargs))  # type: ignore[arg-type]


# ---- sorting ---------------------------------------------------------------------------------

spec("quicksort_int", "sorting", "train",
     "Median-of-three quicksort with insertion-sort cutoff on generated ints (4 distributions)",
     ["0 1 0\n", "1 7 0\n", "1000 3 1\n", "50000 11 2\n", "200000 5 3\n", "1800000 42 0\n"])
spec("mergesort_u64", "sorting", "train",
     "Recursive top-down merge sort of 64-bit keys; distinct count and longest equal run",
     ["0 1 64\n", "1 2 64\n", "17 3 4\n", "10000 4 20\n", "300000 5 64\n", "1400000 6 40\n"])
spec("radix_sort_u32", "sorting", "validation",
     "LSD radix sort (4 x 8-bit counting passes) of 32-bit keys, then gap statistics",
     ["0 1 0\n", "1 5 0\n", "1000 9 20\n", "100000 13 0\n", "1000000 21 8\n",
      "8000000 77 0\n"])
spec("heapsort_int", "sorting", "train",
     "Heapsort plus a streaming top-k with a bounded min-heap",
     ["0 3 1\n", "1 1 2\n", "10 20 3\n", "5000 100 4\n", "200000 1000 5\n",
      "1000000 5000 6\n"])
spec("qsort_records", "sorting", "test",
     "libc qsort of small structs with multi-key comparators; scoreboard ranks and groups",
     ["0 1\n", "1 2\n", "40 3\n", "3000 4\n", "50000 5\n", "350000 6\n"])

# ---- dynamic programming --------------------------------------------------------------------


def lcs_input(seed: int, n: int, alphabet: str, mutate: float) -> Callable[[], str]:
    def make() -> str:
        a, b = related_strings(seed, n, alphabet, mutate)
        return f"{a}\n{b}\n"
    return make


spec("lcs_dp", "dynamic_programming", "train",
     "Longest common subsequence of two stdin strings with a two-row table",
     ["\n\n", "a\na\n", "ABCBDAB\nBDCABA\n", lcs_input(1, 300, "ACGT", 0.2),
      lcs_input(2, 2000, "abcdefghij", 0.3), lcs_input(3, 9000, "ACGT", 0.25)])


def edit_input(seed: int, pairs: list[tuple[int, str, float]]) -> Callable[[], str]:
    def make() -> str:
        out = [str(len(pairs))]
        for k, (n, alphabet, mutate) in enumerate(pairs):
            a, b = related_strings(seed * 100 + k, n, alphabet, mutate)
            out += [a, b]
        return "\n".join(out) + "\n"
    return make


spec("edit_distance", "dynamic_programming", "validation",
     "Levenshtein distance of string pairs read from stdin (two-row DP)",
     ["1\n\n\n", "3\nkitten\nsitting\nflaw\nlawn\nabc\n\n",
      edit_input(1, [(50, "ab", 0.3), (80, "abcdef", 0.1), (120, "xyz", 0.5)]),
      edit_input(2, [(1000, "ACGT", 0.1), (1500, "abcdefghijklmnop", 0.3)]),
      edit_input(3, [(3000, "ACGT", 0.05)] * 2 + [(4000, "abcdefgh", 0.2)]),
      edit_input(4, [(7000, "ACGT", 0.15), (6000, "abcdefghijklmnopqrstuvwxyz", 0.25)])])
spec("knapsack_01", "dynamic_programming", "train",
     "0/1 knapsack over generated items with a one-dimensional table",
     ["0 0 1\n", "1 10 2\n", "20 100 3\n", "200 5000 4\n", "1000 30000 5\n",
      "2000 60000 6\n"])
spec("lis_nlogn", "dynamic_programming", "test",
     "Longest increasing subsequence by patience sorting with binary search, reconstructed",
     ["0 1\n", "1 2\n", "100 3\n", "10000 4\n", "500000 5\n", "1600000 6\n"])


def coin_input(n: int, coins: list[int]) -> str:
    return f"{n} {len(coins)}\n{' '.join(map(str, coins))}\n"


spec("coin_change_ways", "dynamic_programming", "train",
     "Coin change: ways modulo 1e9+7 and minimum coins for every amount up to N",
     [coin_input(0, []), coin_input(1, [2]), coin_input(100, [1, 5, 10, 25, 50]),
      coin_input(10000, [3, 7, 11, 13, 29, 97]),
      coin_input(200000, numbers(11, 20, 2, 500)),
      coin_input(2000000, sorted(set(numbers(12, 40, 2, 5000))))])

# ---- graphs ---------------------------------------------------------------------------------

spec("dijkstra_heap", "graph", "train",
     "Dijkstra with a binary heap (lazy deletion) on a generated sparse digraph, several sources",
     ["1 0 1 1\n", "2 1 2 2\n", "10 30 3 3\n", "5000 30000 4 3\n", "100000 600000 5 2\n",
      "110000 660000 6 2\n"])
spec("bfs_grid", "graph", "train",
     "BFS flood fill of a generated grid maze: regions, corner distance, largest-region distances",
     ["1 1 0 1\n", "1 5 30 2\n", "10 10 30 3\n", "300 400 35 4\n", "1000 1000 25 5\n",
      "2000 2000 30 6\n"])
spec("scc_kosaraju", "graph", "train",
     "Strongly connected components by Kosaraju with iterative DFS, condensation statistics",
     ["1 0 1\n", "2 2 2\n", "50 120 3\n", "20000 40000 4\n", "200000 500000 5\n",
      "400000 1200000 6\n"])


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
      floyd_input(3, 540, 5400, 1000)])
spec("kruskal_mst", "graph", "train",
     "Kruskal minimum spanning forest: counting sort by weight, union-find with path halving",
     ["1 0 10 1\n", "2 1 5 2\n", "20 40 100 3\n", "10000 30000 1000 4\n",
      "200000 1000000 100000 5\n", "450000 1800000 1000000 6\n"])
spec("max_flow_dinic", "graph", "validation",
     "Dinic maximum flow on a generated layered network, recursive blocking flow, min-cut check",
     ["1 1 1 1 1\n", "2 2 1 5 2\n", "4 5 3 10 3\n", "20 50 4 100 4\n", "40 150 5 1000 5\n",
      "45 300 5 1000 6\n"])

# ---- number theory --------------------------------------------------------------------------

spec("sieve_primes", "number_theory", "train",
     "Odd-only byte sieve of Eratosthenes: prime count, sum, twins, largest gap",
     ["0\n", "2\n", "100\n", "1000000\n", "10000000\n", "40000000\n"])
spec("miller_rabin32", "number_theory", "test",
     "Deterministic Miller-Rabin for 32-bit numbers (64-bit mulmod) over a window and samples",
     ["0 10 1 0\n", "4294967200 96 2 5\n", "1000 1000 3 100\n", "1000000000 100000 4 10000\n",
      "3000000000 200000 5 200000\n", "2000000000 1200000 6 1000000\n"])
spec("gcd_pairs", "number_theory", "train",
     "Sum of gcd over all pairs up to n with Euclid's algorithm, checked against a totient sieve",
     ["0\n", "1\n", "10\n", "300\n", "1000\n", "2600\n"])
spec("collatz_longest", "number_theory", "train",
     "Longest Collatz chain below N with a memo table; peak value and length histogram",
     ["0\n", "2\n", "100\n", "100000\n", "1000000\n", "8000000\n"])
spec("bigint_factorial", "number_theory", "train",
     "N! in base 1e9 limbs; digit count, digit sum, leading digits, trailing zeros",
     ["0\n", "1\n", "25\n", "1000\n", "5000\n", "18000\n"])

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
                                 "aabaabaaabaabaaab", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbba"])])
spec("suffix_array", "strings", "test",
     "Suffix array by prefix doubling with counting sorts, Kasai LCP, distinct substrings",
     ["0 1 2\n", "1 2 3\n", "12 3 2\n", "5000 4 4\n", "100000 5 2\n", "1000000 6 4\n"])


def word_input(rounds: int, seed: int, n_words: int, vocab: int) -> Callable[[], str]:
    return lambda: f"{rounds}\n" + zipf_text(seed, n_words, vocab)


spec("word_freq", "strings", "train",
     "Word frequencies of stdin text in an open-addressing table with salted FNV-1a; top 10",
     ["1\n", "1\nHello, hello world. It's a World!\n", word_input(2, 3, 300, 60),
      word_input(5, 4, 5000, 300), word_input(20, 5, 20000, 500),
      word_input(300, 6, 28000, len(WORDS))])
spec("manacher_palindrome", "strings", "train",
     "Manacher's algorithm: longest palindrome and palindromic substring count",
     ["0 1 2\n", "1 2 2\n", "30 3 2\n", "10000 4 3\n", "1000000 5 2\n",
      "10000000 6 4\n"])
spec("base64_roundtrip", "strings", "train",
     "Base64 encode and decode of generated buffers with round-trip verification",
     ["0 1\n", "1 2\n", "100 3\n", "100000 4\n", "3000000 5\n", "6000000 6\n"])

# ---- hashing --------------------------------------------------------------------------------

spec("hash_table_open", "hashing", "train",
     "Open-addressing hash map (linear probing, backward-shift delete) under a mixed workload",
     ["1 0 1 1\n", "2 10 3 2\n", "8 1000 150 3\n", "16 200000 40000 4\n",
      "20 2000000 700000 5\n", "21 2000000 1200000 6\n"])
spec("crc32_table", "hashing", "validation",
     "Table-driven CRC-32 and Adler-32 over a generated stream, bitwise CRC cross-check",
     ["0 1\n", "1 2\n", "1000 3\n", "100000 4\n", "10000000 5\n", "40000000 6\n"])
spec("sha256_blocks", "hashing", "train",
     "SHA-256 of a stdin message, of a generated buffer, and a hash chain",
     ["0 0 1\n\n", "3 1 2\nabc\n",
      "100 10 3\nabcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq\n",
      "100000 1000 4\nThe quick brown fox jumps over the lazy dog\n",
      "2000000 20000 5\n" + "a" * 1000 + "\n", "20000000 100000 6\nasmopt\n"])
spec("bloom_filter", "hashing", "train",
     "Bloom filter with double hashing; measured vs expected false-positive rate",
     ["6 1 0 0 1\n", "6 3 5 10 2\n", "12 4 300 2000 3\n", "20 7 100000 100000 4\n",
      "24 5 1000000 1000000 5\n", "24 6 2000000 3000000 6\n"],
     compare=numeric(1e-4, 1e-6))

# ---- bit manipulation -----------------------------------------------------------------------

spec("popcount_swar", "bit_manipulation", "train",
     "Portable SWAR popcount, bit reversal, ctz/clz, parity and Gosper's hack over a stream",
     ["0 1\n", "1 2\n", "100 3\n", "100000 4\n", "1000000 5\n", "8000000 6\n"])
spec("nqueens_bitmask", "bit_manipulation", "validation",
     "N-queens with blocked squares by recursive bitmask search",
     ["1 0 1\n", "3 0 2\n", "8 0 3\n", "10 5 4\n", "12 10 5\n", "14 12 6\n"])


def subset_input(seed: int, n: int, lo: int, hi: int, targets: list[int]) -> str:
    vals = numbers(seed, n, lo, hi)
    return (f"{n}\n{' '.join(map(str, vals))}\n{len(targets)}\n"
            + " ".join(map(str, targets)) + "\n")


spec("subset_sum_mitm", "bit_manipulation", "train",
     "Meet-in-the-middle subset sums (sorted by merging) for targets from stdin",
     ["0\n1\n0\n", "1\n5\n3\n0 5 6\n", subset_input(3, 10, 1, 20, [0, 17, 50, 1000]),
      subset_input(4, 24, 1, 1000, [5000, 6000, 12345]),
      subset_input(5, 34, 1, 1 << 20, [1 << 22, 5000000, 12345678]),
      subset_input(6, 42, 1, 1 << 30, [10**10, 2 * 10**10, 123456789012, 7 * 10**9, 3**20])])
spec("life_bitboard", "bit_manipulation", "train",
     "Game of Life on a torus, 64 cells per word, bit-parallel neighbour counting",
     ["3 1 0 50 1\n", "3 1 1 50 2\n", "16 1 10 35 3\n", "128 4 50 30 4\n",
      "512 8 100 30 5\n", "1024 16 1500 30 6\n"])

# ---- matrices and stencils ------------------------------------------------------------------

spec("matmul_int", "matrix", "train",
     "Dense 32-bit integer matrix product (i-k-j order, wrapping), then matrix-vector checks",
     ["0 1\n", "1 2\n", "7 3\n", "64 4\n", "200 5\n", "850 6\n"])
spec("prefix_sum_2d", "matrix", "validation",
     "2D prefix sums: random rectangle queries, best k x k square, best column strip",
     ["1 1 1 1 1\n", "2 3 5 2 2\n", "20 30 100 5 3\n", "300 400 100000 20 4\n",
      "1000 1000 1000000 50 5\n", "1500 1500 2000000 64 6\n"])
spec("conv2d_int", "matrix", "train",
     "8-bit image filters with clamped borders: 5x5 Gaussian blur, saturating sharpen, Sobel",
     ["1 1 1 1\n", "2 3 2 2\n", "16 16 1 3\n", "200 300 2 4\n", "512 512 3 5\n",
      "1200 1400 5 6\n"])

# ---- floating point -------------------------------------------------------------------------

spec("matmul_double", "floating_point", "train",
     "Cache-blocked double-precision matrix product; trace and Frobenius norm",
     ["0 1\n", "1 2\n", "5 3\n", "64 4\n", "250 5\n", "860 6\n"],
     compare=numeric(1e-6, 1e-7))
spec("jacobi_heat", "floating_point", "test",
     "Jacobi iteration of the 2D heat equation (5-point stencil) with a source term",
     ["3 0 1.0\n", "3 5 10.0\n", "17 100 500.0\n", "101 1000 1000.0\n",
      "300 1500 2000.0\n", "700 500 2000000.0\n"],
     compare=numeric(1e-6, 1e-6))
spec("nbody_sim", "floating_point", "validation",
     "Softened N-body leapfrog integration over an array of structs; energy and momentum",
     ["1 0 0.01 1\n", "2 10 0.01 2\n", "5 100 0.005 3\n", "50 200 0.002 4\n",
      "200 200 0.001 5\n", "600 150 0.0005 6\n"],
     compare=numeric(1e-6, 1e-6))
spec("mandelbrot", "floating_point", "train",
     "Escape-time Mandelbrot set: iteration totals per band and smooth-colouring mean",
     ["1 1 1 -2 -1.5 1 1.5\n", "4 3 50 -2 -1.5 1 1.5\n", "80 60 200 -2 -1.5 1 1.5\n",
      "400 300 500 -0.75 0.05 -0.7 0.1\n", "800 600 1000 -2.2 -1.4 0.8 1.4\n",
      "640 480 2000 -0.7454 0.1123 -0.7446 0.1131\n"],
     compare=numeric(1e-6, 1e-4))
spec("fft_convolve", "floating_point", "train",
     "Polynomial product by iterative radix-2 complex FFT, rounded and cross-checked",
     ["0 1\n", "1 2\n", "3 3\n", "1000 4\n", "100000 5\n", "250000 6\n"])

# ---- data structures ------------------------------------------------------------------------

spec("lru_cache", "data_structures", "train",
     "LRU cache: pointer-linked recency list and chained hash table over a skewed trace",
     ["1 1 1 1\n", "2 10 3 2\n", "16 1000 100 3\n", "1000 200000 20000 4\n",
      "50000 2000000 1000000 5\n", "100000 2000000 1500000 6\n"])
spec("segment_tree", "data_structures", "test",
     "Recursive lazy segment tree: range add, range sum and range minimum",
     ["1 0 1\n", "1 5 2\n", "10 50 3\n", "1000 20000 4\n", "50000 100000 5\n",
      "200000 200000 6\n"])


def fenwick_input(seed: int, n: int, lo: int, hi: int, ops: int) -> Callable[[], str]:
    return lambda: f"{n}\n{wrap_ints(numbers(seed, n, lo, hi))}{ops} {seed}\n"


spec("fenwick_inversions", "data_structures", "train",
     "Fenwick trees over a stdin list: inversion count, then updates and order statistics",
     ["0\n0 1\n", "1\n42\n10 2\n", "5\n5 4 3 2 1\n100 3\n",
      fenwick_input(4, 1000, -50, 50, 10000), fenwick_input(5, 10000, -10**9, 10**9, 1000000),
      fenwick_input(6, 20000, 0, 10**6, 4000000)])


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


def update_doc(specs: list[Spec], reports: dict[str, Report]) -> None:
    text = DOC_PATH.read_text()
    a, b = text.index(DOC_START) + len(DOC_START), text.index(DOC_END)
    DOC_PATH.write_text(text[:a] + "\n" + doc_table(specs, reports) + "\n" + text[b:])


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
