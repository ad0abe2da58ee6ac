"""A task family with room for more than one idea: speedups that compose, and a trap.

The popcount family has one learnable rewrite, and a one-line rule writes it; a policy can at
best tie that rule. Here a program's -O3 baseline (generic x86-64) has one or more of:

- `popcnt`: `__builtin_popcountll` compiles to a call of libgcc's `__popcountdi2`; one
  `popcntq %rdi, %rax` per call site is correct (a substitution, as in the popcount family).
- `inline`: the hot loop calls a small `noinline` helper (the call, its register moves and
  its pushes and pops every iteration). Inlining it is a program-specific rewrite of many
  lines (the helper's body, renamed into the caller's registers) that no line
  substitution writes; its witness here is gcc's own code for the program with the helper
  marked `always_inline`. In the helper kernels with a popcount, `popcnt` and `inline`
  compose.
- `divq`, a trap for substitution rules: a 128-bit remainder `(unsigned __int128)x * y % m`
  compiles to a call of libgcc's `__umodti3`; when the dividend's high half is below the
  divisor (a modular product of a residue: x * (y % m) < m * 2^64) six instructions
  around one `divq` compute it, correctly but measured no faster here (the division's own
  latency dominates; `bench/results/rich_family.md`). In the wide-remainder kernel the same
  substitution is wrong (`divq` faults when the quotient needs more than 64 bits), so a
  rule that substitutes every call site crashes there, and deciding where it is safe takes
  reading the program.

`witness(program, edits)` builds an answer with any subset of a program's correct edits;
`bench/rich_family_check.py` times every one. No learning run on this family has been made.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

from speed_learning.family import MAIN, PRELUDE

POPCOUNT_CALL = "\tcall\t__popcountdi2@PLT"
POPCNT_LINE = "\tpopcntq\t%rdi, %rax"
UMODTI3_CALL = "\tcall\t__umodti3@PLT"
# __umodti3's arguments: dividend in %rdi (low) and %rsi (high), divisor in %rdx (low) and
# %rcx (high, 0 for a 64-bit divisor); its result in %rax (low) and %rdx (high). The lines
# below clobber only %r8, %rax, %rdx and the flags, all of which the call clobbered.
DIVQ_LINES = (
    "\tmovq\t%rdx, %r8",
    "\tmovq\t%rdi, %rax",
    "\tmovq\t%rsi, %rdx",
    "\tdivq\t%r8",
    "\tmovq\t%rdx, %rax",
    "\txorl\t%edx, %edx",
)
EDITS = ("popcnt", "divq", "inline")
FASTER_EDITS = ("popcnt", "inline")  # the edits the timing check found faster

# The popcount family's C around every kernel, with the 128-bit type the divq kernels use.
_PRELUDE = PRELUDE.replace(
    "#include <stdint.h>\n", "#include <stdint.h>\n\ntypedef unsigned __int128 u128;\n"
)
_MAIN = MAIN

# Kernel templates: (the edits that are correct for it, C text with {M} (an odd modulus
# below 2^63), {K} (an odd 64-bit multiplier) and {HELPER} (`noinline` or `always_inline`)).
KERNELS: dict[str, tuple[tuple[str, ...], str]] = {
    "popcount_loop": (
        ("popcnt",),
        """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 1; r <= rounds; r++)
        for (unsigned i = 0; i < n; i++)
            total += __builtin_popcountll(a[i] ^ (a[i] >> r)) * {K}ULL;
    return total;
}
""",
    ),
    "helper_popcount": (
        ("popcnt", "inline"),
        """
__attribute__(({HELPER})) static inline uint64_t mix(uint64_t x, uint64_t r) {
    return (uint64_t)__builtin_popcountll(x ^ (x >> r)) * {K}ULL;
}

static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 1; r <= rounds; r++)
        for (unsigned i = 0; i < n; i++)
            total += mix(a[i], r) >> 3;
    return total;
}
""",
    ),
    "helper_two_counts": (
        ("popcnt", "inline"),
        """
__attribute__(({HELPER})) static inline uint64_t pair(uint64_t x, uint64_t y) {
    return (uint64_t)__builtin_popcountll(x & y) * 3 + (uint64_t)__builtin_popcountll(x | y);
}

