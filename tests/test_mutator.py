"""Input generators learnt from an imported program's own tests (data/mutator.py): the shape
kept, counts consistent, acceptance by the -O0, -O3 and sanitizer builds, the import
summary, and the generator carried by an exported row. Real gcc, real sandbox."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from structured_programs import (
    CASES_SAMPLE,
    CASES_TO_END_C,
    DIGITS_C,
    DIGITS_SAMPLE,
    LAPINDROMES_C,
    LEDGER_C,
    LEDGER_SAMPLE,
    LIST_FIVE_C,
    LIST_SAMPLE,
    LIST_TO_END_C,
    PAIRS_SAMPLE,
    PAIRS_THREE_C,
    PAIRS_TO_END_C,
    PAIRS_UNTIL_ZEROS_C,
    QUEUE_C,
    SPACING_C,
    SPACING_SAMPLES,
)
from structured_programs import SAMPLES as STRUCTURED_SAMPLES

import asmopt.cli
from asmopt.adequacy import UnfitProgramError
from asmopt.data.common import ImportRun
from asmopt.data.export import export_suite
from asmopt.data.mutator import (
    fit_inputs,
    learn_classes,
    learn_generator,
    parse_lines,
    reads_only_text,
    reads_to_end,
)
from asmopt.data.plain_dir import import_plain_dir
from asmopt.data.supercoder import import_supercoder
from asmopt.evaluate import baseline_binary
from asmopt.fresh import FreshInputs, class_comparison, draw_inputs, expected_tests
from asmopt.programs.generators import derive_seed
from asmopt.programs.model import Program, TestCase
from asmopt.programs.rows import row_to_program
from asmopt.programs.suite_io import load_suite

SUM_C = r"""#include <stdio.h>
int main(void)
{
    int n; long s = 0, x;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { if (scanf("%ld", &x) != 1) return 2; s += x; }
    printf("%ld\n", s);
    return 0;
}
"""
REVERSE_C = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
    char s[128];
    if (scanf("%127s", s) != 1) return 1;
    for (int i = (int)strlen(s) - 1; i >= 0; i--) putchar(s[i]);
    putchar('\n');
    return 0;
}
"""
COMMANDS_C = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
    int q; long total = 0, x; char cmd[16];
    if (scanf("%d", &q) != 1) return 1;
    while (q-- > 0) {
        if (scanf("%15s", cmd) != 1) return 2;
        if (strcmp(cmd, "add") == 0) { if (scanf("%ld", &x) != 1) return 3; total += x; }
        else if (strcmp(cmd, "query") == 0) printf("%ld\n", total);
        else return 4;
    }
    return 0;
}
"""
# Indexes a table by an input number: k = 3 is fine, k = 1 reads lut[-1].
UB_C = r"""#include <stdio.h>
int lut[4] = {10, 20, 30, 40};
int main(void)
{
    int k, n; long s = 0, x;
    if (scanf("%d %d", &k, &n) != 2) return 1;
    for (int i = 0; i < n; i++) { if (scanf("%ld", &x) != 1) return 2; s += x; }
    printf("%ld\n", s + lut[k - 2]);
    return 0;
}
"""
NO_STDIN_C = '#include <stdio.h>\nint main(void){ printf("42\\n"); return 0; }\n'

POOL = {
    "sum": (SUM_C, {"a": "5\n3 1 4 1 5\n", "b": "3\n10 20 30\n"}),
    "reverse": (REVERSE_C, {"a": "hello\n"}),
    "commands": (COMMANDS_C, {"a": "5\nadd 3\nadd 5\nquery\nadd 7\nquery\n"}),
    "ub": (UB_C, {"a": "3 5\n1 2 3 4 5\n"}),
    "quiet": (NO_STDIN_C, {"a": ""}),
}


def make_pool(root: Path, names: tuple[str, ...] = tuple(POOL)) -> Path:
    for name in names:
        source, tests = POOL[name]
        (root / name / "tests").mkdir(parents=True)
        (root / name / f"{name}.c").write_text(source)
        for test, text in tests.items():
            (root / name / "tests" / f"{test}.in").write_text(text)
    return root


def program(name: str) -> Program:
    source, tests = POOL[name]
    return Program(
        id=name,
        source=source,
        tests=tuple(
            TestCase(name=t, stdin=text.encode(), expected_stdout=b"") for t, text in tests.items()
        ),
    )


def only_timed_classes(p: Program, toolchain, sandbox) -> Program:
    """`p` without its checking classes (data/checking_classes.py), measured again."""
    from dataclasses import replace

    from asmopt.entropy import MARK_KEY, measure_entropy
    from asmopt.programs.generators import InputGenerator

    assert p.inputs is not None
    data = p.inputs.to_dict()
    timed = set(data["tests"].values())
    data["classes"] = {k: v for k, v in data["classes"].items() if k in timed}
    p = replace(p, inputs=InputGenerator.from_dict(data))
    meta = p.meta
    meta[MARK_KEY] = measure_entropy(p, toolchain, sandbox).to_dict()
    return replace(p, metadata=tuple(sorted(meta.items())))


def draws(p: Program, n: int = 12) -> list[tuple[str, str]]:
    """n draws of each class a fixed test stands for (not of the checking classes)."""
    assert p.inputs is not None
    timed = {klass for _, klass in p.inputs.tests}
    return [
        (c, p.inputs.draw(c, derive_seed(7, "test", c, k)).decode())
        for c in p.inputs.class_names
        if c in timed
        for k in range(n)
    ]


# ---------------------------------------------------------------------------- learning only
def test_counts_keywords_and_sentinels_stay_as_written() -> None:
    gen = learn_generator(program("sum"))
    assert gen is not None and gen.origin == "learnt"
    assert dict(gen.tests) == {"a": "a", "b": "b"}
    for _, text in draws(replace_inputs(program("sum"), gen)):
        head, items = text.split("\n", 1)
        assert int(head) == len(items.split())  # the count equals the items drawn
    # commands: the count of command lines is kept, and only observed keywords are drawn
    gen = learn_generator(program("commands"))
    assert gen is not None
    for _, text in draws(replace_inputs(program("commands"), gen)):
        lines = text.splitlines()
        assert int(lines[0]) == len(lines) - 1 == 5
        assert all(line.split()[0] in ("add", "query") for line in lines[1:])
    # a terminating line of zeros and a test-case count are kept
    sentinel = Program(
        id="edges",
        source=SUM_C,
        tests=(TestCase(name="t", stdin=b"3\n1 2\n2 3\n1 3\n0 0\n", expected_stdout=b""),),
    )
    [learnt] = learn_classes(sentinel)
    for _level, body in learnt.bodies:
        assert body["template"].startswith("3\n") and body["template"].endswith("0 0\n")


def test_strings_keep_their_alphabet_and_grow_with_the_number_that_states_their_length() -> None:
    """`hello`: at the `full` level the same length; at the `grown` level longer, never
    shorter, always of the letters seen. A string whose length a number states (`5` then
    `hello`, `5 2` then `hello`) grows with that number, which still states it."""
    for level, lengths in (("full", {5}), ("grown", None)):
        gen = learn_generator(program("reverse"), level)
        assert gen is not None
        seen = {text for _, text in draws(replace_inputs(program("reverse"), gen), 16)}
        assert len(seen) > 1
        for text in seen:
            assert text.endswith("\n") and set(text[:-1]) <= set("helo")
        sizes = {len(text) - 1 for text in seen}
        assert sizes == lengths if lengths else (min(sizes) >= 5 and max(sizes) > 20)
    # the number is read as a number (a program that reads only `%s` would see digits)
    reads_n = REVERSE_C.replace(
        'if (scanf("%127s", s) != 1)', 'int n; if (scanf("%d", &n) != 1 || scanf("%127s", s) != 1)'
    )
    for head in (b"5", b"5 2"):
        stated = Program("stated", reads_n, (TestCase("t", head + b"\nhello\n", b""),))
        gen = learn_generator(stated)
        assert gen is not None
        drawn = [text.split("\n") for _, text in draws(replace_inputs(stated, gen))]
        assert all(int(lines[0].split()[0]) == len(lines[1]) for lines in drawn), drawn
        assert max(len(lines[1]) for lines in drawn) > 20
        assert all(set(lines[1]) <= set("helo") for lines in drawn)


def test_short_codes_of_letters_and_digits_vary_in_both_parts() -> None:
    """Chess squares (`e4`), seats (`B12`): a letter run and a digit run. Written as seen,
    a table of them gave nothing to vary and the program no generator; split, the letters
    are drawn from those the column shows and the digits as an int column."""
    stdin = b"4\na1 b3\nc2 e3\nh8 g6\nd4 f5\n"
    p = Program("squares", SUM_C, (TestCase("t", stdin, b""),))
    gen = learn_generator(p, "full")
    assert gen is not None
    letters, digits = set(), set()
    for _, text in draws(replace_inputs(p, gen), 24):
        head, *rows = text.strip().split("\n")
        assert int(head) == len(rows) == 4
        for row in rows:
            for square in row.split():
                letter, number = square[0], square[1:]
                assert letter in "abcdefgh" and 1 <= int(number) <= 8, row
                letters.add(letter)
                digits.add(int(number))
    assert len(letters) > 4 and len(digits) > 4
    # A longer code stays one string, and a lone letter or digit is no code.
    atoms = parse_lines("x9 10a ab12cd q 7 0a\n")[0].values()
    assert [(a.kind, a.text) for a in atoms] == [
        ("word", "x"),
        ("int", "9"),
        ("int", "10"),
        ("word", "a"),
        ("str", "ab12cd"),
        ("word", "q"),
        ("int", "7"),
    ]


def test_a_count_beside_the_value_it_bounds_grows_and_the_rows_keep_their_order() -> None:
    """`n m`, then m updates `a b k` with 1 <= a <= b <= n (a range of an array of n): m
    grows though it is not first on its line, a row never comes out with b < a, and no
    position passes n, whatever n is drawn."""
    stdin = b"5 3\n1 2 100\n2 5 100\n3 4 100\n"
    p = Program("updates", PAIRS_C, (TestCase("t", stdin, b""),))
    gen = learn_generator(p, "grown")
    assert gen is not None
    sizes = set()
    for _, text in draws(replace_inputs(p, gen), 24):
        head, *rows = text.strip().split("\n")
        n, m = map(int, head.split())
        assert m == len(rows)
        sizes.add(m)
        for row in rows:
            a, b, k = map(int, row.split())
            assert 1 <= a <= b <= n and 1 <= k <= 100, (n, row)
    assert min(sizes) > 3 and len(sizes) > 5


def test_a_line_that_starts_with_its_own_length_grows_as_one_record() -> None:
    """`k a1 .. ak` lines of differing lengths (one case a line, read to the end of the
    input): each k grows past the sample's and its line holds exactly k values."""
    stdin = b"4 9 2 5 6\n6 7 6 10 1 2 5\n"
    p = Program("cases", PAIRS_C, (TestCase("t", stdin, b""),))
    gen = learn_generator(p, "grown")
    assert gen is not None
    for _, text in draws(replace_inputs(p, gen), 24):
        lines = text.strip().split("\n")
        assert len(lines) == 2
        for line, seen in zip(lines, (4, 6), strict=True):
            k, *values = map(int, line.split())
            assert k == len(values) > seen



