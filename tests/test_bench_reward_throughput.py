"""The reward-throughput benchmark's floor: the fewest pairs a design that knew each test's
noise would need, set against the pairs the engine used, per test length. Hand-computed;
no timing is asserted (timings belong to bench/results)."""

from __future__ import annotations

import math
from types import ModuleType

import pytest
from bench_module import import_bench

from asmopt.measure.speedup import MeasureMode, MeasureStatus, TestSpeedup


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return import_bench("bench_reward_throughput")


def test_the_floor_is_the_fixed_design_for_the_stop_the_precision_asks(bench: ModuleType) -> None:
    z, h = bench.FLOOR_Z, math.log(1.02)
    assert z == pytest.approx(2.3263, abs=1e-4)
    # A near-copy: both precisions need +-2%; 5% per-pair noise needs (z * 0.05 / h)^2 pairs.
    assert bench.pairs_floor(0.05, 1.0, 0.02, "target") == math.ceil((z * 0.05 / h) ** 2) == 35
    assert bench.pairs_floor(0.05, 1.0, 0.02, "decision") == 35
    # A 10% faster answer: decision precision stops once the interval excludes 1.0.
    assert bench.pairs_floor(0.05, 1.1, 0.02, "decision") == math.ceil(
        (z * 0.05 / math.log(1.1)) ** 2
    )
    assert bench.pairs_floor(0.05, 1.1, 0.02, "target") == 35
    assert bench.pairs_floor(1e-6, 1.0, 0.02, "target") == 2  # a spread needs two pairs


def test_the_floor_table_sums_each_length_class(bench: ModuleType) -> None:
    def test(ms: float, pairs: int, sd: float | None, stop: str = "target") -> dict[str, object]:
        return {"base_ms": ms, "pairs": pairs, "pair_sd": sd, "ratio": 1.0, "stopped": stop}

    per_test = [
        test(1.0, 80, 0.05),
        test(1.5, 40, 0.05, "decided"),
        test(1.9, 400, 0.2, "budget"),  # short of its stop: not set against the floor
        test(5.0, 10, 0.01),
        test(9, 4, None),  # no noise measured: no row
        test(1.2, 30, 0.05, "program"),  # the program's verdict stopped it: counted apart
    ]
    raw = {"runs": {"target": {"per_answer": [{"cost": {"per_test": per_test}}]}}}
    rows = bench.floor_rows(raw, 0.02)
    assert rows[0] == ["target", "under 2 ms", "2", "120", "70", "**1.71x**", "-", "-", "1", "1"]
    assert rows[1] == ["target", "2-20 ms", "1", "10", "2", "**5.00x**", "-", "-", "0", "0"]
    assert rows[2] == ["target", "20 ms up", "0", "0", "0", "-", "-", "-", "0", "0"]
    # With the machine's spread recorded, each test's floor also covers it.
    raw["spread"] = {"points": [[0.001, 0.03], [0.01, 0.01]], "df": 9, "source": "test"}
    rows = bench.floor_rows(raw, 0.02)
    with_spread = sum(
        bench.pairs_floor_with_spread(0.05, 1.0, 0.02, "target", tau)
        for tau in (0.03, 0.03 - 0.02 * math.log(1.5) / math.log(10))
    )
    assert rows[0][6] == str(with_spread) and rows[0][7] == f"{120 / with_spread:.2f}x"


def test_the_floor_with_the_spread_needs_two_rounds_and_pays_for_tau(bench: ModuleType) -> None:
    z, h = bench.FLOOR_Z, math.log(1.02)
    # No spread: two rounds of the per-test floor's pairs split in two (or 2 each).
    assert bench.pairs_floor_with_spread(1e-6, 1.0, 0.02, "target", 0.0) == 4
    n = bench.pairs_floor(0.05, 1.0, 0.02, "target")
    assert n <= bench.pairs_floor_with_spread(0.05, 1.0, 0.02, "target", 0.0) <= n + 2
    # A spread of 1%: the best design is found by brute force over rounds and pairs.
    best = min(
        r * k
        for r in range(2, 200)
        for k in range(2, 2000)
        if z * math.sqrt((0.01**2 + 0.05**2 / k) / r) <= h
    )
    assert bench.pairs_floor_with_spread(0.05, 1.0, 0.02, "target", 0.01) == best
    # A spread as large as the half-width needs many rounds, each of two pairs at least.
    assert bench.pairs_floor_with_spread(0.05, 1.0, 0.02, "target", 0.03) >= 2 * math.ceil(
        (z * 0.03 / h) ** 2
    )


