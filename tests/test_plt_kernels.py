"""Kernel choice of `PLTLinear` for few-row CPU products: timed in use, cached per machine,
forceable.

Timings themselves are not asserted (they belong to bench/); what is checked is that the
first calls of a shape alternate the two kernels and compute the same product, that a choice
follows from the two kernels' timings by the documented rule (near ties get more rounds), that
it is stored and read back under this machine's key, and that forcing overrides timing.
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


def _calls_until_decided(layer: torch.nn.Module, x: torch.Tensor, limit: int = 200) -> int:
    """Calls the layer until its shape has a choice; checks every call's product on the way."""
    expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
    for calls in range(1, limit + 1):
        with torch.no_grad():
            assert torch.allclose(layer(x), expected, atol=1e-5)
        if not kernels.calibrating():
            return calls
    raise AssertionError(f"no choice after {limit} calls")


def test_first_products_time_both_kernels_in_use_and_cache_the_choice(fresh: Path) -> None:
    layer = modeling_plt.PLTLinear(64, 96, bias=False)
    x = torch.randn(3, 64)
    calls = _calls_until_decided(layer, x)
    # One untimed call per kernel, then SAMPLES timed calls per kernel and round (1-3 rounds).
    assert calls in {2 + 2 * kernels.SAMPLES * rounds for rounds in (1, 2, 3)}
    (choice,) = kernels.kernel_report()
    assert (choice.dtype, choice.rows, choice.in_features, choice.out_features) == (
        "float32",
        3,
        64,
        96,
    )
    assert choice.source == "measured" and choice.linear_us > 0 and choice.few_row_us > 0
    assert choice.use_few_row == (choice.few_row_us < (1 - kernels.MARGIN) * choice.linear_us)
    assert kernels.use_few_row(layer.weight, 3) == choice.use_few_row

    stored = json.loads(kernels.cache_path().read_text())
    assert kernels.cache_path().parent == fresh
    entry = stored[kernels.machine_key()]["float32 rows=3 64x96"]
    assert entry["use_few_row"] == choice.use_few_row

    # A new process (simulated by forgetting) reads the file instead of timing again.
    kernels.forget_choices()
    assert kernels.use_few_row(layer.weight, 3) == choice.use_few_row
    assert _calls_until_decided(layer, x) == 1
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
    # Another machine's entries are not used: the shape is timed here.
    kernels.forget_choices()
    kernels.cache_path().write_text(json.dumps({"other cpu": {"float32 rows=2 16x8": entry}}))
    assert kernels.use_few_row(layer.weight, 2) is None
    _calls_until_decided(layer, x)
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


def test_trial_alternates_skips_first_calls_and_decides_by_median() -> None:
    trial = kernels.Trial()
    kernels_used = []
    for _ in range(2 + 2 * kernels.SAMPLES):
        few = trial.next_is_few_row()
        kernels_used.append(few)
        # Untimed first calls are slow (allocation); the transposed product is clearly faster.
        trial.record(few, 1000.0 if trial.calls < 2 else (50.0 if few else 100.0))
    assert kernels_used[:4] == [False, True, False, True]
    assert len(trial.linear_us) == len(trial.few_row_us) == kernels.SAMPLES
    assert 1000.0 not in trial.linear_us + trial.few_row_us
    assert trial.decision() == (100.0, 50.0, True)


def test_near_tie_gets_more_rounds_then_decides_on_all_samples() -> None:
    """A median ratio within a few per cent of the threshold asks for another round of
    samples (at most three rounds); clear ratios decide after one."""
    threshold = 1.0 - kernels.MARGIN
    trial = kernels.Trial()
    trial.calls = 2  # past the untimed calls
    trial.linear_us = [100.0] * kernels.SAMPLES
    trial.few_row_us = [100.0 * threshold + 0.5] * kernels.SAMPLES
    assert trial.decision() is None and trial.rounds == 2
    trial.linear_us += [100.0] * kernels.SAMPLES
    trial.few_row_us += [80.0] * kernels.SAMPLES
    linear, few, use_few = trial.decision() or (0.0, 0.0, False)
    assert (linear, use_few) == (100.0, True) and few < 95.0  # median of both rounds
    stuck = kernels.Trial(
        linear_us=[100.0] * (3 * kernels.SAMPLES),
        few_row_us=[100.0 * threshold] * (3 * kernels.SAMPLES),
        rounds=3,
    )
    assert stuck.decision() is not None  # the last round decides, tie or not
    clear = kernels.Trial(linear_us=[100.0] * kernels.SAMPLES, few_row_us=[60.0] * kernels.SAMPLES)
    assert clear.decision() == (100.0, 60.0, True) and clear.rounds == 1
