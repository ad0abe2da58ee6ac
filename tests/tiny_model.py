"""Tiny random-weight models for tests: a causal LM with a real tokenizer, saved like any HF
model, and small in-memory Parallel Loop Transformers.

torch and the model code are imported inside the builders, so importing this file is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asmopt.models.plt import PLTConfig, PLTForCausalLM

PLT_VOCAB = 99

# The tiny two-layer PLT's size, shared by the in-memory config and the published form.
TINY_SHAPE: dict[str, Any] = {
    "vocab_size": PLT_VOCAB,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 128,
}
# Its fields as a published LoopCoder `config.json` spells them (an explicit head_dim,
# rms_norm_eps, untied embeddings); each test adds the loop fields.
PUBLISHED_SHAPE: dict[str, Any] = {
    **TINY_SHAPE,
    "head_dim": 8,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
}

CORPUS = [
    "\t.text\n\t.globl main\nmain:\n\tmovl $0, %eax\n\tret\n",
    "```assembly\n\taddq %rsi, %rdi\n\tmovq %rdi, %rax\n```\n",
    "int main(void) { return 0; }\n",
    "Given the following C code and its x86-64 assembly, optimize it.\n",
]


def build_tiny_model(out: Path, chat_template: bool = True, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(seed)
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>")
    if chat_template:
        fast.chat_template = (
            "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}"
        )
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    return out


def tiny_plt_config(**overrides: Any) -> PLTConfig:
    """A two-layer PLT config (two loops, a window of 3 on the first layer); fields override."""
    from asmopt.models.plt import PLTConfig

    fields: dict[str, Any] = {
        **TINY_SHAPE,
        "plt_num_loops": 2,
        "plt_window_size": [3, 0],
        "pad_token_id": 0,
        "bos_token_id": 1,
        "eos_token_id": None,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    }
    fields.update(overrides)
    return PLTConfig(**fields)


def randomize_gates(model: PLTForCausalLM, gate_norms: bool = False) -> PLTForCausalLM:
    """Random loop gates (zero gates, as initialised, would hide gate bugs); with `gate_norms`
    the gates' norm weights too. Draws from torch's global generator."""
    import torch

    with torch.no_grad():
        for layer in model.model.layers:
            gate = layer.self_attn.plt_gate
            if gate is None:
                continue
            gate.weight.normal_(0.0, 0.5)
            gate.bias.normal_(0.0, 0.5)
            if gate_norms and gate.gate_norm is not None:
                gate.gate_norm.weight.uniform_(0.5, 1.5)
    return model


def tiny_plt_model(seed: int = 0, **overrides: Any) -> PLTForCausalLM:
    """A float64 `tiny_plt_config` model in eval mode with random gates, so that "equal" can
    mean 1e-10 rather than "close"."""
    import torch

    from asmopt.models.plt import PLTForCausalLM

    torch.manual_seed(seed)
    model = PLTForCausalLM(tiny_plt_config(**overrides)).double().eval()
    return randomize_gates(model)
