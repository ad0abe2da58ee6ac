"""Published LoopCoder directories load as published: class defaults, nulls, first-generation
loop checkpoints.

The logits are checked against `reference_logits`, an explicit restatement of the definitions
in docs/plt.md written with plain tensor operations and explicit masks (it calls none of the
model's modules), in float64. The published checkpoints are large, so the directories are
synthetic: a tiny model's weights under the published tensor names and a `config.json` with
only the fields the published files carry.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import lazy
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

THETA = 500000.0
# RoPE angles are computed in float32 (as Llama does), so float64 models agree to ~1e-8.
TOL = 1e-6


# --- the explicit definition --------------------------------------------------------------


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _rope(x: torch.Tensor, theta: float) -> torch.Tensor:
    """x `[B, H, S, d]` rotated at positions 0..S-1 (halves convention, as Llama)."""
    d, seq = x.shape[-1], x.shape[-2]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(seq, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


def _attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor
) -> torch.Tensor:
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, -1) @ v


def reference_logits(
    state: dict[str, torch.Tensor],
    ids: torch.Tensor,
    *,
    loops: int,
    window: int,
    shift: bool,
    normalize: bool,
    hidden_gate: bool,
    emb_scale: float = 1.0,
    hidden_scale: float = 1.0,
) -> torch.Tensor:
    """Logits of the looped model from its tensors (our names), by the definition.

    shift: loop r >= 2 input a E(x) + b shift(n(h(r-1))) (PLT); otherwise n(h(r-1)) (loop v1).
    Loops >= 2: g * attention(loop 1's k, v, causal) + (1 - g) * attention(own k, v, keys
    i - window .. i); g = sigmoid(w_h . q_h + b_h) (query gate) or sigmoid(W rms(x) + b).
    """
    w = {k: v.double() for k, v in state.items()}
    eps, heads, kv_heads, d = 1e-5, SHAPE["num_attention_heads"], SHAPE["num_key_value_heads"], 8
    batch, seq = ids.shape
    i = torch.arange(seq)
    causal = i[None, :] <= i[:, None]
    local = causal & (i[:, None] - i[None, :] <= window)

    def split(x: torch.Tensor, n: int) -> torch.Tensor:
        return x.view(batch, seq, n, d).transpose(1, 2)

    embeds = w["model.embed_tokens.weight"][ids]
    h = embeds
    loop1_kv: list[tuple[torch.Tensor, torch.Tensor]] = []
    for r in range(loops):
        if r > 0:
            carried = _rms(h, w["model.norm.weight"], eps) if normalize else h
            if shift:
                carried = torch.cat([torch.zeros_like(carried[:, :1]), carried[:, :-1]], 1)
                h = emb_scale * embeds + hidden_scale * carried
            else:
                h = carried
        for layer in range(SHAPE["num_hidden_layers"]):
            p = f"model.layers.{layer}."
            x = _rms(h, w[p + "input_layernorm.weight"], eps)
            q = _rope(split(x @ w[p + "self_attn.q_proj.weight"].T, heads), THETA)
            k = _rope(split(x @ w[p + "self_attn.k_proj.weight"].T, kv_heads), THETA)
            v = split(x @ w[p + "self_attn.v_proj.weight"].T, kv_heads)
            k = k.repeat_interleave(heads // kv_heads, 1)
            v = v.repeat_interleave(heads // kv_heads, 1)
            if r == 0:
                loop1_kv.append((k, v))
                y = _attend(q, k, v, causal)
            else:
                gk, gv = loop1_kv[layer]
                y_global = _attend(q, gk, gv, causal)
                y_local = _attend(q, k, v, local)
                gw, gb = w[p + "self_attn.plt_gate.weight"], w[p + "self_attn.plt_gate.bias"]
                if hidden_gate:
                    normed = _rms(h, w[p + "self_attn.plt_gate.gate_norm.weight"], eps)
                    g = torch.sigmoid(normed @ gw.T + gb).transpose(1, 2)[..., None]
                else:
                    g = torch.sigmoid((q * gw[None, :, None, :]).sum(-1) + gb[None, :, None])
                    g = g[..., None]
                y = g * y_global + (1 - g) * y_local
            y = y.transpose(1, 2).reshape(batch, seq, heads * d)
            h = h + y @ w[p + "self_attn.o_proj.weight"].T
            x = _rms(h, w[p + "post_attention_layernorm.weight"], eps)
            gate = torch.nn.functional.silu(x @ w[p + "mlp.gate_proj.weight"].T)
            h = h + (gate * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    return _rms(h, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


# --- helpers --------------------------------------------------------------------------------


def source_state(hidden_gate: bool, loops: int = 2) -> dict[str, torch.Tensor]:
    """Random tiny weights (random gates, gate norms) under our tensor names."""
    torch.manual_seed(0)
    config = plt.PLTConfig(
        **SHAPE,
        plt_num_loops=loops,
        plt_window_size=[3, 0],
        plt_gate_use_hidden_states=hidden_gate,
        rope_parameters={"rope_type": "default", "rope_theta": THETA},
    )
    model = randomize_gates(plt.PLTForCausalLM(config), gate_norms=True)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def write_dir(path: Path, config_json: dict[str, Any], state: dict[str, torch.Tensor]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config_json, indent=2))
    safetensors_torch.save_file(
        {k: v.contiguous() for k, v in state.items()}, str(path / "model.safetensors")
    )
    return path


def load(path: Path) -> plt.PLTForCausalLM:
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        path, output_loading_info=True, dtype=torch.float64
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    return model.eval()


def step_by_step_logits(model: plt.PLTForCausalLM, ids: torch.Tensor) -> torch.Tensor:
    """Logits of every position from a cached forward of one token at a time."""
    cache = plt.PLTCache(model.config)
    out = []
    with torch.no_grad():
        for t in range(ids.shape[1]):
            out.append(model(ids[:, t : t + 1], past_key_values=cache, use_cache=True).logits)
    return torch.cat(out, 1)


IDS = torch.tensor([[5, 9, 14, 3, 22, 7, 11, 30, 2, 17], [8, 8, 4, 19, 25, 6, 13, 10, 12, 3]])


# --- published configuration class ----------------------------------------------------------


def test_published_config_class_defaults() -> None:
    """Defaults of the published `IQuestPLTCoderConfig` (configuration_iquestpltcoder.py)."""
    config = plt.IQuestPLTCoderConfig()
    assert config.plt_num_loops == 2 and config.plt_window_size == [64, 0]
    assert config.plt_normalize_per_loop is True
    assert config.plt_gate_use_hidden_states is False
    assert config.plt_emb_scale == 1.0 and config.plt_hidden_scale == 1.0
    assert (config.vocab_size, config.hidden_size, config.intermediate_size) == (75904, 5120, 27648)
    assert (config.num_hidden_layers, config.num_attention_heads) == (14, 40)
    assert (config.num_key_value_heads, config.head_dim) == (8, 128)
    assert config.max_position_embeddings == 131072 and config.rms_norm_eps == 1e-5
    assert config.bos_token_id == 1 and config.eos_token_id == [2, 75864, 75869]
    assert config.rope_parameters["rope_theta"] == 500000.0
    assert not (config.tie_word_embeddings or config.attention_bias or config.mlp_bias)
    # Our own type keeps its documented defaults.
    ours = plt.PLTConfig()
    assert ours.plt_normalize_per_loop is False and ours.plt_gate_use_hidden_states is True


def test_nulls_load_as_the_published_class_reads_them(tmp_path: Path) -> None:
    config_json = {
        **SHAPE,
        "model_type": "iquestpltcoder",
        "plt_emb_scale": None,
        "plt_hidden_scale": None,
        "plt_window_size": None,
        "eos_token_id": None,
        "plt_gate_use_hidden_states": None,
        "plt_normalize_per_loop": None,
    }
    (tmp_path / "config.json").write_text(json.dumps(config_json))
    config = transformers.AutoConfig.from_pretrained(tmp_path)
    assert config.plt_emb_scale == 1.0 and config.plt_hidden_scale == 1.0
    assert config.plt_window_size == [64, 0] and config.eos_token_id == [2, 75864, 75869]
    assert config.plt_gate_use_hidden_states is False and config.plt_normalize_per_loop is False
    # Scales given as numbers are kept.
    config_json.update(plt_emb_scale=0.5, plt_hidden_scale=2)
    (tmp_path / "config.json").write_text(json.dumps(config_json))
    config = transformers.AutoConfig.from_pretrained(tmp_path)
    assert (config.plt_emb_scale, config.plt_hidden_scale) == (0.5, 2.0)


def test_config_with_only_published_fields_computes_the_published_graph(tmp_path: Path) -> None:
    """No `plt_normalize_per_loop`, `plt_gate_use_hidden_states` or scales in the file: the
    model must shift, normalise between loops and gate on the query, as the published class."""
    state = source_state(hidden_gate=False)
    config_json = {
        **SHAPE,
        "architectures": ["IQuestPLTCoderForCausalLM"],
        "model_type": "iquestpltcoder",
        "hidden_act": "silu",
        "rope_theta": THETA,
        "torch_dtype": "float32",
        "plt_num_loops": 2,
        "plt_window_size": [3, 0],
        "bos_token_id": 1,
    }
    model = load(write_dir(tmp_path, config_json, state))
    with torch.no_grad():
        ours = model(IDS).logits
    expected = reference_logits(
        state, IDS, loops=2, window=3, shift=True, normalize=True, hidden_gate=False
    )
    assert (ours - expected).abs().max().item() < TOL
    # The check can tell the readings apart: without the per-loop norm the logits move.
    unnormalised = reference_logits(
        state, IDS, loops=2, window=3, shift=True, normalize=False, hidden_gate=False
    )
    assert (unnormalised - expected).abs().max().item() > 1e-3
    assert (step_by_step_logits(model, IDS) - expected).abs().max().item() < TOL


def test_published_scales_and_hidden_gate_follow_the_definition(tmp_path: Path) -> None:
    state = source_state(hidden_gate=True)
    config_json = {
        **SHAPE,
        "model_type": "iquestpltcoder",
        "rope_theta": THETA,
        "plt_window_size": [3, 0],
        "plt_gate_use_hidden_states": True,
        "plt_emb_scale": 0.7,
        "plt_hidden_scale": 0.3,
    }
    model = load(write_dir(tmp_path, config_json, state))
    expected = reference_logits(
        state,
        IDS,
        loops=2,
        window=3,
        shift=True,
        normalize=True,
        hidden_gate=True,
        emb_scale=0.7,
        hidden_scale=0.3,
    )
    with torch.no_grad():
        assert (model(IDS).logits - expected).abs().max().item() < TOL
    assert (step_by_step_logits(model, IDS) - expected).abs().max().item() < TOL


# --- first-generation loop checkpoints -------------------------------------------------------


def loop_v1_dir(path: Path, loops: int, window_with_self: int) -> tuple[Path, dict[str, Any]]:
    """An `iquestloopcoder` directory: `loop_num`, `loop_window_size`, `gate_projections`."""
    state = source_state(hidden_gate=False, loops=loops)
    published: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if ".self_attn.plt_gate." in key:
            layer = key.split(".")[2]
            key = f"model.gate_projections.{layer}.{key.rsplit('.', 1)[1]}"
        published[key] = value
    config_json = {
        **SHAPE,
        "architectures": ["IQuestLoopCoderForCausalLM"],
        "model_type": "iquestloopcoder",
        "rope_theta": THETA,
        "loop_num": loops,
        "loop_window_size": window_with_self,
    }
    return write_dir(path, config_json, published), state


@pytest.mark.parametrize("loops", [2, 3])
def test_loop_v1_checkpoint_computes_the_loop_v1_definition(tmp_path: Path, loops: int) -> None:
    path, state = loop_v1_dir(tmp_path, loops, window_with_self=4)
    model = load(path)
    assert type(model) is plt.IQuestLoopCoderForCausalLM
    assert model.config.plt_loop_mode == "loop_v1" and model.config.plt_window_size == [3, 0]
    expected = reference_logits(
        state, IDS, loops=loops, window=3, shift=False, normalize=False, hidden_gate=False
    )
    with torch.no_grad():
        assert (model(IDS).logits - expected).abs().max().item() < TOL
    # Decoding one token at a time (ring-buffer windows, no parallel step) gives the same.
    assert (step_by_step_logits(model, IDS) - expected).abs().max().item() < TOL
    # And it is not the PLT reading of the same weights.
    shifted = reference_logits(
        state, IDS, loops=loops, window=3, shift=True, normalize=False, hidden_gate=False
    )
    assert (shifted - expected).abs().max().item() > 1e-3


def test_loop_v1_generate_matches_uncached_greedy_and_resaves(tmp_path: Path) -> None:
    path, _ = loop_v1_dir(tmp_path / "published", 2, window_with_self=3)
    model = load(path)
    model.save_pretrained(tmp_path / "resaved")
    saved = json.loads((tmp_path / "resaved" / "config.json").read_text())
    assert (saved["loop_num"], saved["loop_window_size"]) == (2, 3)
    tensors = safetensors_torch.load_file(str(tmp_path / "resaved" / "model.safetensors"))
    assert "model.gate_projections.1.weight" in tensors
    again = load(tmp_path / "resaved")
    with torch.no_grad():
        assert torch.equal(again(IDS).logits, model(IDS).logits)
    prompt = IDS[:, :4]
    cached = model.generate(prompt, max_new_tokens=8, do_sample=False)
    uncached = model.generate(prompt, max_new_tokens=8, do_sample=False, use_cache=False)
    assert torch.equal(cached, uncached)
