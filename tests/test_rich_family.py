"""The richer task family (bench/speed_learning/rich_family.py): its programs build and
have their slow spots, each speedup is correct where the family says it is (and the
`divq` substitution is wrong where it says it is not), and on real timing each edit, and
their combination, is faster than the -O3 baseline."""

from __future__ import annotations

import importlib
import sys
from itertools import combinations
from pathlib import Path

import pytest

from asmopt.programs import load_suite
from asmopt.reward.service import ScoreConfig, score_one
from asmopt.toolchain import DEFAULT_O3_FLAGS, Toolchain

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def rich():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("speed_learning.rich_family")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def suite(rich, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return load_suite(rich.write_suite(tmp_path_factory.mktemp("rich") / "suite", per_kernel=1))


def _by_id(rich) -> dict:  # type: ignore[no-untyped-def]
    return {p.id: p for p in rich.generate(per_kernel=1)}


def test_programs_build_with_their_slow_spots(rich, suite, toolchain: Toolchain) -> None:  # type: ignore[no-untyped-def]
    programs = _by_id(rich)
    assert len(suite) == len(rich.KERNELS)
    for program in suite:
        family_program = programs[program.id]
        assert program.meta["edits"] == list(family_program.edits)
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        lines = [line.rstrip() for line in baseline.splitlines()]
        uses_popcount = rich.POPCOUNT_CALL in lines
        uses_umodti3 = rich.UMODTI3_CALL in lines
        assert uses_popcount == ("popcnt" in family_program.edits)
        assert uses_umodti3 == ("divq" in family_program.edits or "wide" in program.id)
        helper_calls = [
            line for line in lines if line.startswith("\tcall\t") and "@PLT" not in line
        ]
        assert bool(helper_calls) == ("inline" in family_program.edits), program.id


def test_each_edit_subset_is_correct_where_the_family_says(  # type: ignore[no-untyped-def]
    rich, suite, toolchain: Toolchain
) -> None:
    """Every subset of a program's edits passes the correctness check (fixed and drawn
    inputs); the `divq` substitution on a wide remainder does not."""
    programs = _by_id(rich)
    config = ScoreConfig(reward="robust", measure="none", edit_format="assembly", extract=False)
    for program in suite:
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        edits = programs[program.id].edits
        for k in range(1, len(edits) + 1):
            for subset in combinations(edits, k):
                answer = rich.witness(baseline, programs[program.id], subset)
                result = score_one(program, answer, None, config)
                assert result.verdict == "pass", (program.id, subset, result.message)
    wide = suite.get("wide_remainder_0")
    base = toolchain.baseline_assembly(wide, DEFAULT_O3_FLAGS)
    answer = rich.witness(base, programs["wide_remainder_0"], ("divq",))
    assert score_one(wide, answer, None, config).verdict != "pass"


def test_inlining_pastes_the_helper_at_every_call_site(  # type: ignore[no-untyped-def]
    rich, suite, toolchain: Toolchain
) -> None:
    """The `inline` witness leaves no call of the helper; with `popcnt` composed, the loop
    calls nothing at all; a helper that is not straight-line code is refused."""
    programs = _by_id(rich)
    for program in suite:
        family_program = programs[program.id]
        if family_program.helper is None:
            continue
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        inlined = rich.witness(baseline, family_program, ("inline",)).splitlines()
        assert f"\tcall\t{family_program.helper}" not in inlined
        both = rich.witness(baseline, family_program, family_program.edits).splitlines()
        assert not [line for line in both if line.startswith("\tcall\t__popcountdi2")]
    branchy = "f:\n\ttestq\t%rdi, %rdi\n\tje\t.L2\n.L2:\n\tret\n\tcall\tf\n"
    with pytest.raises(ValueError, match="straight-line"):
        rich.inline_calls(branchy, "f")


@pytest.mark.slow
def test_each_edit_and_their_combination_is_faster_on_real_timing(  # type: ignore[no-untyped-def]
    rich, suite, toolchain: Toolchain
) -> None:
    """Where `popcnt` and `inline` compose (a helper with a popcount in the hot loop), each
    edit alone and both together are significantly faster than the baseline (the reward's
    timing; interval above 1), and both together are the fastest."""
    program = suite.get("helper_popcount_0")
    family_program = _by_id(rich)["helper_popcount_0"]
    config = ScoreConfig(reward="robust", measure="time", edit_format="assembly", extract=False)
    baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
    speedups = {}
    for subset in [(e,) for e in rich.FASTER_EDITS] + [rich.FASTER_EDITS]:
        result = score_one(program, rich.witness(baseline, family_program, subset), None, config)
        assert result.verdict == "pass", (subset, result.message)
        assert result.speedup_low is not None and result.speedup_low > 1.0, (subset, result)
        speedups[subset] = result.speedup
    assert speedups[rich.FASTER_EDITS] > max(speedups[(e,)] for e in rich.FASTER_EDITS)
