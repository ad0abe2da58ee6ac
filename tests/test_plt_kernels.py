"""Kernel choice of `PLTLinear` for few-row CPU products: measured, cached per machine, forceable.

Timings themselves are not asserted (they belong to bench/); what is checked is that a choice
follows from the two measured timings by the documented rule, that it is stored and read back
under this machine's key, and that forcing overrides measuring.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import lazy

if TYPE_CHECKING:
    import torch

    from asmopt.models.plt import kernels, modeling_plt
else:
    torch = lazy("torch")
    kernels = lazy("asmopt.models.plt.kernels")
    modeling_plt = lazy("asmopt.models.plt.modeling_plt")

pytestmark = pytest.mark.ml


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache directory and no choices in memory; auto mode."""
    monkeypatch.setenv("ASMOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(kernels.ENV_VAR, raising=False)
    kernels.forget_choices()
    kernels.set_linear_kernel(None)
    yield tmp_path
    kernels.forget_choices()
    kernels.set_linear_kernel(None)


def test_first_product_measures_both_kernels_and_caches_the_choice(fresh: Path) -> None:
    layer = modeling_plt.PLTLinear(64, 96, bias=False)
    with torch.no_grad():
        layer(torch.randn(3, 64))
    (choice,) = kernels.kernel_report()
    assert (choice.dtype, choice.rows, choice.in_features, choice.out_features) == (
        "float32",
        3,
        64,
        96,
    )
    assert choice.source == "measured" and choice.linear_us > 0 and choice.few_row_us > 0
    assert choice.use_few_row == (choice.few_row_us < (1 - kernels.MARGIN) * choice.linear_us)

    stored = json.loads(kernels.cache_path().read_text())
    assert kernels.cache_path().parent == fresh
    entry = stored[kernels.machine_key()]["float32 rows=3 64x96"]
    assert entry["use_few_row"] == choice.use_few_row

    # A new process (simulated by forgetting) reads the file instead of measuring again.
    kernels.forget_choices()
    with torch.no_grad():
        layer(torch.randn(3, 64))
    (again,) = kernels.kernel_report()
    assert again.source == "cache" and again.use_few_row == choice.use_few_row


def test_cached_choice_is_used_as_stored(fresh: Path) -> None:
    """The file decides: an entry saying "few_row" (whatever this machine would measure) is
    followed, and the product is still F.linear's."""
    key = kernels.machine_key()
    entry = {
        "dtype": "float32",
        "rows": 2,
        "in_features": 16,
        "out_features": 8,
        "linear_us": 10.0,
        "few_row_us": 1.0,
        "use_few_row": True,
    }
    kernels.cache_path().write_text(json.dumps({key: {"float32 rows=2 16x8": entry}}))
    layer = modeling_plt.PLTLinear(16, 8, bias=True)
    x = torch.randn(2, 16)
    with torch.no_grad():
        # The two kernels sum in different orders: equal to float32 rounding (an absolute
        # bound too, for outputs near zero).
        expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
        assert torch.allclose(layer(x), expected, atol=1e-5)
    (choice,) = kernels.kernel_report()
    assert choice.source == "cache" and choice.use_few_row
    # Another machine's entries are not used.
    kernels.forget_choices()
    kernels.cache_path().write_text(json.dumps({"other cpu": {"float32 rows=2 16x8": entry}}))
    with torch.no_grad():
        layer(x)
    assert kernels.kernel_report()[0].source == "measured"


def test_forcing_by_code_or_environment_skips_measuring(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weight = torch.randn(8, 16)
    monkeypatch.setenv(kernels.ENV_VAR, "few-row")
    assert kernels.kernel_mode() == "few_row" and kernels.use_few_row(weight, 2)
    monkeypatch.setenv(kernels.ENV_VAR, "linear")
    assert not kernels.use_few_row(weight, 2)
    kernels.set_linear_kernel("few_row")  # code wins over the environment
    assert kernels.use_few_row(weight, 2)
    assert kernels.kernel_report() == [] and not kernels.cache_path().exists()
    # Never for prefill-sized products or float64.
    assert not kernels.use_few_row(weight, kernels.MAX_ROWS + 1)
    assert not kernels.use_few_row(weight.double(), 2)
    monkeypatch.setenv(kernels.ENV_VAR, "fast")
    kernels.set_linear_kernel(None)
    with pytest.raises(ValueError, match="ASMOPT_PLT_LINEAR_KERNEL"):
        kernels.kernel_mode()
    with pytest.raises(ValueError, match="linear kernel"):
        kernels.set_linear_kernel("fast")  # type: ignore[arg-type]


def test_large_weights_are_timed_cold_small_ones_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """A weight of at least `COLD_MIN_BYTES` is timed over copies spanning more than twice
    the last-level cache (each call reads one not touched for that long, as a decode step
    streams its weights); a small one, or one larger than that span, is timed as it is."""
    monkeypatch.setattr("asmopt.models.plt.kernels.last_level_cache_bytes", lambda: 4 << 20)
    large = torch.randn(512, 1024)  # 2 MiB of float32
    copies = kernels.timing_weights(large)
    assert len(copies) == 4  # 4 x 2 MiB >= 2 x 4 MiB
    assert all(torch.equal(c, large) and c.data_ptr() != large.data_ptr() for c in copies)
    small = torch.randn(64, 64)
    assert kernels.timing_weights(small)[0] is small
    huge = torch.randn(2048, 1024)  # 8 MiB: already more than the span
    assert kernels.timing_weights(huge)[0] is huge
    linear_us, few_us = kernels.measure(large, 4)
    assert linear_us > 0 and few_us > 0


def test_last_level_cache_size_is_read_or_defaulted() -> None:
    size = kernels.last_level_cache_bytes()
    assert size >= 1 << 16


def test_near_tie_is_measured_again_and_pooled(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timings that land within a few per cent of the margin's threshold are measured once
    more and decided on the pooled minima; clear decisions are measured once."""
    threshold = 1.0 - kernels.MARGIN
    answers = iter([(100.0, 100.0 * threshold + 0.5), (90.0, 80.0)])
    calls: list[int] = []

    def fake_measure(weight: torch.Tensor, rows: int) -> tuple[float, float]:
        calls.append(rows)
        return next(answers)

    monkeypatch.setattr("asmopt.models.plt.kernels.measure", fake_measure)
    weight = torch.randn(8, 16)
    assert kernels.use_few_row(weight, 3)  # pooled: min(100, 90) vs min(95.5, 80)
    (choice,) = kernels.kernel_report()
    assert len(calls) == 2 and (choice.linear_us, choice.few_row_us) == (90.0, 80.0)

    answers = iter([(100.0, 50.0)])
    calls.clear()
    assert kernels.use_few_row(weight, 4)
    assert len(calls) == 1
