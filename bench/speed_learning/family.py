"""The popcount task family: small C programs whose gcc -O3 baseline has a known slow spot.

For the generic x86-64 target (no `-mpopcnt`), gcc compiles `__builtin_popcountll` to a call
of libgcc's `__popcountdi2`, a dozen-instruction bit-twiddling routine, even though every
x86-64 processor this project times on has the one-instruction `popcnt` (x86-64-v2). Each
program of the family spends its time in a loop around such a call, so one edit per call
site is a correct rewrite that is several times faster:

    call    __popcountdi2@PLT   ->   popcntq %rdi, %rax

(the argument is in %rdi, the result is read from %eax/%rax, and the call clobbered every
register `popcnt` touches, so nothing else changes). Two other edits a model may write are
useful contrasts: removing the `.p2align` lines (valid, no faster: pays nothing under the
robust reward) and `popcntl %edi, %eax` (fast but wrong: counts only the low 32 bits, and
every test has values with high bits set).

Programs differ in kernel (eight loop shapes), constants, sizes and the number of call
sites, so answers must be found in each program's own assembly. `write_suite` writes a
suite directory in the project's format, with reference outputs computed by running the
-O3 build, and splits assigned by a seeded shuffle per kernel.
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POPCOUNT_CALL = "\tcall\t__popcountdi2@PLT"
FAST_LINE = "\tpopcntq\t%rdi, %rax"
WRONG_LINE = "\tpopcntl\t%edi, %eax"

# The C around every kernel (the richer family, rich_family.py, shares it).
PRELUDE = """#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static uint64_t next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s ^ (*s >> 29);
}
"""

MAIN = """
int main(void) {
    unsigned n, rounds;
    unsigned long long seed;
    if (scanf("%u %u %llu", &n, &rounds, &seed) != 3 || n < 2 || n > 1000000 || rounds > 64)
        return 1;
    uint64_t s = seed;
    uint64_t *a = malloc(n * sizeof *a);
    if (!a) return 2;
    for (unsigned i = 0; i < n; i++) a[i] = next(&s);
    printf("%llu\\n", (unsigned long long)kernel(a, n, rounds));
    free(a);
    return 0;
}
"""

# Each kernel: C body of `kernel(a, n, rounds)` with {B}, {C} holes for constants. The
# round count is read at run time so gcc cannot unroll the outer loop into many call sites.
KERNELS: dict[str, str] = {
    "xorshift_sum": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 1; r <= rounds; r++)
        for (unsigned i = 0; i < n; i++)
            total += __builtin_popcountll(a[i] ^ (a[i] >> r));
    return total;
}
""",
    "pair_hamming": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned i = 0; i + rounds < n; i++)
        for (unsigned j = 1; j <= rounds; j++)
            total += __builtin_popcountll(a[i] ^ a[i + j]);
    return total;
}
""",
    "masked_counts": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0, mask = {B}ULL;
    for (unsigned k = 0; k < rounds; k++) {
        for (unsigned i = 0; i < n; i++)
            total += (uint64_t)__builtin_popcountll(a[i] & mask) * (k + 1);
        mask = (mask << 7) | (mask >> 57);
    }
    return total;
}
""",
    "weighted_or": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 1; i < n; i++)
            total += (i % {C}) * (uint64_t)__builtin_popcountll(a[i] | (a[i - 1] >> r));
    return total;
}
""",
    "threshold_count": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t count = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n; i++)
            count += __builtin_popcountll(a[i] * ({B}ULL + r)) > {C};
    return count;
}
""",
    "max_window": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t sum = 0;
    for (unsigned r = 0; r < rounds; r++) {
        int best = 0;
        for (unsigned i = 0; i + 1 < n; i++) {
            int c = __builtin_popcountll(a[i] + a[i + 1] + r);
            if (c > best) best = c;
            sum += (uint64_t)best;
        }
    }
    return sum;
}
""",
    "product_counts": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i + 1 < n; i++)
            total += (uint64_t)__builtin_popcountll(a[i] >> r)
                     * (uint64_t)__builtin_popcountll(a[i + 1] ^ {B}ULL);
    return total;
}
""",
    "stream_mix": """
static uint64_t kernel(const uint64_t *a, unsigned n, unsigned rounds) {
    uint64_t x = a[0], total = 0;
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned i = 0; i < n; i++) {
            x = x * {B}ULL + a[i];
            total += __builtin_popcountll(x ^ (x >> {C}));
        }
    return total;
}
""",
}

SPLIT_SHARES = {"train": 4, "validation": 1, "test": 2}  # of every 7 programs of a kernel


@dataclass(frozen=True)
class FamilyProgram:
    id: str
    kernel: str
    source: str
    tests: list[tuple[str, str]]  # (name, stdin)


def _odd64(rng: random.Random) -> str:
    return f"0x{rng.getrandbits(64) | 1:016x}"


