"""Configuration of the Parallel Loop Transformer (PLT) and of LoopCoder checkpoints.

The field names are the published ones (`plt_num_loops`, `plt_window_size`, ...) so that a
LoopCoder-v2 `config.json` loads without translation; LoopCoder v1 names (`loop_num`,
`loop_window_size`) are read and rewritten to the new names. Everything else is a Llama
decoder: SwiGLU MLP, RMSNorm, RoPE, grouped-query attention.

Defaults are the published 7B LoopCoder-v2 shape (14 shared layers, d = 5120, R = 2, w = 64).
The config holds architecture only; runtime choices (cache, diagnostics) are forward arguments.
"""

from __future__ import annotations

from typing import Any, ClassVar

from huggingface_hub.dataclasses import strict
from transformers.configuration_utils import PreTrainedConfig
from transformers.modeling_rope_utils import RopeParameters

from asmopt.errors import InputError

PLT_LOOP_MODES: tuple[str, ...] = ("plt", "plain", "loop_v1")


@strict
class PLTConfig(PreTrainedConfig):
    r"""Configuration of [`PLTForCausalLM`].

    Loop fields (published names):
        plt_num_loops (`int`, defaults to 2): R, how many times the shared layer stack runs.
            R = 1 is a plain Llama-style decoder. v1's `loop_num` is read as this field.
        plt_window_size (`list[int]`, defaults to `[64, 0]`): the local window of gated
            sliding-window attention as `[left, right]`, flash-attention style: a token at
            index i attends its own loop's keys at indices i - left ... i + right. `right` must
            be 0 (decoding cannot see the future). So the window is **the token itself plus
            `left` previous tokens** (w = left; w + 1 keys). An int `w` means `[w, 0]`.
            LoopCoder v1's `loop_window_size = W` counts the token itself and becomes
            `[W - 1, 0]`. For comparison, transformers' own `sliding_window` equals w + 1.
        plt_normalize_per_loop (`bool`, defaults to False): pass `norm(h(r-1))` instead of
            `h(r-1)` to the next loop, `norm` being the shared final RMSNorm. None means False.
        plt_emb_scale (`float`, *optional*): a in `B(r) = a * E(x) + b * shift(h(r-1))`;
            None (the default) means 1.0.
        plt_hidden_scale (`float`, *optional*): b in the same formula; None means 1.0.
        plt_gate_use_hidden_states (`bool`, *optional*): gate mode of gated sliding-window
            attention. True: hidden-state gate `sigmoid(W_g RMSNorm_g(x) + b)` on the layer
            input (LoopCoder-v2). False: query gate `sigmoid(w_h . q_h + b_h)` on the
            post-RoPE query (LoopCoder v1). When absent it is False for v1 configs (they carry
            `loop_num`) and True otherwise.

    Our field:
        plt_loop_mode (`str`, defaults to `"plt"`): `"plt"` is the parallel loop transformer
            (cross-loop shift, shared loop-1 KV, gated sliding-window attention). `"plain"` is
            the baseline looped transformer `h(r) = f(h(r-1))` with R full KV caches, kept for
            comparisons. `"loop_v1"` is the first LoopCoder generation (IQuest-Coder-V1-Loop,
            `model_type: iquestloopcoder`): `h(r) = f(h(r-1))` without shift or embedding,
            loops >= 2 with the shared loop-1 KV and gated sliding-window attention; its
            loops cannot run in parallel within a decode step.

    The remaining fields are Llama's and mean the same.
    """

    model_type: ClassVar[str] = "asmopt_plt"
    keys_to_ignore_at_inference: ClassVar[list[str]] = ["past_key_values"]
    # RoPE base of the published checkpoints (used when a config gives no `rope_theta`).
    default_theta: ClassVar[float] = 500_000.0

    vocab_size: int = 76800
    hidden_size: int = 5120
    intermediate_size: int = 27648
    num_hidden_layers: int = 14
    num_attention_heads: int = 40
    num_key_value_heads: int | None = 8
    head_dim: int | None = None
    hidden_act: str = "silu"
    max_position_embeddings: int = 131072
    initializer_range: float = 0.02
    rms_norm_eps: float = 1e-5
    use_cache: bool = True
    pad_token_id: int | None = None
    bos_token_id: int | None = 1
    eos_token_id: int | list[int] | None = 2
    tie_word_embeddings: bool = False
    rope_parameters: RopeParameters | dict | None = None
    attention_bias: bool = False
    attention_dropout: float | int = 0.0
    mlp_bias: bool = False

    plt_num_loops: int | None = None
    plt_window_size: list[int] | int | None = None
    plt_normalize_per_loop: bool | None = False
    plt_emb_scale: float | int | None = None
    plt_hidden_scale: float | int | None = None
    plt_gate_use_hidden_states: bool | None = None
    plt_loop_mode: str = "plt"

    def __post_init__(self, **kwargs: Any) -> None:
        # LoopCoder v1 names. They are rewritten so that a saved config has one spelling only.
        loop_num = kwargs.pop("loop_num", None)
        loop_window_size = kwargs.pop("loop_window_size", None)
        is_v1 = loop_num is not None or loop_window_size is not None
        if loop_num is not None:
            if self.plt_num_loops is not None and self.plt_num_loops != loop_num:
                raise InputError(
                    f"`loop_num` ({loop_num}) and `plt_num_loops` ({self.plt_num_loops}) "
                    "disagree; give one of them."
                )
            self.plt_num_loops = int(loop_num)
        if self.plt_num_loops is None:
            self.plt_num_loops = 2
        if loop_window_size is not None:
            v1_window = [int(loop_window_size) - 1, 0]
            if self.plt_window_size is not None and _as_window(self.plt_window_size) != v1_window:
                raise InputError(
                    f"`loop_window_size` ({loop_window_size}, i.e. {v1_window}) and "
                    f"`plt_window_size` ({self.plt_window_size}) disagree; give one of them."
                )
            self.plt_window_size = v1_window

        self.plt_window_size = _as_window(
            64 if self.plt_window_size is None else self.plt_window_size
        )
        if self.plt_gate_use_hidden_states is None:
            self.plt_gate_use_hidden_states = self._default_gate_use_hidden_states(is_v1)
        self.plt_normalize_per_loop = bool(self.plt_normalize_per_loop)
        # None is "no scaling", as in the published class; stored as the number it means.
        self.plt_emb_scale = 1.0 if self.plt_emb_scale is None else float(self.plt_emb_scale)
        self.plt_hidden_scale = (
            1.0 if self.plt_hidden_scale is None else float(self.plt_hidden_scale)
        )
        self.attention_dropout = float(self.attention_dropout)
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        super().__post_init__(**kwargs)

    def _default_gate_use_hidden_states(self, is_v1: bool) -> bool:
        """Gate mode when the config leaves it unset (or null): ours picks by generation."""
        return not is_v1

    def validate_architecture(self) -> None:
        """Called by `@strict` validation; every message names the conflicting values."""
        if self.num_attention_heads % self.num_key_value_heads != 0:
            raise InputError(
                f"num_attention_heads ({self.num_attention_heads}) is not a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})."
            )
        if self.plt_num_loops < 1:
            raise InputError(f"plt_num_loops must be >= 1, got {self.plt_num_loops}.")
        if self.plt_loop_mode not in PLT_LOOP_MODES:
            raise InputError(
                f"plt_loop_mode must be one of {PLT_LOOP_MODES}, got {self.plt_loop_mode!r}."
            )
        left, right = _as_window(self.plt_window_size)
        if left < 0 or right != 0:
            raise InputError(
                f"plt_window_size must be [left >= 0, 0] (token itself plus `left` previous), "
                f"got {self.plt_window_size}."
            )

    @property
    def plt_local_window(self) -> int:
        """w: how many previous tokens the local branch sees besides the token itself."""
        return _as_window(self.plt_window_size)[0]

    @property
    def plt_uses_gated_attention(self) -> bool:
        """True when loops >= 2 exist and use the shared loop-1 KV plus a gated local window."""
        return self.plt_loop_mode in ("plt", "loop_v1") and self.plt_num_loops > 1


