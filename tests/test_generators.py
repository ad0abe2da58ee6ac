"""Input generators (asmopt.programs.generators): a declarative spec, interpreted and never
executed, that draws the same bytes from the same seed on any machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asmopt.programs.generators import (
    MAX_DRAWN_BYTES,
    GeneratorError,
    InputGenerator,
    Rng,
    derive_seed,
)
from asmopt.programs.model import Program, TestCase
from asmopt.programs.suite_io import SuiteFormatError, load_suite, save_suite

SPEC = {
    "version": 1,
    "classes": {
        "graph": {
            "template": "{n} {m}\n{edges}",
            "vars": {
                "n": {"int": [2, 6]},
                "m": {"int": [1, "n * (n - 1)"]},
                "edges": {
                    "repeat": {
                        "count": "m",
                        "template": "{u} {v} {w}\n",
                        "vars": {"u": {"int": [1, "n"]}, "v": {"int": [1, "n"]},
                                 "w": {"float": [0, 1], "digits": 3}},
                    }
                },
            },
        },
        "strings": {
            "template": "{a}\n{b}\n{k} {xs}\n",
            "vars": {
                "len": {"int": [1, 30], "log": True},
                "a": {"text": {"length": "len", "alphabet": "ACGT"}},
                "b": {"mutate": {"of": "a", "rate": 0.3, "alphabet": "ACGT"}},
                "k": {"choice": [1, 2, "x"], "weights": [1, 0, 3]},
                "xs": {"ints": {"count": "min(len, 5)", "range": [-3, 3], "sep": ","}},
            },
        },
    },
    "tests": {"t1": "graph"},
}


def test_draws_are_deterministic_in_the_seed_and_differ_across_seeds() -> None:
    gen = InputGenerator.from_dict(SPEC)
    assert gen.draw("graph", 5) == gen.draw("graph", 5)
    draws = {gen.draw("graph", derive_seed(1, "p", k)) for k in range(50)}
    assert len(draws) > 40
    for data in draws:
        head, *edges = data.decode().splitlines()
        n, m = map(int, head.split())
        assert 2 <= n <= 6 and 1 <= m <= n * (n - 1) and len(edges) == m
        for edge in edges:
            u, v, w = edge.split()
            assert 1 <= int(u) <= n and 1 <= int(v) <= n and len(w.split(".")[1]) == 3


def test_every_rule_draws_within_its_bounds() -> None:
    gen = InputGenerator.from_dict(SPEC)
    for k in range(100):
        a, b, last = gen.draw("strings", derive_seed(2, k)).decode().split("\n")[:3]
        assert 1 <= len(a) <= 30 and set(a) <= set("ACGT") and set(b) <= set("ACGT")
        kind, xs = last.split(" ")
        assert kind in ("1", "x")  # weight 0 is never drawn
        values = [int(x) for x in xs.split(",")]
        assert len(values) == min(len(a), 5) and all(-3 <= x <= 3 for x in values)


def test_the_generator_is_the_same_on_every_machine() -> None:
    """splitmix64 from a fixed seed: a recorded seed must draw the same input anywhere."""
    assert [Rng(0).next() for _ in range(1)] == [0xE220A8397B1DCDAF]
    assert derive_seed(7, "a", 1) == derive_seed(7, "a", 1) != derive_seed(7, "a", 2)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"version": 2}, "version"),
        ({"classes": {}}, "non-empty"),
        ({"classes": {"a": {"template": "{x}", "vars": {}}}}, "is not a var"),
        ({"classes": {"a": {"template": "{", "vars": {}}}}, "lone"),
        ({"classes": {"a": {"template": "{x}", "vars": {"x": {"int": [0, "__import__('os')"]}}}}},
         "only numbers"),
        ({"classes": {"a": {"template": "{x}", "vars": {"x": {"int": [0, "y"]}}}}},
         "before it is drawn"),
        ({"classes": {"a": {"template": "{x}", "vars": {"x": {"int": [0, 1], "float": [0, 1]}}}}},
         "exactly one rule"),
        ({"classes": {"a": {"template": "{x}", "vars": {"x": {"int": 5}}}}}, "[low, high]"),
        ({"tests": {"t1": "nope"}}, "is not a class"),
        (
            {"classes": {"a": {"template": "{x}", "vars": {
                "x": {"ints": {"count": "n", "range": [0, 1]}}}}}},
            "before it is drawn",
        ),
        ({"extra": 1}, "unknown keys"),
    ],
)
def test_a_malformed_spec_is_refused_by_name(change: dict, needle: str) -> None:
    with pytest.raises(GeneratorError, match=None) as err:
        InputGenerator.from_dict({**SPEC, "tests": {}, **change})
    assert needle in str(err.value)


def test_a_draw_over_the_size_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused when the spec is read (its most bytes are bounded from the spec), naming the
    var; a draw would stop at the cap too (tests/test_generator_limits.py)."""
    from asmopt.programs import generators

    monkeypatch.setattr(generators, "MAX_DRAWN_BYTES", 1000)
    with pytest.raises(GeneratorError, match=r"vars\.s: may draw 1,200 bytes, over the 1,000"):
        InputGenerator.from_dict(
            {"version": 1, "classes": {"big": {"template": "{s}", "vars": {"s": {"repeat": {
                "count": 300, "template": "{t}\n", "vars": {
                    "t": {"text": {"length": 3, "alphabet": "ab"}}}}}}}}}
        )
    assert MAX_DRAWN_BYTES == 16 << 20


