"""The richer task family (bench/speed_learning/rich_family.py): its programs build and
have their slow spots, each speedup is correct where the family says it is (and each trap
is wrong where it says so), the run's interface to it (families.py) names every edit set,
and on real timing each edit, and their combination, is faster than the -O3 baseline."""

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
def families():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("speed_learning.families")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def suite(rich, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return load_suite(rich.write_suite(tmp_path_factory.mktemp("rich") / "suite", per_kernel=1))


def _by_id(rich) -> dict:  # type: ignore[no-untyped-def]
    return {p.id: p for p in rich.generate(per_kernel=1)}


def test_programs_build_with_their_slow_spots(rich, suite, toolchain: Toolchain) -> None:  # type: ignore[no-untyped-def]
    from asmopt.adequacy import is_reward_fit

    programs = _by_id(rich)
    assert len(suite) == len(rich.KERNELS)
    # No answer can be precomputed: the timed class carries 64 bits (asmopt.entropy).
    assert all(is_reward_fit(p)[0] for p in suite), [is_reward_fit(p) for p in suite]
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
        assert bool(helper_calls) == (family_program.helper is not None), program.id
        if program.meta["kernel"].startswith("twice_"):
            assert len(helper_calls) == 2, program.id  # the two calls `reuse` is about


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
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
    assert set(rich.TRAPS) == {"wide_remainder", "twice_shifted"}
    for kernel, traps in rich.TRAPS.items():
        program = suite.get(f"{kernel}_0")
        base = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        for trap in traps:
            answer = rich.witness(base, programs[program.id], (trap,))
            verdict = score_one(program, answer, None, config).verdict
            assert verdict != "pass", (kernel, trap)


def test_reuse_drops_the_second_call_and_its_argument_only(  # type: ignore[no-untyped-def]
    rich, suite, toolchain: Toolchain
) -> None:
    """`reuse` deletes one call of each back-to-back pair and the %rdi moves between them,
    keeps every other line, and refuses a pair whose first result is overwritten."""
    for kernel in ("twice_popcount", "twice_product", "twice_hash"):
        program = suite.get(f"{kernel}_0")
        helper = rich.HELPERS[kernel]
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        reused = rich.reuse_calls(baseline, helper)
        before, after = baseline.splitlines(), reused.splitlines()
        assert after.count(f"\tcall\t{helper}") == before.count(f"\tcall\t{helper}") - 1
        removed = [line for line in before if line not in after]
        assert len(before) - len(after) == 2, kernel
        assert all(line.endswith("%rdi") or helper in line for line in removed), removed
    clobbered = "\tcall\tf\n\tmovq\t%rbx, %rax\n\tcall\tf\n"
    with pytest.raises(ValueError, match="overwritten"):
        rich.reuse_calls(clobbered, "f")
    with pytest.raises(ValueError, match="back-to-back"):
        rich.reuse_calls("\tcall\tf\n\taddq\t$1, %rax\n\tcall\tf\n", "f")


def test_run_interface_names_every_edit_set_and_shows_single_edits(  # type: ignore[no-untyped-def]
    rich, families, suite, toolchain: Toolchain
) -> None:
    """The warm start's answers are every set of a kernel's edits, and each trap alone;
    the classifier gives every witness its own label, a trap its `wrong-` label, and any
    other text `other`."""
    family = families.RICH
    for program in suite:
        kernel = program.meta["kernel"]
        spec = rich.RichProgram(program.id, kernel, rich.KERNELS[kernel][0], "", [])
        baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
        shown = family.sft_answers(kernel, baseline, family.variants["main"])
        sets = [c for k in range(1, 4) for c in combinations(spec.edits, k)]
        traps = rich.TRAPS.get(kernel, ())
        expected = ["+".join(c) for c in sets] + [f"wrong-{t}" for t in traps]
        assert [label for label, _ in shown] == expected
        for label, answer in shown:
            assert family.classify(kernel, baseline, answer) == label
        assert family.classify(kernel, baseline, baseline + "\tnop\n") == "other"
        assert family.classify(kernel, baseline, None) == "none"
        assert family.share_labels("popcnt+reuse") and not family.share_labels("popcnt")
        assert not family.share_labels("popcnt+wrong-reuse")


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
@pytest.mark.parametrize("program_id", ["helper_popcount_0", "twice_popcount_0"])
def test_each_edit_and_their_combination_is_faster_on_real_timing(  # type: ignore[no-untyped-def]
    rich, suite, toolchain: Toolchain, program_id: str
) -> None:
    """Where two edits compose (`popcnt` with `inline` in a helper's loop, `popcnt` with
    `reuse` on a helper called twice), each edit alone and both together are significantly
    faster than the baseline (the reward's timing; interval above 1), and both together
    are the fastest."""
    program = suite.get(program_id)
    family_program = _by_id(rich)[program_id]
    pair = rich.COMPOSING[family_program.kernel]
    config = ScoreConfig(reward="robust", measure="time", edit_format="assembly", extract=False)
    baseline = toolchain.baseline_assembly(program, DEFAULT_O3_FLAGS)
    speedups = {}
    for subset in [(e,) for e in pair] + [pair]:
        result = score_one(program, rich.witness(baseline, family_program, subset), None, config)
        assert result.verdict == "pass", (subset, result.message)
        assert result.speedup_low is not None and result.speedup_low > 1.0, (subset, result)
        speedups[subset] = result.speedup
    assert speedups[pair] > max(speedups[(e,)] for e in pair)


def test_rule_keeps_the_baseline_where_it_changes_nothing(  # type: ignore[no-untyped-def]
    families, suite, toolchain: Toolchain, tmp_path: Path
) -> None:
    """A program without a popcount call gets the rule row `kept`: value 1.0 by
    definition, recorded without being timed, under its own key (a model's copy of the
    baseline is not mistaken for it)."""
    sys.path.insert(0, str(BENCH))
    try:
        run = importlib.import_module("speed_learning_run")
        baselines = importlib.import_module("speed_learning.baselines")
    finally:
        sys.path.remove(str(BENCH))
    programs = {p.id: p for p in suite if p.id in ("twice_hash_0", "popcount_loop_0")}
    base = {pid: toolchain.baseline_assembly(p, DEFAULT_O3_FLAGS) for pid, p in programs.items()}
    rows = {r["program"]: r for r in run.rule_rows(programs, base, families.RICH)}
    assert rows["twice_hash_0"]["answer"] == baselines.KEPT
    assert "popcntq" in rows["popcount_loop_0"]["answer"]
    key = baselines.answer_key("twice_hash_0", base["twice_hash_0"], baselines.KEPT)
    copy = "```diff\n```"
    assert key != baselines.answer_key("twice_hash_0", base["twice_hash_0"], copy)
    log = baselines.MeasurementLog(tmp_path / "score.jsonl")
    baselines.measure_pass([(programs["twice_hash_0"], baselines.KEPT, key)], log)
    kept = baselines.MeasurementLog(tmp_path / "score.jsonl").rows[key]
    assert kept["speedup"] == 1.0 and "not timed" in kept["message"]
    scored = run.scored_row(
        rows["twice_hash_0"], key, {"select": log, "score": log}, "", families.RICH
    )
    assert scored["edit"] == "kept" and run.held_out_speedup(scored) == 1.0


def test_run_refuses_a_variant_the_family_lacks(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        run = importlib.import_module("speed_learning_run")
    finally:
        sys.path.remove(str(BENCH))
    with pytest.raises(SystemExit) as stopped:
        run.main(["--family", "rich", "--variant", "discovery", "--out-dir", str(tmp_path)])
    assert stopped.value.code == 2
    assert "no 'discovery' variant" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before anything was written