def test_a_second_count_on_a_table_head_counts_the_run_after_the_table() -> None:
    """`ns nq`, then ns rows `l r` of the head's own shape, then nq queries: the head is
    read as the table's count (ns) and nq counts the queries after the table, so at no
    level is nq drawn from the rows' second column (which would read 10^7 queries); where
    sizes grow, nq grows too (an answer right only for the sample's 3 queries must fail)
    and the queries drawn are as many as it says."""
    rows = "".join(f"{i} {10_000_000 - i}\n" for i in range(1, 8))
    stdin = f"7 3\n{rows}5\n17\n9999990\n".encode()
    p = Program("intervals", PAIRS_C, (TestCase("t", stdin, b""),))
    for level in ("grown", "past", "full", "bulk", "values"):
        gen = learn_generator(p, level)
        assert gen is not None, level
        for _, text in draws(replace_inputs(p, gen), 12):
            head, *rest = text.strip().split("\n")
            ns, nq = map(int, head.split())
            assert (ns, nq) == (7, 3) or ns + nq == len(rest), (level, head, len(rest))
            assert all(len(line.split()) == 1 for line in rest[ns:]), (level, text)
            assert len(rest) - ns == nq, (level, head, len(rest))
            assert nq > 3 and ns > 7 if level == "grown" else True, (level, head)


def test_a_list_then_queries_grows_both_counts_of_the_head_line() -> None:
    """`n q`, a list of n values, then q lines `q i` (1 <= i <= n): both counts grow past
    the sample's, the list holds n values, the queries are q lines, and each index stays
    within the drawn n."""
    stdin = b"4 3\n1 2 3 4\nq 1\nq 2\nq 4\n"
    p = Program("queries", PAIRS_C, (TestCase("t", stdin, b""),))
    gen = learn_generator(p, "grown")
    assert gen is not None
    for _, text in draws(replace_inputs(p, gen), 16):
        head, values, *queries = text.strip().split("\n")
        n, q = map(int, head.split())
        assert n > 4 and q > 3 and len(values.split()) == n and len(queries) == q, text
        assert all(1 <= int(line.split()[1]) <= n for line in queries), text


def test_a_grown_string_of_few_letters_is_long_enough_to_carry_the_bits() -> None:
    """A 5-character string of two letters (`.-.--`), alone on its line: grown, it is
    never the sample's length, and its shortest draw carries the 64 bits a timed class
    needs (at most 16 times 5 = 80 characters, from 5 up, carried as few as 5 before)."""
    p = Program("borze", REVERSE_C, (TestCase("t", b".-.--\n", b""),))
    gen = learn_generator(p, "grown")
    assert gen is not None
    (name,) = gen.class_names
    assert gen.entropy_bits(name) >= 64
    lengths = {len(text.strip()) for _, text in draws(replace_inputs(p, gen), 24)}
    assert min(lengths) >= 64 and len(lengths) > 5
    # Three letters need an odd most (81 characters): its half is rounded up, to 41
    # characters (65 bits), not down to 40 (63.4 bits).
    p = Program("mass", REVERSE_C, (TestCase("t", b"COOH\n", b""),))
    gen = learn_generator(p, "grown")
    assert gen is not None
    assert gen.entropy_bits(gen.class_names[0]) >= 64


def test_rows_of_fields_keep_each_columns_range_and_grow_at_ranges_seen() -> None:
    """`t`, then t rows `s w1 w2 w3` (a height in 1..8, widths in 1..2, as the statement
    bounds them): the rows are records of fields, so no width is drawn from the heights'
    range at a level that keeps ranges as seen, and `grown4_seen` grows t past the
    sample's while it does so."""
    rows = ["3 1 2 1", "2 2 2 1", "1 1 1 2", "5 2 1 1", "4 1 1 1", "6 2 2 2", "2 1 2 2"]
    stdin = ("7\n" + "\n".join(rows) + "\n").encode()
    p = Program("bricks", PAIRS_C, (TestCase("t", stdin, b""),))
    grown_past = set()
    for level in ("grown4_seen", "past", "full", "values"):
        gen = learn_generator(p, level)
        assert gen is not None, level
        for _, text in draws(replace_inputs(p, gen), 12):
            head, *lines = text.strip().split("\n")
            assert int(head) == len(lines)
            grown_past.add((level, int(head) > 7))
            for line in lines:
                s, *widths = map(int, line.split())
                assert 1 <= s <= 6 and all(1 <= w <= 2 for w in widths), (level, line)
    assert ("grown4_seen", True) in grown_past

def test_indices_from_zero_stay_inside_the_list_they_index() -> None:
    """`n`, a list of n values, `q`, then q queries `l r` that index the list from 0: every
    drawn query stays in [0, n - 1] with l <= r, at every drawn n."""
    stdin = b"6\n7 3 8 1 9 2\n4\n0 2\n1 5\n3 4\n2 2\n"
    p = Program("ranges", PAIRS_C, (TestCase("t", stdin, b""),))
    gen = learn_generator(p, "grown")
    assert gen is not None
    for _, text in draws(replace_inputs(p, gen), 24):
        n_line, values, q_line, *rows = text.strip().split("\n")
        n, q = int(n_line), int(q_line)
        assert len(values.split()) == n > 6 and q == len(rows) > 4
        for row in rows:
            left, right = map(int, row.split())
            assert 0 <= left <= right <= n - 1, (n, row)


def test_programs_without_stdin_or_values_learn_nothing() -> None:
    assert learn_generator(program("quiet")) is None
    words = Program(
        id="w",
        source=SUM_C,
        tests=(TestCase(name="t", stdin=b"YES\n", expected_stdout=b""),),
    )
    assert learn_generator(words) is None


def replace_inputs(p: Program, gen: object) -> Program:
    from dataclasses import replace

    return replace(p, inputs=gen)


# ---------------------------------------------------------------------------- acceptance
def test_accepted_draws_differ_from_the_fixed_inputs_and_both_builds_agree(
    toolchain, sandbox
) -> None:
    p = fit_inputs(program("sum"), toolchain, sandbox)
    report = p.meta["inputs_report"]
    assert p.inputs is not None and not p.fixed_inputs and report["generator"] is True
    assert {c: (e["accepted"], e["tried"]) for c, e in report["classes"].items()} == {
        "a": (16, 16),
        "b": (16, 16),
    }
    fixed = {t.stdin.decode() for t in p.tests}
    drawn = draws(p, 6)
    assert any(text not in fixed for _, text in drawn)
    o0 = toolchain.compile_binary(p, ("-O0",)).output
    o3 = toolchain.compile_binary(p, ("-O3",)).output
    for _, text in drawn:
        head, items = text.split("\n", 1)
        assert int(head) == len(items.split())
        r0 = sandbox.run_program(o0, stdin=text.encode())
        r3 = sandbox.run_program(o3, stdin=text.encode())
        assert r0.exit_code == r3.exit_code == 0 and r0.stdout == r3.stdout
        assert int(r0.stdout) == sum(int(x) for x in items.split())