def test_suites_save_and_load_their_generators(tmp_path: Path) -> None:
    from asmopt.programs.model import Suite

    gen = InputGenerator.from_dict(SPEC)
    program = Program("p", "int main(void){return 0;}", (TestCase("t1", b"1\n", b""),),
                      inputs=gen, examples=("t1",))
    save_suite(Suite("s", {"p": program}, {"p": "train"}), tmp_path)
    loaded = load_suite(tmp_path).get("p")
    assert loaded.inputs is not None and loaded.inputs.spec == gen.spec
    assert loaded.examples == ("t1",) and loaded.size_class("t1") == "graph"
    assert loaded.content_hash() == program.content_hash()
    # A spec that names a rule wrongly is an error naming the file.
    spec_path = tmp_path / "programs" / "p" / "program.json"
    data = json.loads(spec_path.read_text())
    data["inputs"]["classes"]["graph"]["vars"]["n"] = {"int": "x"}
    spec_path.write_text(json.dumps(data))
    with pytest.raises(SuiteFormatError, match=r"program\.json.*inputs\.classes\.graph\.vars\.n"):
        load_suite(tmp_path)
    # A mapping (or an example) naming a test the program does not have is refused too.
    data["inputs"]["classes"]["graph"]["vars"]["n"] = {"int": [2, 6]}
    data["inputs"]["tests"] = {"t9": "graph"}
    spec_path.write_text(json.dumps(data))
    with pytest.raises(SuiteFormatError, match="t9"):
        load_suite(tmp_path)


def test_a_program_keeping_some_tests_keeps_a_consistent_generator() -> None:
    gen = InputGenerator.from_dict({**SPEC, "tests": {"t1": "graph", "t2": "strings"}})
    tests = (TestCase("t1", b"", b""), TestCase("t2", b"", b""))
    program = Program("p", "int main(void){return 0;}", tests, inputs=gen, examples=("t2",))
    kept = program.with_tests(tests[:1])
    assert kept.size_class("t1") == "graph" and kept.size_class("t2") is None
    assert kept.examples == ()
    assert program.fixed_inputs is False
    assert Program("q", "int main(void){return 0;}", tests).fixed_inputs is True


