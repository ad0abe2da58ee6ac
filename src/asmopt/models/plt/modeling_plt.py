"""Parallel Loop Transformer (PLT) for causal language modelling, in transformers' Llama layout.

One shared stack of L Llama-style layers runs R times ("loops"). Three modes share this file:

- R = 1: a plain Llama decoder (numerically the same as `LlamaForCausalLM`).
- PLT (`plt_loop_mode="plt"`, R > 1), as in LoopCoder-v2:
    loop 1:      B(1) = E(x), ordinary causal attention, writes the only full KV cache;
    loop r >= 2: B(r) = a * E(x) + b * shift(n(h(r-1))), shift(h)_i = h_{i-1}, shift(h)_0 = 0,
                 n = the shared final norm if `plt_normalize_per_loop` else identity;
                 attention y = g * y_global + (1 - g) * y_local per head, where y_global
                 attends loop 1's keys/values of the same layer at positions <= i and y_local
                 attends this loop's own keys/values at positions i - w ... i.
  Logits come from N(h(R)). RoPE positions are the same in every loop.
- loop v1 (`plt_loop_mode="loop_v1"`, IQuest-Coder-V1-Loop): loop r >= 2 takes h(r-1) as it is
  (no shift, no embedding) and uses the same gated attention as PLT; loops run one after
  another, also when decoding.
- plain looped baseline (`plt_loop_mode="plain"`): h(r) = f(n(h(r-1))), h(0) = E(x), every loop
  with its own full causal attention and KV cache.

Window convention: the local branch of token i sees **itself plus the w previous tokens**
(w = `config.plt_local_window` = `plt_window_size[0]`), i.e. w + 1 keys, counted in sequence
slots. Left padding sits before the first real token, so with padding the window is the same
set of real tokens as without.

Global-branch convention: loop r >= 2 at token i sees loop 1's keys at positions 0 ... i,
*including i itself*. In the parallel decode step loop 1's key of token t is computed in the same
batched projection as the other loops' queries, so it is available before attention; the
decode step therefore reproduces the teacher-forced forward exactly.

Decode: because loop r's input for token t needs h(r-1) of token t - 1 only, all R loops of a
step are independent given the cache. `PLTModel` stacks them as R rows along the sequence axis
and runs every layer once over `[batch, R, hidden]` ("parallel decode step"): one pass over the
weights instead of R. Prefill, training and the plain baseline run the loops one after another
over the whole chunk ("sequential path").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init
from transformers.activations import ACT2FN
from transformers.cache_utils import Cache
from transformers.conversion_mapping import (
    get_checkpoint_conversion_mapping,
    register_checkpoint_conversion_mapping,
)
from transformers.core_model_loading import WeightRenaming
from transformers.generation import GenerationMixin
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS, dynamic_rope_update
from transformers.modeling_utils import PreTrainedModel
from transformers.utils import logging

from . import kernels
from .cache_plt import PLTCache, ring_sequence_indices
from .configuration_plt import IQuestLoopCoderConfig, IQuestPLTCoderConfig, PLTConfig

logger = logging.get_logger(__name__)

AttentionKind = Literal["causal", "gated", "parallel"]


class PLTRMSNorm(nn.Module):
    """RMSNorm computed in float32 and cast back, as Llama does (bf16 sums lose precision)."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.weight * self.normalize(hidden_states)

    def normalize(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """x / rms(x) in the input dtype, before the weight. Norms with the same eps over the
        same input share it (the attention pre-norm and the hidden-state gate's norm)."""
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        mean_square = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(mean_square + self.variance_epsilon)
        return hidden_states.to(input_dtype)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class PLTRotaryEmbedding(nn.Module):
    """RoPE tables. Every loop uses the same positions (the loop offset is only the shift)."""

    def __init__(self, config: PLTConfig) -> None:
        super().__init__()
        self.config = config
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.rope_type: str = config.rope_parameters["rope_type"]
        rope_init_fn: Callable[..., tuple[torch.Tensor, float]] = (
            self.compute_default_rope_parameters
            if self.rope_type == "default"
            else ROPE_INIT_FUNCTIONS[self.rope_type]
        )
        inv_freq, self.attention_scaling = rope_init_fn(config)
        self.inv_freq = nn.Buffer(inv_freq, persistent=False)
        self.original_inv_freq = nn.Buffer(inv_freq.clone(), persistent=False)

    @staticmethod
    def compute_default_rope_parameters(
        config: PLTConfig, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, float]:
        """inv_freq_k = base^(-2k / head_dim); no extra scaling for the default RoPE."""
        base = config.rope_parameters["rope_theta"]
        dim = config.head_dim
        exponents = torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float) / dim
        return 1.0 / (base**exponents), 1.0

    @torch.no_grad()
    @dynamic_rope_update
    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        inv_freq = self.inv_freq.to(device=x.device, dtype=torch.float)
        freqs = position_ids[..., None].float() * inv_freq  # [B, Q, head_dim / 2]
        angles = torch.cat((freqs, freqs), dim=-1)  # [B, Q, head_dim]
        cos = angles.cos() * self.attention_scaling
        sin = angles.sin() * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, unsqueeze_dim: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotates q `[B, H, Q, d]` and k `[B, H_kv, Q, d]` by the `[B, Q, d]` tables."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class PLTLinear(nn.Linear):
    """`nn.Linear` (same parameters and checkpoint names) whose few-row CPU products use the
    kernel timed fastest on this machine (`kernels.product`): `F.linear`, the transposed
    product `(W @ x.T).T` or, for one row, `torch.mv`. Decode steps are exactly such
    products (batch x loops rows), and which kernel wins differs between CPUs; see `kernels`.

    `contiguous_output=False` (set where only element-wise ops read the output) lets the
    transposed product return its transposed view instead of copying it."""

    contiguous_output: bool = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if (
            x.device.type == "cpu"
            and x.dtype == self.weight.dtype
            and not torch.is_autocast_enabled("cpu")
        ):
            rows = x.numel() // x.shape[-1]
            if rows <= kernels.MAX_ROWS:
                out = kernels.product(
                    x.reshape(rows, x.shape[-1]), self.weight, self.bias, self.contiguous_output
                )
                return out.view(*x.shape[:-1], self.out_features)
        return F.linear(x, self.weight, self.bias)