def test_undefined_behaviour_on_drawn_values_narrows_the_class(toolchain, sandbox) -> None:
    p = fit_inputs(program("ub"), toolchain, sandbox)
    entry = p.meta["inputs_report"]["classes"]["a"]
    # drawing k in [1, 3] (or, grown, in [1, 10]) reaches lut[-1]: those levels are
    # refused, a narrower one kept
    refused = entry["attempts"][:-1]
    assert refused[0]["level"] == "grown" and refused[-1]["level"] == "full"
    for attempt in refused:
        assert attempt["accepted"] < attempt["tried"] and "failure" in attempt
    assert entry["level"] in ("bulk", "values") and entry["accepted"] == 16
    assert p.inputs is not None
    for _, text in draws(p):
        assert text.startswith("3 5\n") and len(text.split()) == 7


# ---------------------------------------------------------------------------- importers
@pytest.mark.slow
def test_plain_dir_import_learns_generators_and_reports_counts(
    tmp_path: Path, toolchain, sandbox
) -> None:
    pool = make_pool(tmp_path / "pool")
    suite, report = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    stats = report.stats["inputs"]
    assert stats["generator"] == 4 and stats["fixed_inputs"] == 1
    assert stats["tried"] >= stats["accepted"] >= 5 * 16
    assert suite.programs["quiet"].fixed_inputs
    assert suite.programs["quiet"].meta["inputs_report"]["reason"] == "no test has stdin"
    assert "quiet" in stats["programs"] and "fixed inputs" in stats["programs"]["quiet"]
    assert "a 16/16 grown" in stats["programs"]["reverse"]
    for name in ("sum", "reverse", "commands", "ub"):
        assert suite.programs[name].inputs is not None, name
    # without the mutator, nothing is learnt
    plain, plain_report = import_plain_dir(pool)
    assert all(p.fixed_inputs for p in plain) and "inputs" not in plain_report.stats


@pytest.mark.slow
def test_import_summary_prints_accepted_and_tried(tmp_path: Path, capsys) -> None:
    pool = make_pool(tmp_path / "pool", ("sum", "quiet"))
    out_dir = tmp_path / "suite"
    code = asmopt.cli.main(
        ["data", "import", "dir", str(pool), "-o", str(out_dir), "--no-adequacy"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "fresh inputs: 1 program(s) with a learnt generator, 1 with fixed inputs only" in out
    # each grown class, and its checking classes at the sample's sizes and the low end of
    # its ranges (`a` draws values in [1, 10] already: no low end apart)
    assert "sum: generator: a 16/16 grown +sample, b 16/16 grown +sample +low folded" in out
    loaded = load_suite(out_dir)
    assert loaded.programs["sum"].inputs is not None and loaded.programs["quiet"].fixed_inputs
    # `b` folded into `a` (its sample of three values carries too few bits) stays checked
    assert loaded.programs["sum"].inputs.class_names == (
        "a", "a.sample", "b", "b.sample", "b.low"
    )
    assert loaded.programs["sum"].size_class("b") == "a"
    assert loaded.programs["sum"].meta["inputs_report"]["accepted"] == 16 * 5
    saved = json.loads((out_dir / "data_report.json").read_text())
    assert saved["stats"]["inputs"]["generator"] == 1
    code = asmopt.cli.main(
        [
            "data",
            "import",
            "dir",
            str(pool),
            "-o",
            str(tmp_path / "plain"),
            "--no-adequacy",
            "--no-mutator",
        ]
    )
    assert code == 0 and "fresh inputs" not in capsys.readouterr().out
    assert all(p.fixed_inputs for p in load_suite(tmp_path / "plain"))


# ---------------------------------------------------------------------------- exports
@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "verl-parquet"])
def test_exported_row_carries_the_generator(tmp_path: Path, toolchain, sandbox, fmt) -> None:
    if fmt == "verl-parquet":
        pytest.importorskip("pyarrow")
    pool = make_pool(tmp_path / "pool", ("sum", "quiet"))
    suite, _ = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    suffix = ".jsonl" if fmt == "jsonl" else ".parquet"
    # "quiet" has fixed inputs only: refused for rewards, exported only when allowed.
    with pytest.raises(UnfitProgramError, match="fixed_inputs"):
        export_suite(suite, tmp_path / f"no{suffix}", fmt, baseline_fn=lambda p: "main:\n")
    [path], _ = export_suite(
        suite,
        tmp_path / f"rows{suffix}",
        fmt,
        baseline_fn=lambda p: "main:\n\tret\n",
        allow_unfit=True,
    )
    if fmt == "jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
    by_id = {r["extra_info"]["program_id"]: r for r in rows}
    assert by_id["quiet"]["extra_info"]["inputs_spec"] is None
    spec = json.loads(by_id["sum"]["extra_info"]["inputs_spec"])
    # (t01's own class, a sample too small to carry 64 bits, is folded into t00's: the
    # import's `class_folding`)
    assert spec["origin"] == "learnt" and spec["tests"] == {"t00": "a", "t01": "a"}
    # the reward side reads the row alone and draws exactly what the suite's program draws
    read, _ = row_to_program(by_id["sum"], 0, "rows", "row", "train")
    original = suite.programs["sum"]
    assert read.inputs is not None and read.meta["program_id"] == "sum"
    assert read.size_class("t00") == original.size_class("a") == "a"
    for c in original.inputs.class_names:
        seed = derive_seed(3, c)
        assert read.inputs.draw(c, seed) == original.inputs.draw(c, seed)
    assert row_to_program(by_id["quiet"], 1, "rows", "row", "train")[0].fixed_inputs
    # a row without the fields (the published schema) still reads, with fixed inputs
    bare = json.loads(json.dumps(by_id["sum"]))
    del bare["extra_info"]["inputs_spec"], bare["extra_info"]["program_id"]
    assert row_to_program(bare, 0, "rows", "row", "train")[0].fixed_inputs
    # and the SuperCoder importer keeps a carried generator without learning again
    again, report = import_supercoder(
        [path], run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    kept = [p for p in again if p.meta.get("program_id") == "sum"]
    assert kept and kept[0].inputs is not None and report.stats["inputs"]["carried"] == 1


# ---------------------------------------------------------------------------- fixed tests
def test_a_fixed_test_with_undefined_behaviour_is_dropped_by_name_before_learning(
    toolchain, sandbox
) -> None:
    """k = 1 reads lut[-1]: what -O0 and -O3 print is not defined, and AddressSanitizer
    reports the read. The test goes (named, with the reason), the well-defined one stays
    and is the only one classes are learnt from."""
    ub = Program(
        id="ub2",
        source=UB_C,
        tests=(
            TestCase(name="fine", stdin=b"3 5\n1 2 3 4 5\n", expected_stdout=b""),
            TestCase(name="oob", stdin=b"1 2\n7 8\n", expected_stdout=b""),
        ),
    )
    p = fit_inputs(ub, toolchain, sandbox)
    report = p.meta["inputs_report"]
    assert list(report["dropped_tests"]) == ["oob"], report
    assert "sanitizer" in report["dropped_tests"]["oob"] or "disagree" in (
        report["dropped_tests"]["oob"]
    )
    assert [t.name for t in p.tests] == ["fine"]
    assert p.inputs is not None and dict(p.inputs.tests) == {"fine": "fine"}


@pytest.mark.slow
def test_an_import_drops_a_program_whose_every_fixed_test_is_ill_defined(
    tmp_path: Path, toolchain, sandbox
) -> None:
    pool = make_pool(tmp_path / "pool", ("sum",))
    (pool / "oob" / "tests").mkdir(parents=True)
    (pool / "oob" / "oob.c").write_text(UB_C)
    (pool / "oob" / "tests" / "a.in").write_text("1 2\n7 8\n")
    suite, report = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    assert sorted(suite.programs) == ["sum"] and report.kept == ["sum"]
    (drop,) = [d for d in report.dropped if d.item == "oob"]
    assert drop.reason == "ill_defined_tests" and "a:" in drop.detail
    assert suite.programs["sum"].meta["inputs_report"]["dropped_tests"] == {}


# Course-style checking: a bad input gets an error message and exit code 1.
CHECKED_C = r"""#include <stdio.h>
int main(void)
{
    long a, b;
    printf("Two numbers:\n");
    if (scanf("%ld %ld", &a, &b) != 2 || a < 0 || b < 0) {
        printf("Invalid input.\n");
        return 1;
    }
    printf("Sum: %ld\n", a + b);
    return 0;
}
"""


def test_a_test_whose_files_give_no_exit_code_takes_the_one_every_build_gives(
    tmp_path: Path, toolchain, sandbox
) -> None:
    """A plain layout has no exit codes, so 0 is assumed; a program that prints its error
    and exits 1 for a bad input is well defined there, and its test is kept expecting 1
    (named in the import's notes) instead of being dropped with the program. A test whose
    output the program does not print still goes."""
    pool = tmp_path / "pool"
    (pool / "checked" / "tests").mkdir(parents=True)
    (pool / "checked" / "checked.c").write_text(CHECKED_C)
    for name, stdin, out in (
        ("ok", "2 40\n", "Two numbers:\nSum: 42\n"),
        ("bad", "2 -4\n", "Two numbers:\nInvalid input.\n"),
        ("wrong", "x\n", "Two numbers:\nSomething else.\n"),
    ):
        (pool / "checked" / "tests" / f"{name}.in").write_text(stdin)
        (pool / "checked" / "tests" / f"{name}.out").write_text(out)
    suite, report = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    program = suite.programs["checked"]
    tests = {t.name: t for t in program.tests}
    assert sorted(tests) == ["bad", "ok"]
    assert tests["bad"].expected_exit == 1 and tests["ok"].expected_exit == 0
    inputs_report = program.meta["inputs_report"]
    assert inputs_report["exit_codes_taken"] == {"bad": 1}
    assert "wrong" in inputs_report["dropped_tests"]
    assert any("bad: exit 1" in note for note in report.notes), report.notes
    # The error test's class is checked in every grading but timed by no test: its answer
    # is one message whatever the input, which as a timed class would read as a table.
    assert inputs_report["checked_not_timed"] == ["bad"]
    assert program.inputs is not None and program.size_class("bad") is None
    assert program.size_class("ok") is not None
    (bad_class,) = [c for c in program.inputs.class_names if c.split(".")[0] == "bad"][:1]
    assert class_comparison(program, bad_class)[1] == 1
    drawn = draw_inputs(program, FreshInputs(seed=3, per_class=2), "g")
    baseline = baseline_binary(program, toolchain)
    checked = expected_tests(program, baseline, sandbox, [(m["class"], t.stdin) for t, m in drawn])
    codes = {m["class"]: t.expected_exit for (_, m), t in zip(drawn, checked, strict=True)}
    assert codes[bad_class] == 1 and codes[program.size_class("ok")] == 0


PARITY_C = r"""#include <stdio.h>
int main(void)
{
    int n; long s = 0, x;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { if (scanf("%ld", &x) != 1) return 2; s += x; }
    puts(s % 7 ? "NO" : "YES");
    return 0;
}
"""
WIDE_LIST = "20\n" + " ".join(str(100000 + 37 * k * k) for k in range(20)) + "\n"


@pytest.mark.slow
def test_an_import_measures_drawn_outputs_and_a_yes_no_program_is_unfit(
    tmp_path: Path, toolchain, sandbox
) -> None:
    """Twenty numbers of six digits declare far more than 64 bits, so only the measured
    outputs show that a program asking whether their sum is a multiple of 7 has two
    answers, `NO` six times in seven: a constant passes a draw that often, and a grading
    of every class's draws (the timed one and its checking classes) too often even at 8
    per class. The import stores the measurement and the program is unfit at once; the
    sum of the same list stays fit. Each mark bounds what a constant answer passes."""
    from asmopt.adequacy import is_reward_fit
    from asmopt.entropy import read_mark
    from asmopt.fresh import graded_per_class

    pool = tmp_path / "pool"
    for name, source in (("parity", PARITY_C), ("wide_sum", SUM_C)):
        (pool / name / "tests").mkdir(parents=True)
        (pool / name / f"{name}.c").write_text(source)
        (pool / name / "tests" / "a.in").write_text(WIDE_LIST)
    suite, report = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    assert report.stats["entropy"] == {"measured": 2, "tabulable": 1}
    parity, wide = suite.programs["parity"], suite.programs["wide_sum"]
    fit, why = is_reward_fit(parity)
    assert not fit and "a constant answer per class passes" in why, why
    assert is_reward_fit(wide)[0], is_reward_fit(wide)
    parity_mark, wide_mark = read_mark(parity), read_mark(wide)
    assert parity_mark is not None and wide_mark is not None
    # `NO` passes 2 draws of the class and of each checking class ~(6/7)^6
    assert [c.size_class for c in parity_mark.checking] == ["a.sample", "a.low"]
    assert parity_mark.default_pass_bound() > 0.3
    # One class of distinct outputs: 256 draws bound its likeliest output's share by 0.018,
    # so a grading draws 4 inputs of it alone (0.018^4 < 1e-6); its checking classes (at
    # the sample's size, at the low end of the range) are graded too and cut that to 2.
    alone = only_timed_classes(wide, toolchain, sandbox)
    assert read_mark(alone).required_per_class() == 4  # type: ignore[union-attr]
    assert graded_per_class(alone, 2) == 4 and graded_per_class(parity, 2) == 2
    assert wide_mark.required_per_class() == graded_per_class(wide, 2) < 4
    # and what the draws reach, against the fixed test (measure/coverage.py)
    assert wide_mark.coverage is not None
    assert wide_mark.coverage["drawn"] >= wide_mark.coverage["fixed"] > 0


# ---------------------------------------------------------------------------- contract
HALLOWEEN_C = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
    char month[8]; int day;
    if (scanf("%7s %d", month, &day) != 2) return 1;
    if ((strcmp(month, "OCT") == 0 && day == 31) || (strcmp(month, "DEC") == 0 && day == 25))
        puts("yup");
    else
        puts("nope");
    return 0;
}
"""
PAIRS_C = r"""#include <stdio.h>
int main(void)
{
    int n; long a, b, s = 0;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { if (scanf("%ld %ld", &a, &b) != 2) return 2; s += a * b; }
    printf("%ld\n", s);
    return 0;
}
"""


def test_keywords_are_drawn_from_the_source_and_every_side_is_drawn(toolchain, sandbox) -> None:
    """`OCT 31`: the month is a keyword the source compares against, so it is drawn among
    the source's literals of its shape (`OCT`, `DEC`), never invented (a random `TCD`
    would only ever be answered `nope`)."""
    p = fit_inputs(
        Program("halloween", HALLOWEEN_C, (TestCase("t", b"OCT 31\n", b"yup\n"),)),
        toolchain,
        sandbox,
    )
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "keywords"
    months = {text.split()[0] for _, text in draws(p, 64)}
    assert months == {"OCT", "DEC"}


@pytest.mark.parametrize(
    ("source", "stdin"),
    [(SUM_C, b"5\n3 1 4 1 5\n"), (PAIRS_C, b"3\n1 2\n3 4\n5 6\n")],
    ids=["list", "lines"],
)
def test_counts_grow_past_the_sample_and_still_count_what_follows(
    source: str, stdin: bytes, toolchain, sandbox
) -> None:
    """A count that governs the next line's list, or the run of lines after it, is drawn
    well past the sample (the `grown` level), and the items drawn follow it; the class
    then carries the 64 bits a timed class needs, where the sample's shape could not."""
    from asmopt.entropy import MIN_ENTROPY_BITS

    p = fit_inputs(Program("grow", source, (TestCase("t", stdin, b""),)), toolchain, sandbox)
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    sizes = set()
    for _, text in draws(p, 32):
        head, *rest = text.split("\n", 1)
        items = rest[0].split() if rest else []
        per_item = 1 if source == SUM_C else 2
        assert len(items) == int(head) * per_item
        sizes.add(int(head))
    assert min(sizes) > 5 and len(sizes) > 10
    assert p.inputs.entropy_bits("t") >= MIN_ENTROPY_BITS


