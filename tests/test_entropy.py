"""No answer can be precomputed: the declared entropy of a class, the field-by-field redraw
that the dependence check uses, and the measurement on real sandboxed runs.

The declared bound must be a lower bound (a spec cannot claim more than it draws), must see
through expressions (a range whose width depends on an earlier var is taken at its
narrowest), and must count nothing a template does not show. The measurement must call a
program whose answer is a function of one small number tabulable, one that ignores half of
a 64-bit seed tabulable, and one whose output depends on all of its data not.
"""

from __future__ import annotations

import math

import pytest

from asmopt.entropy import (
    MIN_ENTROPY_BITS,
    declared_problems,
    measure_entropy,
    read_mark,
)
from asmopt.programs.generators import InputGenerator, derive_seed
from asmopt.programs.model import Program, TestCase

SEED64 = {"int": [0, (1 << 64) - 1]}


def _gen(classes: dict, tests: dict | None = None) -> InputGenerator:
    return InputGenerator.from_dict(
        {"version": 1, "classes": classes, "tests": tests or {"t1": next(iter(classes))}}
    )


@pytest.mark.fast
def test_declared_bits_of_each_rule() -> None:
    gen = _gen(
        {
            "int": {"template": "{n}", "vars": {"n": {"int": [0, 1023]}}},
            "seed": {"template": "{s}", "vars": {"s": SEED64}},
            "choice": {"template": "{c}", "vars": {"c": {"choice": ["a", "a", "b", "c"]}}},
            "text": {"template": "{t}", "vars": {"t": {"text": {"length": 10, "alphabet": "ab"}}}},
            "ints": {"template": "{v}", "vars": {"v": {"ints": {"count": 4, "range": [0, 255]}}}},
            "float": {"template": "{f}", "vars": {"f": {"float": [0, 1], "digits": 3}}},
            "value": {"template": "{v}", "vars": {"v": {"value": 5}}},
            "repeat": {
                "template": "{r}",
                "vars": {"r": {"repeat": {"count": 3, "template": "{x}\n",
                                          "vars": {"x": {"int": [1, 16]}}}}},
            },
        }
    )
    bits = {c: gen.entropy_bits(c) for c in gen.class_names}
    assert bits["int"] == pytest.approx(10)
    assert bits["seed"] == pytest.approx(64)
    assert bits["choice"] == pytest.approx(1)  # min-entropy: "a" has half the mass
    assert bits["text"] == pytest.approx(10)
    assert bits["ints"] == pytest.approx(32)
    assert bits["float"] == pytest.approx(math.log2(1001))
    assert bits["value"] == 0
    assert bits["repeat"] == pytest.approx(12)


@pytest.mark.fast
def test_declared_bits_take_dependent_ranges_at_their_narrowest() -> None:
    gen = _gen(
        {
            # m in [n, 2n] with n in [1, 100]: at n = 1 only 2 values; the list is at least
            # 1 long. A var no placeholder shows (k) counts nothing.
            "dep": {
                "template": "{n} {m}\n{v}",
                "vars": {
                    "n": {"int": [1, 100]},
                    "m": {"int": ["n", "2 * n"]},
                    "k": SEED64,
                    "v": {"ints": {"count": "n", "range": [0, "m"]}},
                },
            },
            "log": {"template": "{n}", "vars": {"n": {"int": [1, 1 << 20], "log": True}}},
            "mutate": {
                "template": "{a} {b}",
                "vars": {
                    "a": {"text": {"length": 8, "alphabet": "ab"}},
                    "b": {"mutate": {"of": "a", "rate": 0.5, "alphabet": "ab"}},
                },
            },
        }
    )
    assert gen.entropy_bits("dep") == pytest.approx(math.log2(100) + 1 + 1)
    # Log-uniform: the likeliest value, 1, has probability ln 2 / ln(2^20 + 1).
    assert gen.entropy_bits("log") == pytest.approx(-math.log2(math.log(2) / math.log(2**20 + 1)))
    assert gen.entropy_bits("mutate") == pytest.approx(8)  # the copy adds nothing


