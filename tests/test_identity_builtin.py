"""The identity policy passes every built-in test; corrupted copies are caught and explained."""

from __future__ import annotations

import re

import pytest

from asmopt.evaluate import check_candidate
from asmopt.judge import Verdict
from asmopt.policies import get_policy
from asmopt.programs import load_builtin_suite
from asmopt.run import evaluate_programs, summarize
from asmopt.sandbox import Sandbox
from asmopt.toolchain import Toolchain

# The default run checks the first few programs; `make test-slow` the rest of the suite.
FEW = 3


@pytest.mark.parametrize("part", ["first", pytest.param("rest", marks=pytest.mark.slow)])
def test_identity_passes_every_builtin_test(
    toolchain: Toolchain, sandbox: Sandbox, part: str
) -> None:
    programs = load_builtin_suite().select()
    programs = programs[:FEW] if part == "first" else programs[FEW:]
    outcomes = evaluate_programs(
        programs, get_policy("identity"), toolchain, sandbox, jobs=2, progress=False
    )
    summary = summarize(outcomes)
    failures = [(o.program_id, o.check.message) for o in outcomes if not o.check.correct]
    assert failures == []
    assert summary["build_rate"] == 1.0 and summary["pass_rate"] == 1.0
    assert summary["programs"] == len(programs)


@pytest.fixture(scope="module")
def target() -> tuple:
    suite = load_builtin_suite()
    return suite.select()[0], suite


def test_deleted_ret_is_caught(toolchain: Toolchain, sandbox: Sandbox, target: tuple) -> None:
    program, _ = target
    asm = toolchain.baseline_assembly(program)
    main_start = asm.index("\nmain:")
    ret = asm.index("\tret", main_start)
    broken = asm[:ret] + asm[ret:].replace("\tret", "\tnop", 1)
    result = check_candidate(program, broken, toolchain, sandbox)
    assert result.verdict.is_candidate_failure, result.message
    assert result.message


def test_renamed_label_is_a_link_error(
    toolchain: Toolchain, sandbox: Sandbox, target: tuple
) -> None:
    program, _ = target
    asm = toolchain.baseline_assembly(program)
    label = re.search(r"^(\.L\d+):", asm, re.M)
    assert label is not None
    broken = asm.replace(f"{label.group(1)}:", f"{label.group(1)}_renamed:", 1)
    result = check_candidate(program, broken, toolchain, sandbox)
    assert result.verdict in (Verdict.LINK_ERROR, Verdict.ASSEMBLE_ERROR)
    assert label.group(1) in result.message


@pytest.mark.parametrize(
    ("asm", "verdict", "needle"),
    [
        ("", Verdict.ASSEMBLE_ERROR, "empty"),
        ("   \n\t\n", Verdict.ASSEMBLE_ERROR, "empty"),
        ("\t.text\n\t.globl f\nf:\n\tret\n", Verdict.LINK_ERROR, "defines no global `main`"),
        ("\tmovq %rax\n", Verdict.ASSEMBLE_ERROR, "cand.s:1"),
        (b"\x7fELF\x02\x01\x01\x00".decode("latin-1"), Verdict.ASSEMBLE_ERROR, "NUL"),
    ],
)
def test_bad_assembly(
    asm: str, verdict: Verdict, needle: str, toolchain: Toolchain, sandbox: Sandbox, target: tuple
) -> None:
    program, _ = target
    result = check_candidate(program, asm, toolchain, sandbox)
    assert result.verdict == verdict
    assert needle in result.message


def test_non_utf8_bytes(toolchain: Toolchain, sandbox: Sandbox, target: tuple) -> None:
    program, _ = target
    result = check_candidate(program, b"\xff\xfe main:", toolchain, sandbox)
    assert result.verdict == Verdict.ASSEMBLE_ERROR
    assert "not UTF-8" in result.message