@pytest.mark.slow
def test_a_grading_draws_what_the_entropy_mark_requires(tmp_path: Path, toolchain, sandbox) -> None:
    """The mark's `per_class` is what a check draws, not the default 2 (and a mark for
    another version of the program raises nothing)."""
    from dataclasses import replace

    from asmopt.evaluate import check_candidate
    from asmopt.fresh import FreshInputs

    pool = tmp_path / "pool"
    (pool / "wide_sum" / "tests").mkdir(parents=True)
    (pool / "wide_sum" / "wide_sum.c").write_text(SUM_C)
    (pool / "wide_sum" / "tests" / "a.in").write_text(WIDE_LIST)
    (pool / "wide_sum" / "tests" / "a.out").write_text(f"{sum(map(int, WIDE_LIST.split()[1:]))}\n")
    suite, _ = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    wide = only_timed_classes(suite.programs["wide_sum"], toolchain, sandbox)
    asm = toolchain.baseline_assembly(wide)
    for program, expected in ((wide, 4), (replace(wide, source=wide.source + "\n"), 2)):
        result = check_candidate(program, asm, toolchain, sandbox, fresh=FreshInputs())
        drawn = [t for t in result.tests if "~" in t.test]
        assert result.verdict == "pass" and len(drawn) == expected, (expected, result.tests)


CASES_C = r"""#include <stdio.h>
int main(void)
{
    int t;
    if (scanf("%d", &t) != 1) return 1;
    while (t--) {
        int n; long s = 0, x;
        if (scanf("%d", &n) != 1) return 2;
        for (int i = 0; i < n; i++) { if (scanf("%ld", &x) != 1) return 3; s += x * x; }
        printf("%ld\n", s);
    }
    return 0;
}
"""


def test_test_cases_grow_in_number_and_each_one_in_size(toolchain, sandbox) -> None:
    """`3` test cases, each a count and its list: the grown class draws more cases (the
    count of cases is what the first line says) and longer lists (each count what its
    list holds), where the sample's three cases of 4-6 numbers carried 40 bits."""
    stdin = b"3\n4\n1 2 3 4\n5\n5 4 3 2 1\n6\n7 8 9 1 2 3\n"
    p = fit_inputs(Program("cases", CASES_C, (TestCase("t", stdin, b""),)), toolchain, sandbox)
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    for _, text in draws(p, 8):
        lines = text.splitlines()
        cases = int(lines[0])
        assert cases >= 3 and len(lines) == 1 + 2 * cases
        for k in range(cases):
            n, items = int(lines[1 + 2 * k]), lines[2 + 2 * k].split()
            assert n == len(items) and n > 6
    assert p.inputs.entropy_bits("t") >= 64


