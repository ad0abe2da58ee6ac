"""`generate()` with PLT: cached == uncached on left-padded batches, sampling, beams.

Float64 tiny models with random gates; the window (3) is shorter than the generated length so
that the ring buffers wrap during decoding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from conftest import lazy
from tiny_model import tiny_plt_model

if TYPE_CHECKING:
    import torch

    from asmopt.models import plt
else:
    torch = lazy("torch")
    plt = lazy("asmopt.models.plt")

pytestmark = pytest.mark.ml
PAD = 0  # the pad token id of `tiny_plt_config`
PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [12, 13, 14], [20, 21, 22, 23, 24]]

MODES: dict[str, dict[str, Any]] = {
    "r1": {"plt_num_loops": 1},
    "plt2": {"plt_num_loops": 2},
    "plt3_query_gate": {"plt_num_loops": 3, "plt_gate_use_hidden_states": False},
    "plain2": {"plt_num_loops": 2, "plt_loop_mode": "plain"},
}


def left_padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, prompts))
    ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


@pytest.mark.parametrize("mode", sorted(MODES))
def test_left_padded_greedy_cached_equals_uncached_and_unpadded(mode: str) -> None:
    model = tiny_plt_model(**MODES[mode])
    ids, mask = left_padded(PROMPTS)
    kwargs: dict[str, Any] = {"attention_mask": mask, "max_new_tokens": 9, "do_sample": False}
    cached = model.generate(ids, use_cache=True, **kwargs)
    uncached = model.generate(ids, use_cache=False, **kwargs)
    assert torch.equal(cached, uncached)
    width = ids.shape[1]
    for row, prompt in enumerate(PROMPTS):
        alone = model.generate(torch.tensor([prompt]), max_new_tokens=9, do_sample=False)
        assert alone[0, len(prompt) :].tolist() == cached[row, width:].tolist()


def test_left_padded_logits_match_unpadded() -> None:
    """Scores, not only argmax tokens: padding must not leak into any loop."""
    model = tiny_plt_model(plt_num_loops=3)
    ids, mask = left_padded(PROMPTS)
    out = model.generate(
        ids,
        attention_mask=mask,
        max_new_tokens=6,
        do_sample=False,
        output_logits=True,
        return_dict_in_generate=True,
    )
    batched = torch.stack(out.logits, dim=1)  # [B, steps, V]
    for row, prompt in enumerate(PROMPTS):
        alone = model.generate(
            torch.tensor([prompt]),
            max_new_tokens=6,
            do_sample=False,
            output_logits=True,
            return_dict_in_generate=True,
        )
        single = torch.stack(alone.logits, dim=1)[0]
        assert (batched[row] - single).abs().max().item() < 1e-10


def test_sampling_cached_equals_uncached_with_same_seed() -> None:
    model = tiny_plt_model(plt_num_loops=2)
    ids, mask = left_padded(PROMPTS)
    kwargs: dict[str, Any] = {
        "attention_mask": mask,
        "max_new_tokens": 8,
        "do_sample": True,
        "top_k": 0,
        "temperature": 1.0,
    }
    torch.manual_seed(123)
    cached = model.generate(ids, use_cache=True, **kwargs)
    torch.manual_seed(123)
    uncached = model.generate(ids, use_cache=False, **kwargs)
    assert torch.equal(cached, uncached)
    assert cached.shape == (3, ids.shape[1] + 8)


def test_beam_search_reorders_the_loop_states() -> None:
    model = tiny_plt_model(plt_num_loops=2)
    ids, mask = left_padded(PROMPTS)
    kwargs: dict[str, Any] = {
        "attention_mask": mask,
        "max_new_tokens": 6,
        "num_beams": 3,
        "do_sample": False,
    }
    assert torch.equal(
        model.generate(ids, use_cache=True, **kwargs),
        model.generate(ids, use_cache=False, **kwargs),
    )


def test_generate_returns_a_plt_cache_and_continues_from_it() -> None:
    model = tiny_plt_model(plt_num_loops=2)
    prompt = torch.tensor([PROMPTS[0]])
    first = model.generate(prompt, max_new_tokens=4, do_sample=False, return_dict_in_generate=True)
    assert isinstance(first.past_key_values, plt.PLTCache)
    assert first.past_key_values.loop_states.shape == (1, 1, 32)
    cache = plt.PLTCache(model.config)
    resumed = model.generate(prompt, max_new_tokens=4, do_sample=False, past_key_values=cache)
    more = model.generate(resumed, max_new_tokens=3, do_sample=False, past_key_values=cache)
    fresh = model.generate(prompt, max_new_tokens=7, do_sample=False)
    assert torch.equal(more, fresh)


def test_generate_refuses_foreign_caches() -> None:
    from transformers import DynamicCache

    model = tiny_plt_model(plt_num_loops=2)
    prompt = torch.tensor([PROMPTS[1]])
    with pytest.raises(TypeError, match="PLTCache"):
        model.generate(prompt, max_new_tokens=2, past_key_values=DynamicCache())
    with pytest.raises(ValueError, match="cache_implementation"):
        model.generate(prompt, max_new_tokens=2, cache_implementation="static")
