"""The program-level sequential stop of the decision precision (decisions.program_decided):
an answer's unfinished tests stop once the program's verdict is settled. Simulated on a
mock machine with a between-sandbox effect per round and per-pair noise per test, so the
truth is known: it must not call copies faster more often than the per-test rule does,
and it must save pairs where heavy tests decide a program that a noisy short one would
hold open."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import pytest
from program_machine import REWARD, MockTest, ProgramMachine

from asmopt.measure.speedup import MeasureMode, ProgramSpeedup, TestSpeedup
from asmopt.measure.timing import TimingConfig, measure_tests


def _program(tests: Sequence[MockTest], seed: int, config: TimingConfig):
    machine = ProgramMachine(tests, seed)
    speedups, failure, _ = measure_tests(machine, [f"t{k}" for k in range(len(tests))], config)
    assert failure is None
    return ProgramSpeedup.from_tests(MeasureMode.TIME, speedups), speedups, machine.pairs


def _short(true_log: float) -> MockTest:
    return MockTest(true_log, sigma=0.09, base_s=0.0007, tau=0.03)


def _heavy(true_log: float) -> MockTest:
    return MockTest(true_log, sigma=0.02, base_s=0.08, tau=0.015)


def _stopped(speedups: Sequence[TestSpeedup]) -> list[str]:
    return [s.context.get("stopped", "") for s in speedups]


def test_heavy_tests_that_decide_the_program_end_a_noisy_short_test() -> None:
    # floyd_warshall's shape: two heavy tests clearly faster, one 0.7 ms test at 9% a pair.
    tests = [_short(math.log(1.05)), _heavy(math.log(2.2)), _heavy(math.log(4.9))]
    off = replace(REWARD, program_stop=False)
    saved = 0
    for seed in range(6):
        with_stop, speedups, pairs = _program(tests, seed, REWARD)
        without, _, pairs_off = _program(tests, seed, off)
        assert with_stop.significantly_faster and with_stop.mean_low > 1.0
        assert without.significantly_faster
        assert with_stop.reliable
        if "program" in _stopped(speedups):
            # the short test ended where the program settled, its record says so, and no
            # target is reported missed for a test the program's rule settled
            short = speedups[0]
            assert short.context["stopped"] == "program"
            assert "target_not_met" not in short.warnings
            saved += pairs_off - pairs
    assert saved > 0


def test_a_program_of_copies_is_settled_as_equivalent_with_fewer_pairs() -> None:
    tests = [_short(0.0), _short(0.0), _heavy(0.0), _heavy(0.0)]
    off = replace(REWARD, program_stop=False)
    pairs_on = pairs_off = 0
    for seed in range(8):
        program, _, pairs = _program(tests, seed, REWARD)
        pairs_on += pairs
        pairs_off += _program(tests, seed, off)[2]
        assert not program.significantly_faster and not program.significantly_slower
        assert program.mean_low <= 1.0 <= program.mean_high
    assert pairs_on < pairs_off


@pytest.mark.slow
@pytest.mark.parametrize("program_stop", [True, False])
def test_copies_are_almost_never_called_faster_with_or_without_the_program_rule(
    program_stop: bool,
) -> None:
    """The reward's claim (the arithmetic mean's interval above 1.0) for 150 programs of
    copies with the sandbox effects the engine models: at most 2% called faster (the
    interval is a 98% one, and the sequential looks are corrected)."""
    tests = [_short(0.0), _short(0.0), _heavy(0.0), MockTest(0.0, 0.04, 0.004, 0.02)]
    config = replace(REWARD, program_stop=program_stop)
    faster = sum(_program(tests, 1000 + s, config)[0].mean_low > 1.0 for s in range(150))
    assert faster <= 3


def test_a_real_small_speedup_is_found_as_often_with_the_program_rule() -> None:
    # Every test 6% faster: the program is called faster in as many of 12 runs either way.
    tests = [_short(math.log(1.06)), _heavy(math.log(1.06)), _heavy(math.log(1.06))]
    off = replace(REWARD, program_stop=False)
    found_on = sum(_program(tests, 50 + s, REWARD)[0].mean_low > 1.0 for s in range(12))
    found_off = sum(_program(tests, 50 + s, off)[0].mean_low > 1.0 for s in range(12))
    assert found_on >= found_off - 1 and found_on >= 9


def test_the_rule_belongs_to_the_decision_precision_only() -> None:
    # A report times every test to its target: the program's verdict ends nothing there.
    tests = [_short(math.log(1.05)), _heavy(math.log(2.2)), _heavy(math.log(4.9))]
    target = replace(REWARD, precision="target", max_pairs=200, budget_s=20.0)
    _, speedups, _ = _program(tests, 3, target)
    assert "program" not in _stopped(speedups)
