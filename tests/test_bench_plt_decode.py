"""The PLT decode benchmark's verdicts: the goal check and the ablation's skipped parts.

Timings are not asserted (they belong to bench/results); what is checked is that the goal
check reads the runs it is given correctly and warns on disagreeing runs, that the
ablation's patches skip exactly the window call and the gate of PLT-2 and are undone, and
that the kernel table shows what was timed and chosen.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType

import pytest
from bench_module import import_bench
from tiny_model import tiny_plt_model

pytestmark = pytest.mark.ml


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return import_bench("bench_plt_decode")


def _runs(bench: ModuleType, ratios: list[float]) -> list[dict[str, object]]:
    """One run per ratio: R = 1 at 10 ms per token, PLT-2 at ratio x 10 ms."""
    return [
        {
            "R=1": bench.Result(samples_s=[0.010] * 10),
            "PLT-2": bench.Result(samples_s=[0.010 * r] * 10),
        }
        for r in ratios
    ]


def test_goal_check_reads_every_run_and_warns_on_disagreement(bench: ModuleType) -> None:
    modes = [m for m in bench.ALL_MODES if m.name in ("R=1", "PLT-2", "PLT-2 loop-by-loop")]
    args = argparse.Namespace(stat="p10", goal=1.15, max_run_range=0.05)
    results = {
        ("bf16", 8): _runs(bench, [1.20, 1.21, 1.22]),
        ("fp32", 1): _runs(bench, [1.10, 1.12, 1.25]),
    }
    lines = bench.goal_check(results, modes, args)
    bf16 = next(line for line in lines if "bf16 b8" in line)
    fp32 = next(line for line in lines if "fp32 b1" in line)
    assert "median run 1.210x, misses" in bf16 and "3 of 3 runs above" in bf16
    assert "WARNING" not in bf16
    assert "median run 1.120x, meets" in fp32 and "1 of 3 runs above" in fp32
    assert "WARNING" in fp32 and "1.10-1.25" in fp32
    # Only one-pass PLT modes are judged (not R = 1, not the loop-by-loop schedule).
    assert not any("loop-by-loop" in line or "R=1 " in line for line in lines)


def test_ablation_skips_only_the_window_call_and_the_gate(bench: ModuleType) -> None:
    import torch

    from asmopt.models.plt import PLTCache, modeling_plt

    model = tiny_plt_model(plt_num_loops=2).eval()
    ids = torch.randint(2, model.config.vocab_size, (2, 12))
    by_variant = {}
    original = (modeling_plt.attention_forward, modeling_plt.PLTGate.forward)
    with torch.no_grad(), bench._Skipper() as skipper:
        for variant in bench.ABLATIONS:
            if variant.model != "PLT-2":
                continue
            skipper.current = variant
            cache = PLTCache(model.config)
            model(ids[:, :-1], past_key_values=cache)
            step = model(ids[:, -1:], past_key_values=cache).logits
            by_variant[(variant.skip_window, variant.skip_gate)] = step
    assert (modeling_plt.attention_forward, modeling_plt.PLTGate.forward) == original
    full = by_variant[(False, False)]
    with torch.no_grad():
        reference = model(ids).logits[:, -1:]
    assert torch.allclose(full, reference, atol=1e-5)  # nothing skipped: the real model
    for skipped in ((True, False), (False, True), (True, True)):
        assert not torch.allclose(by_variant[skipped], full, atol=1e-5), skipped


TINY_SHAPE: dict[str, object] = {
    "vocab_size": 97,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "tie_word_embeddings": True,
    "max_position_embeddings": 256,
    "plt_window_size": [4, 0],
}


def _bench_args(shape: str, layers: int | None = None) -> argparse.Namespace:
    return argparse.Namespace(shape=shape, layers=layers, seed=0, prompt=8, warmup=1)


def test_shared_weight_shapes_give_every_mode_the_same_tensors_and_the_same_model(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared-weight build (meta device, tensors assigned) must compute exactly what the
    copying build computes, with its rotary frequencies rebuilt, and build the weights once."""
    import torch

    monkeypatch.setitem(bench.SHAPES, "tiny-shared", bench.Shape(TINY_SHAPE, True, "test"))
    monkeypatch.setitem(bench.SHAPES, "tiny-copied", bench.Shape(TINY_SHAPE, False, "test"))
    modes = [m for m in bench.ALL_MODES if m.name in ("R=1", "PLT-2", "plain-2")]
    shared = bench.build_models(modes, torch.float32, _bench_args("tiny-shared"))
    copied = bench.build_models(modes, torch.float32, _bench_args("tiny-copied"))
    again = bench.build_models(modes, torch.float32, _bench_args("tiny-shared"))

    def pointers(model: torch.nn.Module) -> dict[str, int]:
        return {name: t.data_ptr() for name, t in model.state_dict().items()}

    first = pointers(shared["R=1"])
    for name in ("PLT-2", "plain-2"):
        other = pointers(shared[name])
        assert all(other[key] == ptr for key, ptr in first.items()), name
    assert pointers(again["PLT-2"]) == pointers(shared["PLT-2"])  # built once, reused
    assert again["PLT-2"] is not shared["PLT-2"]  # fresh modules (and caches) per run
    assert pointers(copied["PLT-2"])["model.norm.weight"] != first["model.norm.weight"]

    ids = torch.randint(2, TINY_SHAPE["vocab_size"], (2, 10))
    with torch.no_grad():
        for name in ("R=1", "PLT-2", "plain-2"):
            model = shared[name]
            assert not any(t.is_meta for t in [*model.parameters(), *model.buffers()])
            # Same seed, same shape: the copying build holds the same weights.
            copied[name].load_state_dict(model.state_dict())
            assert torch.equal(model(ids).logits, copied[name](ids).logits), name
            caches, tokens = bench.prefill({name: model}, 2, _bench_args("tiny-shared"))
            assert caches[name].get_seq_length() >= 9 and tokens[name].shape == (2, 1)


