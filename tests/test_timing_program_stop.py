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
from asmopt.measure.stats import RatioInterval
from asmopt.measure.timing import Round, RoundRequest, TimingConfig, measure_tests
from asmopt.measure.timing.decisions import program_aims
from asmopt.measure.timing.state import _TestState


class _Clocked(ProgramMachine):
    """The mock machine, adding up the seconds its rounds report (the budget's measure)."""

    seconds = 0.0

    def run_batch(self, requests: Sequence[RoundRequest]) -> dict[int, Round]:
        rounds = super().run_batch(requests)
        self.seconds += sum(r.seconds for r in rounds.values())
        return rounds


def _program(
    tests: Sequence[MockTest],
    seed: int,
    config: TimingConfig,
    clocked: list[float] | None = None,
) -> tuple[ProgramSpeedup, list[TestSpeedup], int]:
    """The program's speedup, its tests' and the pairs run; `clocked` gets the seconds."""
    machine = _Clocked(tests, seed)
    speedups, failure, _ = measure_tests(machine, [f"t{k}" for k in range(len(tests))], config)
    assert failure is None
    if clocked is not None:
        clocked.append(machine.seconds)
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


def _noisy_heavy(true_log: float) -> MockTest:
    # A 150 ms test beside other work: 10% a pair, so its 10 s budget buys about 33 pairs.
    return MockTest(true_log, sigma=0.10, base_s=0.15, tau=0.015)


def _state(name: str, log_se: float, n: int, spent: float) -> _TestState:
    stat = RatioInterval(1.0, 0.9, 1.1, n, 0.0, log_se, n - 1.0, 0.95)
    return _TestState(name, spent=spent, stat=stat, pairs=[None] * n)  # type: ignore[list-item]


def test_the_programs_precision_is_shared_out_by_cost() -> None:
    # Two tests alike but for their cost a pair (100x): the program's variance budget is
    # spent exactly, and the dear test is asked for less precision (fewer pairs), by the
    # fourth root of the cost ratio when their per-pair noise is the same.
    cheap, dear = _state("cheap", 0.02, 25, 0.05), _state("dear", 0.02, 25, 5.0)
    aims = program_aims([cheap, dear], REWARD)
    assert aims is not None
    assert aims[1] / aims[0] == pytest.approx(100**0.25)
    settle_variance = sum((aim / 2) ** 2 for aim in aims)
    # A finished test keeps its share; the open one gets what is left of the same budget.
    dear.done = True
    left = program_aims([cheap, dear], REWARD)
    assert left is not None and left[1] == 0.0
    assert (left[0] / 2) ** 2 == pytest.approx(settle_variance - (0.02 / 2) ** 2)
    # Without an interval of two pairs on every test there is nothing to plan from.
    assert program_aims([cheap, _TestState("new")], REWARD) is None
    assert program_aims([], REWARD) is None
    assert program_aims([cheap, dear], replace(REWARD, program_stop=False)) is None


def test_heavy_noisy_tests_of_copies_stop_with_their_program_not_on_their_budget() -> None:
    # Copies whose heavy tests are noisy: planned for the program's verdict (small rounds
    # for the dear tests, looked at after each), they end with the program instead of each
    # spending its budget on a precision the verdict does not need.
    mid = MockTest(0.0, sigma=0.05, base_s=0.006, tau=0.02)
    tests = [_short(0.0), _short(0.0), mid, mid, _noisy_heavy(0.0), _noisy_heavy(0.0)]
    off = replace(REWARD, program_stop=False)
    on_s: list[float] = []
    off_s: list[float] = []
    budget_stops = 0
    for seed in range(10):
        program, speedups, _ = _program(tests, 300 + seed, REWARD, on_s)
        _program(tests, 300 + seed, off, off_s)
        assert not program.significantly_faster and not program.significantly_slower
        budget_stops += _stopped(speedups).count("budget")
    assert sum(on_s) < 0.7 * sum(off_s)
    assert budget_stops <= 5  # of 20 heavy tests


@pytest.mark.slow
def test_copies_with_noisy_heavy_tests_are_almost_never_called_faster() -> None:
    """The same claim as above for 150 programs of copies whose heavy tests are noisy, where
    the plan makes the dear tests' rounds small and the program is looked at often."""
    tests = [_short(0.0), _noisy_heavy(0.0), _noisy_heavy(0.0), MockTest(0.0, 0.04, 0.004, 0.02)]
    faster = sum(_program(tests, 2000 + s, REWARD)[0].mean_low > 1.0 for s in range(150))
    assert faster <= 3