class PLTMLP(nn.Module):
    """SwiGLU feed-forward: down(act(gate(x)) * up(x))."""

    def __init__(self, config: PLTConfig) -> None:
        super().__init__()
        self.hidden_size = config.hidden_size
        self.intermediate_size = config.intermediate_size
        self.gate_proj = PLTLinear(self.hidden_size, self.intermediate_size, bias=config.mlp_bias)
        self.up_proj = PLTLinear(self.hidden_size, self.intermediate_size, bias=config.mlp_bias)
        self.down_proj = PLTLinear(self.intermediate_size, self.hidden_size, bias=config.mlp_bias)
        self.gate_proj.contiguous_output = self.up_proj.contiguous_output = False
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """`[B, H_kv, K, d]` -> `[B, H_kv * n_rep, K, d]` (grouped-query attention)."""
    batch, kv_heads, length, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    expanded = hidden_states[:, :, None].expand(batch, kv_heads, n_rep, length, head_dim)
    return expanded.reshape(batch, kv_heads * n_rep, length, head_dim)


def attention_forward(
    module: PLTAttention,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    need_probs: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Softmax attention of `[B, H, Q, d]` queries over `[B, H_kv, K, d]` keys.

    `mask` is boolean, True where a query may attend (`[B or 1, 1, Q, K]`; None = everything).
    Returns the output as `[B, Q, H, d]` and, when `need_probs` (diagnostics) or the config asks
    for eager attention, the probabilities `[B, H, Q, K]`; otherwise SDPA computes the output.
    """
    dropout = module.attention_dropout if module.training else 0.0
    if need_probs or module.config._attn_implementation == "eager":
        key = repeat_kv(key, module.num_key_value_groups)
        value = repeat_kv(value, module.num_key_value_groups)
        scores = torch.matmul(query, key.transpose(2, 3)) * module.scaling  # [B, H, Q, K]
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        # Half-precision scores are normalised in float32; float32/float64 keep their own dtype.
        softmax_dtype = torch.float32 if scores.dtype in (torch.float16, torch.bfloat16) else None
        probs = F.softmax(scores, dim=-1, dtype=softmax_dtype).to(query.dtype)
        output = torch.matmul(F.dropout(probs, p=dropout, training=module.training), value)
        return output.transpose(1, 2), probs
    groups = module.num_key_value_groups
    batch, heads, q_len, head_dim = query.shape
    if groups > 1 and (mask is None or mask.shape[-2] == 1):
        # Every query row sees the same keys (one decode token; with R loops, the R rows over
        # the shared loop-1 cache), so the `groups` query heads of one key/value head can be
        # stacked as `groups * Q` rows of that head: the same dot products and softmaxes,
        # without `enable_gqa`. On CPU, SDPA with `enable_gqa` costs ~2x even for one row
        # (bf16, batch 8, 12 over 4 heads: 180 vs 82 us over 140 keys, 117 vs 61 us over a
        # 65-key window) and ~2.5x per extra query row; stacked rows cost almost nothing.
        # Measured on an Intel Xeon: bit-identical in bf16; float32 differs in the last bits
        # (the kernel blocks the rows differently).
        stacked = query.reshape(batch, heads // groups, groups * q_len, head_dim)
        output = F.scaled_dot_product_attention(
            stacked, key, value, attn_mask=mask, dropout_p=dropout, scale=module.scaling
        )
        return output.view(batch, heads, q_len, head_dim).transpose(1, 2), None
    output = F.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=mask,
        dropout_p=dropout,
        scale=module.scaling,
        enable_gqa=groups > 1,
    )
    return output.transpose(1, 2), None


@dataclass
class PLTAttentionMasks:
    """Boolean masks of one forward, shared by all layers (True = may attend).

    full:  `[B or 1, 1, Q, K_full]` over loop 1's keys (and over each loop's own keys in plain
           mode): causal, padding removed. None means "attend to every key".
    local: `[B or 1, 1, Q, K_local]` over the keys the local branch receives (ring slots first,
           then the chunk): window i - w ... i, padding removed. None = every key.
    local_key_index: `[K_local]` sequence index of each local key (negative = empty slot);
           used to place local attention probabilities on absolute positions.
    """

    full: torch.Tensor | None
    local: torch.Tensor | None
    local_key_index: torch.Tensor | None


@dataclass
class PLTLoopContext:
    """What one loop needs from the model at every layer.

    kind: "causal" (loop 1, R = 1, plain loops), "gated" (loops >= 2 of PLT over a chunk) or
          "parallel" (all R loops of one decode step as R rows).
    Without a cache, loop 1's keys/values reach the gated loops as layer arguments (not through
    this object) so that gradient checkpointing, reentrant or not, sees them as inputs.
    """

    kind: AttentionKind
    loop_idx: int
    masks: PLTAttentionMasks
    cache: PLTCache | None
    need_probs: bool


@dataclass
class AttentionResult:
    """What one attention call produces.

    output: `[B, Q, H, d]` before `o_proj`, `[B, Q, hidden]` after.
    key/value: this loop's keys/values after the cache update (causal loops only), which the
        gated loops of a cache-free forward use as their global branch.
    probs: `[B, H, Q, K_full]` with `need_probs`. gate: `[B, Q, H]` for gated loops.
    """

    output: torch.Tensor
    key: torch.Tensor | None = None
    value: torch.Tensor | None = None
    probs: torch.Tensor | None = None
    gate: torch.Tensor | None = None


def mix_branches(local: torch.Tensor, global_: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """g * global + (1 - g) * local, in the wider dtype of the two branches.

    Under autocast the branches and the gate can arrive in different dtypes (attention in
    bfloat16, a float32 gate or a float32 post-RoPE query path); `torch.lerp` refuses mixed
    dtypes, so all three are brought to one dtype first.
    """
    dtype = torch.promote_types(local.dtype, global_.dtype)
    return torch.lerp(local.to(dtype), global_.to(dtype), gate.to(dtype))


class PLTGate(nn.Module):
    """Per-head mixing weight g of gated sliding-window attention (weight on the global branch).

    Hidden-state mode (LoopCoder-v2): g = sigmoid(W RMSNorm(x) + b), x the layer input before the
    attention pre-norm, W `[H, hidden]`. Query mode (v1): g_h = sigmoid(w_h . q_h + b_h) on the
    post-RoPE query, W `[H, head_dim]`. Zero-initialised, so training starts from g = 0.5.
    One gate per physical layer, shared by all loops >= 2.
    """

    def __init__(self, config: PLTConfig) -> None:
        super().__init__()
        self.use_hidden_states = bool(config.plt_gate_use_hidden_states)
        heads = config.num_attention_heads
        in_features = config.hidden_size if self.use_hidden_states else config.head_dim
        self.gate_norm = (
            PLTRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
            if self.use_hidden_states
            else None
        )
        self.weight = nn.Parameter(torch.zeros(heads, in_features))
        self.bias = nn.Parameter(torch.zeros(heads))
        self._folded_key: tuple[object, ...] | None = None
        self._folded: tuple[torch.Tensor, torch.Tensor] | None = None

    def forward(self, unit_hidden: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        """unit_hidden `[B, Q, hidden]`: the layer input divided by its RMS (`normalize`), so
        RMSNorm(x) = gate_norm.weight * unit_hidden; query `[B, H, Q, head_dim]`.
        Returns g `[B, Q, H]` in the input dtype, computed in float32 for half precision."""
        dtype = query.dtype
        compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        weight, bias = self._weights(compute)
        if self.gate_norm is not None:
            # As a 2D product: a decode step passes a strided [B, R - 1, hidden] slice, and a
            # strided 3D input sends F.linear to a batched product that copies the weight per
            # row (measured: ~10% of a float32 batch-8 PLT-2 step).
            # Converted first: the conversion writes a contiguous tensor, so the reshape is a
            # view (reshaping the strided slice first would copy it twice in half precision).
            flat = unit_hidden.to(compute).reshape(-1, unit_hidden.shape[-1])
            # `F.linear` of a 2D input with a bias is exactly this `addmm`; called directly it
            # skips a dispatch and a transpose per layer and decode step.
            logits = torch.addmm(bias, flat, weight.t()).view(*unit_hidden.shape[:-1], -1)
        else:
            per_head = torch.matmul(query.to(compute), weight.unsqueeze(-1))  # [B, H, Q, 1]
            logits = per_head.squeeze(-1).transpose(1, 2) + bias  # [B, Q, H]
        return torch.sigmoid(logits).to(dtype)

    def _weights(self, compute: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """(W diag(gate_norm.weight), b) in `compute` dtype: W (w * x) = (W diag(w)) x.

        Without gradients the folded weights are kept until a parameter changes (new storage
        or an in-place update bumps `_version`), which saves a few small ops per layer in
        every decode step.
        """
        params = [self.weight, self.bias]
        if self.gate_norm is not None:
            params.append(self.gate_norm.weight)
        training = torch.is_grad_enabled() and any(p.requires_grad for p in params)
        if training or any(p.is_inference() for p in params):  # inference tensors: no _version
            return self._fold(compute)
        key = (compute, *((p.data_ptr(), p._version) for p in params))
        if self._folded_key != key:
            with torch.no_grad():
                self._folded = self._fold(compute)
            self._folded_key = key
        return self._folded

    def _fold(self, compute: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        weight = self.weight.to(compute)
        if self.gate_norm is not None:
            weight = weight * self.gate_norm.weight.to(compute)  # [H, hidden] * [hidden]
        return weight, self.bias.to(compute)


class PLTAttention(nn.Module):
    """Multi-head attention of one physical layer, used by every loop.

    Loop 1 (and every loop of the plain baseline) is ordinary causal attention. Loops >= 2 of
    PLT compute their own q, k, v with the same weights and mix a global branch (loop 1's
    keys/values) with a local window over their own keys/values, per head, before `o_proj`.
    """

    def __init__(self, config: PLTConfig, layer_idx: int) -> None:
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim: int = config.head_dim
        self.num_heads: int = config.num_attention_heads
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = config.attention_dropout
        self.is_causal = True

        self.q_proj = PLTLinear(
            config.hidden_size,
            config.num_attention_heads * self.head_dim,
            bias=config.attention_bias,
        )
        self.k_proj = PLTLinear(
            config.hidden_size,
            config.num_key_value_heads * self.head_dim,
            bias=config.attention_bias,
        )
        self.v_proj = PLTLinear(
            config.hidden_size,
            config.num_key_value_heads * self.head_dim,
            bias=config.attention_bias,
        )
        self.o_proj = PLTLinear(
            config.num_attention_heads * self.head_dim,
            config.hidden_size,
            bias=config.attention_bias,
        )
        self.plt_gate = PLTGate(config) if config.plt_uses_gated_attention else None

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        context: PLTLoopContext,
        unit_hidden: torch.Tensor,
        global_key: torch.Tensor | None = None,
        global_value: torch.Tensor | None = None,
    ) -> AttentionResult:
        """`unit_hidden` is the layer input divided by its RMS (the hidden-state gate reads it).
        `global_key`/`global_value`: loop 1's keys/values of this layer, for gated loops without
        a cache (with a cache they are read from it)."""
        batch, q_len, _ = hidden_states.shape
        hidden_shape = (batch, q_len, -1, self.head_dim)
        query = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)  # [B, H, Q, d]
        key = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)  # [B, H_kv, Q, d]
        value = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)  # [B, H_kv, Q, d]
        cos, sin = position_embeddings
        query, key = apply_rotary_pos_emb(query, key, cos, sin)

        if context.kind == "parallel":
            result = self._parallel_step(query, key, value, context, unit_hidden)
        elif context.kind == "gated":
            result = self._gated(query, key, value, context, unit_hidden, global_key, global_value)
        else:
            result = self._causal(query, key, value, context)
        output = result.output.reshape(batch, q_len, -1).contiguous()  # [B, Q, H * d]
        result.output = self.o_proj(output)
        return result

    def _causal(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        context: PLTLoopContext,
    ) -> AttentionResult:
        if context.cache is not None:
            key, value = context.cache.update(key, value, self.layer_idx, context.loop_idx)
        output, probs = attention_forward(
            self, query, key, value, context.masks.full, context.need_probs
        )
        return AttentionResult(output=output, key=key, value=value, probs=probs)

    def _gated(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        context: PLTLoopContext,
        unit_hidden: torch.Tensor,
        global_key: torch.Tensor | None,
        global_value: torch.Tensor | None,
    ) -> AttentionResult:
        masks = context.masks
        if context.cache is not None:
            loop1 = context.cache.layer(self.layer_idx, 0)
            global_key, global_value = loop1.keys, loop1.values  # already holds this chunk
            local_key, local_value = context.cache.update(
                key, value, self.layer_idx, context.loop_idx
            )
        else:
            if global_key is None or global_value is None:
                raise ValueError("A gated loop without a cache needs loop 1's keys and values.")
            local_key, local_value = key, value
        need = context.need_probs
        y_global, p_global = attention_forward(
            self, query, global_key, global_value, masks.full, need
        )
        y_local, p_local = attention_forward(self, query, local_key, local_value, masks.local, need)
        gate = self.plt_gate(unit_hidden, query)  # [B, Q, H]
        output = mix_branches(y_local, y_global, gate.unsqueeze(-1))
        probs = None
        if need:
            # Effective map over absolute positions: g * global + (1 - g) * local, both of which
            # are distributions over positions <= i.
            local_on_positions = torch.zeros_like(p_global).index_add_(
                -1, masks.local_key_index.clamp(min=0), p_local
            )
            g_probs = gate.transpose(1, 2).unsqueeze(-1)  # [B, H, Q, 1]
            probs = g_probs * p_global + (1 - g_probs) * local_on_positions
        return AttentionResult(output=output, probs=probs, gate=gate)

    def _parallel_step(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        context: PLTLoopContext,
        unit_hidden: torch.Tensor,
    ) -> AttentionResult:
        """One decode token, the R loops as R query rows: q `[B, H, R, d]`, k/v `[B, H_kv, R, d]`.

        Row 0 (loop 1) appends its key/value to the full cache; all R rows then attend that
        cache (row 0 as its causal attention, rows >= 1 as their global branch) in one call.
        Rows >= 1 write their key/value into their ring buffer and attend it (local branch) in
        one call batched over loops, and are mixed by the gate.
        """
        cache = context.cache
        batch, heads, rows, head_dim = query.shape
        global_key, global_value = cache.update(key[:, :, :1], value[:, :, :1], self.layer_idx, 0)
        y_global, _ = attention_forward(
            self, query, global_key, global_value, context.masks.full, False
        )  # [B, R, H, d]
        if rows == 1:
            return AttentionResult(output=y_global)

        loops = rows - 1
        local_keys, local_values = [], []
        for loop_idx in range(1, rows):
            # One new token: the ring after the write, `[B, H_kv, w + 1, d]`, not a copy.
            ring_key, ring_value = cache.update(
                key[:, :, loop_idx : loop_idx + 1],
                value[:, :, loop_idx : loop_idx + 1],
                self.layer_idx,
                loop_idx,
            )
            local_keys.append(ring_key)
            local_values.append(ring_value)
        local_mask = context.masks.local
        if loops == 1:
            local_key, local_value = local_keys[0], local_values[0]
            local_query = query[:, :, 1:]  # [B, H, 1, d]
        else:
            # [B, R - 1, H_kv, w + 1, d] -> [B * (R - 1), H_kv, w + 1, d]
            local_key = torch.stack(local_keys, dim=1).flatten(0, 1)
            local_value = torch.stack(local_values, dim=1).flatten(0, 1)
            # [B, H, R - 1, d] -> [B * (R - 1), H, 1, d]
            local_query = query[:, :, 1:].transpose(1, 2).reshape(batch * loops, heads, 1, head_dim)
            if local_mask is not None and local_mask.shape[0] > 1:
                # [B, 1, 1, K] -> [B * (R - 1), 1, 1, K]; a batch-free mask broadcasts as it is.
                local_mask = local_mask.unsqueeze(1).expand(-1, loops, -1, -1, -1).flatten(0, 1)
        y_local, _ = attention_forward(
            self, local_query, local_key, local_value, local_mask, False
        )  # [B * (R - 1), 1, H, d]
        y_local = y_local.reshape(batch, loops, heads, head_dim)

        gate = self.plt_gate(unit_hidden[:, 1:], query[:, :, 1:]).unsqueeze(-1)  # [B, R-1, H, 1]
        y_later = y_global[:, 1:]
        if y_local.dtype == y_later.dtype == gate.dtype:
            # Mixed in place over the global rows (same lerp as `mix_branches`, no
            # concatenation of row 0 with the mixed rows); y_global is SDPA's own output.
            torch.lerp(y_local, y_later, gate, out=y_later)
            return AttentionResult(output=y_global)
        mixed = mix_branches(y_local, y_later, gate)  # autocast: branches in other dtypes
        return AttentionResult(output=torch.cat([y_global[:, :1], mixed], dim=1))


class PLTDecoderLayer(GradientCheckpointingLayer):
    """Pre-norm Llama block; run once per loop with that loop's context."""

    def __init__(self, config: PLTConfig, layer_idx: int) -> None:
        super().__init__()
        self.hidden_size = config.hidden_size
        self.self_attn = PLTAttention(config=config, layer_idx=layer_idx)
        self.mlp = PLTMLP(config)
        self.input_layernorm = PLTRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = PLTRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        global_key: torch.Tensor | None = None,
        global_value: torch.Tensor | None = None,
        *,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        context: PLTLoopContext,
    ) -> tuple[
        torch.Tensor,
        torch.Tensor | None,
        torch.Tensor | None,
        torch.Tensor | None,
        torch.Tensor | None,
    ]:
        """Returns (hidden_states, key, value, probs, gate); see `AttentionResult`.

        Tensors that carry gradients are positional so that gradient checkpointing (which
        passes positional arguments to the checkpoint) tracks them in both of its modes.
        """
        residual = hidden_states
        unit = self.input_layernorm.normalize(hidden_states)  # also the gate norm's input
        result = self.self_attn(
            self.input_layernorm.weight * unit,
            position_embeddings=position_embeddings,
            context=context,
            unit_hidden=unit,
            global_key=global_key,
            global_value=global_value,
        )
        hidden_states = residual + result.output
        hidden_states = hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states, result.key, result.value, result.probs, result.gate


