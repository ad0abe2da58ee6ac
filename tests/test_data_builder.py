"""The builder on tiny C programs with real gcc and the real sandbox: every drop reason is
counted once, outputs are regenerated, selection and splits are exact and deterministic."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from asmopt.data.builder import BuildConfig, build_suite
from asmopt.data.common import DataError, assign_splits, split_for
from asmopt.data.normalize import normalize_source, strip_comments
from asmopt.data.tokens import TokenCounter
from asmopt.programs.model import Program, Suite, TestCase

SUM = """#include <stdio.h>
int main(void) {
  long n, s = 0;
  if (scanf("%ld", &n) != 1) return 1;
  for (long i = 0; i < n; i++) s += i % 7;
  printf("%ld\\n", s);
  return 0;
}
"""


def prog(pid: str, source: str, inputs: tuple[bytes, ...] = (b"100\n",), **meta: str) -> Program:
    tests = tuple(
        TestCase(name=f"t{i}", stdin=s, expected_stdout=b"") for i, s in enumerate(inputs)
    )
    return Program(id=pid, source=source, tests=tests, metadata=tuple(sorted(meta.items())))


def fake_timer(speedups: dict[str, float]):
    """-O3 always 1 ms; -O0 takes speedup ms (default 10x)."""

    def timer(program: Program, level: str, binary: Path, test: TestCase) -> float:
        return 1e-3 * (speedups.get(program.id, 10.0) if level == "O0" else 1.0)

    return timer


def test_builder_counts_every_drop_reason(toolchain, sandbox) -> None:
    pad = "".join(f"int pad{i};\n" for i in range(900))  # long C, same behaviour
    long_source = SUM.replace("int main", pad + "int main")
    pool = [
        prog("good-a", SUM, (b"10\n", b"20\n", b"30\n", b"40\n"), problem="pa"),
        prog("good-a-copy", "// a comment\n" + SUM.replace("  ", "    "), problem="pa"),
        prog("good-b", SUM.replace("% 7", "% 5"), problem="pb"),
        prog("good-c", SUM.replace("% 7", "% 3"), problem="pc"),
        prog("syntax", "int main(void) { return }\n"),
        prog("segv", "int main(void){ volatile int *p = 0; *p = 1; return 0; }\n"),
        prog("spin", "int main(void){ for (volatile int i = 0;; i++) ; }\n"),
        prog("exit4", "int main(void){ return 4; }\n"),
        prog(
            "optdiff",
            '#include <stdio.h>\nint main(void){\n#ifdef __OPTIMIZE__\nputs("O");\n#else\n'
            'puts("plain");\n#endif\nreturn 0;}\n',
        ),
        prog("slow", SUM.replace("% 7", "% 11")),
        prog("long", long_source),
    ]
    given_wrong = Program(
        id="good-d",
        source=SUM.replace("% 7", "% 13"),
        tests=(TestCase("t0", b"100\n", b"999\n"),),
    )
    pool.append(given_wrong)
    config = BuildConfig(
        speedup_threshold=3.0,
        top_n=5,
        max_tests=2,
        max_tokens=2000,
        run_seconds=1.0,
        val_frac=0.0,
        test_frac=0.0,
        jobs=2,
    )
    timer = fake_timer(
        {
            "slow": 1.5,
            "good-d": 25.0,
            "good-a": 20.0,
            "good-b": 15.0,
            "optdiff": 12.0,
            "long": 11.0,
            "good-c": 4.0,
        }
    )
    suite, report = build_suite(
        Suite("pool", {p.id: p for p in pool}, {}),
        config,
        toolchain=toolchain,
        sandbox=sandbox,
        timer=timer,
    )
    assert report.reason_counts() == {
        "beyond_top_n": 1,
        "below_speedup": 1,
        "compile_failed": 1,
        "crash": 1,
        "duplicate_source": 1,
        "nonzero_exit": 1,
        "o3_fails_tests": 1,
        "timeout": 1,
        "too_long": 1,
    }
    reasons = {d.item: d.reason for d in report.dropped}
    assert reasons["good-a-copy"] == "duplicate_source"
    assert reasons["syntax"] == "compile_failed"
    assert reasons["segv"] == "crash"
    assert reasons["spin"] == "timeout"
    assert reasons["exit4"] == "nonzero_exit"
    assert reasons["optdiff"] == "o3_fails_tests"
    assert reasons["slow"] == "below_speedup"
    # top 5 by speedup: good-d 25, good-a 20, good-b 15, optdiff 12, long 11; not good-c 4
    assert reasons["good-c"] == "beyond_top_n"
    assert reasons["long"] == "too_long"
    assert sorted(suite.programs) == ["good-a", "good-b", "good-d"]
    assert len(report.kept) + len(report.dropped) == len(pool)

    a = suite.programs["good-a"]
    assert [t.name for t in a.tests] == ["t0", "t1"]  # at most max_tests, first ones
    assert a.tests[0].expected_stdout == b"%d\n" % sum(i % 7 for i in range(10))
    assert a.meta["speedup_o0_o3"] == pytest.approx(20.0)
    assert a.meta["problem"] == "pa" and a.meta["tokens_estimated"] is True
    assert suite.programs["good-d"].tests[0].expected_stdout == b"%d\n" % sum(
        i % 13 for i in range(100)
    )
    assert any("good-d" in n for n in report.notes)  # the replaced output is reported
    assert set(suite.splits.values()) == {"train"}


def test_builder_with_real_timing(toolchain, sandbox) -> None:
    config = BuildConfig(speedup_threshold=0.0, top_n=None, max_tokens=None, timing_runs=1)
    suite, report = build_suite(
        [prog("only", SUM, (b"1000\n",))], config, toolchain=toolchain, sandbox=sandbox
    )
    assert list(suite.programs) == ["only"], report.dropped
    meta = suite.programs["only"].meta
    assert meta["time_o0_s"] > 0 and meta["time_o3_s"] > 0 and meta["speedup_o0_o3"] > 0


def test_config_rejects_nonsense() -> None:
    with pytest.raises(DataError):
        BuildConfig(val_frac=0.7, test_frac=0.5)
    with pytest.raises(DataError):
        BuildConfig(top_n=0)
    with pytest.raises(DataError):
        BuildConfig(max_tests=0)


# ---------------------------------------------------------------------------- splits
def test_split_is_deterministic_problem_disjoint_and_pool_independent() -> None:
    programs = [prog(f"p{i // 4}-s{i % 4}", SUM, problem=f"p{i // 4}") for i in range(4 * 500)]
    splits = assign_splits(programs, val_frac=0.1, test_frac=0.2, split_seed="s")
    assert splits == assign_splits(list(reversed(programs)), 0.1, 0.2, split_seed="s")
    by_problem: dict[str, set[str]] = {}
    for p in programs:
        by_problem.setdefault(p.meta["problem"], set()).add(splits[p.id])
    assert all(len(s) == 1 for s in by_problem.values())  # problem-disjoint
    counts = Counter(next(iter(s)) for s in by_problem.values())
    assert 0.05 < counts["validation"] / 500 < 0.15
    assert 0.14 < counts["test"] / 500 < 0.26
    # a problem's split does not depend on which other programs are in the pool
    half = assign_splits(programs[:1000], 0.1, 0.2, split_seed="s")
    assert all(half[k] == splits[k] for k in half)
    assert split_for("p1", 0.1, 0.2, "other-seed") in ("train", "validation", "test")
    with pytest.raises(DataError):
        split_for("p1", 0.9, 0.2)


# ---------------------------------------------------------------------------- helpers
def test_normalisation_ignores_comments_and_whitespace_only() -> None:
    a = 'int main(){ /* c */ puts("a // not a comment"); // tail\n return 0; }'
    b = 'int  main() {\n  puts("a // not a comment");\n  return 0;\n}\n'
    assert normalize_source(a) == normalize_source(b)
    assert normalize_source(a) != normalize_source(b.replace("return 0", "return 1"))
    assert "/* x */" in strip_comments('char *s = "/* x */";')


def test_token_counter_estimate_and_local_tokenizer(tmp_path: Path) -> None:
    est = TokenCounter()
    assert est.estimated and est.count("x" * 35) == 10
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "int": 1, "main": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    (tmp_path / "tok").mkdir()
    tok.save(str(tmp_path / "tok" / "tokenizer.json"))
    for path in (tmp_path / "tok", tmp_path / "tok" / "tokenizer.json"):
        counter = TokenCounter(str(path))
        assert not counter.estimated
        assert counter.count("int main ( )") == 4
    with pytest.raises(DataError, match="not found"):
        TokenCounter(str(tmp_path / "missing"))


def test_token_counter_counts_chat_prompts_with_the_template_when_there_is_one(
    tmp_path: Path,
) -> None:
    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model

    messages = [{"role": "user", "content": "int main(void) { return 0; }"}]
    with_template = TokenCounter(str(build_tiny_model(tmp_path / "chat")))
    without = TokenCounter(str(build_tiny_model(tmp_path / "bare", chat_template=False)))
    assert "with its chat template" in with_template.description
    assert "no chat template" in without.description
    text = messages[0]["content"]
    assert without.count_prompt(messages) == without.count(text)
    assert with_template.count(text) == without.count(text)  # same vocabulary
    assert with_template.count_prompt(messages) > with_template.count(text)