def test_an_imported_program_no_input_could_be_drawn_for_is_unfit_for_rewards() -> None:
    from asmopt.adequacy import UnfitProgramError, is_reward_fit, require_fit

    tests = (TestCase("t1", b"1\n", b"1\n"),)
    report = {"generator": False, "classes": {}, "reason": "no test has stdin"}
    imported = Program("p", "int main(void){return 0;}", tests,
                       metadata=(("inputs_report", report),))
    fit, why = is_reward_fit(imported)
    assert not fit and why.startswith("fixed_inputs")
    with pytest.raises(UnfitProgramError, match="fixed_inputs"):
        require_fit([imported], "reward")
    require_fit([imported], "reward", allow_unfit=True)
    # Written by hand without a generator (or before generators existed): unfit as well,
    # whatever its metadata says, and the reason says how to give it inputs.
    for metadata in ((), (("adequacy", {"fit": True}),)):
        fit, why = is_reward_fit(Program("q", "int main(void){return 0;}", tests,
                                         metadata=metadata))
        assert not fit and why.startswith("fixed_inputs") and "--mutator" in why


def test_every_built_in_generator_survives_a_row_and_draws_the_same_bytes() -> None:
    """A verl/TRL row carries the spec as JSON; the reward side must draw exactly what the
    suite draws (var order is part of the spec: a var may name an earlier one)."""
    from asmopt.programs import load_builtin_suite
    from asmopt.programs.rows import _row_generator, row_inputs_spec

    for program in load_builtin_suite():
        spec = row_inputs_spec(program)
        assert spec is not None and program.inputs is not None
        carried = _row_generator({"inputs_spec": json.loads(json.dumps(spec))}, program.id)
        assert carried is not None
        for size_class in program.inputs.class_names:
            if size_class == "heavy":
                continue  # large draws; the light classes exercise every rule
            seed = derive_seed(9, program.id, size_class)
            assert carried.draw(size_class, seed) == program.inputs.draw(size_class, seed)


def _one_list(body: dict) -> InputGenerator:
    return InputGenerator.from_dict(
        {"version": 1, "classes": {"c": {"template": "{a}\n", "vars": {"a": {"ints": body}}}},
         "tests": {"t": "c"}}
    )


def test_sorted_and_distinct_lists_draw_what_they_say_and_declare_their_min_entropy() -> None:
    import math

    perm = _one_list({"count": 10, "range": [1, 10], "distinct": True})
    subset = _one_list({"count": 10, "range": [1, 1000], "distinct": True, "order": "asc"})
    sorted_small = _one_list({"count": 10, "range": [1, 3], "order": "desc"})
    for seed in range(20):
        xs = [int(x) for x in perm.draw("c", seed).split()]
        assert sorted(xs) == list(range(1, 11))
        ys = [int(x) for x in subset.draw("c", seed).split()]
        assert ys == sorted(set(ys)) and len(ys) == 10
        zs = [int(x) for x in sorted_small.draw("c", seed).split()]
        assert zs == sorted(zs, reverse=True)
    assert perm.entropy_bits("c") == pytest.approx(math.log2(math.factorial(10)))
    assert subset.entropy_bits("c") == pytest.approx(math.log2(math.comb(1000, 10)))
    # the likeliest sorted list of ten values of three: multiplicities 4, 3, 3
    likeliest = math.factorial(10) / (math.factorial(4) * math.factorial(3) ** 2)
    assert sorted_small.entropy_bits("c") == pytest.approx(10 * math.log2(3) - math.log2(likeliest))
    with pytest.raises(GeneratorError, match="11 distinct values cannot be drawn from"):
        _one_list({"count": 11, "range": [1, 10], "distinct": True})
    with pytest.raises(GeneratorError, match="order"):
        _one_list({"count": 3, "range": [1, 10], "order": "sideways"})


def _one_text(body: dict) -> InputGenerator:
    return InputGenerator.from_dict(
        {"version": 1, "classes": {"c": {"template": "{s}\n", "vars": {"s": {"text": body}}}},
         "tests": {"t": "c"}}
    )


