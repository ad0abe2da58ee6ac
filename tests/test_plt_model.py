"""Numerics of the Parallel Loop Transformer: Llama equivalence, caches, decode paths, windows.

Tiny random models in float64, so that "equal" can mean 1e-10 rather than "close".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from conftest import lazy
from tiny_model import PLT_VOCAB as VOCAB
from tiny_model import tiny_plt_config, tiny_plt_model

if TYPE_CHECKING:
    import torch
    import transformers

    from asmopt.models import plt
    from asmopt.models.plt import cache_plt
else:
    torch = lazy("torch")
    transformers = lazy("transformers")
    plt = lazy("asmopt.models.plt")
    cache_plt = lazy("asmopt.models.plt.cache_plt")

pytestmark = pytest.mark.ml
TIGHT = 1e-10  # float64: paths that do the same arithmetic in another order


MODES = {
    "r1": {"plt_num_loops": 1},
    "plt2_hidden_gate": {"plt_num_loops": 2},
    "plt3_query_gate_norm_scaled": {
        "plt_num_loops": 3,
        "plt_gate_use_hidden_states": False,
        "plt_normalize_per_loop": True,
        "plt_emb_scale": 0.7,
        "plt_hidden_scale": 1.3,
    },
    "plt4_window0": {"plt_num_loops": 4, "plt_window_size": [0, 0]},
    "plain2": {"plt_num_loops": 2, "plt_loop_mode": "plain"},
}


def decode_logits(
    model: plt.PLTForCausalLM, ids: torch.Tensor, prefill: int, parallel: bool = True
) -> torch.Tensor:
    """Prefill `prefill` tokens, then feed the rest one at a time through the cache."""
    model.model.parallel_decode = parallel
    try:
        cache = plt.PLTCache(model.config)
        with torch.no_grad():
            out = model(ids[:, :prefill], past_key_values=cache, use_cache=True)
            logits = [out.logits]
            for t in range(prefill, ids.shape[1]):
                out = model(ids[:, t : t + 1], past_key_values=cache, use_cache=True)
                logits.append(out.logits)
    finally:
        model.model.parallel_decode = True
    return torch.cat(logits, dim=1)


def test_r1_matches_llama_with_copied_weights() -> None:
    torch.manual_seed(0)
    config = tiny_plt_config(plt_num_loops=1)
    model = plt.PLTForCausalLM(config).double().eval()
    llama_config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rms_norm_eps=config.rms_norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        pad_token_id=0,
    )
    llama = transformers.LlamaForCausalLM(llama_config).double().eval()
    llama.load_state_dict(model.state_dict(), strict=True)

    ids = torch.randint(2, VOCAB, (2, 11))
    with torch.no_grad():
        ours = model(ids).logits
        theirs = llama(ids).logits
    assert (ours - theirs).abs().max().item() < 1e-5
    # float32 too, where both use SDPA
    model.float()
    llama.float()
    with torch.no_grad():
        assert (model(ids).logits - llama(ids).logits).abs().max().item() < 1e-5


@pytest.mark.parametrize("mode", sorted(MODES))
def test_cached_decode_equals_full_recomputation(mode: str) -> None:
    model = tiny_plt_model(**MODES[mode])
    ids = torch.randint(2, VOCAB, (2, 12))
    with torch.no_grad():
        full = model(ids).logits
    for prefill in (1, 3, 4, 7):  # before, at and past the window of 3 (+1)
        cached = decode_logits(model, ids, prefill)
        assert (cached - full).abs().max().item() < TIGHT, f"prefill {prefill}"


def test_chunked_prefill_equals_full() -> None:
    model = tiny_plt_model(plt_num_loops=3)
    ids = torch.randint(2, VOCAB, (2, 14))
    with torch.no_grad():
        full = model(ids).logits
        cache = plt.PLTCache(model.config)
        chunks = [
            model(ids[:, a:b], past_key_values=cache).logits for a, b in ((0, 5), (5, 7), (7, 14))
        ]
    assert (torch.cat(chunks, dim=1) - full).abs().max().item() < TIGHT


@pytest.mark.parametrize("loops", [2, 3, 4])
def test_one_pass_parallel_decode_equals_loop_by_loop(loops: int) -> None:
    model = tiny_plt_model(plt_num_loops=loops)
    ids = torch.randint(2, VOCAB, (3, 10))

    calls: list[int] = []
    hook = model.model.layers[0].self_attn.q_proj.register_forward_hook(
        lambda module, args, output: calls.append(args[0].shape[1])
    )
    try:
        parallel = decode_logits(model, ids, prefill=2, parallel=True)
        parallel_rows = list(calls)
        calls.clear()
        sequential = decode_logits(model, ids, prefill=2, parallel=False)
        sequential_rows = list(calls)
    finally:
        hook.remove()
    assert (parallel - sequential).abs().max().item() < TIGHT
    steps = ids.shape[1] - 2
    # Parallel: prefill runs R loops over the chunk, then ONE call per step with R rows.
    assert parallel_rows == [2] * loops + [loops] * steps
    # Loop by loop: R calls per step, one row each.
    assert sequential_rows == [2] * loops + [1] * (loops * steps)


def left_padded_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three rows of 12 slots, two of them left-padded (by 5 and 2): ids, mask, positions as
    `generate()` makes them (real tokens start at position 0)."""
    lengths = (12, 7, 10)
    ids = torch.randint(2, VOCAB, (len(lengths), 12))
    mask = torch.zeros_like(ids)
    for row, length in enumerate(lengths):
        mask[row, 12 - length :] = 1
        ids[row, : 12 - length] = 0
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids, mask, positions