class PLTPreTrainedModel(PreTrainedModel):
    config_class = PLTConfig
    config: PLTConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules: ClassVar[list[str]] = ["PLTDecoderLayer"]
    _skip_keys_device_placement: ClassVar[list[str]] = ["past_key_values"]
    _supports_flash_attn = False
    _supports_sdpa = True
    _supports_flex_attn = False
    _can_compile_fullgraph = False
    _supports_attention_backend = False
    # The ring buffers and per-loop states of PLT cannot be rolled back, so assisted decoding
    # (which crops the cache) is refused up front instead of failing midway.
    _is_stateful = True

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, PLTGate):
            # Zero gate: g = sigmoid(0) = 0.5, an even blend of global and local at the start.
            init.zeros_(module.weight)
            init.zeros_(module.bias)


@dataclass
class PLTModelOutputWithPast(BaseModelOutputWithPast):
    r"""
    last_hidden_state: N(h(R)), the final-normed output of the last loop.
    hidden_states: with `output_hidden_states`, E(x) then the output of every (loop, layer) in
        loop-major order (1 + R * L tensors `[B, Q, hidden]`).
    attentions: with `output_attentions`, every (loop, layer) map in loop-major order.
    loop_hidden_states: with `output_loop_states`, h(0) = E(x) and the raw (pre-norm) output
        h(r) of every loop r = 1..R (R + 1 tensors `[B, Q, hidden]`).
    loop_attentions: with `output_attentions`, `[loop][layer]` probabilities `[B, H, Q, K]` over
        absolute key positions. Loops >= 2 of PLT give the effective map
        g * global + (1 - g) * local.
    loop_gates: with `output_loop_states`, `[loop][layer]` gate values `[B, Q, H]` (weight on
        the global branch); None for loop 1 and for modes without a gate.
    """

    loop_hidden_states: tuple[torch.Tensor, ...] | None = None
    loop_attentions: tuple[tuple[torch.Tensor, ...], ...] | None = None
    loop_gates: tuple[tuple[torch.Tensor, ...] | None, ...] | None = None