def test_planted_shapes_are_drawn_in_their_share_and_count_only_their_own_bits() -> None:
    """A structure the samples ask about (anagram halves, a palindrome, a list a few swaps
    from sorted) is drawn in its share of the draws and never otherwise by more than
    chance; the entropy bound counts the planted branch's bits (the likelier one)."""
    import math
    from collections import Counter

    from asmopt.data.shapes import has_anagram_halves, inversions, is_palindrome

    halves = _one_text({"length": 41, "alphabet": "abcd", "plant": {"shape": "halves"}})
    palin = _one_text({"length": 40, "alphabet": "abcd",
                       "plant": {"shape": "palindrome", "share": 1}})
    near = _one_list({"count": 200, "range": [1, 200], "distinct": True,
                      "plant": {"shape": "near", "share": 0.5}})
    texts = [halves.draw("c", seed).decode().strip() for seed in range(400)]
    assert all(len(t) == 41 for t in texts)
    planted = sum(has_anagram_halves(t) for t in texts)
    assert 150 <= planted <= 250  # share 0.5 of 400; a uniform draw is never one by chance
    assert all(is_palindrome(palin.draw("c", s).decode().strip()) for s in range(50))
    lists = [[int(x) for x in near.draw("c", s).split()] for s in range(400)]
    assert all(sorted(xs) == list(range(1, 201)) for xs in lists)  # still permutations
    swapped = [xs for xs in lists if inversions(xs) <= 13]  # 7 to 13 adjacent swaps
    assert 150 <= len(swapped) <= 250
    # most move no one more than two places (a queue's bribes), some do (its chaos)
    calm = [xs for xs in swapped if all(abs(x - (i + 1)) <= 2 for i, x in enumerate(xs))]
    assert len(calm) >= 0.8 * len(swapped)
    assert Counter(inversions(xs) for xs in swapped).keys() <= set(range(7, 14))
    assert halves.entropy_bits("c") == pytest.approx(20 * 2)  # the first half's 20 letters
    assert palin.entropy_bits("c") == pytest.approx(20 * 2)
    # sorted, the permutation is one list; which 7 of 199 places were swapped is the rest
    assert near.entropy_bits("c") == pytest.approx(math.log2(math.comb(199, 7)))


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"text": {"length": 3, "alphabet": "ab", "plant": {"shape": "wavy"}}},
         "expected one of halves, palindrome"),
        ({"text": {"length": 3, "alphabet": "ab", "plant": {"shape": "halves", "share": 2}}},
         "share: expected a number in [0, 1]"),
        ({"ints": {"count": 3, "range": [1, 9], "plant": {"shape": "halves"}}},
         "expected one of near"),
        ({"ints": {"count": 3, "range": [1, 9], "order": "asc", "plant": {"shape": "near"}}},
         "a sorted list has no shape to plant"),
        ({"ints": {"count": 3, "range": [1, 9], "plant": "near"}}, "expected an object"),
        ({"ints": {"count": 3, "range": [0, 1], "plant": {"shape": "spaced", "gap": 3}}},
         "mark: expected the integer kept apart"),
        ({"ints": {"count": 3, "range": [0, 1], "plant": {"shape": "spaced", "mark": 1}}},
         "gap: expected an integer in [2,"),
        ({"ints": {"count": 3, "range": [0, 1],
                   "plant": {"shape": "spaced", "mark": 1, "gap": 1}}},
         "gap: expected an integer in [2,"),
        ({"ints": {"count": 3, "range": [0, 1], "plant": {"shape": "near", "gap": 3}}},
         "'mark' and 'gap' belong to the spaced shape only"),
        ({"ints": {"count": 3, "range": [3, 9],
                   "plant": {"shape": "spaced", "mark": 1, "gap": 2}}},
         "1 is outside the range [3, 9]"),
        ({"ints": {"count": 3, "range": [1, 9], "distinct": True,
                   "plant": {"shape": "spaced", "mark": 1, "gap": 2}}},
         "a spaced list repeats its mark"),
    ],
)
def test_a_malformed_plant_is_refused_by_name(body: dict, needle: str) -> None:
    with pytest.raises(GeneratorError) as err:
        InputGenerator.from_dict(
            {"version": 1, "classes": {"c": {"template": "{x}", "vars": {"x": body}}}}
        )
    assert needle in str(err.value)