def padded_decode_logits(
    model: plt.PLTForCausalLM,
    ids: torch.Tensor,
    mask: torch.Tensor,
    positions: torch.Tensor,
    prefill: int,
    parallel: bool,
) -> torch.Tensor:
    """`decode_logits` with a padding mask and positions, as `generate()` feeds them."""
    model.model.parallel_decode = parallel
    try:
        cache = plt.PLTCache(model.config)
        with torch.no_grad():
            out = model(
                ids[:, :prefill],
                attention_mask=mask[:, :prefill],
                position_ids=positions[:, :prefill],
                past_key_values=cache,
                use_cache=True,
            )
            logits = [out.logits]
            for t in range(prefill, ids.shape[1]):
                out = model(
                    ids[:, t : t + 1],
                    attention_mask=mask[:, : t + 1],
                    position_ids=positions[:, t : t + 1],
                    past_key_values=cache,
                    use_cache=True,
                )
                logits.append(out.logits)
    finally:
        model.model.parallel_decode = True
    return torch.cat(logits, dim=1)


# Largest |logit difference| allowed between decode paths per dtype. float64 runs the same
# arithmetic in another order. float32 and bfloat16 may round differently (products over
# another number of rows, softmaxes blocked differently): float32 paths differed by <= 1e-7
# and bfloat16 paths not at all on an Intel Xeon; the bounds are 10x / ~5 bfloat16 ulps of
# these logits (their spread is ~0.1), so a wrong key, row or gate still fails.
DECODE_TOLERANCE = {"float64": TIGHT, "float32": 1e-6, "bfloat16": 1e-2}


@pytest.mark.parametrize("dtype", sorted(DECODE_TOLERANCE))
@pytest.mark.parametrize("loops", [2, 3])
def test_fast_decode_step_equals_reference_paths_with_left_padding(dtype: str, loops: int) -> None:
    """The one-pass decode step (all loops' rows stacked per key/value head over the shared
    loop-1 cache, the gate mixed in place) gives the logits of the full forward and of the
    loop-by-loop decode, on a left-padded batch whose ring buffers wrap."""
    model = tiny_plt_model(plt_num_loops=loops).to(getattr(torch, dtype))
    ids, mask, positions = left_padded_batch()
    real = mask.bool()
    with torch.no_grad():
        full = model(ids, attention_mask=mask, position_ids=positions).logits
    tolerance = DECODE_TOLERANCE[dtype]
    for prefill in (2, 6):  # before and after every row's first real token
        fast = padded_decode_logits(model, ids, mask, positions, prefill, parallel=True)
        slow = padded_decode_logits(model, ids, mask, positions, prefill, parallel=False)
        fast_vs_slow = (fast - slow)[real].abs().max().item()
        fast_vs_full = (fast - full)[real].abs().max().item()
        assert fast_vs_slow <= tolerance, f"prefill {prefill}: {fast_vs_slow}"
        assert fast_vs_full <= tolerance, f"prefill {prefill}: {fast_vs_full}"