@pytest.mark.fast
def test_a_field_is_drawn_again_and_nothing_else_changes() -> None:
    gen = _gen(
        {
            "c": {
                "template": "{n} {s}\n{v}\n",
                "vars": {
                    "n": {"int": [3, 6]},
                    "s": SEED64,
                    "v": {"ints": {"count": "n", "range": [0, 9]}},
                },
            }
        }
    )
    seed = derive_seed(1, "x")
    base = gen.draw("c", seed).split(b"\n")
    changed = gen.draw_changed("c", seed, "s", 99).split(b"\n")
    assert changed[0].split()[0] == base[0].split()[0]  # n kept
    assert changed[0].split()[1] != base[0].split()[1]  # s drawn again
    assert changed[1] == base[1]  # later draws unchanged: the stream is kept
    high = gen.draw_changed("c", seed, "s", 7, high=True).split()[1]
    old = int(base[0].split()[1])
    assert int(high) != old and int(high) & 0xFFFFFFFF == old & 0xFFFFFFFF
    assert gen.fields("c") == ("n", "s", "v") and gen.wide_fields("c") == ("s",)
    with pytest.raises(Exception, match="no var"):
        gen.draw_changed("c", seed, "zz", 1)


@pytest.mark.fast
def test_a_program_whose_timed_class_draws_one_small_number_is_declared_tabulable() -> None:
    small = _gen({"run": {"template": "{n}\n", "vars": {"n": {"int": [0, 2700]}}}})
    tests = (TestCase("t1", b"5\n", b"25\n"),)
    program = Program("p", "int main(void){return 0;}", tests, inputs=small)
    [problem] = declared_problems(program)
    assert "run" in problem and f"< {MIN_ENTROPY_BITS:g}" in problem
    seeded = _gen({"run": {"template": "{n} {s}\n", "vars": {"n": {"int": [0, 9]}, "s": SEED64}}})
    assert declared_problems(Program("p", "int main(void){return 0;}", tests, inputs=seeded)) == []


# A sum over i < n of a mix of the seed: the output depends on every bit of the seed.
WHOLE = r"""
#include <stdio.h>
#include <inttypes.h>
int main(void) {
    unsigned n; uint64_t s;
    if (scanf("%u %" SCNu64, &n, &s) != 2) return 1;
    uint64_t acc = 0, x = s;
    for (unsigned i = 0; i <= n; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; acc += x; }
    printf("%" PRIu64 "\n", acc);
    return 0;
}
"""
# The same, but the seed is cut to 32 bits: half the declared entropy does nothing.
HALF = WHOLE.replace("uint64_t acc = 0, x = s;", "uint64_t acc = 0, x = (uint32_t)s | 1;")
# The answer is a function of n alone (the seed is read and ignored).
IGNORED = WHOLE.replace("uint64_t acc = 0, x = s;", "uint64_t acc = 0, x = 88172645463325252u;")


def _program(source: str) -> Program:
    gen = _gen(
        {"run": {"template": "{n} {s}\n", "vars": {"n": {"int": [1, 2000]}, "s": SEED64}}},
        {"t1": "run"},
    )
    return Program("entropy_probe", source, (TestCase("t1", b"3 5\n", b""),), inputs=gen)


@pytest.mark.parametrize(
    ("source", "tabulable", "why"),
    [(WHOLE, False, ""), (HALF, True, "changing s^hi"), (IGNORED, True, "changing s changed")],
    ids=["whole_seed", "half_seed", "ignored_seed"],
)
def test_the_measurement_sees_what_the_output_depends_on(
    source: str, tabulable: bool, why: str, toolchain: object, sandbox: object
) -> None:
    program = _program(source)
    report = measure_entropy(program, toolchain, sandbox, draws=64, field_draws=8)  # type: ignore[arg-type]
    [klass] = report.classes
    assert klass.draws == 64 and klass.refused == 0
    assert report.tabulable is tabulable, report.problems()
    assert why in " ".join(report.problems())
    if not tabulable:
        assert klass.distinct == 64 and min(klass.fields.values()) >= 0.5
    # As a mark, the report counts for the program as it is, never for a changed one.
    marked = Program(program.id, program.source, program.tests, inputs=program.inputs,
                     metadata=(("entropy", report.to_dict()),))
    assert read_mark(marked) is not None
    changed = Program(program.id, program.source + "\n", program.tests, inputs=program.inputs,
                      metadata=(("entropy", report.to_dict()),))
    assert read_mark(changed) is None


RARE = r"""
#include <stdio.h>
#include <inttypes.h>
int main(void) {
    unsigned a, b; uint64_t s;
    if (scanf("%u %u %" SCNu64, &a, &b, &s) != 3) return 1;
    uint64_t h = s * 0x9E3779B97F4A7C15u;
    printf("%" PRIu64 " %d\n", h ^ (h >> 29), a == b);
    return 0;
}
"""