def test_a_program_that_takes_few_test_cases_still_grows_each_one(toolchain, sandbox) -> None:
    """The same test cases for a program whose own limit is ten of them (`assert(t < 11)`
    in a real one): dozens of cases are refused, so the `grown_few` level keeps their
    number within [4, 8] while each case's list still grows past the sample's."""
    source = CASES_C.replace("if (scanf(\"%d\", &t) != 1) return 1;",
                             "if (scanf(\"%d\", &t) != 1 || t > 10) return 1;")
    stdin = b"3\n4\n1 2 3 4\n5\n5 4 3 2 1\n6\n7 8 9 1 2 3\n"
    p = fit_inputs(Program("few", source, (TestCase("t", stdin, b""),)), toolchain, sandbox)
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown_few"
    for _, text in draws(p, 8):
        lines = text.splitlines()
        assert 4 <= int(lines[0]) <= 8
        assert all(int(n) > 6 for n in lines[1::2])


# ---------------------------------------------------------------------------- folding
TALLY_C = r"""#include <stdio.h>
int main(void)
{
    int n, x = 0; char op[4];
    if (scanf("%d", &n) != 1) return 1;
    while (n--) { if (scanf("%3s", op) != 1) return 2; x += op[1] == '+' ? 1 : -1; }
    printf("%d\n", x);
    return 0;
}
"""
TALLY_OPS = ("X++", "--X", "++X", "X--")
# The answers of the two samples by heart (n = 1: 1; n = 40: SUM), 1 for anything else.
MEMO_TALLY_C = r"""#include <stdio.h>
int main(void)
{
    int n;
    if (scanf("%d", &n) != 1) return 1;
    printf("%d\n", n == 40 ? {SUM} : 1);
    return 0;
}
"""


@pytest.mark.slow
def test_a_one_record_samples_class_is_folded_into_a_sibling_that_carries_entropy(
    tmp_path: Path, toolchain, sandbox
) -> None:
    """A sample of one operation gives a class of a few bits that matter (the program
    reads `%3s` of the op, however long the grown string is drawn); its sibling sample of
    forty gives hundreds. The import folds the small class (its test now stands for the
    big one, named in the report) instead of calling the whole program tabulable, and
    every grading's draws are of the kept class."""
    from asmopt.adequacy import is_reward_fit
    from asmopt.entropy import declared_problems, read_mark, timed_classes

    ops = [TALLY_OPS[(7 * i) % 4] for i in range(40)]
    pool = tmp_path / "pool" / "tally"
    (pool / "tests").mkdir(parents=True)
    (pool / "tally.c").write_text(TALLY_C)
    (pool / "tests" / "1.in").write_text("1\nX++\n")
    (pool / "tests" / "2.in").write_text(f"{len(ops)}\n" + "\n".join(ops) + "\n")
    suite, _ = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    tally = suite.programs["tally"]
    assert tally.inputs is not None
    assert timed_classes(tally) == ("2",)
    assert "1" in tally.inputs.class_names  # folded: its draws are checked, not timed
    assert set(tally.inputs.class_names) - {"1", "2"} <= {"1.sample", "2.sample", "1.low",
                                                          "2.low"}
    assert tally.size_class("1") == "2" and tally.size_class("2") == "2"
    folded = tally.meta["inputs_report"]["folded"]
    assert list(folded) == ["1"] and "bits" in folded["1"] and "(< 64)" in folded["1"], folded
    assert not declared_problems(tally)
    mark = read_mark(tally)
    assert mark is not None and [c.size_class for c in mark.classes] == ["2"]
    assert "1" in [c.size_class for c in mark.checking]
    assert is_reward_fit(tally)[0], is_reward_fit(tally)
    # The folded test is still graded on draws: an answer that knows both samples' outputs
    # and prints the first one otherwise fails every grading.
    from asmopt.evaluate import check_candidate
    from asmopt.fresh import FreshInputs

    memo = Program("memo", MEMO_TALLY_C.replace("{SUM}", str(sum(
        1 if op[1] == "+" else -1 for op in ops))), tally.tests)
    asm = toolchain.baseline_assembly(memo)
    for seed in range(4):
        result = check_candidate(tally, asm, toolchain, sandbox, fresh=FreshInputs(seed=seed))
        assert result.verdict == "wrong_output", (seed, result.message)


def test_folding_needs_a_class_to_fold_into() -> None:
    from asmopt.data.class_folding import fold_classes
    from asmopt.programs.generators import InputGenerator

    spec = {
        "version": 1,
        "origin": "learnt",
        "classes": {
            "a": {"template": "{n}\n", "vars": {"n": {"int": [1, 9]}}},
            "b": {"template": "{n}\n", "vars": {"n": {"int": [0, 2**64 - 1]}}},
            "c": {"template": "{n} {m}\n", "vars": {"n": {"int": [0, 2**64 - 1]},
                                                   "m": {"int": [0, 2**64 - 1]}}},
        },
        "tests": {"t1": "a", "t2": "b", "t3": "c"},
    }
    tests = tuple(TestCase(f"t{k}", b"1\n", b"1\n") for k in (1, 2, 3))
    prog = Program(id="p", source="int main(void){return 0;}", tests=tests,
                   inputs=InputGenerator.from_dict(spec))
    from asmopt.entropy import declared_problems, timed_classes

    assert [p.split(":")[0] for p in declared_problems(prog)] == ["a"]
    folded = fold_classes(prog, {"a": "a: 3.2 bits"})
    assert folded is not None and folded.inputs is not None
    # the weak class stays, checked on every grading and timed by none
    assert folded.inputs.class_names == ("a", "b", "c")
    assert timed_classes(folded) == ("b", "c") and not declared_problems(folded)
    assert folded.size_class("t1") == "b"  # the kept class nearest in entropy
    assert folded.meta["inputs_report"]["folded"] == {
        "a": "a: 3.2 bits; its test(s) now stand for class b, its draws are checked, not timed"
    }
    assert fold_classes(prog, {}) is None
    assert fold_classes(prog, {k: "weak" for k in ("a", "b", "c")}) is None


def test_sorted_lists_stay_sorted_and_permutations_stay_permutations() -> None:
    """A list given in order is drawn in that order; a list that is a shuffle of 1..n is
    drawn as a permutation of 1..(its drawn length), also where the count grows. A list
    too short to tell (four values) is drawn freely."""
    cases = (
        ("desc", b"6\n9 7 7 4 2 1\n"),
        ("asc", b"6\n1 1 3 8 8 9\n"),
        ("perm", b"6\n2 1 5 3 6 4\n"),
        ("free", b"4\n1 2 3 4\n"),
    )
    for kind, stdin in cases:
        p = Program(kind, SUM_C, (TestCase("t", stdin, b""),))
        gen = learn_generator(p)
        assert gen is not None
        lists = [
            [int(x) for x in text.split("\n")[1].split()]
            for _, text in draws(replace_inputs(p, gen), 24)
        ]
        assert max(len(xs) for xs in lists) > 6, kind  # grown past the sample
        if kind == "desc":
            assert all(xs == sorted(xs, reverse=True) for xs in lists)
        elif kind == "asc":
            assert all(xs == sorted(xs) for xs in lists)
        elif kind == "perm":
            assert all(sorted(xs) == list(range(1, len(xs) + 1)) for xs in lists)
        else:
            assert any(xs != sorted(xs) for xs in lists)


# A program whose own limits refuse the `grown` sizes: at most 10 pairs, at most 40 per
# pair (its assertions), after a sample of 6.
BOUNDED_PAIRS_C = r"""#include <assert.h>
#include <stdio.h>
int main(void)
{
    int n; long a, b, s = 0;
    if (scanf("%d", &n) != 1) return 1;
    assert(n > 0 && n < 11);
    for (int i = 0; i < n; i++) {
        if (scanf("%ld %ld", &a, &b) != 2) return 2;
        assert(a <= 40 && b <= 40);
        s += a * b;
    }
    printf("%ld\n", s);
    return 0;
}
"""


# A sample of 70 pairs: past every growing level's largest target but `grown`'s.
SEVENTY_PAIRS = b"70\n" + b"".join(b"%d %d\n" % (i % 40 + 1, (7 * i) % 40 + 1) for i in range(70))


@pytest.mark.parametrize(
    ("source", "stdin", "level", "sample", "most"),
    [
        (BOUNDED_PAIRS_C, b"6\n1 2\n3 4\n5 6\n7 8\n9 10\n11 12\n", "past", 6, 9),
        (BOUNDED_PAIRS_C.replace("n < 11", "n < 41"), b"6\n1 2\n3 4\n5 6\n7 8\n9 10\n9 8\n",
         "grown4", 6, 24),
        (BOUNDED_PAIRS_C.replace("n < 11", "n < 76"), SEVENTY_PAIRS, "past", 70, 71),
    ],
    ids=["just-past", "four-times", "past-a-large-sample"],
)
def test_a_program_that_refuses_the_grown_sizes_still_grows_past_the_sample(
    source: str, stdin: bytes, level: str, sample: int, most: int, toolchain, sandbox
) -> None:
    """Its limits are its own (an assertion here; a fixed buffer elsewhere): the `grown`
    sizes are refused, and the class is kept at the largest growth it takes, never at the
    sample's own size (an answer right only for 6 pairs fails), even where the sample is
    already past the level's largest target (70 pairs at `past`, whose target is 64)."""
    p = fit_inputs(Program("bounded", source, (TestCase("t", stdin, b""),)), toolchain, sandbox)
    entry = p.meta["inputs_report"]["classes"]["t"]
    assert entry["level"] == level
    assert entry["attempts"][0]["level"] == "grown" and "failure" in entry["attempts"][0]
    sizes = {int(text.split("\n", 1)[0]) for _, text in draws(p, 32)}
    assert min(sizes) > sample and max(sizes) <= most