def test_layers_option_sets_the_depth_and_rejects_nonsense(bench: ModuleType) -> None:
    config = bench.model_config(_bench_args("7b-layers", layers=2))
    assert config["num_hidden_layers"] == 2
    assert config["hidden_size"] == bench.SHAPES["7b-layers"].config["hidden_size"]
    assert bench.model_config(_bench_args("100m"))["num_hidden_layers"] == 12
    for argv in (["--layers", "0"], ["--shape", "1b"]):
        with pytest.raises(SystemExit) as exit_info:
            bench.main(argv)
        assert exit_info.value.code == 2


class _SteadyClock:
    """A timing function in which every timed product lasts 20 us of wall and CPU time."""

    def __init__(self) -> None:
        self.seconds, self.started = 0.0, False

    def __call__(self) -> tuple[float, float]:
        if self.started:
            self.seconds += 20e-6
        self.started = not self.started
        return self.seconds, self.seconds


def test_kernel_table_lists_every_candidate_and_the_choice(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-row choice shows every timed candidate; a two-row one shows `-` for mv."""
    import torch

    from asmopt.models.plt import kernels, modeling_plt

    monkeypatch.setenv("ASMOPT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("ASMOPT_PLT_NATIVE", "off")
    monkeypatch.delenv(kernels.ENV_VAR, raising=False)
    kernels.forget_choices()
    kernels.set_linear_kernel(None)
    steady = _SteadyClock()  # the table is under test, not this machine's load: every
    try:  # product takes 20 us, so no choice is refused as timed under contention
        assert bench.kernel_table()[0].startswith("No few-row product was measured")
        layer = modeling_plt.PLTLinear(32, 24, bias=False)
        with kernels.timing_hooks(clock=steady, load=lambda: 0.0):
            for rows in (1, 2):
                x = torch.randn(rows, 32)
                with torch.no_grad():
                    for _ in range(400):
                        layer(x)
                        if not kernels.calibrating():
                            break
        table = bench.kernel_table()
        one, two = kernels.kernel_report()
        row1 = next(line for line in table if line.startswith("| float32 | 1 | 32 x 24 |"))
        row2 = next(line for line in table if line.startswith("| float32 | 2 | 32 x 24 |"))
        cells1 = [c.strip() for c in row1.strip("|").split("|")]
        cells2 = [c.strip() for c in row2.strip("|").split("|")]
        assert cells1[3:6] == [f"{one.timings_us[k]:.1f}" for k in ("linear", "few_row", "mv")]
        assert cells2[5] == "-" and cells2[8] == two.kernel and cells1[8] == one.kernel
        assert cells1[6] == cells2[6] == "-"  # the multi-row kernel is off in this test
        assert cells1[7].endswith(f"({one.best_alternative})") and cells1[9] == "measured"
    finally:
        kernels.forget_choices()
        kernels.set_linear_kernel(None)