static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i + 1 < n; i++)
            total += pair(a[i] >> r, a[i + 1] ^ {K}ULL);
    return total;
}
""",
    ),
    "helper_hash": (
        ("inline",),
        """
__attribute__(({HELPER})) static inline uint64_t hash(uint64_t x, uint64_t r) {
    x ^= x >> 31;
    x *= {K}ULL;
    return x ^ (x >> (r & 31));
}

static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n; i++)
            total += hash(a[i] + r, r) & 0xffff;
    return total;
}
""",
    ),
    "mulmod_chain": (
        ("divq",),
        """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t acc = 1, m = {M}ULL;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n; i++)
            acc = (uint64_t)((u128)acc * (a[i] % m) % m) + 1;
    return acc;
}
""",
    ),
    "wide_remainder": (
        ("popcnt",),
        """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0, m = {M}ULL;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i + 1 < n; i++) {
            u128 wide = ((u128)(a[i] + r) << 64) | a[i + 1];
            total += (uint64_t)(wide % m) + __builtin_popcountll(a[i] >> r);
        }
    return total;
}
""",
    ),
}


@dataclass(frozen=True)
class RichProgram:
    id: str
    kernel: str
    edits: tuple[str, ...]  # the edits that are correct for this program
    source: str
    tests: list[tuple[str, str]]  # (name, stdin)

    def variant_source(self, inline: bool) -> str:
        """The program's C source with its helper `noinline` (the baseline) or
        `always_inline` (the `inline` edit's witness); the same text without a helper."""
        return self.source.replace("noinline", "always_inline") if inline else self.source


def generate(per_kernel: int = 7, seed: int = 0) -> list[RichProgram]:
    """`per_kernel` programs of every kernel, deterministic in `seed`."""
    rng = random.Random(seed)
    programs = []
    for kernel, (edits, body) in KERNELS.items():
        for k in range(per_kernel):
            holes = {
                "M": str(rng.randrange(1 << 40, 1 << 62) | 1),
                "K": f"0x{rng.getrandbits(64) | 1:016x}",
                "HELPER": "noinline",
            }
            code = body
            for name, value in holes.items():
                code = code.replace("{" + name + "}", value)
            n, rounds = rng.randint(200000, 400000), rng.randint(8, 16)
            tests = [
                (f"t{t}", f"{n + 97 * t} {rounds + t} {rng.getrandbits(40)}\n") for t in range(2)
            ]
            programs.append(
                RichProgram(f"{kernel}_{k}", kernel, edits, _PRELUDE + code + _MAIN, tests)
            )
    return programs


def write_suite(dest: Path, per_kernel: int = 7, seed: int = 0) -> Path:
    """Write the family as a suite directory (splits 4:1:2 per kernel, as the popcount
    family's); each program's metadata names the edits that are correct for it."""
    from speed_learning import family

    programs = generate(per_kernel, seed)
    return family.write_programs(
        dest,
        programs,
        family.assign_splits(programs, seed, KERNELS),
        f"rich-family-s{seed}",
        "Generated family with three composing speedups (bench/speed_learning/rich_family.py).",
        {"category": "rich"},
        lambda tests: family.input_generator(tests, n=(200000, 400200), rounds=(8, 18)),
    )


def substitute(assembly: str, edits: tuple[str, ...]) -> str:
    """The line substitutions among `edits` (`popcnt`, `divq`) applied at every call site."""
    out: list[str] = []
    for line in assembly.splitlines():
        if "popcnt" in edits and line.rstrip() == POPCOUNT_CALL:
            out.append(POPCNT_LINE)
        elif "divq" in edits and line.rstrip() == UMODTI3_CALL:
            out.extend(DIVQ_LINES)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def compile_assembly(source: str, work: Path) -> str:
    """gcc -O3 assembly of `source` for the generic x86-64 target (as the baseline is)."""
    c = work / "variant.c"
    c.write_text(source, encoding="utf-8")
    s = work / "variant.s"
    subprocess.run(["gcc", "-O3", "-S", "-o", str(s), str(c)], check=True)
    return s.read_text(encoding="utf-8")


def witness(program: RichProgram, edits: tuple[str, ...], work: Path) -> str:
    """An answer (full assembly) with `edits` applied: `inline` through gcc's own code for
    the always_inline variant, then the substitutions on that assembly."""
    assembly = compile_assembly(program.variant_source("inline" in edits), work)
    return substitute(assembly, edits)