@dataclass
class PLTCausalLMOutputWithPast(CausalLMOutputWithPast):
    r"""Causal LM output plus the per-loop diagnostics of `PLTModelOutputWithPast`.

    logits come from the last loop only (the training loss uses them). Apply
    `model.lm_head(model.model.norm(h))` to an entry of `loop_hidden_states` for a logit lens.
    """

    loop_hidden_states: tuple[torch.Tensor, ...] | None = None
    loop_attentions: tuple[tuple[torch.Tensor, ...], ...] | None = None
    loop_gates: tuple[tuple[torch.Tensor, ...] | None, ...] | None = None


class PLTModel(PLTPreTrainedModel):
    """The shared decoder stack, run R times.

    `parallel_decode` (runtime switch, default True): decode steps of PLT run all R loops in one
    batched pass. Set it to False to run the loops one after another (same numbers, R passes
    over the weights); tests and the benchmark use it for comparison.
    """

    def __init__(self, config: PLTConfig) -> None:
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList(
            [PLTDecoderLayer(config, layer_idx) for layer_idx in range(config.num_hidden_layers)]
        )
        self.norm = PLTRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = PLTRotaryEmbedding(config=config)
        self.gradient_checkpointing = False
        self.parallel_decode = True
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        output_loop_states: bool | None = None,
        **kwargs: Any,
    ) -> PLTModelOutputWithPast:
        """Runs the loops over a chunk of Q new tokens.

        attention_mask: 2D `[B, past + Q]`, 1 for real tokens and 0 for (left) padding.
        position_ids: `[B, Q]`; defaults to `past + arange(Q)` (pass them for left padding,
            as `generate()` does, so that real tokens start at position 0).
        past_key_values: a `PLTCache` (created when `use_cache` and None).

        Wide because it keeps the keyword signature of transformers' decoder models
        (`LlamaModel.forward`), which the causal LM and transformers' own code call by name,
        plus `output_loop_states`."""
        if (input_ids is None) == (inputs_embeds is None):
            raise ValueError("Give exactly one of input_ids and inputs_embeds.")
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        past_key_values = self._cache_for_call(use_cache, past_key_values)
        output_attentions = bool(output_attentions)
        output_hidden_states = bool(
            self.config.output_hidden_states
            if output_hidden_states is None
            else output_hidden_states
        )
        output_loop_states = bool(output_loop_states)

        batch, q_len, _ = inputs_embeds.shape
        past_length = past_key_values.get_seq_length() if past_key_values is not None else 0
        if position_ids is None:
            position_ids = torch.arange(q_len, device=inputs_embeds.device) + past_length
            position_ids = position_ids.unsqueeze(0)
        key_valid = self._key_valid(attention_mask, batch, past_length + q_len)
        position_embeddings = self.rotary_emb(inputs_embeds, position_ids)

        diagnostics = output_attentions or output_hidden_states or output_loop_states
        gated = self.config.plt_uses_gated_attention
        self._check_loop_states(past_key_values, past_length)
        if self._decodes_in_parallel(past_key_values, past_length, q_len, diagnostics):
            masks = self._parallel_masks(key_valid, past_length, inputs_embeds.device)
            hidden_states = self._parallel_decode_step(
                inputs_embeds, position_embeddings, masks, past_key_values, key_valid, past_length
            )
            return PLTModelOutputWithPast(
                last_hidden_state=self.norm(hidden_states), past_key_values=past_key_values
            )

        masks = self._chunk_masks(
            key_valid, q_len, past_length, gated, past_key_values is not None, inputs_embeds.device
        )
        return self._run_loops(
            inputs_embeds,
            position_embeddings,
            masks,
            past_key_values,
            key_valid,
            past_length,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            output_loop_states=output_loop_states,
        )

    def _check_loop_states(self, past_key_values: PLTCache | None, past_length: int) -> None:
        """Refuse a cache with tokens but no per-loop states where the gated PLT mode needs
        them (h(r) of the last token, carried into the next step)."""
        if (
            self.config.plt_uses_gated_attention
            and self.config.plt_loop_mode == "plt"
            and past_length > 0
            and past_key_values.loop_states is None
        ):
            raise ValueError(
                "The PLTCache has tokens but no per-loop states; it was not filled by PLT."
            )

    def _decodes_in_parallel(
        self, past_key_values: PLTCache | None, past_length: int, q_len: int, diagnostics: bool
    ) -> bool:
        """Whether this call is a PLT decode step of one token after a filled cache, with
        no diagnostics asked for: then all R loops run in one batched pass."""
        return (
            self.parallel_decode
            and self.config.plt_loop_mode == "plt"
            and past_key_values is not None
            and past_length > 0
            and q_len == 1
            and not diagnostics
        )

    def _cache_for_call(
        self, use_cache: bool | None, past_key_values: Cache | None
    ) -> PLTCache | None:
        """The cache this call reads and fills, or None: a new PLTCache when one is wanted
        and none was given; none while training by default (nothing reads it) or under
        gradient checkpointing (replayed layers would write it twice)."""
        if use_cache is None:  # training never reads a cache; do not build one by default
            use_cache = self.config.use_cache and not self.training
        if self.gradient_checkpointing and self.training and use_cache:
            logger.warning_once("Gradient checkpointing replays layers; disabling the cache.")
            use_cache, past_key_values = False, None
        if use_cache and past_key_values is None:
            past_key_values = PLTCache(self.config)
        if past_key_values is not None and not isinstance(past_key_values, PLTCache):
            raise TypeError(
                f"PLT models need a PLTCache (one slot per layer and loop), got "
                f"{type(past_key_values).__name__}; pass PLTCache(model.config) or nothing."
            )
        return past_key_values

    def _run_loops(
        self,
        inputs_embeds: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        masks: PLTAttentionMasks,
        past_key_values: PLTCache | None,
        key_valid: torch.Tensor | None,
        past_length: int,
        *,
        output_attentions: bool,
        output_hidden_states: bool,
        output_loop_states: bool,
    ) -> PLTModelOutputWithPast:
        """The R loops over the chunk one after another (prefill, training, and any step that
        asks for diagnostics), each through every decoder layer, collecting the outputs
        asked for. Apart from `forward` so that it reads like Llama's decoder loop, with
        the argument handling and the parallel decode step kept out of the way.

        Wide because it takes what `forward` has worked out (embeddings, masks, cache, key mask,
        past length) and forward's three output flags, under forward's names."""
        gated = self.config.plt_uses_gated_attention
        # Only the shifted (PLT) mode carries h(r) of the last token into the next step.
        shifted = gated and self.config.plt_loop_mode == "plt"
        # Loop 1's keys/values per layer, the global branch of later loops when there is no cache.
        loop1_kv: list[tuple[torch.Tensor | None, torch.Tensor | None]] = [
            (None, None)
        ] * self.config.num_hidden_layers
        keep_loop1_kv = gated and past_key_values is None

        all_hidden: list[torch.Tensor] = [inputs_embeds]
        loop_hidden: list[torch.Tensor] = [inputs_embeds]
        loop_attentions: list[tuple[torch.Tensor, ...]] = []
        loop_gates: list[tuple[torch.Tensor, ...] | None] = []
        last_states: list[torch.Tensor] = []
        hidden_states = inputs_embeds
        for loop_idx in range(self.config.plt_num_loops):
            if loop_idx > 0:
                hidden_states = self._next_loop_input(
                    inputs_embeds, hidden_states, loop_idx, past_key_values, key_valid, past_length
                )
            context = PLTLoopContext(
                kind="gated" if gated and loop_idx > 0 else "causal",
                loop_idx=loop_idx,
                masks=masks,
                cache=past_key_values,
                need_probs=output_attentions,
            )
            hidden_states, layer_probs, layer_gates = self._through_layers(
                hidden_states,
                context,
                position_embeddings,
                loop1_kv,
                keep_loop1_kv and loop_idx == 0,
                all_hidden if output_hidden_states else None,
            )
            loop_hidden.append(hidden_states)
            loop_attentions.append(layer_probs)
            loop_gates.append(layer_gates)
            if shifted and past_key_values is not None and loop_idx < self.config.plt_num_loops - 1:
                last_states.append(hidden_states[:, -1])
        if last_states:
            past_key_values.loop_states = torch.stack(last_states, dim=1)  # [B, R - 1, hidden]

        return PLTModelOutputWithPast(
            last_hidden_state=self.norm(hidden_states),
            past_key_values=past_key_values,
            hidden_states=tuple(all_hidden) if output_hidden_states else None,
            attentions=tuple(p for loop in loop_attentions for p in loop)
            if output_attentions
            else None,
            loop_hidden_states=tuple(loop_hidden) if output_loop_states else None,
            loop_attentions=tuple(loop_attentions) if output_attentions else None,
            loop_gates=tuple(loop_gates) if output_loop_states else None,
        )

    def _through_layers(
        self,
        hidden_states: torch.Tensor,
        context: PLTLoopContext,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        loop1_kv: list[tuple[torch.Tensor | None, torch.Tensor | None]],
        keep_loop1_kv: bool,
        all_hidden: list[torch.Tensor] | None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...], tuple[torch.Tensor, ...] | None]:
        """One loop through every decoder layer: its output, each layer's attention
        probabilities (where asked for) and gates (None without any). Loops after the
        first read loop 1's keys and values (`loop1_kv`); loop 1 stores them there when
        `keep_loop1_kv`. Each layer's output is appended to `all_hidden` unless None."""
        layer_probs: list[torch.Tensor] = []
        layer_gates: list[torch.Tensor] = []
        loop_idx = context.loop_idx
        for layer_idx, decoder_layer in enumerate(self.layers[: self.config.num_hidden_layers]):
            global_key, global_value = loop1_kv[layer_idx] if loop_idx > 0 else (None, None)
            hidden_states, key, value, probs, gate = decoder_layer(
                hidden_states,
                global_key,
                global_value,
                position_embeddings=position_embeddings,
                context=context,
            )
            if keep_loop1_kv:
                loop1_kv[layer_idx] = (key, value)
            if all_hidden is not None:
                all_hidden.append(hidden_states)
            if probs is not None:
                layer_probs.append(probs)
            if gate is not None:
                layer_gates.append(gate)
        return hidden_states, tuple(layer_probs), tuple(layer_gates) if layer_gates else None

    def _loop_carry(self, hidden_states: torch.Tensor) -> torch.Tensor:
        """n(h): what a loop hands to the next one (the shared final norm, if configured)."""
        return self.norm(hidden_states) if self.config.plt_normalize_per_loop else hidden_states

    def _mix_embedding(self, embeds: torch.Tensor, carried: torch.Tensor) -> torch.Tensor:
        """a * E(x) + b * carried, skipping multiplications by 1."""
        a, b = self.config.plt_emb_scale, self.config.plt_hidden_scale
        embeds = embeds if a == 1.0 else a * embeds
        carried = carried if b == 1.0 else b * carried
        return embeds + carried

    def _next_loop_input(
        self,
        inputs_embeds: torch.Tensor,
        previous: torch.Tensor,
        loop_idx: int,
        cache: PLTCache | None,
        key_valid: torch.Tensor | None,
        past_length: int,
    ) -> torch.Tensor:
        """Input of loop `loop_idx + 1` over a chunk, from the previous loop's output."""
        carried = self._loop_carry(previous)
        if self.config.plt_loop_mode in ("plain", "loop_v1"):
            return carried  # no shift: loop r reads loop r - 1's output at the same token
        batch, q_len, hidden = carried.shape
        if cache is not None and past_length > 0:
            first = self._loop_carry(cache.loop_states[:, loop_idx - 1]).unsqueeze(1)
        else:
            first = carried.new_zeros(batch, 1, hidden)
        shifted = torch.cat([first, carried[:, :-1]], dim=1)  # shift(h)_i = h_{i-1}
        if key_valid is not None:
            # The previous slot of the first real token is padding (or nothing): shift in zero.
            previous_index = torch.arange(
                past_length - 1, past_length + q_len - 1, device=carried.device
            )
            previous_valid = key_valid[:, previous_index.clamp(min=0)] & (previous_index >= 0)
            shifted = torch.where(previous_valid.unsqueeze(-1), shifted, torch.zeros_like(shifted))
        return self._mix_embedding(inputs_embeds, shifted)

    def _parallel_decode_step(
        self,
        inputs_embeds: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        masks: PLTAttentionMasks,
        cache: PLTCache,
        key_valid: torch.Tensor | None,
        past_length: int,
    ) -> torch.Tensor:
        """All R loops of one token in one pass; returns h(R) `[B, 1, hidden]`."""
        loops = self.config.plt_num_loops
        rows = [inputs_embeds]  # loop 1: E(x_t)
        if loops > 1:
            carried = self._loop_carry(cache.loop_states)  # [B, R - 1, hidden] from step t - 1
            if key_valid is not None:
                carried = torch.where(
                    key_valid[:, past_length - 1, None, None], carried, torch.zeros_like(carried)
                )
            rows.append(self._mix_embedding(inputs_embeds, carried))
        hidden_states = torch.cat(rows, dim=1)  # [B, R, hidden]: row r is loop r + 1
        context = PLTLoopContext(
            kind="parallel", loop_idx=0, masks=masks, cache=cache, need_probs=False
        )
        for decoder_layer in self.layers[: self.config.num_hidden_layers]:
            hidden_states = decoder_layer(
                hidden_states, position_embeddings=position_embeddings, context=context
            )[0]
        if loops > 1:
            cache.loop_states = hidden_states[:, :-1]
        return hidden_states[:, -1:]

    @staticmethod
    def _key_valid(
        attention_mask: torch.Tensor | None, batch: int, total_length: int
    ) -> torch.Tensor | None:
        """`[B, past + Q]` bool of real (non-padding) slots, or None when there is no padding."""
        if attention_mask is None:
            return None
        if attention_mask.dim() != 2:
            raise ValueError(
                f"PLT takes a 2D attention_mask [batch, past + new], got shape "
                f"{tuple(attention_mask.shape)}."
            )
        if tuple(attention_mask.shape) != (batch, total_length):
            raise ValueError(
                f"attention_mask has shape {tuple(attention_mask.shape)} but the cache plus the "
                f"new tokens need ({batch}, {total_length})."
            )
        key_valid = attention_mask.bool()
        return None if bool(key_valid.all()) else key_valid

    def _chunk_masks(
        self,
        key_valid: torch.Tensor | None,
        q_len: int,
        past_length: int,
        gated: bool,
        has_cache: bool,
        device: torch.device,
    ) -> PLTAttentionMasks:
        """Masks of the sequential path: causal over the full keys, windowed over local keys.

        Local keys are what `PLTWindowLayer.update` returns: with a cache, one new token sees
        the ring after its write, a chunk sees the ring before the chunk followed by the chunk;
        without a cache, the chunk itself. Every query may always attend to its own slot, so
        that padding queries get a finite (unused) output instead of NaN.
        """
        query_index = torch.arange(past_length, past_length + q_len, device=device)  # [Q]
        full_index = torch.arange(past_length + q_len, device=device)  # [K_full]
        full = full_index[None, :] <= query_index[:, None]  # [Q, K_full]
        if key_valid is not None:
            full = (full[None] & key_valid[:, None, :]) | (full_index == query_index[:, None])
        full = full.view(-1, 1, q_len, past_length + q_len)
        if not gated:
            return PLTAttentionMasks(full=full, local=None, local_key_index=None)

        window = self.config.plt_local_window
        local_index = query_index
        if has_cache and q_len == 1:
            local_index = ring_sequence_indices(past_length + 1, window + 1, device)
        elif has_cache and past_length > 0:
            ring_index = ring_sequence_indices(past_length, window + 1, device)
            local_index = torch.cat([ring_index, query_index])  # [K_local]
        offset = query_index[:, None] - local_index[None, :]  # [Q, K_local]
        local = (offset >= 0) & (offset <= window) & (local_index >= 0)
        if key_valid is not None:
            local_valid = key_valid[:, local_index.clamp(min=0)]  # [B, K_local]
            local = (local[None] & local_valid[:, None, :]) | (offset == 0)
        local = local.view(-1, 1, q_len, local_index.numel())
        return PLTAttentionMasks(full=full, local=local, local_key_index=local_index)

    def _parallel_masks(
        self, key_valid: torch.Tensor | None, past_length: int, device: torch.device
    ) -> PLTAttentionMasks:
        """Masks of one decode step at index t = past_length (None where nothing is hidden).

        Global: every cached key 0..t, padding removed. Local: the w + 1 ring slots after the
        write of token t, which hold t - w ... t (fewer, and masked, while t < w).
        """
        window = self.config.plt_local_window
        full = None
        if key_valid is not None:
            full = key_valid.clone()
            full[:, past_length] = True
            full = full.view(-1, 1, 1, past_length + 1)
        local = None
        ring_index = None
        if self.config.plt_num_loops > 1:
            ring_index = ring_sequence_indices(past_length + 1, window + 1, device)
            if key_valid is not None or past_length < window:
                ring_valid = (ring_index >= 0)[None]  # [1, w + 1]
                if key_valid is not None:
                    ring_valid = ring_valid & key_valid[:, ring_index.clamp(min=0)]  # [B, w + 1]
                ring_valid = ring_valid | (ring_index == past_length)
                local = ring_valid.view(-1, 1, 1, window + 1)
        return PLTAttentionMasks(full=full, local=local, local_key_index=ring_index)


