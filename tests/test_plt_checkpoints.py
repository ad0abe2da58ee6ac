"""Loading and saving PLT models: our directories, published LoopCoder directories, versions.

The published checkpoints are large, so the tests write synthetic directories with the
published config fields and tensor names (`plt_gate`, older `loop_gate_proj`) from a tiny
model and check that loading them gives that model's logits.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import lazy
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from tiny_model import PUBLISHED_SHAPE as SHAPE
from tiny_model import randomize_gates

if TYPE_CHECKING:
    import safetensors.torch as safetensors_torch
    import torch
    import transformers

    from asmopt.models import plt
else:
    torch = lazy("torch")
    transformers = lazy("transformers")
    safetensors_torch = lazy("safetensors.torch")
    plt = lazy("asmopt.models.plt")

pytestmark = pytest.mark.ml
REPO_ROOT = Path(__file__).resolve().parents[1]


def random_model(config: plt.PLTConfig) -> plt.PLTForCausalLM:
    """A float32 model with random gates and gate norms."""
    torch.manual_seed(0)
    return randomize_gates(plt.PLTForCausalLM(config).eval(), gate_norms=True)


def logits(model: plt.PLTForCausalLM) -> torch.Tensor:
    ids = torch.arange(2, 14).view(2, 6)
    with torch.no_grad():
        return model(ids).logits


def write_published_dir(
    path: Path, config_json: dict[str, Any], state: dict[str, torch.Tensor]
) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config_json, indent=2))
    safetensors_torch.save_file(
        {k: v.contiguous() for k, v in state.items()}, str(path / "model.safetensors")
    )


def test_save_load_round_trip(tmp_path: Path) -> None:
    config = plt.PLTConfig(
        **SHAPE,
        plt_num_loops=3,
        plt_window_size=[4, 0],
        plt_normalize_per_loop=True,
        plt_emb_scale=0.5,
        plt_hidden_scale=2.0,
    )
    model = random_model(config)
    model.save_pretrained(tmp_path)
    saved = safetensors_torch.load_file(str(tmp_path / "model.safetensors"))
    assert "model.layers.0.self_attn.plt_gate.weight" in saved
    assert "model.layers.1.self_attn.plt_gate.gate_norm.weight" in saved
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "asmopt_plt"

    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is plt.PLTForCausalLM
    assert type(loaded).__module__.startswith("asmopt.")  # native code, no remote code
    for field in ("plt_num_loops", "plt_window_size", "plt_normalize_per_loop", "plt_emb_scale"):
        assert getattr(loaded.config, field) == getattr(config, field)
    assert torch.equal(logits(loaded), logits(model))
    assert torch.equal(logits(plt.load_plt_pretrained(tmp_path).eval()), logits(model))


def published_v2_config(window: int) -> dict[str, Any]:
    """Field names as in the LoopCoder-v2 config.json (rope given the legacy way)."""
    return {
        **SHAPE,
        "architectures": ["IQuestPLTCoderForCausalLM"],
        "auto_map": {
            "AutoConfig": "configuration_iquestpltcoder.IQuestPLTCoderConfig",
            "AutoModelForCausalLM": "modeling_iquestpltcoder.IQuestPLTCoderForCausalLM",
        },
        "model_type": "iquestpltcoder",
        "hidden_act": "silu",
        "rope_theta": 500000.0,
        "attention_bias": False,
        "torch_dtype": "float32",
        "plt_num_loops": 2,
        "plt_window_size": [window, 0],
        "plt_normalize_per_loop": True,
        "plt_emb_scale": 1,
        "plt_hidden_scale": 1.0,
        "plt_gate_use_hidden_states": True,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def test_published_v2_directory_gives_our_logits(tmp_path: Path) -> None:
    ours = random_model(
        plt.PLTConfig(
            **SHAPE,
            plt_num_loops=2,
            plt_window_size=[3, 0],
            plt_normalize_per_loop=True,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        )
    )
    write_published_dir(tmp_path, published_v2_config(3), ours.state_dict())

    config = transformers.AutoConfig.from_pretrained(tmp_path)
    assert isinstance(config, plt.IQuestPLTCoderConfig)
    assert config.plt_window_size == [3, 0] and config.plt_gate_use_hidden_states
    loaded, info = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, output_loading_info=True
    )
    assert type(loaded) is plt.IQuestPLTCoderForCausalLM
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert (logits(loaded.eval()) - logits(ours)).abs().max().item() < 1e-6

    # Re-saving keeps the published names, and the copy loads again.
    loaded.save_pretrained(tmp_path / "resaved")
    resaved = safetensors_torch.load_file(str(tmp_path / "resaved" / "model.safetensors"))
    assert "model.layers.0.self_attn.plt_gate.gate_norm.weight" in resaved
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "resaved").eval()
    assert (logits(again) - logits(ours)).abs().max().item() < 1e-6


def test_published_v1_directory_with_loop_gate_proj(tmp_path: Path) -> None:
    """An `iquestpltcoder` file with v1 loop names: `loop_num` / `loop_window_size` (window
    counts the token itself), gate tensors named `loop_gate_proj`; the other fields take the
    published class defaults (query gate, per-loop norm). First-generation `iquestloopcoder`
    directories are tested in test_plt_published.py."""
    ours = random_model(
        plt.PLTConfig(
            **SHAPE,
            plt_num_loops=3,
            plt_window_size=[3, 0],
            plt_gate_use_hidden_states=False,
            plt_normalize_per_loop=True,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        )
    )
    state = {
        key.replace(".plt_gate.", ".loop_gate_proj."): value
        for key, value in ours.state_dict().items()
    }
    assert any("loop_gate_proj" in key for key in state)
    config_json = {
        **SHAPE,
        "architectures": ["IQuestPLTCoderForCausalLM"],
        "model_type": "iquestpltcoder",
        "rope_theta": 10000.0,
        "loop_num": 3,
        "loop_window_size": 4,
    }
    write_published_dir(tmp_path, config_json, state)

    loaded, info = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path, output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert loaded.config.plt_num_loops == 3
    assert loaded.config.plt_window_size == [3, 0]
    assert loaded.config.plt_gate_use_hidden_states is False
    assert (logits(loaded.eval()) - logits(ours)).abs().max().item() < 1e-6

    # A model loaded from old names saves old names (the format it came in) and reloads.
    loaded.save_pretrained(tmp_path / "resaved")
    resaved = safetensors_torch.load_file(str(tmp_path / "resaved" / "model.safetensors"))
    assert "model.layers.0.self_attn.loop_gate_proj.weight" in resaved
    again = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "resaved").eval()
    assert (logits(again) - logits(ours)).abs().max().item() < 1e-6


def test_fresh_published_type_model_saves_v2_names(tmp_path: Path) -> None:
    model = plt.IQuestPLTCoderForCausalLM(plt.IQuestPLTCoderConfig(**SHAPE, plt_window_size=[3, 0]))
    model.save_pretrained(tmp_path)
    saved = safetensors_torch.load_file(str(tmp_path / "model.safetensors"))
    assert "model.layers.0.self_attn.plt_gate.weight" in saved
    assert not any("loop_gate_proj" in key for key in saved)


def test_load_plt_pretrained_rejects_other_architectures(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama", **SHAPE}))
    with pytest.raises(ValueError, match="llama"):
        plt.load_plt_pretrained(tmp_path)


def test_installed_transformers_is_in_the_declared_range_and_works() -> None:
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    declared = [
        requirement
        for requirement in pyproject["project"]["optional-dependencies"]["train"]
        if requirement.startswith("transformers")
    ]
    assert len(declared) == 1
    specifier = SpecifierSet(declared[0].removeprefix("transformers"))
    assert specifier == SpecifierSet(",".join(plt.SUPPORTED_TRANSFORMERS))
    installed = Version(transformers.__version__)
    assert installed in specifier, f"transformers {installed} is outside {specifier}"

    model = random_model(plt.PLTConfig(**SHAPE, plt_num_loops=2, plt_window_size=[2, 0]))
    out = model.generate(torch.tensor([[3, 4, 5]]), max_new_tokens=5, do_sample=False)
    assert out.shape == (1, 8)
