"""KV cache of the Parallel Loop Transformer, keyed by (layer, loop).

Layout for L physical layers and R loops (slot `loop * L + layer` of `Cache.layers`):

- loop 1 (loop_idx 0): a full, growing KV cache per layer (`DynamicLayer`). It is the only
  full-length cache in PLT mode; loops >= 2 read it as their global branch.
- loops >= 2 in PLT mode: a ring buffer of the last w + 1 keys/values per layer
  (`PLTWindowLayer`), the local branch: exactly the window "token itself plus w previous".
- plain looped mode: every loop has its own full cache (the baseline costs R times the memory).
- `loop_states`: the last hidden state h(r) of loops r = 1..R-1 for every batch row, shape
  `[batch, R - 1, hidden]`. Loop r + 1 of the next token starts from it (cross-loop shift).

A cache slot shared between loop iterations is what broke cached generation of other looped
models after a few tokens; here every (layer, loop) has its own slot, and the batch operations
of the `Cache` API (beam reordering, batch selection, repetition) also move `loop_states`, so
no loop reads another loop's keys and no row another row's state.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicLayer

from .configuration_plt import PLTConfig


class PLTWindowLayer(DynamicLayer):
    """Ring buffer of the last `window + 1` keys and values of one (layer, loop >= 2) slot.

    The window is "the token itself plus `window` previous tokens", so `window + 1` slots hold
    exactly what a decode step attends to. The token at sequence index j (counting left
    padding) lives in slot `j % (window + 1)`. The buffer is allocated once; memory does not
    grow with the sequence. Slot order is irrelevant to attention (RoPE is already applied to
    the stored keys); the model masks slots by the sequence index they hold
    (`ring_sequence_indices`).

    `update` with one new token writes it in place and returns the ring itself (no copy: the
    decode step attends to the buffer directly). With a chunk of q > 1 tokens it returns the
    ring as it was before the chunk followed by the chunk (earlier chunk tokens need entries
    that later ones overwrite), then stores the newest tokens.
    """

    is_sliding = True
    is_croppable = False

    def __init__(self, window: int) -> None:
        super().__init__()
        if window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        self.window = window
        self.capacity = window + 1
        self.cumulative_length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        batch, heads, _, head_dim = key_states.shape
        self.keys = key_states.new_zeros(batch, heads, self.capacity, head_dim)
        self.values = value_states.new_zeros(batch, heads, self.capacity, value_states.shape[-1])
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: object, **kwargs: object
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One token: the ring after writing it. A chunk: ring-before + chunk `[B, h, w+1+q, d]`
        (just the chunk when nothing was stored before)."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        past, q = self.cumulative_length, key_states.shape[-2]
        self.cumulative_length += q
        if q == 1:
            slot = past % self.capacity
            self.keys.narrow(-2, slot, 1).copy_(key_states)
            self.values.narrow(-2, slot, 1).copy_(value_states)
            return self.keys, self.values
        if past > 0:
            keys = torch.cat([self.keys, key_states], dim=-2)
            values = torch.cat([self.values, value_states], dim=-2)
        else:
            keys, values = key_states, value_states
        kept = min(q, self.capacity)
        first = past + q - kept
        slots = torch.arange(first, first + kept, device=self.keys.device) % self.capacity
        self.keys.index_copy_(-2, slots, key_states[:, :, q - kept :])
        self.values.index_copy_(-2, slots, value_states[:, :, q - kept :])
        return keys, values

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        """Number of keys the next `update` returns, and the first sequence index they can hold."""
        past = self.cumulative_length
        if query_length == 1:
            return self.capacity, max(past + 1 - self.capacity, 0)
        ring = self.capacity if past > 0 else 0
        return ring + query_length, max(past - ring, 0)

    def get_seq_length(self) -> int:
        """Tokens seen so far (not tokens held: the ring holds at most `window + 1`)."""
        return self.cumulative_length

    def get_max_length(self) -> int:
        return self.capacity

    def reset(self) -> None:
        self.keys = self.values = None
        self.is_initialized = False
        self.cumulative_length = 0

    def crop(self, tokens_to_remove: int) -> None:
        """Only a no-op crop is possible: evicted ring entries cannot be brought back."""
        if tokens_to_remove != 0:
            raise ValueError(
                "A PLT window layer cannot be cropped: its ring buffer has already dropped the "
                "tokens that a rollback would need. Re-run the prefill instead."
            )

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.is_initialized:
            self.keys = self.keys.repeat_interleave(repeats, dim=0)
            self.values = self.values.repeat_interleave(repeats, dim=0)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self.keys = self.keys[indices, ...]
            self.values = self.values[indices, ...]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        if self.is_initialized:
            self.keys = self.keys.index_select(0, beam_idx.to(self.keys.device))
            self.values = self.values.index_select(0, beam_idx.to(self.values.device))


def ring_sequence_indices(stored: int, capacity: int, device: torch.device) -> torch.Tensor:
    """Sequence index held by each ring slot once `stored` tokens were written (negative = empty).

    Slot s holds the latest index j <= stored - 1 with j % capacity == s.
    """
    slots = torch.arange(capacity, device=device)
    last = stored - 1
    return last - torch.remainder(last - slots, capacity)


class PLTCache(Cache):
    """Cache for `PLTForCausalLM`: one slot per (layer, loop), plus the per-loop last states.

    Use it like any transformers cache; `generate()` creates one automatically. Methods that
    take `layer_idx` also take `loop_idx` (0-based; loop_idx 0 is loop 1). A flat index
    `loop_idx * num_hidden_layers + layer_idx` addresses `self.layers` directly.
    """

    def __init__(self, config: PLTConfig) -> None:
        config = config.get_text_config(decoder=True)
        self.num_hidden_layers: int = config.num_hidden_layers
        self.num_loops: int = config.plt_num_loops
        self.loop_mode: str = config.plt_loop_mode
        self.window: int = config.plt_local_window
        layers: list[DynamicLayer] = []
        for loop_idx in range(self.num_loops):
            for _ in range(self.num_hidden_layers):
                if loop_idx == 0 or self.loop_mode == "plain":
                    layers.append(DynamicLayer())
                else:
                    layers.append(PLTWindowLayer(self.window))
        super().__init__(layers=layers)
        self.loop_states: torch.Tensor | None = None

    def cache_index(self, layer_idx: int, loop_idx: int = 0) -> int:
        """Flat slot of (layer, loop) in `self.layers`."""
        if not 0 <= layer_idx < self.num_hidden_layers or not 0 <= loop_idx < self.num_loops:
            raise IndexError(
                f"(layer {layer_idx}, loop {loop_idx}) is outside this cache of "
                f"{self.num_hidden_layers} layers x {self.num_loops} loops."
            )
        return loop_idx * self.num_hidden_layers + layer_idx

    def layer(self, layer_idx: int, loop_idx: int = 0) -> DynamicLayer:
        """The cache layer object of (layer, loop)."""
        return self.layers[self.cache_index(layer_idx, loop_idx)]

    def update(
        self,
        key_states: torch.Tensor,
        value_states: torch.Tensor,
        layer_idx: int,
        loop_idx: int = 0,
        *args: object,
        **kwargs: object,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Appends to the slot of (layer, loop) and returns the keys/values to attend over."""
        return super().update(key_states, value_states, self.cache_index(layer_idx, loop_idx))

    def get_seq_length(self, layer_idx: int = 0, loop_idx: int = 0) -> int:
        """Tokens seen by (layer, loop); the default, loop 1 of layer 0, is the sequence length."""
        return self.layers[self.cache_index(layer_idx, loop_idx)].get_seq_length()

    def get_mask_sizes(
        self, query_length: int, layer_idx: int = 0, loop_idx: int = 0
    ) -> tuple[int, int]:
        return self.layers[self.cache_index(layer_idx, loop_idx)].get_mask_sizes(query_length)

    def get_max_length(self, layer_idx: int | None = None, loop_idx: int = 0) -> int:
        """-1 (unbounded) for the cache as a whole: loop 1 always keeps the full sequence."""
        if layer_idx is None:
            return -1
        return self.layers[self.cache_index(layer_idx, loop_idx)].get_max_length()

    @property
    def is_croppable(self) -> bool:
        """False in PLT mode with R > 1: ring buffers and loop states cannot be rolled back."""
        return self.loop_states is None and all(layer.is_croppable for layer in self.layers)

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove != 0 and not self.is_croppable:
            raise ValueError(
                "This PLTCache cannot be cropped (ring buffers and per-loop last states drop the "
                "past); assisted or speculative decoding is not supported with R > 1 in PLT mode."
            )
        super().crop(tokens_to_remove)

    def reset(self) -> None:
        super().reset()
        self.loop_states = None

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        super().reorder_cache(beam_idx)
        if self.loop_states is not None:
            self.loop_states = self.loop_states.index_select(
                0, beam_idx.to(self.loop_states.device)
            )

    def batch_repeat_interleave(self, repeats: int) -> None:
        super().batch_repeat_interleave(repeats)
        if self.loop_states is not None:
            self.loop_states = self.loop_states.repeat_interleave(repeats, dim=0)

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        super().batch_select_indices(indices)
        if self.loop_states is not None:
            self.loop_states = self.loop_states[indices, ...]

    def nbytes(self) -> dict[str, int]:
        """Bytes held, split into loop-1 (full) KV, other full KV, window KV and loop states."""
        sizes = {"loop1_kv": 0, "other_full_kv": 0, "window_kv": 0, "loop_states": 0}
        for index, layer in enumerate(self.layers):
            if not layer.is_initialized or layer.keys is None:
                continue
            size = layer.keys.nbytes + layer.values.nbytes
            if isinstance(layer, PLTWindowLayer):
                sizes["window_kv"] += size
            elif index < self.num_hidden_layers:
                sizes["loop1_kv"] += size
            else:
                sizes["other_full_kv"] += size
        if self.loop_states is not None:
            sizes["loop_states"] = self.loop_states.nbytes
        sizes["total"] = sum(sizes.values())
        return sizes


__all__ = ["PLTCache", "PLTWindowLayer", "ring_sequence_indices"]
