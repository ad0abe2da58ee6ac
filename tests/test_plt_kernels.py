"""Kernel choice of `PLTLinear` for few-row CPU products: timed in use, cached per machine,
forceable.

Timings themselves are not asserted (they belong to bench/); what is checked is that the
first calls of a shape take every candidate kernel in turn (the matrix-vector product only for
one row) and compute the same product, that a choice follows from the candidates' timings by
the documented rule (near ties get more rounds), that it is stored and read back under this
machine's key, that a malformed cache entry is timed again, and that forcing overrides
timing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import lazy
from kernel_choices import write_choice

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
    # The multi-row float32 kernel has tests of its own (test_plt_native.py).
    monkeypatch.setenv("ASMOPT_PLT_NATIVE", "off")
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


@pytest.mark.parametrize("rows", [1, 3])
def test_first_products_time_every_candidate_in_use_and_cache_the_choice(
    fresh: Path, rows: int
) -> None:
    layer = modeling_plt.PLTLinear(64, 96, bias=rows == 1)
    x = torch.randn(rows, 64)
    calls = _calls_until_decided(layer, x)
    expected = ("linear", "few_row", "mv") if rows == 1 else ("linear", "few_row")
    assert kernels.candidates(rows, torch.float32) == expected
    # One untimed call per kernel, then SAMPLES timed calls per kernel and round (1-3 rounds).
    n = len(expected)
    assert calls in {n + n * kernels.SAMPLES * rounds for rounds in (1, 2, 3)}
    (choice,) = kernels.kernel_report()
    assert (choice.dtype, choice.rows, choice.in_features, choice.out_features) == (
        "float32",
        rows,
        64,
        96,
    )
    assert choice.source == "measured" and set(choice.timings_us) == set(expected)
    assert all(us > 0 for us in choice.timings_us.values())
    best = choice.best_alternative
    assert choice.timings_us[best] == min(v for k, v in choice.timings_us.items() if k != "linear")
    faster = choice.timings_us[best] < (1 - kernels.MARGIN) * choice.timings_us["linear"]
    assert choice.kernel == (best if faster else "linear")
    assert kernels.chosen_kernel(layer.weight, rows) == choice.kernel

    stored = json.loads(kernels.cache_path().read_text())
    assert kernels.cache_path().parent == fresh
    entry = stored[kernels.machine_key()][f"float32 rows={rows} 64x96"]
    assert entry["kernel"] == choice.kernel and entry["timings_us"] == choice.timings_us

    # A new process (simulated by forgetting) reads the file instead of timing again.
    kernels.forget_choices()
    assert kernels.chosen_kernel(layer.weight, rows) == choice.kernel
    assert _calls_until_decided(layer, x) == 1
    (again,) = kernels.kernel_report()
    assert again.source == "cache" and again.kernel == choice.kernel


@pytest.mark.parametrize("kernel", ["linear", "few_row", "mv"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("bias", [False, True])
def test_every_kernel_computes_the_product(
    fresh: Path, kernel: str, dtype: str, bias: bool
) -> None:
    """Forced one at a time: each kernel's one-row product (and the row counts it applies
    to) equals F.linear's to rounding; `mv` on two rows falls back to F.linear."""
    torch_dtype = getattr(torch, dtype)
    layer = modeling_plt.PLTLinear(48, 40, bias=bias).to(torch_dtype)
    kernels.set_linear_kernel(kernel)  # type: ignore[arg-type]
    tol = 1e-5 if dtype == "float32" else 2e-2
    for rows in (1, 2):
        x = torch.randn(rows, 48, dtype=torch_dtype)
        with torch.no_grad():
            out = layer(x)
            expected = torch.nn.functional.linear(
                x.double(),
                layer.weight.double(),
                None if layer.bias is None else layer.bias.double(),
            )
        assert out.shape == (rows, 40) and out.dtype == torch_dtype
        assert torch.allclose(out.double(), expected, atol=tol, rtol=tol)
        want = kernel if kernel in kernels.candidates(rows, torch_dtype) else "linear"
        assert kernels.chosen_kernel(layer.weight, rows) == want
    assert kernels.kernel_report() == []  # forced: nothing timed


def test_cached_choice_is_used_as_stored(fresh: Path) -> None:
    """The file decides: an entry saying "few_row" (whatever this machine would measure) is
    followed, and the product is still F.linear's."""
    write_choice()
    layer = modeling_plt.PLTLinear(16, 8, bias=True)
    x = torch.randn(2, 16)
    with torch.no_grad():
        # The two kernels sum in different orders: equal to float32 rounding (an absolute
        # bound too, for outputs near zero).
        expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
        assert torch.allclose(layer(x), expected, atol=1e-5)
    (choice,) = kernels.kernel_report()
    assert choice.source == "cache" and choice.kernel == "few_row"
    # Another machine's entries are not used: the shape is timed here.
    kernels.forget_choices()
    write_choice(machine="other cpu")
    assert kernels.chosen_kernel(layer.weight, 2) is None
    _calls_until_decided(layer, x)
    assert kernels.kernel_report()[0].source == "measured"