class PLTForCausalLM(PLTPreTrainedModel, GenerationMixin):
    """PLT decoder with a language-modelling head on the last loop."""

    _tied_weights_keys: ClassVar[dict[str, str]] = {"lm_head.weight": "model.embed_tokens.weight"}

    def __init__(self, config: PLTConfig) -> None:
        super().__init__(config)
        self.model = PLTModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = PLTLinear(config.hidden_size, config.vocab_size, bias=False)
        # Saving re-applies only the checkpoint renamings used at load time; a model built
        # from a config saves our (published v2) tensor names.
        self._weight_conversions = []
        self.post_init()

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        output_loop_states: bool | None = None,
        return_dict: bool | None = None,
        **kwargs: Any,
    ) -> PLTCausalLMOutputWithPast | tuple[Any, ...]:
        """Next-token logits of the last loop; the loss (with `labels`) is the usual shifted
        cross-entropy on them. `output_loop_states` / `output_attentions` add per-loop
        diagnostics (see `PLTModelOutputWithPast`).

        Wide because it keeps the keyword signature of transformers' causal LMs
        (`LlamaForCausalLM.forward`), which `generate()` and the trainers call by name, plus
        `output_loop_states`."""
        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            output_loop_states=output_loop_states,
        )
        hidden_states = outputs.last_hidden_state
        if isinstance(logits_to_keep, int):
            if logits_to_keep > 0:
                hidden_states = hidden_states[:, -logits_to_keep:]
        else:
            hidden_states = hidden_states[:, logits_to_keep]
        logits = self.lm_head(hidden_states)

        loss = None
        if labels is not None:
            loss = self.loss_function(
                logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs
            )
        output = PLTCausalLMOutputWithPast(
            loss=loss,
            logits=logits,
            past_key_values=outputs.past_key_values,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
            loop_hidden_states=outputs.loop_hidden_states,
            loop_attentions=outputs.loop_attentions,
            loop_gates=outputs.loop_gates,
        )
        use_dict = self.config.return_dict if return_dict is None else return_dict
        return output if use_dict else output.to_tuple()

    def _prepare_cache_for_generation(
        self,
        generation_config: Any,
        model_kwargs: dict[str, Any],
        generation_mode: Any,
        batch_size: int,
        max_cache_length: int,
    ) -> None:
        """`generate()` hook: a fresh `PLTCache` instead of transformers' `DynamicCache`."""
        user_cache = model_kwargs.get("past_key_values")
        if user_cache is not None:
            if not isinstance(user_cache, PLTCache):
                raise TypeError(
                    f"PLT generation needs a PLTCache, got {type(user_cache).__name__}; pass "
                    "PLTCache(model.config) or no cache."
                )
            user_cache._is_user_defined = True
            return
        if generation_config.use_cache is False:
            return
        if generation_config.cache_implementation not in (None, "dynamic"):
            raise ValueError(
                f"cache_implementation={generation_config.cache_implementation!r} is not "
                "supported by PLT; it uses its own PLTCache (leave cache_implementation unset)."
            )
        model_kwargs["past_key_values"] = PLTCache(self.config)