def test_words_of_several_lengths_keep_their_longest_as_the_top_where_it_is_past_the_target(
) -> None:
    """Four words of 3 to 70 letters: at `past` (largest target 64) their number still grows
    past four, but the top of their lengths stays 70, the longest sample's: one more, a
    program whose limit is 70 letters would refuse only the rare draw that reached it, and
    so pass acceptance by chance. Where the level's target is above it (`grown4`: 256), the
    top grows."""
    stdin = ("4\n" + "ab" * 35 + "\nabc\nabab\nbaab\n").encode()
    [learnt] = learn_classes(Program("words", LAPINDROMES_C, (TestCase("t", stdin, b""),)))
    bodies = dict(learnt.bodies)
    for level, top in (("past", 70), ("grown4", 256)):
        [rows] = [r["repeat"] for r in bodies[level]["vars"].values() if "repeat" in r]
        assert bodies[level]["vars"][rows["count"]]["int"][0] > 4
        assert rows["vars"]["v1_len"]["int"] == [3, top]


def test_a_given_output_the_program_does_not_print_is_relaxed_or_dropped_by_name(
    toolchain, sandbox
) -> None:
    """A sample whose given output differs from the program's own only in whitespace (a
    trailing space, no last newline) is kept and compared ignoring whitespace, so the
    baseline passes it; one whose given output is another answer fails every answer, the
    baseline's included, and is dropped by name."""
    tests = (
        TestCase("spaced", b"3\n1 2\n3 4\n5 6\n", b"44 \n"),
        TestCase("wrong", b"2\n1 1\n2 2\n", b"6\n"),
        TestCase("right", b"2\n2 3\n1 1\n", b"7\n"),
    )
    p = fit_inputs(Program("given", PAIRS_C, tests), toolchain, sandbox)
    report = p.meta["inputs_report"]
    assert set(report["relaxed_tests"]) == {"spaced"}
    assert "does not print the given expected output" in report["dropped_tests"]["wrong"]
    compare = {t.name: t.compare.mode for t in p.tests}
    assert compare == {"spaced": "whitespace", "right": "exact"}
    from asmopt.evaluate import check_candidate
    from asmopt.fresh import FreshInputs

    identity = check_candidate(
        p, toolchain.baseline_assembly(p), toolchain, sandbox, fresh=FreshInputs.off()
    )
    assert identity.verdict == "pass", identity.message


def test_a_low_variant_narrows_free_values_and_keeps_counts_bounds_and_permutations() -> None:
    from asmopt.data.checking_classes import low_body, variants

    body = {
        "template": "{n}\n{rows}{k}\n{xs}\n{perm}\n{w}\n",
        "vars": {
            "n": {"int": [32, 64]},
            "rows": {
                "repeat": {
                    "count": "n",
                    "template": "{a} {b} {c}\n",
                    "vars": {
                        "a": {"int": [8, 100]},
                        "b": {"int": ["a", 1000]},
                        "c": {"int": [-1000, 1000]},
                        "day": {"int": [0, 1000], "across": "asc", "distinct": True},
                        "hour": {"int": [0, 1000], "across": "asc"},
                    },
                    "sep": "",
                }
            },
            "k": {"int": [3, 9]},
            "xs": {"ints": {"count": "n", "range": [1, 10**6], "sep": " ", "order": "asc"}},
            "perm": {"ints": {"count": "n", "range": [1, "n"], "sep": " ", "distinct": True}},
            "w": {"text": {"length": "n", "alphabet": "abcdef"}},
        },
    }
    low = low_body(body)
    assert low["vars"]["n"] == body["vars"]["n"]  # a count: sizes stay as drawn
    record = low["vars"]["rows"]["repeat"]["vars"]
    assert record["a"]["int"] == [8, 17]
    assert record["b"]["int"] == ["a", "min(1000, (a) + 9)"]  # the row relation stays
    assert record["c"]["int"] == [-4, 5]  # around zero where the range holds it
    # a column in order with no value twice keeps its range (ten values hold no 32 rows);
    # one that may repeat narrows like any other
    assert record["day"] == body["vars"]["rows"]["repeat"]["vars"]["day"]
    assert record["hour"] == {"int": [0, 9], "across": "asc"}
    assert low["vars"]["k"] == body["vars"]["k"]  # already within ten values
    assert low["vars"]["xs"]["ints"]["range"] == [1, 10] and low["vars"]["xs"]["ints"]["order"]
    assert low["vars"]["perm"] == body["vars"]["perm"]  # a permutation stays one
    assert low["vars"]["w"]["text"]["alphabet"] == "ab"
    assert body["vars"]["w"]["text"]["alphabet"] == "abcdef"  # the accepted body is untouched
    sample = {"template": "{n}\n", "vars": {"n": {"int": [1, 5]}}}
    assert [s for s, _ in variants(body, sample)] == ["sample", "low"]
    assert [s for s, _ in variants(body, body)] == ["low"]
    assert variants(sample, None) == []  # nothing to narrow, no sample size apart


PAIRS_13_C = r"""#include <stdio.h>
int main(void)
{
    int a, b;
    while (scanf("%d %d", &a, &b) == 2 && (a | b)) {
        if (a + b == 13) puts("thirteen");
        else if (a == b) puts("tie");
        else puts(a > b ? "first" : "second");
    }
    return 0;
}
"""


def test_checking_classes_reach_the_samples_edge_cases_and_fail_an_answer_wrong_there(
    toolchain, sandbox
) -> None:
    """Pairs grown to values up to 100 almost never sum to 13; the sample has such a pair.
    The class's checking variant at the low end of the ranges draws them in every input,
    so the draws reach every block the sample reaches, and an answer that forgot the rule
    for 13 (right on every pair that does not sum to it) fails every grading."""
    from asmopt.evaluate import check_candidate
    from asmopt.fresh import FreshInputs
    from asmopt.measure.coverage import measure_coverage

    stdin = b"5\n17 3\n8 5\n44 44\n9 30\n21 2\n0 0\n"
    p = fit_inputs(Program("pairs", PAIRS_13_C, (TestCase("t", stdin, b""),)), toolchain, sandbox)
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["checking"]["low"] == "kept"
    pairs = [
        [int(v) for v in line.split()]
        for k in range(4)
        for line in p.inputs.draw("t.low", derive_seed(3, k)).decode().splitlines()
    ]
    assert sum(1 for pair in pairs if len(pair) == 2 and sum(pair) == 13) >= 4
    reached = measure_coverage(p, toolchain, sandbox)
    assert reached is not None and reached.missed == 0, reached
    forgot = Program("forgot", PAIRS_13_C.replace("a + b == 13", "a + b == -13"), p.tests)
    asm = toolchain.baseline_assembly(forgot)
    for seed in range(3):
        result = check_candidate(p, asm, toolchain, sandbox, fresh=FreshInputs(seed=seed))
        assert result.verdict == "wrong_output", (seed, result.message)


LENGTH_WORD_C = r"""#include <stdio.h>
#include <string.h>
int main(void)
{
    int n; static char s[1 << 16]; unsigned long h = 5381;
    if (scanf("%d %65535s", &n, s) != 2 || (int)strlen(s) != n) return 1;
    for (int i = 0; i < n; i++) h = h * 33 + (unsigned char)s[i];
    printf("%lu\n", h);
    return 0;
}
"""


@pytest.mark.slow
def test_a_program_of_many_samples_keeps_at_most_eight_checking_classes(toolchain, sandbox) -> None:
    from asmopt.data.checking_classes import MAX_CHECKING_CLASSES

    words = ["abcdefgh", "zyxwvutsrqponm", "helloworldfoo", "qwertyuiopasdfgh", "mnbvcxzlkjhg",
             "poiuytrewq"]
    tests = tuple(TestCase(f"w{k}", f"{len(w)}\n{w}\n".encode(), b"") for k, w in enumerate(words))
    p = fit_inputs(Program("words", LENGTH_WORD_C, tests), toolchain, sandbox)
    assert p.inputs is not None
    timed = {k for _, k in p.inputs.tests}
    checking = [c for c in p.inputs.class_names if c not in timed]
    assert len(checking) == MAX_CHECKING_CLASSES, checking
    verdicts = [why for c in p.meta["inputs_report"]["classes"].values()
                for why in (c.get("checking") or {}).values()]
    assert any(why.startswith("not tried") for why in verdicts), verdicts


# ---------------------------------------------------------------------------- planted shapes
def _ints_rules(body: object) -> list[dict]:
    """Every `ints` rule of a class body, records' included."""
    if isinstance(body, dict):
        found = [body["ints"]] if isinstance(body.get("ints"), dict) else []
        return found + [r for v in body.values() for r in _ints_rules(v)]
    if isinstance(body, list):
        return [r for v in body for r in _ints_rules(v)]
    return []


