"""compiler-search returns a verified candidate for every built-in program."""

from __future__ import annotations

import pytest

from asmopt.evaluate import check_candidate
from asmopt.measure.timing import TimingConfig
from asmopt.policies.base import PolicyRequest
from asmopt.policies.compiler_search import VARIANTS, CompilerSearchPolicy
from asmopt.programs import load_builtin_suite
from asmopt.sandbox import Sandbox
from asmopt.toolchain import Toolchain

# A cheap configuration for CI: one gcc variant, clang (refused when not installed), short
# timings. The profile-guided path is covered below.
CHEAP = tuple(v for v in VARIANTS if v[0] in ("gcc -O2", "clang -O3"))
FAST_TIMING = TimingConfig(min_pairs=3, max_pairs=4, budget_s=0.5, max_rounds=1)


# `make test-slow` answers the first program, then the rest of the suite (several minutes:
# every program is built, verified and timed for each variant).
FEW = 1


@pytest.mark.parametrize(
    "part",
    [pytest.param("first", marks=pytest.mark.slow), pytest.param("rest", marks=pytest.mark.slow)],
)
def test_compiler_search_answers_every_builtin_program_with_verified_code(
    toolchain: Toolchain, sandbox: Sandbox, part: str
) -> None:
    programs = load_builtin_suite().select()
    programs = programs[:FEW] if part == "first" else programs[FEW:]
    policy = CompilerSearchPolicy(toolchain, sandbox, timing=FAST_TIMING, variants=CHEAP)
    statuses = set()
    for program in programs:
        baseline = toolchain.baseline_assembly(program)
        [cand] = policy.propose(PolicyRequest(program, baseline))
        assert cand.assembly is not None
        check = check_candidate(program, cand.assembly, toolchain, sandbox)
        assert check.correct, (program.id, cand.extra["chosen"], check.message)
        tried = cand.extra["tried"]
        assert {t["name"] for t in tried} == {v[0] for v in CHEAP}
        statuses |= {t["status"] for t in tried}
        chosen = [t for t in tried if t["status"] == "chosen"]
        if chosen:  # only a significant win is ever chosen
            assert chosen[0]["low"] > 1.0
        else:
            assert cand.assembly == baseline
    assert "unavailable" in statuses or "clang" not in str(CHEAP)


# Two programs show that the profile-guided build works (`make test-slow`: 15 s each).
@pytest.mark.parametrize(
    "index", [pytest.param(0, marks=pytest.mark.slow), pytest.param(1, marks=pytest.mark.slow)]
)
def test_profile_guided_variant_builds_and_verifies(
    toolchain: Toolchain, sandbox: Sandbox, index: int
) -> None:
    pgo = tuple(v for v in VARIANTS if v[0] == "gcc -O3 PGO")
    policy = CompilerSearchPolicy(toolchain, sandbox, timing=FAST_TIMING, variants=pgo)
    program = load_builtin_suite().select(split="test")[index]
    baseline = toolchain.baseline_assembly(program)
    [cand] = policy.propose(PolicyRequest(program, baseline))
    [tried] = cand.extra["tried"]
    assert tried["status"] in ("chosen", "not_chosen", "duplicate"), tried
    assert check_candidate(program, cand.assembly, toolchain, sandbox).correct


def test_budget_is_honoured_and_one_test_is_selected_on_the_scored_input(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    """A spent budget stops the search (the remaining variants are listed as skipped and
    the baseline is answered), and a program with one test says its choice was made on the
    input it is scored on."""
    from dataclasses import replace as dc_replace

    program = load_builtin_suite().select()[0]
    one = dc_replace(program, tests=program.tests[:1])
    baseline = toolchain.baseline_assembly(one)
    policy = CompilerSearchPolicy(
        toolchain, sandbox, timing=FAST_TIMING, variants=VARIANTS[:3], budget_s=1e-6
    )
    [cand] = policy.propose(PolicyRequest(one, baseline))
    search = cand.extra["search"]
    assert search["selection"] == "scored input"
    assert search["selection_tests"] == [one.tests[0].name]
    assert search["budget_hit"] is True and cand.assembly == baseline
    assert [t["status"] for t in search["tried"]] == ["skipped_budget"] * 3
    assert search["chosen"].startswith("gcc -O3 (baseline")
    with pytest.raises(ValueError, match="budget"):
        CompilerSearchPolicy(toolchain, sandbox, budget_s=0)
    many = CompilerSearchPolicy(toolchain, sandbox, timing=FAST_TIMING, variants=())
    [cand] = many.propose(PolicyRequest(program, toolchain.baseline_assembly(program)))
    held_out = "held-out split" if len(program.tests) > 1 else "scored input"
    assert cand.extra["search"]["selection"] == held_out