@pytest.mark.parametrize(
    "change",
    [
        {"kernel": "mv"},  # not a candidate for two rows
        {"kernel": "fastest"},
        {"timings_us": {"linear": 10.0}},  # a candidate never timed
        {"timings_us": "fast"},
        {"use_few_row": True},  # the older schema's field
    ],
)
def test_malformed_cache_entry_is_timed_again(fresh: Path, change: dict[str, object]) -> None:
    write_choice(**change)
    layer = modeling_plt.PLTLinear(16, 8, bias=False)
    assert kernels.chosen_kernel(layer.weight, 2) is None
    _calls_until_decided(layer, torch.randn(2, 16))
    (choice,) = kernels.kernel_report()
    assert choice.source == "measured"


def test_forcing_by_code_or_environment_skips_measuring(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weight = torch.randn(8, 16)
    monkeypatch.setenv(kernels.ENV_VAR, "few-row")
    assert kernels.kernel_mode() == "few_row" and kernels.chosen_kernel(weight, 2) == "few_row"
    monkeypatch.setenv(kernels.ENV_VAR, "linear")
    assert kernels.chosen_kernel(weight, 2) == "linear"
    monkeypatch.setenv(kernels.ENV_VAR, "MV")
    assert kernels.chosen_kernel(weight, 1) == "mv"
    assert kernels.chosen_kernel(weight, 2) == "linear"  # mv does not apply to two rows
    monkeypatch.setenv(kernels.ENV_VAR, "rows")
    assert kernels.chosen_kernel(weight, 2) == "linear"  # the multi-row kernel is off here
    kernels.set_linear_kernel("few_row")  # code wins over the environment
    assert kernels.chosen_kernel(weight, 2) == "few_row"
    assert kernels.kernel_report() == [] and not kernels.cache_path().exists()
    # Never for prefill-sized products or float64.
    assert kernels.chosen_kernel(weight, kernels.MAX_ROWS + 1) == "linear"
    assert kernels.chosen_kernel(weight.double(), 2) == "linear"
    monkeypatch.setenv(kernels.ENV_VAR, "fast")
    kernels.set_linear_kernel(None)
    with pytest.raises(ValueError, match="ASMOPT_PLT_LINEAR_KERNEL"):
        kernels.kernel_mode()
    with pytest.raises(ValueError, match="linear kernel"):
        kernels.set_linear_kernel("fast")  # type: ignore[arg-type]


def test_trial_takes_turns_skips_first_calls_and_decides_by_median() -> None:
    trial = kernels.Trial(("linear", "few_row", "mv"))
    used = []
    speed = {"linear": 100.0, "few_row": 70.0, "mv": 50.0}
    for _ in range(3 + 3 * kernels.SAMPLES):
        kernel = trial.next_kernel()
        used.append(kernel)
        # Untimed first calls are slow (allocation); mv is clearly the fastest.
        trial.record(kernel, 1000.0 if trial.calls < 3 else speed[kernel])
    assert used[:6] == ["linear", "few_row", "mv"] * 2
    assert all(len(v) == kernels.SAMPLES for v in trial.samples_us.values())
    assert all(1000.0 not in v for v in trial.samples_us.values())
    assert trial.decision() == (speed, "mv")
    with pytest.raises(ValueError, match="linear"):
        kernels.Trial(("few_row", "linear"))


def test_near_tie_gets_more_rounds_then_decides_on_all_samples() -> None:
    """The best alternative's median ratio to F.linear within a few per cent of the threshold
    asks for another round of samples (at most three rounds); clear ratios decide after
    one."""
    threshold = 1.0 - kernels.MARGIN
    n = kernels.SAMPLES
    trial = kernels.Trial()
    trial.calls = 2  # past the untimed calls
    trial.samples_us = {"linear": [100.0] * n, "few_row": [100.0 * threshold + 0.5] * n}
    assert trial.decision() is None and trial.rounds == 2
    trial.samples_us["linear"] += [100.0] * n
    trial.samples_us["few_row"] += [80.0] * n
    medians, chosen = trial.decision() or ({}, "")
    assert medians["linear"] == 100.0 and chosen == "few_row"
    assert medians["few_row"] < 95.0  # median of both rounds
    stuck = kernels.Trial(
        samples_us={"linear": [100.0] * (3 * n), "few_row": [100.0 * threshold] * (3 * n)},
        rounds=3,
    )
    assert stuck.decision() is not None  # the last round decides, tie or not
    clear = kernels.Trial(samples_us={"linear": [100.0] * n, "few_row": [60.0] * n})
    assert clear.decision() == ({"linear": 100.0, "few_row": 60.0}, "few_row")
    assert clear.rounds == 1
    slower = kernels.Trial(
        ("linear", "few_row", "mv"),
        samples_us={"linear": [100.0] * n, "few_row": [130.0] * n, "mv": [120.0] * n},
    )
    assert slower.decision() == ({"linear": 100.0, "few_row": 130.0, "mv": 120.0}, "linear")