def _spaced_gaps(xs: list[int], mark: int) -> list[int]:
    from itertools import pairwise

    at = [i for i, x in enumerate(xs) if x == mark]
    return [b - a for a, b in pairwise(at)]


def test_a_spaced_list_keeps_its_mark_apart_or_bends_one_gap_to_the_boundary() -> None:
    """A queue whose people must stand six apart: planted draws keep every two marks at
    least `gap` apart (often exactly `gap`), bent ones have exactly one gap of gap - 1 and
    the rest at least `gap`; uniform draws almost never keep them apart. Other places take
    the range's other values."""
    spaced = _one_list({"count": 300, "range": [0, 1],
                        "plant": {"shape": "spaced", "share": 0.5, "mark": 1, "gap": 6}})
    kinds = {"apart": 0, "bent": 0, "dense": 0}
    exactly_gap = 0
    for seed in range(400):
        xs = [int(x) for x in spaced.draw("c", seed).split()]
        assert len(xs) == 300 and set(xs) <= {0, 1}
        gaps = sorted(_spaced_gaps(xs, 1))
        if gaps and gaps[0] >= 6:
            kinds["apart"] += 1
            exactly_gap += gaps[0] == 6
        elif len(gaps) >= 2 and gaps[0] == 5 and gaps[1] >= 6:
            kinds["bent"] += 1
        else:
            kinds["dense"] += 1
    assert 60 <= kinds["apart"] <= 140 and 60 <= kinds["bent"] <= 140, kinds
    assert exactly_gap >= 0.9 * kinds["apart"]  # the boundary itself is drawn
    wide = _one_list({"count": 50, "range": [0, 9],
                      "plant": {"shape": "spaced", "share": 1, "mark": 9, "gap": 4}})
    lists = [[int(x) for x in wide.draw("c", s).split()] for s in range(100)]
    assert {x for xs in lists for x in xs} == set(range(10))
    assert all(min(_spaced_gaps(xs, 9) or [9], default=9) >= 3 for xs in lists)


def _spaced_law(n: int, gap: int) -> dict[tuple[int, ...], float]:
    """The exact distribution of a two-valued spaced draw's mark places (share 1), by
    following every coin of the procedure (an independent reading of its documentation)."""
    unbent: dict[tuple[int, ...], float] = {}

    def walk(i: int, marks: tuple[int, ...], p: float) -> None:
        if i == n:
            unbent[marks] = unbent.get(marks, 0.0) + p
            return
        if not marks or i - marks[-1] >= gap:
            walk(i + 1, (*marks, i), p / 2)
            walk(i + 1, marks, p / 2)
        else:
            walk(i + 1, marks, p)

    walk(0, (), 1.0)
    law: dict[tuple[int, ...], float] = {}
    for marks, p in unbent.items():
        law[marks] = law.get(marks, 0.0) + p / 2
        if len(marks) < 2:
            law[marks] = law.get(marks, 0.0) + p / 2
            continue
        for j in range(1, len(marks)):
            bent = list(marks)
            bent[j] = bent[j - 1] + gap - 1
            key = tuple(bent)
            law[key] = law.get(key, 0.0) + p / 2 / (len(marks) - 1)
    return law


@pytest.mark.parametrize(("n", "gap"), [(8, 3), (12, 2), (13, 4), (16, 6)])
def test_a_spaced_lists_declared_bits_are_at_most_its_exact_min_entropy(n: int, gap: int) -> None:
    import math

    law = _spaced_law(n, gap)
    assert sum(law.values()) == pytest.approx(1.0)
    exact = -math.log2(max(law.values()))
    spaced = _one_list({"count": n, "range": [0, 1],
                        "plant": {"shape": "spaced", "share": 1, "mark": 1, "gap": gap}})
    declared = spaced.entropy_bits("c")
    assert declared <= exact + 1e-9, (declared, exact)
    # A bound, not a throwaway: within the bend's log2(n) and its coin's bit of the truth.
    assert declared >= exact - math.log2(n) - 1 - 1e-9