def _as_window(window: list[int] | tuple[int, ...] | int) -> list[int]:
    """Normalises `plt_window_size` to `[left, right]`; an int w means `[w, 0]`."""
    if isinstance(window, int):
        return [int(window), 0]
    values = [int(v) for v in window]
    if len(values) != 2:
        raise InputError(f"plt_window_size must be an int or [left, right], got {window}.")
    return values


class IQuestPLTCoderConfig(PLTConfig):
    """Configuration read from published LoopCoder-v2 directories (`model_type: iquestpltcoder`).

    Same fields and meaning as `PLTConfig`, but **the defaults are those of the published
    `IQuestPLTCoderConfig`** (configuration_iquestpltcoder.py of the LoopCoder-V2 release), so
    that a `config.json` which leaves a field out computes what the published code computes:
    `plt_normalize_per_loop` True, `plt_gate_use_hidden_states` False (query gate),
    `plt_emb_scale` / `plt_hidden_scale` None (= 1.0), `plt_window_size` None (= [64, 0]),
    `plt_num_loops` 2, `vocab_size` 75904, `head_dim` 128, `eos_token_id` None
    (= [2, 75864, 75869]), `rope_theta` 5e5, plus the 7B shape. A null in the file means what
    it means there (a null `plt_gate_use_hidden_states` or `plt_normalize_per_loop` is False).
    A separate class also lets the Auto classes map the type to native code.
    """

    model_type: ClassVar[str] = "iquestpltcoder"
    published_eos_token_id: ClassVar[list[int]] = [2, 75864, 75869]

    vocab_size: int = 75904
    head_dim: int | None = 128
    eos_token_id: int | list[int] | None = None
    plt_normalize_per_loop: bool | None = True
    plt_gate_use_hidden_states: bool | None = False

    def __post_init__(self, **kwargs: Any) -> None:
        if self.eos_token_id is None:
            self.eos_token_id = list(self.published_eos_token_id)
        super().__post_init__(**kwargs)

    def _default_gate_use_hidden_states(self, is_v1: bool) -> bool:
        return False