class IQuestPLTCoderForCausalLM(PLTForCausalLM):
    """`PLTForCausalLM` for published LoopCoder directories (`model_type: iquestpltcoder`).

    Same module tree and tensor names; a separate class so that the Auto classes map that
    model type to this native code.
    """

    config_class = IQuestPLTCoderConfig
    config: IQuestPLTCoderConfig


class IQuestLoopCoderForCausalLM(PLTForCausalLM):
    """`PLTForCausalLM` for first-generation loop directories (`model_type: iquestloopcoder`).

    The config sets `plt_loop_mode = "loop_v1"`; the gate tensors of those files
    (`model.gate_projections.{i}`) are renamed to `model.layers.{i}.self_attn.plt_gate` on load.
    """

    config_class = IQuestLoopCoderConfig
    config: IQuestLoopCoderConfig


def register_checkpoint_renames() -> None:
    """Tell transformers' loader the older tensor names of published directories
    (idempotent). Done when the model classes are defined, since any load of weights goes
    through them, whether reached through the Auto classes or imported directly."""
    if get_checkpoint_conversion_mapping(IQuestPLTCoderConfig.model_type) is None:
        register_checkpoint_conversion_mapping(
            IQuestPLTCoderConfig.model_type,
            [WeightRenaming(r"\.self_attn\.loop_gate_proj\.", ".self_attn.plt_gate.")],
        )
    if get_checkpoint_conversion_mapping(IQuestLoopCoderConfig.model_type) is None:
        # First-generation files keep the gates in a model-level list, one per layer.
        register_checkpoint_conversion_mapping(
            IQuestLoopCoderConfig.model_type,
            [WeightRenaming(r"gate_projections\.(\d+)\.", r"layers.\1.self_attn.plt_gate.")],
        )


register_checkpoint_renames()


__all__ = [
    "IQuestLoopCoderForCausalLM",
    "IQuestPLTCoderForCausalLM",
    "PLTAttentionMasks",
    "PLTCausalLMOutputWithPast",
    "PLTForCausalLM",
    "PLTModel",
    "PLTModelOutputWithPast",
    "PLTPreTrainedModel",
]
