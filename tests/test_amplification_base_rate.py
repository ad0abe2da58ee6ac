"""The base-rate step of discovery by amplification (bench/speed_learning/amplification.py):
near misses are never the fast line, the ladder's rows are prefixes of one list, the exact
interval, the early cut never counts out an answer that holds the fast edit, and the
ladder's landing rule."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def amp():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("speed_learning.amplification")
    finally:
        sys.path.remove(str(BENCH))


CALL = "\tcall\t__popcountdi2@PLT"
BASELINE = "\n".join(["f:", "\t.p2align 4", "\tmovq\t%rax, %rdi", CALL, "\tcltq", CALL, "\tret"])


def test_near_misses_are_one_operand_away_and_never_the_fast_line(amp) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(0)
    for _ in range(500):
        lines = amp.near_rewrite(BASELINE, rng).splitlines()
        assert amp.FAST_LINE not in lines and CALL not in lines
        for line in (lines[3], lines[5]):
            src, dst = line.split("\t")[2].split(", ")
            assert line.startswith("\tpopcntq\t")
            assert (src == "%rdi") != (dst == "%rax")  # exactly one operand wrong
        assert lines[:3] == BASELINE.splitlines()[:3]


def test_ladder_prefixes_cover_templates_evenly(amp) -> None:  # type: ignore[no-untyped-def]
    programs = [(f"{k}_{i}", k) for k in "abcdefgh" for i in range(4)]
    order = amp.ladder_order(programs, rounds=2)
    assert len(order) == 64 and len(set(order)) == 64
    kernels = [pid.split("_")[0] for _, pid in order[:8]]
    assert sorted(kernels) == list("abcdefgh")
    assert {pid for _, pid in order[:32]} == {pid for pid, _ in programs}
    assert all(r == 1 for r, _ in order[32:])


def test_clopper_pearson(amp) -> None:  # type: ignore[no-untyped-def]
    low, high = amp.clopper_pearson(0, 2016)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 2016), rel=1e-6)
    low, high = amp.clopper_pearson(20, 2016)  # each end leaves 2.5% in its tail
    assert 1 - amp._cdf(19, 2016, low) == pytest.approx(0.025, abs=1e-9)
    assert amp._cdf(20, 2016, high) == pytest.approx(0.025, abs=1e-9)
    assert low < 20 / 2016 < high
    assert amp.clopper_pearson(5, 5)[1] == 1.0


def test_steps_needed(amp) -> None:  # type: ignore[no-untyped-def]
    assert amp.rollouts_needed(0.01) == 2000 and amp.steps_needed(0.01) == 125
    assert amp.steps_needed(0.0) is None


HEAD = "```diff\n--- baseline.s\n+++ answer.s\n@@ -4 +4 @@\n"
FAST = HEAD + f"-{CALL}\n+\tpopcntq\t%rdi, %rax\n```"


def test_cut_never_counts_out_the_fast_edit(amp) -> None:  # type: ignore[no-untyped-def]
    lines = frozenset(BASELINE.splitlines())
    for end in range(len(FAST) + 1):  # every prefix of the fast answer, and trailing text
        assert amp.cut_line(FAST[:end], lines) is None
    assert amp.cut_line(FAST + "\n+\tnop\n", lines) is None  # after the block: not read
    restored = HEAD + f"-{CALL}\n+\tmovq\t%rax, %rdi\n"  # a baseline line may be restored
    assert amp.cut_line(restored, lines) is None


def test_cut_reasons(amp) -> None:  # type: ignore[no-untyped-def]
    lines = frozenset(BASELINE.splitlines())
    assert amp.cut_line(HEAD + f"-{CALL}\n+\tpopcntl\t%edi, %eax\n", lines) == "cut_adds_popcntl"
    assert amp.cut_line(HEAD + f"-{CALL}\n+\tpopcntl", lines) == "cut_adds_popcntl"  # mid-line
    assert amp.cut_line(HEAD + f"-{CALL}\n+\tpopcntq\t%rdi, %rdx", lines) == "cut_adds_popcntq"
    assert amp.cut_line(HEAD + "-\t.p2align 4\n", lines) == "cut_deletes_p2align"
    assert amp.cut_line(HEAD + "--", lines) is None  # could be a `--- ` header line
    assert amp.cut_line("```diff\n+\tpopcntl\t%edi, %eax\n", lines) is None  # before a hunk


def summary(p0s: dict[str, float], applied: dict[float, float]) -> dict:  # type: ignore[type-arg]
    return {
        "temperatures": {t: {"p0": p} for t, p in p0s.items()},
        "exploration": {
            "trials": [{"temperature": t, "applied_share": a} for t, a in applied.items()]
        },
    }


def test_decision(amp) -> None:  # type: ignore[no-untyped-def]
    ok = {0.6: 0.8, 0.8: 0.8, 1.0: 0.8}
    assert amp.decision(summary({"0.6": 0.0, "0.8": 0.0, "1.0": 0.0}, ok))["verdict"] == "below"
    d = amp.decision(summary({"0.6": 0.004, "0.8": 0.01, "1.0": 0.015}, ok))
    assert d == {"verdict": "lands", "temperature": 1.0}
    # in range only where too few validation answers apply: not a landing
    bad = {0.6: 0.8, 0.8: 0.8, 1.0: 0.3}
    assert amp.decision(summary({"0.6": 0.0, "0.8": 0.001, "1.0": 0.01}, bad))["verdict"] == "below"
    assert amp.decision(summary({"0.6": 0.03, "0.8": 0.04, "1.0": 0.05}, ok))["verdict"] == "above"