def generate(per_kernel: int = 7, seed: int = 0) -> list[FamilyProgram]:
    """`per_kernel` programs of every kernel, deterministic in `seed`."""
    rng = random.Random(seed)
    programs: list[FamilyProgram] = []
    for kernel, body in KERNELS.items():
        for k in range(per_kernel):
            holes = {
                "B": _odd64(rng),
                "C": str(rng.randint(5, 40)),
            }
            code = body
            for name, value in holes.items():
                code = code.replace("{" + name + "}", value)
            n = rng.randint(50000, 90000)
            rounds = rng.randint(12, 24)
            tests = [
                (f"t{t}", f"{n + 97 * t} {rounds + t} {rng.getrandbits(40)}\n") for t in range(2)
            ]
            programs.append(
                FamilyProgram(
                    id=f"{kernel}_{k}",
                    kernel=kernel,
                    source=PRELUDE + code + MAIN,
                    tests=tests,
                )
            )
    return programs


def assign_splits(
    programs: list[Any], seed: int = 0, kernels: Iterable[str] = KERNELS
) -> dict[str, str]:
    """Per kernel, a seeded shuffle deals programs to train/validation/test in 4:1:2."""
    rng = random.Random(seed + 1)
    splits: dict[str, str] = {}
    order = [s for s, share in SPLIT_SHARES.items() for _ in range(share)]
    for kernel in kernels:
        ids = [p.id for p in programs if p.kernel == kernel]
        rng.shuffle(ids)
        for i, pid in enumerate(ids):
            splits[pid] = order[i % len(order)]
    return splits


def _reference_output(source: str, stdin: str, work: Path) -> str:
    c = work / "main.c"
    c.write_text(source, encoding="utf-8")
    exe = work / "main"
    subprocess.run(["gcc", "-O3", "-o", str(exe), str(c)], check=True)
    done = subprocess.run([str(exe)], input=stdin, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"reference run failed with exit {done.returncode}")
    return done.stdout


def input_generator(
    test_names: list[str], n: tuple[int, int] = (50000, 90200), rounds: tuple[int, int] = (12, 26)
) -> dict[str, object]:
    """How a grading draws fresh inputs for a family program (docs/suite_format.md): sizes
    and rounds around the fixed tests', and a new 64-bit seed for the values each time, so
    no timed run sees an input whose answer could be known, nor one whose answer a table
    could hold (the timed class carries at least 64 bits: asmopt.entropy)."""
    return {
        "version": 1,
        "classes": {
            "run": {
                "template": "{n} {rounds} {seed}\n",
                "vars": {
                    "n": {"int": list(n)},
                    "rounds": {"int": list(rounds)},
                    "seed": {"int": [0, (1 << 64) - 1]},
                },
            },
            "edge": {
                "template": "{n} {rounds} {seed}\n",
                "vars": {
                    "n": {"int": [2, 64]},
                    "rounds": {"int": [0, 3]},
                    "seed": {"int": [0, (1 << 64) - 1]},
                },
            },
        },
        "tests": {name: "run" for name in test_names},
    }


def write_suite(dest: Path, per_kernel: int = 7, seed: int = 0) -> Path:
    """Write the family as a suite directory (refuses to write into a non-empty one)."""
    programs = generate(per_kernel, seed)
    return write_programs(
        dest,
        programs,
        assign_splits(programs, seed),
        f"popcount-family-s{seed}",
        "Generated popcount task family (bench/speed_learning/family.py).",
        {"category": "popcount"},
    )


def write_programs(
    dest: Path,
    programs: list[Any],
    splits: dict[str, str],
    name: str,
    description: str,
    metadata: dict[str, str],
    inputs: Callable[[list[str]], dict[str, object]] = input_generator,
) -> Path:
    """Programs (with `id`, `kernel`, `source`, `tests`) as a suite directory in the
    project's format, reference outputs from their -O3 build; refuses a non-empty `dest`."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    with tempfile.TemporaryDirectory() as tmp:
        for p in programs:
            pdir = dest / "programs" / p.id
            (pdir / "tests").mkdir(parents=True)
            (pdir / "main.c").write_text(p.source, encoding="utf-8")
            for test, stdin in p.tests:
                (pdir / "tests" / f"{test}.in").write_text(stdin, encoding="utf-8")
                out = _reference_output(p.source, stdin, Path(tmp))
                (pdir / "tests" / f"{test}.out").write_text(out, encoding="utf-8")
            extra = {"edits": list(p.edits)} if hasattr(p, "edits") else {}
            meta = {
                "metadata": {**metadata, "kernel": p.kernel, **extra},
                "inputs": inputs([test for test, _ in p.tests]),
            }
            (pdir / "program.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    suite = {
        "format": "asmopt-suite",
        "version": 1,
        "name": name,
        "description": description,
        "programs": [{"id": p.id, "split": splits[p.id]} for p in programs],
    }
    (dest / "suite.json").write_text(json.dumps(suite, indent=1) + "\n", encoding="utf-8")
    return dest


def rewrite(baseline: str, kind: str) -> str:
    """The baseline with one of the family's edits applied to every call site."""
    lines = baseline.splitlines()
    if kind == "fast":
        lines = [FAST_LINE if line.rstrip() == POPCOUNT_CALL else line for line in lines]
    elif kind == "wrong":
        lines = [WRONG_LINE if line.rstrip() == POPCOUNT_CALL else line for line in lines]
    elif kind == "align":
        lines = [line for line in lines if not line.lstrip().startswith(".p2align")]
    else:
        raise ValueError(f"unknown edit {kind!r}")
    return "\n".join(lines) + "\n"