def test_a_value_one_sample_keeps_apart_is_planted_apart_in_every_tests_lists() -> None:
    """Seats taken at least four apart: only the first sample file shows it (ten seats,
    chance 36/1024 for a uniform line), yet it is the problem's structure, so the lists of
    both files' classes, at every level, plant `spaced` with the widest gap shown (4) and
    its mark (1); lists of other values, and programs whose samples keep nothing apart by
    more than chance, get no such plant."""
    seats = Program(
        id="seats",
        source=SPACING_C,
        tests=tuple(
            TestCase(name=f"t{k}", stdin=text.encode(), expected_stdout=b"")
            for k, text in enumerate(SPACING_SAMPLES, 1)
        ),
    )
    learnt = learn_classes(seats)
    assert {t for c in learnt for t in c.tests} == {"t1", "t2"}
    planted = [
        rule for c in learnt for _, body in c.bodies for rule in _ints_rules(body)
        if rule.get("range") == [0, 1]
    ]
    assert planted and all(
        rule.get("plant") == {"shape": "spaced", "share": 0.5, "mark": 1, "gap": 4}
        for rule in planted
    ), planted
    # The plant names its two values: lists of another pair (`1 2 2 2 1`) are not planted.
    from asmopt.data.shapes import spaced_shape

    shown = spaced_shape([[1, 0, 0, 0, 1, 0, 0, 0, 1, 0], [2, 1, 1, 2, 2]])
    assert shown is not None and (shown.mark, shown.gap, shown.values) == (1, 4, (0, 1))
    dense = Program(
        id="dense",
        source=SPACING_C,
        tests=(TestCase(name="t", stdin=SPACING_SAMPLES[1].encode(), expected_stdout=b""),),
    )
    assert not any(
        rule.get("plant", {}).get("shape") == "spaced"
        for c in learn_classes(dense) for _, body in c.bodies for rule in _ints_rules(body)
    )


@pytest.mark.slow  # learns and grades three programs (about 40 s)
def test_yes_no_records_whose_samples_show_the_structure_draw_both_answers_and_are_fit(
    tmp_path: Path, toolchain, sandbox
) -> None:
    """Three record-per-answer problems whose samples show the structure they ask about (a
    lapindrome's anagram halves; a queue a few swaps from sorted; seats taken four apart,
    shown in one sample file of two). Uniform draws land on one answer nearly always (a
    random word of 50 letters is no lapindrome, a random permutation of 50 is always
    chaotic, a random line of seats has neighbours), so a constant answer per record would
    pass. The
    learnt generator plants the structure in half the draws (data/shapes.py), the rows of
    words of several lengths grow as one run of records, and a queue's records grow in
    number as well as in size: both answers are drawn, each grading's answer carries
    over 64 bits, and the import marks both fit."""
    from asmopt.adequacy import is_reward_fit
    from asmopt.data.shapes import has_anagram_halves

    pool = tmp_path / "pool"
    samples = {
        "lapin": (LAPINDROMES_C, (STRUCTURED_SAMPLES["lapindromes"],)),
        "queue": (QUEUE_C, (STRUCTURED_SAMPLES["queue"],)),
        "seats": (SPACING_C, SPACING_SAMPLES),
    }
    for name, (source, stdins) in samples.items():
        (pool / name / "tests").mkdir(parents=True)
        (pool / name / f"{name}.c").write_text(source)
        for k, stdin in enumerate(stdins, 1):
            (pool / name / "tests" / f"{k}.in").write_text(stdin)
    suite, _ = import_plain_dir(
        pool, run=ImportRun(mutator=True, toolchain=toolchain, sandbox=sandbox)
    )
    sides: dict[str, list[bool]] = {"lapin": [], "queue": [], "seats": []}
    for name, p in suite.programs.items():
        assert is_reward_fit(p)[0], (name, is_reward_fit(p))
        assert p.inputs is not None and p.inputs.entropy_bits("1") >= 64
        for _, text in draws(p, 8):
            lines = text.splitlines()
            if name == "lapin":
                sides[name] += [has_anagram_halves(w) for w in lines[1:]]
            elif name == "seats":
                seated = [[i for i, x in enumerate(ln.split()) if x == "1"] for ln in lines[2::2]]
                sides[name] += [all(b - a >= 4 for a, b in pairwise(r)) for r in seated]
            else:
                queues = [[int(x) for x in line.split()] for line in lines[2::2]]
                sides[name] += [all(x - (i + 1) <= 2 for i, x in enumerate(q)) for q in queues]
    # Half the draws planted; a planted line of seats is bent to a gap of 3 (CLOSE) in half
    # of those, so about a quarter of its lines are APART.
    shares = {"lapin": (0.25, 0.75), "queue": (0.25, 0.75), "seats": (0.15, 0.40)}
    for name, side in sides.items():
        assert len(side) >= 8 * 32, name  # records grew in number past the sample's 3 or 6
        low, high = shares[name]
        assert low <= sum(side) / len(side) <= high, (name, sum(side), len(side))




def test_a_table_that_a_sentinel_row_ends_grows_keeps_its_days_in_order_and_its_sentinel(
    toolchain, sandbox
) -> None:
    """No count states a ledger's length: its last row's amount 0 ends it. The rows before
    it grow past the sample, its days (in order down the sample's rows) stay in order,
    and the sentinel row stays last, with its day at the end of the range; every draw is
    accepted at the `grown` level and carries the 64 bits a timed class needs."""
    from asmopt.entropy import MIN_ENTROPY_BITS

    stdin = LEDGER_SAMPLE.encode()
    p = fit_inputs(Program("ledger", LEDGER_C, (TestCase("t", stdin, b""),)), toolchain, sandbox)
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    sizes = set()
    for _, text in draws(p, 24):
        rows = [tuple(int(x) for x in row.split(", ")) for row in text.strip().split("\n")]
        days = [day for day, _ in rows]
        assert days == sorted(days) and len(set(days)) == len(days)
        assert rows[-1][1] == 0 and all(amount != 0 for _, amount in rows[:-1])
        assert rows[-1][0] == 100  # the day's range [3, 90] widened to the next power of ten
        sizes.add(len(rows))
    assert min(sizes) > 5 and len(sizes) > 5
    assert p.inputs.entropy_bits("t") >= MIN_ENTROPY_BITS
    # at the sample's sizes too the days stay in order: its checking variant is kept
    assert p.meta["inputs_report"]["classes"]["t"]["checking"]["sample"] == "kept"
    for text in (p.inputs.draw("t.sample", seed).decode() for seed in range(8)):
        days = [int(row.split(", ")[0]) for row in text.strip().split("\n")]
        assert days == sorted(days) and len(days) == 5


@pytest.mark.parametrize(
    ("loop", "to_end"),
    [
        ('while (scanf("%d %d", &a, &b) == 2) { s += a; }', True),
        ('while (scanf("%d", &a) != EOF) s += a;', True),
        ('while (~scanf("%d", &a)) s += a;', True),
        ("while (fgets(line, sizeof line, stdin)) s++;", True),
        ("while (gets(line)) s++;", True),
        ('while (2 == scanf("%d %d", &a, &b)) s += a;', True),
        ("while ((c = getchar()) != EOF) s++;", True),
        ('while (!feof(stdin)) { if (scanf("%d", &a) == 1) s += a; }', True),
        ('for (;;) { if (scanf("%d", &a) != 1) break; s += a; }', True),
        ('for (;;) { if (scanf("%d", &a) == EOF) { break; } s += a; }', True),
        # one read's error check, a drain of what is left, a line read to its end
        ('if (scanf("%d", &a) != 1) { printf("bad input\\n"); return 1; }', False),
        ("while ((c = getchar()) != EOF);", False),
        ("while ((c = getchar()) != '\\n') s++;", False),
        ('for (int i = 0; i < 3; i++) scanf("%d", &a);', False),
        # a loop a small number also bounds reads at most that many
        ('while (c < 5 && scanf("%d", &a) == 1) { s += a; c++; }', False),
        ('for (c = 0; c < 5; c++) { if (scanf("%d", &a) != 1) break; s += a; }', False),
        ('for (c = 0; c < 5; c++) if (scanf("%d", &a) != 1) break;', False),
        ('\n#define N 4\n  while (c < N && scanf("%d", &a) == 1) c++;', False),
        ('\n#define N 100000\n  while (c < N && scanf("%d", &a) == 1) c++;', True),
        ('for (c = 0; c < 5; c++) s++;\n  for (;;) { if (scanf("%d", &a) != 1) break; }', True),
        ('while (c < 5) { printf("(}"); c++; }\n  while (scanf("%d", &a) == 1) s++;', True),
        # a value the loop reads and checks is no count
        ('while (scanf("%d %d", &a, &b) == 2 && b >= 2 && b <= 36) s += a;', True),
        # a loop left in a comment (a template's) reads nothing
        ('// while (scanf("%d", &a) != EOF) s += a;\n  scanf("%d", &a);', False),
        ('/* for (;;) { if (scanf("%d", &a) != 1) break; } */ scanf("%d", &a);', False),
    ],
)
def test_a_loop_that_reads_until_the_input_ends_is_told_from_one_that_does_not(
    loop: str, to_end: bool
) -> None:
    source = (
        "#include <stdio.h>\nint main(void) {\n  int a, b, c; long s = 0; char line[64];\n"
        f"  {loop}\n  printf(\"%ld\\n\", s);\n  return 0;\n}}\n"
    )
    assert reads_to_end(Program("p", source, (TestCase("t", b"1 2\n", b""),))) is to_end


