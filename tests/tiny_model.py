"""Build a tiny random-weight causal LM with a real tokenizer, saved like any HF model."""

from __future__ import annotations

from pathlib import Path

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
        max_position_embeddings=4096,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out)
    return out
