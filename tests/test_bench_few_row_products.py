"""The few-row product benchmark's harness: shapes and options are validated, every kernel is
checked against `F.linear` before it is timed, and the table reads the samples it is given.

Timings are not asserted (they belong to bench/results)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from bench_module import import_bench

pytestmark = pytest.mark.ml


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return import_bench("bench_few_row_products")


def test_bad_options_are_usage_errors(bench: ModuleType) -> None:
    for argv in (
        ["--shapes", "5120"],
        ["--shapes", "0x8"],
        ["--rows", "2,4"],  # no 1-row reference
        ["--dtypes", "fp16"],
        ["--calls", "0"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            bench.main(argv)
        assert exit_info.value.code == 2, argv


def test_a_small_run_times_every_kernel_and_reports_ratios_to_one_row(
    bench: ModuleType, tmp_path: Path
) -> None:
    import json

    out, raw = tmp_path / "table.md", tmp_path / "raw.json"
    argv = ["--shapes", "64x48", "--rows", "1,3", "--calls", "3", "--cold-mb", "0"]
    assert bench.main([*argv, "--out", str(out), "--raw", str(raw)]) == 0
    samples = json.loads(raw.read_text())
    assert set(samples) == {"float32 64x48", "bfloat16 64x48"}
    for by_rows in samples.values():
        assert set(by_rows) == {"1", "3"}
        assert "mv" in by_rows["1"] and "mv" not in by_rows["3"]  # mv is one row only
        assert all(len(s) == 3 for kernels in by_rows.values() for s in kernels.values())
    rows = [line for line in out.read_text().splitlines() if line.startswith("| float")]
    assert len(rows) == 2 and "| 1 |" in rows[0] and "x)" in rows[1]
    # oneDNN's packed kernel runs where the CPU supports its dtype; where it does not (bf16
    # without AVX-512 BW/VL/DQ), the run goes on without it and the report says why.
    for key, by_rows in samples.items():
        dtype = key.split(" ")[0]
        assert ("onednn_packed" in by_rows["1"]) != (dtype in bench.LEFT_OUT), key
        if dtype in bench.LEFT_OUT:
            assert f"`onednn_packed` left out for {dtype}" in out.read_text()


def test_a_wrong_kernel_is_caught_before_timing(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    import torch

    real = bench.kernels_for

    def with_a_wrong_one(rows: int, onednn: bool, multi_row: bool = False):  # type: ignore[no-untyped-def]
        kernels = real(rows, onednn, multi_row)
        kernels["wrong"] = lambda x, w: torch.nn.functional.linear(x, w) + 1.0
        return kernels

    monkeypatch.setattr(bench, "kernels_for", with_a_wrong_one)
    args = argparse.Namespace(calls=1, cold_mb=0, onednn=False)
    with pytest.raises(RuntimeError, match="wrong disagrees"):
        bench.time_shape(torch.float32, 32, 16, [1], args)