class IQuestLoopCoderConfig(PLTConfig):
    """Configuration of first-generation loop checkpoints (`model_type: iquestloopcoder`,
    IQuest-Coder-V1-Loop).

    Their `config.json` carries `loop_num` (R, default 2) and `loop_window_size` (W, default 64,
    counting the token itself, so `plt_window_size = [W - 1, 0]`). The computation is
    `plt_loop_mode = "loop_v1"`: loop r >= 2 takes loop r - 1's raw output (no shift, no
    embedding, no per-loop norm) and mixes, per head, attention over loop 1's keys/values
    with attention over its own window through the query gate `sigmoid(w_h . q_h + b_h)`.
    Gate tensors are stored as `model.gate_projections.{i}.{weight,bias}` and renamed on load.
    """

    model_type: ClassVar[str] = "iquestloopcoder"

    vocab_size: int = 75904
    head_dim: int | None = 128
    plt_normalize_per_loop: bool | None = False
    plt_gate_use_hidden_states: bool | None = False
    plt_loop_mode: str = "loop_v1"

    def __post_init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("loop_num", 2 if self.plt_num_loops is None else self.plt_num_loops)
        if self.plt_window_size is None:
            kwargs.setdefault("loop_window_size", 64)
        super().__post_init__(**kwargs)

    def _default_gate_use_hidden_states(self, is_v1: bool) -> bool:
        return False

    def to_dict(self) -> dict[str, Any]:
        """Also writes the first-generation names, so a re-saved directory still carries the
        fields the published loop-1 code reads."""
        output = super().to_dict()
        output["loop_num"] = self.plt_num_loops
        output["loop_window_size"] = self.plt_local_window + 1
        return output

    def validate_architecture(self) -> None:
        super().validate_architecture()
        if self.plt_loop_mode != "loop_v1":
            raise InputError(
                f"iquestloopcoder checkpoints compute plt_loop_mode 'loop_v1', got "
                f"{self.plt_loop_mode!r}; use PLTConfig for other modes."
            )


__all__ = ["PLT_LOOP_MODES", "IQuestLoopCoderConfig", "IQuestPLTCoderConfig", "PLTConfig"]