@pytest.mark.parametrize("dtype", ["float64", "float32", "bfloat16"])
@pytest.mark.parametrize("rows", [1, 3])
def test_stacked_query_rows_equal_grouped_query_attention(dtype: str, rows: int) -> None:
    """Rows that share one mask row (one decode token: R = 1's global call, the window call
    of a later loop, all R rows over loop 1's cache) are stacked per key/value head instead
    of SDPA's `enable_gqa`: the same result (float64 to 1e-12, the others to their
    rounding). The query is a strided slice, as the window call receives it."""
    from asmopt.models.plt.modeling_plt import attention_forward

    model = tiny_plt_model(plt_num_loops=2)
    attention = model.model.layers[0].self_attn
    torch.manual_seed(1)
    dt = getattr(torch, dtype)
    batch, heads, kv_heads, keys, dim = 3, 4, 2, 9, 8
    # As the model lays it out ([B, Q, H, d] transposed), then the last `rows` rows.
    query = torch.randn(batch, rows + 1, heads, dim, dtype=dt).transpose(1, 2)[:, :, 1:]
    key = torch.randn(batch, kv_heads, keys, dim, dtype=dt)
    value = torch.randn(batch, kv_heads, keys, dim, dtype=dt)
    mask = torch.rand(batch, 1, 1, keys) > 0.3
    mask[..., -1] = True
    for m in (None, mask):
        stacked, _ = attention_forward(attention, query, key, value, m, False)  # [B, Q, H, d]
        reference = torch.nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=m, scale=attention.scaling, enable_gqa=True
        ).transpose(1, 2)
        bound = {"float64": 1e-12, "float32": 1e-5, "bfloat16": 2e-2}[dtype]
        assert stacked.shape == reference.shape
        assert (stacked - reference).abs().max().item() <= bound


def test_window_boundary_in_attention_maps() -> None:
    """With the gate pushed to the local branch, loop 2 of token i attends exactly i-w..i."""
    window = 3
    model = tiny_plt_model(plt_num_loops=2, plt_window_size=[window, 0])
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.plt_gate.weight.zero_()
            layer.self_attn.plt_gate.bias.fill_(-60.0)  # g = sigmoid(-60) ~ 1e-26
    ids = torch.randint(2, VOCAB, (1, 9))
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    for probs in out.loop_attentions[1]:
        seen = probs[0] > 1e-12  # [H, Q, K]
        query = torch.arange(9)[:, None]
        key = torch.arange(9)[None, :]
        expected = (key <= query) & (key >= query - window)
        assert torch.equal(seen, expected.expand_as(seen))
    for probs in out.loop_attentions[0]:  # loop 1 stays fully causal
        assert torch.equal(probs[0] > 0, torch.ones(9, 9).tril().bool().expand_as(probs[0]))


def test_window_layer_ring_buffer() -> None:
    """w = 3: four slots; token j in slot j % 4."""
    layer = plt.PLTWindowLayer(window=3)
    values = torch.arange(10, dtype=torch.float64).view(1, 1, 10, 1)
    keys, _ = layer.update(values[:, :, :6], values[:, :, :6])
    assert keys.shape[-2] == 6  # first chunk: nothing stored before it
    assert layer.keys.flatten().tolist() == [4.0, 5.0, 2.0, 3.0]  # tokens 2..5
    cpu = torch.device("cpu")
    assert cache_plt.ring_sequence_indices(6, 4, cpu).tolist() == [4, 5, 2, 3]
    keys, _ = layer.update(values[:, :, 6:7], values[:, :, 6:7])
    assert keys.flatten().tolist() == [4.0, 5.0, 6.0, 3.0]  # one token: the ring after its write
    assert keys.data_ptr() == layer.keys.data_ptr()  # attended in place, no copy
    keys, _ = layer.update(values[:, :, 7:9], values[:, :, 7:9])
    assert keys.flatten().tolist() == [4.0, 5.0, 6.0, 3.0, 7.0, 8.0]  # ring before + chunk
    assert layer.get_seq_length() == 9
    assert cache_plt.ring_sequence_indices(2, 4, cpu).tolist() == [0, 1, -2, -1]
    assert layer.get_mask_sizes(1) == (4, 6) and layer.get_mask_sizes(3) == (7, 5)
    layer.crop(0)
    with pytest.raises(ValueError, match="cannot be cropped"):
        layer.crop(-1)