@pytest.mark.parametrize(
    ("reads", "text_only"),
    [
        ('scanf("%s", s);', True),
        ('scanf("%100000s", s);', True),
        ('fscanf(stdin, "%s %c", s, &c);', True),
        ('scanf("%[^\\n]", s);', True),
        ('scanf("%%" "%s", s);', True),
        ('scanf("%s", s); // n = atoi(s); scanf("%d", &n);', True),
        # a number read as a number, by a macro's format, or converted after the read
        ('scanf("%d", &n); scanf("%s", s);', False),
        ('scanf("%s,%lld", s, &v);', False),
        ('scanf("%" SCNu8, &t); scanf("%s", s);', False),
        ('scanf("%s", s); n = atoi(s);', False),
        ('scanf("%s", s); c = getchar();', False),
        ('scanf("%c", &c);', False),
        ('fgets(s, sizeof s, stdin);', False),
    ],
)
def test_a_program_that_reads_only_text_is_told_from_one_that_reads_numbers(
    reads: str, text_only: bool
) -> None:
    source = (
        "#include <inttypes.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
        "int main(void) {\n  char s[64]; char c; int n; uint8_t t; long long v;\n"
        f"  {reads}\n  return 0;\n}}\n"
    )
    assert reads_only_text(Program("p", source, (TestCase("t", b"1\n", b""),))) is text_only




def test_numbers_a_program_reads_only_as_text_are_drawn_as_digits_past_any_integer(
    toolchain, sandbox
) -> None:
    """A program that reads `%s` sees the input's numbers as digits: they are drawn as
    strings of digits whose length grows past the samples' (and past 19 digits, which no
    integer holds), more rows than the sample's, the terminator `0` kept last. The same
    program reading `%lld` keeps them integers."""
    sample = (TestCase("t", DIGITS_SAMPLE.encode(), b""),)
    p = fit_inputs(Program("digits", DIGITS_C, sample), toolchain, sandbox)
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    longest, rows = 0, set()
    for _, text in draws(p, 16):
        lines = text.strip().split("\n")
        assert lines[-1] == "0" and all(line.isdigit() for line in lines)
        longest = max(longest, *map(len, lines[:-1]))
        rows.add(len(lines) - 1)
    assert longest > 19 and min(rows) > 4
    numbers = (
        "#include <stdio.h>\nint main(void) {\n  long long v;\n"
        '  while (scanf("%lld", &v) == 1 && v != 0) printf("%lld\\n", v % 1000000007);\n'
        "  return 0;\n}\n"
    )
    body = learn_generator(Program("n", numbers, sample), "grown")
    assert body is not None
    for seed in range(8):
        tokens = body.draw("t", seed).decode().split()
        assert max(map(len, tokens)) <= 19


def test_rows_no_count_governs_grow_where_the_program_reads_until_its_input_ends(
    toolchain, sandbox
) -> None:
    """Three `a b` pairs and no count: a program that reads pairs until its input ends
    takes as many as come, so the learnt class draws more rows than the sample (each one
    more answer) and carries the 64 bits a timed class needs; one that reads exactly three
    keeps three."""
    from asmopt.entropy import MIN_ENTROPY_BITS

    stdin = PAIRS_SAMPLE.encode()
    p = fit_inputs(
        Program("pairs", PAIRS_TO_END_C, (TestCase("t", stdin, b""),)), toolchain, sandbox
    )
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    sizes = {len(text.strip().split("\n")) for _, text in draws(p, 16)}
    assert min(sizes) > 3 and len(sizes) > 3
    assert p.inputs.entropy_bits("t") >= MIN_ENTROPY_BITS
    three = Program("three", PAIRS_THREE_C, (TestCase("t", stdin, b""),))
    body = learn_generator(three, "grown").to_dict()["classes"]["t"]
    [rows] = [rule["repeat"] for rule in body["vars"].values() if "repeat" in rule]
    assert rows["count"] == 3


def test_a_list_no_count_governs_grows_where_the_program_reads_until_its_input_ends(
    toolchain, sandbox
) -> None:
    """One line of five values and no count: a program that reads values until its input
    ends takes as many as come, so the learnt class draws longer lists (of several
    lengths) with the 64 bits a timed class needs, blank lines after it or not; one that
    reads exactly five keeps five."""
    from asmopt.entropy import MIN_ENTROPY_BITS

    sample = (TestCase("t", LIST_SAMPLE.encode(), b""),)
    p = fit_inputs(Program("least", LIST_TO_END_C, sample), toolchain, sandbox)
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    sizes = set()
    for _, text in draws(p, 16):
        lines = text.strip().split("\n")
        assert len(lines) == 1
        sizes.add(len(lines[0].split()))
    assert min(sizes) > 5 and len(sizes) > 3
    assert p.inputs.entropy_bits("t") >= MIN_ENTROPY_BITS
    five = learn_generator(Program("five", LIST_FIVE_C, sample), "grown")
    assert all(len(five.draw("t", seed).split()) == 5 for seed in range(4))
    # a blank line after the list still leaves it the last thing the program reads
    blank = (TestCase("t", (LIST_SAMPLE + "\n").encode(), b""),)
    after = learn_generator(Program("blank", LIST_TO_END_C, blank), "grown")
    assert min(len(after.draw("t", seed).split()) for seed in range(4)) > 5


def test_cases_that_state_their_own_lengths_grow_in_number_not_in_length(
    toolchain, sandbox
) -> None:
    """Four cases `n v1 .. vn` of lengths 2, 9, 7 and 1, read until the input ends: the
    class draws more cases than the sample, each of a length the sample's cases span
    (a case is one more answer; a long case's least and most are nearly always the
    range's ends), each case's count equal to its values."""
    from asmopt.entropy import MIN_ENTROPY_BITS

    stdin = CASES_SAMPLE.encode()
    p = fit_inputs(
        Program("cases", CASES_TO_END_C, (TestCase("t", stdin, b""),)), toolchain, sandbox
    )
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    sizes, lengths = set(), set()
    for _, text in draws(p, 16):
        rows = [[int(x) for x in line.split()] for line in text.strip().split("\n")]
        assert all(row[0] == len(row) - 1 for row in rows)
        sizes.add(len(rows))
        lengths.update(row[0] for row in rows)
    assert min(sizes) > 4 and len(sizes) > 3
    assert lengths == set(range(1, 10))
    assert p.inputs.entropy_bits("t") >= MIN_ENTROPY_BITS


def test_rows_before_a_terminator_of_zeros_grow_and_the_terminator_stays_last(
    toolchain, sandbox
) -> None:
    """`0 0` after the pairs ends them (the program never reads to the input's end: a
    failed read is an error), so the rows before it grow and it stays the last line."""
    stdin = (PAIRS_SAMPLE + "0 0\n").encode()
    p = fit_inputs(
        Program("zeros", PAIRS_UNTIL_ZEROS_C, (TestCase("t", stdin, b""),)), toolchain, sandbox
    )
    assert p.inputs is not None
    assert p.meta["inputs_report"]["classes"]["t"]["level"] == "grown"
    sizes = set()
    for _, text in draws(p, 16):
        lines = text.strip().split("\n")
        assert lines[-1] == "0 0" and "0 0" not in lines[:-1]
        sizes.add(len(lines) - 1)
    assert min(sizes) > 3 and len(sizes) > 3
    # a last row of zeros read by a loop of three is a row of the table, no terminator
    three = Program("three", PAIRS_THREE_C, (TestCase("t", b"20 100\n2 3\n0 0\n", b""),))
    text = learn_generator(three, "grown").draw("t", 1).decode()
    assert len(text.strip().split("\n")) == 3


def test_a_column_in_order_by_chance_is_drawn_as_before() -> None:
    """Order is a rule only where a shuffle would rarely show it: three days in order (1 in
    3 by chance, either way) are drawn freely, and so is a last row of 0 that another row
    also shows there (no sentinel: the value is one of the column's), or that follows a
    number equal to the table's length (a count)."""
    p = Program("ledger", LEDGER_C, (TestCase("t", b"5, 1\n9, 0\n2, 2\n7, 0\n", b""),))
    body = learn_generator(p, "grown").to_dict()["classes"]["t"]
    [rows] = [rule["repeat"] for rule in body["vars"].values() if "repeat" in rule]
    assert rows["count"] == 4 and not body["template"].endswith(", 0\n")
    assert not any("across" in rule for rule in rows["vars"].values())
    few = Program("few", LEDGER_C, (TestCase("t", b"4, 5\n6, 6\n8, 0\n", b""),))
    body = learn_generator(few, "grown").to_dict()["classes"]["t"]
    [rows] = [rule["repeat"] for rule in body["vars"].values() if "repeat" in rule]
    assert rows["count"] == 3 and not body["template"].endswith(", 0\n")
    assert not any("across" in rule for rule in rows["vars"].values())
    # a number before the table that is its length may count it: no sentinel is taken
    counted = Program("counted", LEDGER_C, (TestCase("t", b"4\n" + LEDGER_SAMPLE.encode(), b""),))
    body = learn_generator(counted, "grown").to_dict()["classes"]["t"]
    assert not body["template"].endswith(", 0\n")
