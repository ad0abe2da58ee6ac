"""A task family with room for more than one idea: speedups that compose, and a trap.

The popcount family has one learnable rewrite, and a one-line rule writes it; a policy can at
best tie that rule. Here a program's -O3 baseline (generic x86-64) has one or more of:

- `popcnt`: `__builtin_popcountll` compiles to a call of libgcc's `__popcountdi2`; one
  `popcntq %rdi, %rax` per call site is correct (a substitution, as in the popcount family).
- `inline`: the hot loop calls a small `noinline` helper (the call, its register moves and
  its pushes and pops every iteration). Inlining it replaces each `call <helper>` with the
  helper's own body (its lines up to `ret`, without the call frame information), inside a
  `subq $8, %rsp` / `addq $8, %rsp` pair that stands in for the return address when the
  body touches the stack, so its pushes, pops and inner calls see the stack as they did.
  The body to paste differs per program (its constants, its registers), so no line
  substitution writes it. With `popcnt` as well, the substitution also applies to the
  pasted copies and the loop calls nothing; whether that beats `popcnt` alone depends on
  the helper (one that saves callee-saved registers keeps its pushes and pops when pasted):
  `bench/results/rich_family.md` has the measurements.
- `divq`, a trap for substitution rules: a 128-bit remainder `(unsigned __int128)x * y % m`
  compiles to a call of libgcc's `__umodti3`; when the dividend's high half is below the
  divisor (a modular product of a residue: x * (y % m) < m * 2^64) six instructions
  around one `divq` compute it, correctly, and a few percent faster at most (the division's
  own latency dominates; `bench/results/rich_family.md`). In the wide-remainder kernel the same
  substitution is wrong (`divq` faults when the quotient needs more than 64 bits), so a
  rule that substitutes every call site crashes there, and deciding where it is safe takes
  reading the program.

`witness(baseline, program, edits)` builds an answer with any subset of a program's correct
edits from its -O3 assembly; `bench/rich_family_check.py` times every one. No learning run on
this family has been made.
"""

from __future__ import annotations

import random
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
HELPERS = {"helper_popcount": "mix", "helper_two_counts": "pair", "helper_hash": "hash"}
FASTER_EDITS = ("popcnt", "inline")  # the edits that compose in the helper_popcount kernel

# The popcount family's C around every kernel, with the 128-bit type the divq kernels use.
_PRELUDE = PRELUDE.replace(
    "#include <stdint.h>\n", "#include <stdint.h>\n\ntypedef unsigned __int128 u128;\n"
)
_MAIN = MAIN

# Kernel templates: (the edits that are correct for it, C text with {M} (an odd modulus
# below 2^63) and {K} (an odd 64-bit multiplier)).
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
__attribute__((noinline)) static uint64_t mix(uint64_t x, uint64_t r) {
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
__attribute__((noinline)) static uint64_t pair(uint64_t x, uint64_t y) {
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
__attribute__((noinline)) static uint64_t hash(uint64_t x, uint64_t r) {
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

    @property
    def helper(self) -> str | None:
        """The name of the kernel's `noinline` helper, None for a kernel without one."""
        return HELPERS.get(self.kernel)


def generate(per_kernel: int = 7, seed: int = 0) -> list[RichProgram]:
    """`per_kernel` programs of every kernel, deterministic in `seed`."""
    rng = random.Random(seed)
    programs = []
    for kernel, (edits, body) in KERNELS.items():
        for k in range(per_kernel):
            holes = {
                "M": str(rng.randrange(1 << 40, 1 << 62) | 1),
                "K": f"0x{rng.getrandbits(64) | 1:016x}",
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


def helper_body(assembly: str, helper: str) -> list[str]:
    """The helper's instructions from its label to its `ret` (exclusive), call frame
    directives and its `.LFB` label left out. Refuses a body that is not straight-line (a
    label or a jump inside it), which pasting at several call sites would duplicate."""
    lines = assembly.splitlines()
    try:
        start = lines.index(f"{helper}:") + 1
    except ValueError:
        raise ValueError(f"no label {helper!r} in the assembly") from None
    body: list[str] = []
    for line in lines[start:]:
        text = line.strip()
        if text == "ret":
            return body
        if text.startswith(".cfi_") or text.startswith(".LFB"):
            continue
        if text.endswith(":") or text.startswith("j"):
            raise ValueError(f"{helper}: not straight-line code ({text!r})")
        body.append(line)
    raise ValueError(f"{helper}: no ret")


def inline_calls(assembly: str, helper: str) -> str:
    """Every `call <helper>` replaced by the helper's body; the helper's own definition is
    left in place (unused). A body that touches the stack runs 8 bytes lower, where the
    return address would have been, so its alignment and offsets are the called ones."""
    body = helper_body(assembly, helper)
    if any("%rsp" in line or "push" in line or "pop" in line or "call" in line for line in body):
        body = ["\tsubq\t$8, %rsp", *body, "\taddq\t$8, %rsp"]
    out: list[str] = []
    sites = 0
    for line in assembly.splitlines():
        if line.rstrip() == f"\tcall\t{helper}":
            out.extend(body)
            sites += 1
        else:
            out.append(line)
    if not sites:
        raise ValueError(f"no call of {helper!r}")
    return "\n".join(out) + "\n"


def witness(baseline: str, program: RichProgram, edits: tuple[str, ...]) -> str:
    """An answer (full assembly) with `edits` applied to the program's -O3 assembly:
    `inline` first, then the substitutions, which so reach the inlined copies too."""
    if "inline" in edits:
        if program.helper is None:
            raise ValueError(f"{program.id}: no helper to inline")
        baseline = inline_calls(baseline, program.helper)
    return substitute(baseline, edits)