def test_zero_initialised_gate_gives_half() -> None:
    for hidden_gate in (True, False):
        torch.manual_seed(0)
        model = plt.PLTForCausalLM(
            tiny_plt_config(plt_num_loops=3, plt_gate_use_hidden_states=hidden_gate)
        )
        ids = torch.randint(2, VOCAB, (2, 6))
        with torch.no_grad():
            out = model(ids, output_loop_states=True)
        assert out.loop_gates[0] is None
        for loop_gates in out.loop_gates[1:]:
            assert len(loop_gates) == 2
            for gate in loop_gates:
                assert gate.shape == (2, 6, 4)
                assert torch.equal(gate, torch.full_like(gate, 0.5))


def test_plain_looped_r2_equals_running_the_stack_twice() -> None:
    """Plain R = 2 over L layers == a Llama of 2L layers whose second half copies the first."""
    torch.manual_seed(0)
    model = (
        plt.PLTForCausalLM(tiny_plt_config(plt_num_loops=2, plt_loop_mode="plain")).double().eval()
    )
    llama = (
        transformers.LlamaForCausalLM(
            transformers.LlamaConfig(
                vocab_size=VOCAB,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=4,
                num_attention_heads=4,
                num_key_value_heads=2,
                rms_norm_eps=model.config.rms_norm_eps,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            )
        )
        .double()
        .eval()
    )
    state = model.state_dict()
    for key in list(state):
        if key.startswith("model.layers."):
            index = int(key.split(".")[2])
            state[key.replace(f"layers.{index}.", f"layers.{index + 2}.", 1)] = state[key]
    llama.load_state_dict(state, strict=True)
    ids = torch.randint(2, VOCAB, (2, 9))
    with torch.no_grad():
        assert (model(ids).logits - llama(ids).logits).abs().max().item() < 1e-10
        out = model(ids, output_loop_states=True)
    assert len(out.loop_hidden_states) == 3
    assert out.loop_gates == (None, None)


def test_diagnostics_shapes_and_probabilities() -> None:
    model = tiny_plt_model(plt_num_loops=3)
    ids = torch.randint(2, VOCAB, (2, 7))
    with torch.no_grad():
        out = model(ids, output_attentions=True, output_hidden_states=True, output_loop_states=True)
        plain = model(ids)
    assert (out.logits - plain.logits).abs().max().item() < TIGHT
    assert len(out.loop_hidden_states) == 4  # h(0) = E(x), h(1), h(2), h(3)
    assert torch.equal(out.loop_hidden_states[0], model.model.embed_tokens(ids))
    last = model.lm_head(model.model.norm(out.loop_hidden_states[-1]))
    assert (last - out.logits).abs().max().item() < TIGHT  # logit lens of the last loop
    assert len(out.hidden_states) == 1 + 3 * 2
    assert len(out.attentions) == 3 * 2
    assert [len(loop) for loop in out.loop_attentions] == [2, 2, 2]
    for loop in out.loop_attentions:
        for probs in loop:
            assert probs.shape == (2, 4, 7, 7)
            assert torch.allclose(probs.sum(-1), torch.ones(2, 4, 7, dtype=probs.dtype))
            assert probs.triu(1).abs().max().item() == 0.0  # causal


def test_cache_layout_and_batch_operations() -> None:
    model = tiny_plt_model(plt_num_loops=3)
    cache = plt.PLTCache(model.config)
    assert len(cache.layers) == 3 * 2
    assert type(cache.layer(1, 0)).__name__ == "DynamicLayer"
    assert isinstance(cache.layer(1, 2), plt.PLTWindowLayer)
    with pytest.raises(IndexError):
        cache.cache_index(2, 0)
    ids = torch.randint(2, VOCAB, (3, 8))
    with torch.no_grad():
        model(ids, past_key_values=cache)
    assert cache.get_seq_length() == 8 and cache.get_seq_length(1, 2) == 8
    assert cache.loop_states.shape == (3, 2, 32)
    assert not cache.is_croppable
    with pytest.raises(ValueError, match="cannot be cropped"):
        cache.crop(-1)

    before = cache.loop_states.clone()
    ring = cache.layer(0, 1).keys.clone()
    cache.reorder_cache(torch.tensor([2, 0, 1]))
    assert torch.equal(cache.loop_states, before[[2, 0, 1]])
    assert torch.equal(cache.layer(0, 1).keys, ring[[2, 0, 1]])
    cache.batch_select_indices(torch.tensor([0, 2]))
    assert cache.loop_states.shape[0] == 2 and cache.layer(1, 2).keys.shape[0] == 2
    cache.batch_repeat_interleave(2)
    assert cache.loop_states.shape[0] == 4 and cache.layer(0, 0).keys.shape[0] == 4


