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
        assert torch.allclose(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias))
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