@pytest.mark.parametrize(
    ("origin", "source", "tabulable", "why"),
    [
        ("learnt", RARE, False, ""),
        ("declared", RARE, True, "changing a changed"),
        ("learnt", RARE.replace("uint64_t h = s *", "uint64_t h = 7 *"), True,
         "bits once the fields the output rarely depends on (a, b, s, s^hi) are left out"),
    ],
    ids=["learnt_rare_fields", "declared_rare_fields", "learnt_ignored_seed"],
)
def test_a_learnt_class_counts_only_the_fields_its_output_depends_on(
    origin: str, source: str, tabulable: bool, why: str, toolchain: object, sandbox: object
) -> None:
    """`a == b` rarely changes when a or b is drawn again: a declared generator must not
    carry such fields (its author chooses the output), a learnt one may (a problem's answer
    often ignores most single values), but only the fields that matter count towards its
    64 bits: with the seed ignored too, nothing is left."""
    gen = InputGenerator.from_dict({
        "version": 1,
        "classes": {"c": {"template": "{a} {b} {s}\n", "vars": {
            "a": {"int": [1, 100]}, "b": {"int": [1, 100]}, "s": SEED64}}},
        "tests": {"t1": "c"},
        "origin": origin,
    })
    program = Program("rare", source, (TestCase("t1", b"1 2 3\n", b""),), inputs=gen)
    report = measure_entropy(program, toolchain, sandbox, draws=64, field_draws=8)  # type: ignore[arg-type]
    assert report.tabulable is tabulable, report.problems()
    assert why in " ".join(report.problems())
    [klass] = report.classes
    assert klass.weak_fields()[:2] == ["a", "b"]


# A hash of the first `{cut}` characters of a line of up to 200 (`%{cut}s` reads no further).
PREFIX_HASH = r"""
#include <stdio.h>
#include <inttypes.h>
int main(void) {
    char s[201];
    if (scanf("%{cut}s", s) != 1) return 1;
    uint64_t h = 1469598103934665603u;
    for (const char *p = s; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211u;
    printf("%" PRIu64 "\n", h);
    return 0;
}
"""


@pytest.mark.parametrize(
    ("cut", "tabulable"), [(200, False), (50, True)], ids=["whole_string", "first_50_of_100"]
)
def test_a_string_read_only_in_part_counts_only_the_part_read(
    cut: int, tabulable: bool, toolchain: object, sandbox: object
) -> None:
    """A string of 100 to 140 characters of two letters declares 100 bits, but a program
    that reads `%50s` of it answers from 50 bits: a table of the answers to the first 50
    characters is as good as one of the whole. The second half is drawn again on
    its own (`s^hi`): where the output ignores it, its 50 bits are not counted, and a
    learnt class of 100 declared bits is left with 50."""
    gen = InputGenerator.from_dict({
        "version": 1,
        "classes": {"c": {"template": "{s}\n", "vars": {
            "n": {"int": [100, 140]},
            "s": {"text": {"length": "n", "alphabet": "ab"}}}}},
        "tests": {"t1": "c"},
        "origin": "learnt",
    })
    assert gen.wide_fields("c") == ("s",) and gen.half_bits("c", "s") == 50.0
    seed = derive_seed(3, "s")
    whole, half = gen.draw("c", seed).strip(), gen.draw_changed("c", seed, "s", 5, True).strip()
    assert len(half) == len(whole) and half[: len(whole) // 2] == whole[: len(whole) // 2]
    assert half != whole
    source = PREFIX_HASH.replace("{cut}", str(cut))
    program = Program("prefix", source, (TestCase("t1", b"ab\n", b""),), inputs=gen)
    report = measure_entropy(program, toolchain, sandbox, draws=64, field_draws=8)  # type: ignore[arg-type]
    [klass] = report.classes
    assert report.tabulable is tabulable, report.problems()
    assert (klass.fields["s^hi"] < 0.5) is tabulable, klass.fields
    assert klass.effective_bits == (50.0 if tabulable else 100.0)


def test_bits_short_of_the_bound_never_read_as_the_bound() -> None:
    """63.99 declared bits are short of 64 and said so: rounded down, never to `64.0`."""
    from asmopt.entropy import ClassEntropy, bits_text

    assert bits_text(63.999) == "63.9" and bits_text(64.0) == "64.0"
    (problem,) = ClassEntropy("c", declared_bits=63.999).problems()
    assert problem.startswith("c: 63.9 bits of declared entropy (< 64)"), problem