def _ledger(column: dict, count: int | str = "k") -> InputGenerator:
    """Rows `day, amount` whose day column is the rule given, `k` of them (3 to 6)."""
    return InputGenerator.from_dict({
        "version": 1,
        "classes": {"c": {"template": "{k}\n{rows}", "vars": {
            "k": {"int": [3, 6]},
            "rows": {"repeat": {"count": count, "template": "{day}, {amount}\n", "vars": {
                "day": column, "amount": {"int": [-5, 5]}}}}}}},
        "tests": {"t": "c"},
    })


def _days(text: bytes) -> list[int]:
    return [int(line.split(b",")[0]) for line in text.splitlines()[1:]]


def test_a_column_kept_in_order_runs_in_order_down_the_records_and_counts_one_sorted_list(
) -> None:
    """Days of a ledger, times of a log: a record's int with `across` is one sorted list
    over the repeat's records, drawn from bounds outside the record; its bits are that
    list's (`ints` with `order`), not k independent values'."""
    import math

    up = _ledger({"int": [0, "k * 10"], "across": "asc"})
    down = _ledger({"int": [1, 40], "across": "desc", "distinct": True})
    plain = _ledger({"int": [0, 30]})
    ties = 0
    for seed in range(40):
        days = _days(up.draw("c", seed))
        assert days == sorted(days) and max(days) <= 10 * len(days)
        ties += len(set(days)) < len(days)
        strict = _days(down.draw("c", seed))
        assert strict == sorted(strict, reverse=True) and len(set(strict)) == len(strict)
    assert ties > 0  # without `distinct` equal days are drawn, as a ledger may show them
    assert not all(_days(plain.draw("c", s)) == sorted(_days(plain.draw("c", s)))
                   for s in range(10))
    amounts = 2 + 3 * math.log2(11)  # k shown (4 values), amounts at the least count, 3
    # three of [0, 30] sorted: the likeliest list comes from 3! orders
    assert up.entropy_bits("c") == pytest.approx(amounts + 3 * math.log2(31) - math.log2(6))
    assert down.entropy_bits("c") == pytest.approx(amounts + math.log2(math.comb(40, 3)))
    assert plain.entropy_bits("c") == pytest.approx(amounts + 3 * math.log2(31))


@pytest.mark.parametrize(
    "column, count, needle",
    [
        ({"int": [0, 9], "across": "up"}, "k", "across: expected \"asc\" or \"desc\""),
        ({"int": [0, 9], "distinct": True}, "k", "only an int kept in order (`across`)"),
        ({"int": [1, 9], "across": "asc", "log": True}, "k", "a log-uniform int is not"),
        ({"int": [0, 4], "across": "asc", "distinct": True}, "k",
         "6 distinct values cannot be drawn from [0, 4] (when k = 6)"),
        ({"int": [0, 4], "across": "asc", "distinct": True}, 9,
         "9 distinct values cannot be drawn from [0, 4]"),
    ],
)
def test_a_malformed_ordered_column_is_refused_by_name(
    column: dict, count: int | str, needle: str
) -> None:
    with pytest.raises(GeneratorError) as err:
        _ledger(column, count)
    assert needle in str(err.value)


def test_an_ordered_column_stands_only_in_a_record_and_is_bounded_from_outside_it() -> None:
    record_bound = {
        "version": 1,
        "classes": {"c": {"template": "{rows}", "vars": {"rows": {"repeat": {
            "count": 3, "template": "{a} {day}\n",
            "vars": {"a": {"int": [1, 9]}, "day": {"int": [0, "a"], "across": "asc"}}}}}}},
    }
    with pytest.raises(GeneratorError, match="its range names a of its own record"):
        InputGenerator.from_dict(record_bound)
    outside = {"version": 1, "classes": {"c": {"template": "{d}", "vars": {
        "d": {"int": [0, 9], "across": "asc"}}}}}
    with pytest.raises(GeneratorError, match="only an int of a repeat's record is kept in order"):
        InputGenerator.from_dict(outside)