def test_an_answers_floor_allocates_pairs_by_ratio_times_noise(bench: ModuleType) -> None:
    z = bench.FLOOR_Z
    # Two tests at 2.0x and 1.0x, noise 0.1 and 0.05: the mean is 1.5, so an interval of
    # half-width 0.5 decides; weights 0.2 and 0.05 share (z * 0.25 / (2 * 0.5))^2 pairs.
    tests = [{"ratio": 2.0, "pair_sd": 0.1}, {"ratio": 1.0, "pair_sd": 0.05}]
    total = (z * 0.25 / (2 * 0.5)) ** 2
    assert total < 1  # each test still takes its two pairs
    assert bench.program_pairs_floor(tests, 0.02) == 4
    # Copies: the mean must be known to +-2%, so the floor is the per-test design's
    # (z * sd / 0.02)^2 spread over both tests by their noise.
    copies = [{"ratio": 1.0, "pair_sd": 0.09}, {"ratio": 1.0, "pair_sd": 0.03}]
    total = (z * 0.12 / (2 * 0.02)) ** 2
    assert bench.program_pairs_floor(copies, 0.02) == math.ceil(0.75 * total) + math.ceil(
        0.25 * total
    )
    # Pooling lets the noisy test lean on the quiet one: fewer pairs than two per-test floors.
    per_test = sum(bench.pairs_floor(t["pair_sd"], 1.0, 0.02, "decision") for t in copies)
    assert bench.program_pairs_floor(copies, 0.02) < per_test
    raw = {
        "runs": {
            "decision": {
                "per_answer": [
                    {"kind": "near_copy", "cost": {"per_test": [
                        {**t, "pairs": 100, "base_ms": 1.0} for t in copies]}},
                    {"kind": "faster", "cost": None},
                ]
            }
        }
    }
    rows = bench.program_floor_rows(raw, 0.02)
    floor = bench.program_pairs_floor(copies, 0.02)
    assert rows[0][:5] == ["near_copy", "1", "200", str(floor), f"**{200 / floor:.2f}x**"]
    # 200 pairs of 2 ms of runs each (two 1 ms runs)
    assert rows[0][5] == "0.4 s"
    assert rows[2] == ["faster", "0", "0", "0", "-", "0.0 s", "0.0 s", "-"]


def test_an_answers_floor_in_seconds_gives_dear_tests_fewer_pairs(bench: ModuleType) -> None:
    z = bench.FLOOR_Z
    # Copies: a 1 ms test and a 100 ms one, the same noise. The design that knows their cost
    # gives the dear test sqrt(100) = 10 times fewer pairs than the cheap one.
    copies = [
        {"ratio": 1.0, "pair_sd": 0.05, "base_ms": 1.0},
        {"ratio": 1.0, "pair_sd": 0.05, "base_ms": 100.0},
    ]
    cheap_s, dear_s = 0.002, 0.2
    scale = (z / (2 * 0.02)) ** 2 * 0.05 * (math.sqrt(cheap_s) + math.sqrt(dear_s))
    cheap_n, dear_n = scale * 0.05 / math.sqrt(cheap_s), scale * 0.05 / math.sqrt(dear_s)
    assert cheap_n == pytest.approx(10 * dear_n) and dear_n > bench.LEAST_PAIRS
    floor = bench.program_seconds_floor(copies, 0.02)
    assert floor == pytest.approx(cheap_s * cheap_n + dear_s * dear_n)
    # Cheaper than the pairs floor's allocation (equal pairs here) at the same variance.
    pairs = bench.program_pairs_floor(copies, 0.02)
    assert floor < pairs / 2 * (cheap_s + dear_s)
    # A clear effect needs almost nothing: each test its least pairs.
    faster = [{**t, "ratio": 2.0} for t in copies]
    least = sum(bench.LEAST_PAIRS * t["base_ms"] / 1000 * 1.5 for t in faster)
    assert bench.program_seconds_floor(faster, 0.02) == pytest.approx(least)


def test_a_tests_pair_noise_is_pooled_within_its_rounds_as_the_trimmed_mean_sees_it() -> None:
    # Two rounds whose levels differ by a factor of e: within them the log-ratios vary by
    # +-0.1 around 0 and around 1 (too few to trim), so the pooled figure is their sd.
    logs = [-0.1, 0.1, 0.9, 1.1]
    raw = {
        "metric": "cpu",
        "round": [1, 1, 2, 2],
        "base_cpu": [0.01 * math.exp(x) for x in logs],
        "cand_cpu": [0.01] * 4,
    }
    t = TestSpeedup("t", MeasureMode.TIME, MeasureStatus.MEASURED, raw=raw)
    assert t.pair_sd == pytest.approx(math.sqrt(0.02))
    assert TestSpeedup("t", MeasureMode.TIME, MeasureStatus.MEASURED).pair_sd is None
    # One spike in twenty pairs: the trimmed mean ignores it, and so does its noise.
    calm = [0.01 * (-1) ** k for k in range(20)]
    spiky = calm[:-1] + [0.5]
    for logs, most in ((calm, 0.02), (spiky, 0.02)):
        raw = {
            "metric": "cpu",
            "round": [1] * 20,
            "base_cpu": [math.exp(x) for x in logs],
            "cand_cpu": [1.0] * 20,
        }
        sd = TestSpeedup("t", MeasureMode.TIME, MeasureStatus.MEASURED, raw=raw).pair_sd
        assert sd is not None and sd < most
