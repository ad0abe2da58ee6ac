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
    def test(ms: float, pairs: int, sd: float | None) -> dict[str, object]:
        return {"base_ms": ms, "pairs": pairs, "pair_sd": sd, "ratio": 1.0}

    per_test = [test(1.0, 80, 0.05), test(1.5, 40, 0.05), test(5.0, 10, 0.01), test(9, 4, None)]
    raw = {"runs": {"target": {"per_answer": [{"cost": {"per_test": per_test}}]}}}
    rows = bench.floor_rows(raw, 0.02)
    assert rows[0] == ["target", "under 2 ms", "2", "120", "70", "**1.71x**"]
    assert rows[1] == ["target", "2-20 ms", "1", "10", "2", "**5.00x**"]  # no noise: no row
    assert rows[2] == ["target", "20 ms up", "0", "0", "0", "-"]


def test_a_tests_pair_noise_is_pooled_within_its_rounds() -> None:
    # Two rounds whose levels differ by a factor of e: within them the log-ratios vary by
    # +-0.1 around 0 and around 1, so the pooled sd is that of {-0.1, 0.1} twice.
    logs = [-0.1, 0.1, 0.9, 1.1]
    raw = {
        "metric": "cpu",
        "round": [1, 1, 2, 2],
        "base_cpu": [0.01 * math.exp(x) for x in logs],
        "cand_cpu": [0.01] * 4,
    }
    t = TestSpeedup("t", MeasureMode.TIME, MeasureStatus.MEASURED, raw=raw)
    assert t.pair_sd == pytest.approx(math.sqrt((2 * 0.02) / 2))
    assert TestSpeedup("t", MeasureMode.TIME, MeasureStatus.MEASURED).pair_sd is None
