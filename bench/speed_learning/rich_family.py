"""A task family with room for more than one idea: speedups that compose, and traps.

The popcount family has one learnable rewrite, and a one-line rule writes it; a policy can at
best tie that rule. Here a program's -O3 baseline (generic x86-64) has one or more of:

- `popcnt`: `__builtin_popcountll` compiles to a call of libgcc's `__popcountdi2`; one
  `popcntq %rdi, %rax` per call site is correct (a substitution, as in the popcount family).
- `reuse`: the hot loop calls a pure helper twice with the same argument, and gcc must make
  both calls (the helper is `noipa`: gcc may not look inside it, so it cannot know the call
  has no side effects). Deleting the second call, and the argument move before it, leaves
  the first result in %rax, where the second call would have put the same value: a 2-line
  deletion that removes half the loop's work, which no substitution of a line writes (what
  to delete depends on the data flow between the calls). With `popcnt` inside the helper
  the two compose. The `twice_shifted` kernel is the trap: the same two calls, but the
  second passes `x + 1`, so the same deletion gives a wrong result.
- `inline` (the `helper_popcount` kernel): the hot loop calls a small `noinline` helper.
  Inlining replaces each `call <helper>` with the helper's own body (its lines up to `ret`,
  without the call frame information), inside a `subq $8, %rsp` / `addq $8, %rsp` pair that
  stands in for the return address when the body touches the stack. The body differs per
  program (its constants), so no line substitution writes it; with `popcnt` the pasted copy
  gets the substitution too. Pasting is correct in the `twice_` kernels as well, but there
  its diff (28-40 lines) is longer than a policy's answer can be (224 tokens), so the
  family lists it only where it fits.
- `divq`, a trap for substitution rules: a 128-bit remainder `(unsigned __int128)x * y % m`
  compiles to a call of libgcc's `__umodti3`; when the dividend's high half is below the
  divisor (a modular product of a residue: x * (y % m) < m * 2^64) six instructions
  around one `divq` compute it, correctly, and a few percent faster at most (the division's
  own latency dominates; `bench/results/rich_family.md`). In the wide-remainder kernel the same
  substitution is wrong (`divq` faults when the quotient needs more than 64 bits), so a
  rule that substitutes every call site crashes there.

`witness(baseline, program, edits)` builds an answer with any subset of a program's edits
(or a trap) from its -O3 assembly; `bench/rich_family_check.py` times every one, and
`bench/speed_learning_run.py --family rich` trains on the family (`families.py`).
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
EDITS = ("popcnt", "divq", "inline", "reuse")
# Edits that look like a kernel's own but are wrong there: the substitution or deletion a
# rule would make, which breaks the program (a fault, or a wrong result).
TRAPS: dict[str, tuple[str, ...]] = {"wide_remainder": ("divq",), "twice_shifted": ("reuse",)}
HELPERS = {
    "helper_popcount": "mix",
    "twice_popcount": "score",
    "twice_product": "score",
    "twice_hash": "mixer",
    "twice_shifted": "score",
}
# Pairs of edits that compose, by kernel (each alone is faster, both together faster still).
COMPOSING = {"helper_popcount": ("popcnt", "inline"), "twice_popcount": ("popcnt", "reuse")}

# The popcount family's C around every kernel, with the 128-bit type the divq kernels use.
_PRELUDE = PRELUDE.replace(
    "#include <stdint.h>\n", "#include <stdint.h>\n\ntypedef unsigned __int128 u128;\n"
)
_MAIN = MAIN

# A pure helper called twice with the same argument (the `reuse` kernel; `twice_shifted`
# is the same text with the second argument one higher).
_TWICE_POPCOUNT = """
__attribute__((noipa)) static uint64_t score(uint64_t x) {
    x ^= x >> 31;
    x *= {K}ULL;
    return (uint64_t)__builtin_popcountll(x ^ (x >> 29)) * 0x9e3779b97f4a7c15ULL;
}

static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n; i++)
            total += score(a[i] + r) ^ (score(a[i] + r) >> 17);
    return total;
}
"""

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
    "twice_popcount": (("popcnt", "reuse"), _TWICE_POPCOUNT),
    "twice_product": (
        ("popcnt", "reuse"),
        """
__attribute__((noipa)) static uint64_t score(uint64_t x) {
    return (uint64_t)__builtin_popcountll(x * {K}ULL) + (x >> 61);
}

static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n; i++)
            total += score(a[i] >> r) * (score(a[i] >> r) | 1);
    return total;
}
""",
    ),
    "twice_hash": (
        ("reuse",),
        """
__attribute__((noipa)) static uint64_t mixer(uint64_t x) {
    x ^= x >> 33;
    x *= {K}ULL;
    x ^= x >> 29;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 32);
}

static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n; i++)
            total += (mixer(a[i] ^ r) & 0xffff) + (mixer(a[i] ^ r) >> 48);
    return total;
}
""",
    ),
    # the trap: twice_popcount's loop with the second call's argument one higher
    "twice_shifted": (
        ("popcnt",),
        _TWICE_POPCOUNT.replace("(score(a[i] + r) >> 17)", "(score(a[i] + r + 1) >> 17)"),
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


def _writes(line: str, register: str) -> bool:
    """Whether a two-operand instruction (`mov`, `lea`) writes `register` (its last
    operand; `register` lists the spellings, `|`-separated)."""
    operands = line.split("\t")[-1].split(",")
    return len(operands) == 2 and operands[1].strip() in register.split("|")


def reuse_calls(assembly: str, helper: str) -> str:
    """The second of two back-to-back `call <helper>` lines deleted, with the argument
    moves between them (writes of %rdi): the second call's result is the first one's,
    which is still in %rax. Correct only when the helper is pure and both calls pass the
    same argument; the trap kernel passes a different one, which this edit also drops.
    Between the calls only `mov` and `lea` lines are allowed, and none may write %rax."""
    lines = assembly.splitlines()
    call = f"\tcall\t{helper}"
    out: list[str] = []
    i = pairs = 0
    while i < len(lines):
        out.append(lines[i])
        if lines[i].rstrip() != call:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith(("mov", "lea")) and j - i <= 4:
            j += 1
        between = lines[i + 1 : j]
        if j < len(lines) and lines[j].rstrip() == call:
            if any(_writes(line, "%rax|%eax") for line in between):
                raise ValueError(
                    f"{helper}: the first result is overwritten before the second call"
                )
            out.extend(line for line in between if not _writes(line, "%rdi|%edi"))
            pairs += 1
            i = j + 1
        else:
            i += 1
    if not pairs:
        raise ValueError(f"no back-to-back calls of {helper!r}")
    return "\n".join(out) + "\n"


def witness(baseline: str, program: RichProgram, edits: tuple[str, ...]) -> str:
    """An answer (full assembly) with `edits` applied to the program's -O3 assembly:
    `reuse` first (it needs the calls), then `inline` at the calls left, then the
    substitutions, which so reach the inlined copies too. An edit outside the program's
    correct ones is applied all the same (a trap's answer is built this way)."""
    helper = program.helper
    if "reuse" in edits or "inline" in edits:
        if helper is None:
            raise ValueError(f"{program.id}: no helper to reuse or inline")
        if "reuse" in edits:
            baseline = reuse_calls(baseline, helper)
        if "inline" in edits:
            baseline = inline_calls(baseline, helper)
    return substitute(baseline, edits)