def test_kv_bytes_plt_vs_plain() -> None:
    prompt = torch.randint(2, VOCAB, (1, 40))
    sizes = {}
    for name, overrides in {
        "r1": {"plt_num_loops": 1},
        "plt3": {"plt_num_loops": 3},
        "plain3": {"plt_num_loops": 3, "plt_loop_mode": "plain"},
    }.items():
        model = tiny_plt_model(**overrides)
        cache = plt.PLTCache(model.config)
        with torch.no_grad():
            model(prompt, past_key_values=cache)
        sizes[name] = cache.nbytes()
    loop1 = sizes["r1"]["total"]
    assert sizes["plt3"]["loop1_kv"] == loop1
    # two extra loops x two layers x (K and V) x [1, 2 kv heads, w + 1 = 4, head_dim 8] float64
    assert sizes["plt3"]["window_kv"] == 2 * 2 * 2 * (2 * 4 * 8) * 8
    assert sizes["plain3"]["total"] == 3 * loop1


def enable_checkpointing(model: plt.PLTForCausalLM, use_reentrant: bool) -> None:
    """Newer transformers call it `activation_checkpointing_enable`; 5.0 has the older name."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs={"use_reentrant": use_reentrant})
    else:
        model.gradient_checkpointing_enable({"use_reentrant": use_reentrant})


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_training_backward_and_checkpointing(use_reentrant: bool) -> None:
    model = tiny_plt_model(plt_num_loops=3)
    model.train()
    ids = torch.randint(2, VOCAB, (2, 8))
    loss = model(ids, labels=ids).loss
    loss.backward()
    gate = model.model.layers[0].self_attn.plt_gate
    assert gate.weight.grad is not None and gate.weight.grad.abs().sum() > 0
    reference = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()

    enable_checkpointing(model, use_reentrant)
    model(ids, labels=ids).loss.backward()
    for name, param in model.named_parameters():
        assert torch.allclose(param.grad, reference[name], atol=1e-10), name


def test_rejects_foreign_cache_and_bad_masks() -> None:
    from transformers import DynamicCache

    model = tiny_plt_model()
    ids = torch.randint(2, VOCAB, (1, 4))
    with pytest.raises(TypeError, match="PLTCache"):
        model(ids, past_key_values=DynamicCache())
    with pytest.raises(ValueError, match="attention_mask"):
        model(ids, attention_mask=torch.ones(1, 3, dtype=torch.long))


@pytest.mark.parametrize("kernel", ["few_row", "linear", "auto"])
def test_few_row_products_match_linear_whatever_the_kernel(kernel: str) -> None:
    """Both kernels of `PLTLinear` (forced or measured) compute F.linear's product, and float32
    decode (rows = batch x loops) still matches the full forward."""
    from asmopt.models.plt import modeling_plt, set_linear_kernel

    torch.manual_seed(0)
    layer = modeling_plt.PLTLinear(48, 20, bias=True)
    set_linear_kernel(kernel)
    try:
        for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 5e-2)):
            layer = layer.to(dtype)
            for rows in (1, 2, 3, 4, 5, 40):
                x = torch.randn(rows, 1, 48, dtype=dtype)
                expected = torch.nn.functional.linear(x, layer.weight, layer.bias)
                assert torch.allclose(layer(x), expected, atol=tol)
        model = tiny_plt_model(plt_num_loops=2).float()
        ids = torch.randint(2, VOCAB, (2, 9))
        with torch.no_grad():
            full = model(ids).logits
        assert (decode_logits(model, ids, prefill=3) - full).abs().max().item() < 1e-5
    finally:
        set_linear_kernel(None)


@pytest.mark.parametrize("kernel", ["few_row", "linear"])
def test_mlp_reads_the_transposed_gate_and_up_products_without_copies(kernel: str) -> None:
    """The MLP's gate and up products may return the transposed product's view (no copy);
    the SwiGLU output is still F.linear's, with and without biases, for decode-sized and
    prefill-sized row counts, in float32 and bfloat16."""
    from asmopt.models.plt import kernels, modeling_plt, set_linear_kernel

    x2d = torch.randn(5, 16)
    weight = torch.randn(24, 16)
    view = kernels.few_row_product(x2d, weight, contiguous=False)
    assert not view.is_contiguous() and view.t().is_contiguous()
    assert torch.allclose(view, x2d @ weight.t(), atol=1e-5)
    assert kernels.few_row_product(x2d, weight).is_contiguous()

    set_linear_kernel(kernel)
    try:
        for bias in (False, True):
            torch.manual_seed(0)
            config = tiny_plt_model().config
            config.mlp_bias = bias
            mlp = modeling_plt.PLTMLP(config)
            assert not mlp.gate_proj.contiguous_output and mlp.down_proj.contiguous_output
            for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 5e-2)):
                mlp = mlp.to(dtype)
                for batch, rows in ((1, 1), (8, 2), (3, 40)):
                    x = torch.randn(batch, rows, config.hidden_size, dtype=dtype)
                    lin = torch.nn.functional.linear
                    gate = lin(x, mlp.gate_proj.weight, mlp.gate_proj.bias)
                    up = lin(x, mlp.up_proj.weight, mlp.up_proj.bias)
                    expected = lin(mlp.act_fn(gate) * up, mlp.down_proj.weight, mlp.down_proj.bias)
                    with torch.no_grad():
                        got = mlp(x)
                    assert got.shape == expected.shape and got.is_contiguous()
                    assert torch.allclose(got, expected, atol=tol, rtol=tol)
    finally:
        set_linear_kernel(None)


def test_diagnostics_during_cached_decode_match_the_full_forward() -> None:
    """A decode step with diagnostics takes the loop-by-loop path and reports the same maps,
    gates and per-loop states as the teacher-forced forward at that token."""
    model = tiny_plt_model(plt_num_loops=3)
    ids = torch.randint(2, VOCAB, (2, 10))
    with torch.no_grad():
        full = model(ids, output_attentions=True, output_loop_states=True)
        cache = plt.PLTCache(model.config)
        model(ids[:, :9], past_key_values=cache)
        step = model(
            ids[:, 9:], past_key_values=cache, output_attentions=True, output_loop_states=True
        )
    for full_state, step_state in zip(
        full.loop_hidden_states, step.loop_hidden_states, strict=True
    ):
        assert (full_state[:, -1:] - step_state).abs().max().item() < TIGHT
    for full_loop, step_loop in zip(full.loop_attentions, step.loop_attentions, strict=True):
        for full_probs, step_probs in zip(full_loop, step_loop, strict=True):
            assert (full_probs[:, :, -1:] - step_probs).abs().max().item() < TIGHT
    for full_loop, step_loop in zip(full.loop_gates[1:], step.loop_gates[1:], strict=True):
        for full_gate, step_gate in zip(full_loop, step_loop, strict=True):
            assert (full_gate[:, -1:] - step_gate).abs().max().item() < TIGHT


def test_gate_sees_in_place_weight_updates() -> None:
    """The folded gate weights kept between decode steps follow in-place parameter changes."""
    model = tiny_plt_model(plt_num_loops=2)
    ids = torch.randint(2, VOCAB, (1, 5))
    with torch.no_grad():
        before = model(ids, output_loop_states=True).loop_gates[1][0]
        model.model.layers[0].self_attn.plt_gate.bias.fill_(-60.0)
        model.model.layers[0].self_attn.plt_gate.weight.zero_()
        after = model(ids, output_loop_states=True).loop_gates[1][0]
    assert before.min().item() > 1e-6
    assert after.max().item() < 1e-20


@pytest.mark.parametrize("gate_mode", [True, False], ids=["hidden_gate", "query_gate"])
def test_bfloat16_autocast_forward_backward_and_decode(gate_mode: bool) -> None:
    """Under CPU bfloat16 autocast the gate (float32) and the branches (bfloat16) meet in one
    mix; training, cached decode and parallel decode must run and stay near float32."""
    torch.manual_seed(0)
    model = plt.PLTForCausalLM(
        tiny_plt_config(plt_num_loops=3, plt_gate_use_hidden_states=gate_mode)
    ).eval()
    ids = torch.randint(2, VOCAB, (2, 10))
    with torch.no_grad():
        reference = model(ids).logits
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(ids, labels=ids).loss
        loss.backward()
        with torch.no_grad():
            full = model(ids).logits
            cache = plt.PLTCache(model.config)
            model(ids[:, :6], past_key_values=cache, use_cache=True)
            step = model(ids[:, 6:7], past_key_values=cache, use_cache=True).logits
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert (full.float() - reference).abs().max().item() < 0.1
    assert (step[:, -1].float() - full[:, 6].float()).abs().max().item() < 0.1
