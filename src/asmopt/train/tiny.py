"""Fresh random models of a CPU-friendly size, so that a config can run with no download.

`tiny:llama` and `tiny:plt` build a small Llama or looped (PLT) decoder with a byte-level
tokenizer (256 byte tokens plus `<pad>` and `</s>`, no merges): every text is representable,
nothing has to be trained first, and the same tokenizer serves the test task and assembly.
The model is written once to a directory and then loaded like any other local model, so the
trainers have a single loading path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.errors import InputError
from asmopt.train.checkpoint import staged_dir
from asmopt.typed_config import renamed_keywords

if TYPE_CHECKING:  # transformers is imported where a model is built
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, PreTrainedTokenizerFast

TINY_ARCHS = ("llama", "plt")
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
# Small enough for CPU tests in seconds; override any field through `model_overrides`.
TINY_DEFAULTS: dict[str, Any] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
}
PLT_DEFAULTS: dict[str, Any] = {"plt_num_loops": 2, "plt_window_size": [16, 0]}
MARKER = "asmopt_tiny.json"


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level fast tokenizer with a chat template; ids 0/1 are `<pad>`/`</s>`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {"<pad>": 0, "</s>": 1}
    for ch in sorted(alphabet):
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<pad>", "</s>"])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


@renamed_keywords({"seed": ("init_seed", "the seed of the model's random initial weights")})
def build_tiny_model(
    out: Path,
    arch: str,
    *,
    overrides: dict[str, Any] | None = None,
    tokenizer_dir: str | None = None,
    init_seed: int = 0,
) -> Path:
    """Writes a random `arch` model, its weights drawn from `init_seed`, and its tokenizer
    to `out` and returns `out`."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if arch not in TINY_ARCHS:
        raise InputError(f"unknown tiny model {arch!r}; available: {', '.join(TINY_ARCHS)}")
    if tokenizer_dir is not None:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    else:
        tokenizer = byte_tokenizer()
    fields = {**TINY_DEFAULTS, **(PLT_DEFAULTS if arch == "plt" else {}), **(overrides or {})}
    fields.update(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(init_seed)
        if arch == "plt":
            from asmopt.models.plt import PLTConfig, PLTForCausalLM

            fields.setdefault("rope_parameters", {"rope_type": "default", "rope_theta": 10000.0})
            model: PreTrainedModel = PLTForCausalLM(PLTConfig(**fields))
        else:
            model = LlamaForCausalLM(LlamaConfig(**fields))
    marker = _marker(arch, overrides, init_seed)
    if out.is_dir() and any(out.iterdir()):  # a directory with other files: add to it
        _write_model(out, tokenizer, model, marker)
        return out
    with staged_dir(out) as tmp:  # a full disk or an interrupt leaves no half-built model
        _write_model(tmp, tokenizer, model, marker)
    return out


def _write_model(
    out: Path, tokenizer: PreTrainedTokenizerBase, model: PreTrainedModel, marker: dict[str, Any]
) -> None:
    """Tokenizer, weights, then the marker: a directory with a marker is complete."""
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    (out / MARKER).write_text(json.dumps(marker, indent=2) + "\n")


def resolve_model(
    spec: str,
    output_dir: str | Path,
    *,
    overrides: dict[str, Any] | None = None,
    tokenizer_dir: str | None = None,
    train_seed: int = 0,
) -> Path:
    """The directory to load for `spec`: itself, or a `tiny:*` model built once per run,
    its initial weights drawn from the trainer's seed."""
    from asmopt.policies.hf_local import check_model_dir
    from asmopt.policies.llm import PolicyError

    if spec.startswith("tiny:"):
        arch = spec.split(":", 1)[1]
        out = Path(output_dir) / "init-model"
        wanted = _marker(arch, overrides, train_seed)
        marker = out / MARKER
        if marker.is_file():
            built = _read_marker(marker)
            if built != wanted:
                raise InputError(
                    f"{out} holds a different tiny model ({built}) than asked ({wanted}); "
                    "use another output_dir"
                )
            return out
        return build_tiny_model(
            out, arch, overrides=overrides, tokenizer_dir=tokenizer_dir, init_seed=train_seed
        )
    try:
        return check_model_dir(spec)
    except PolicyError as exc:
        raise InputError(str(exc)) from None


def _marker(arch: str, overrides: dict[str, Any] | None, init_seed: int) -> dict[str, Any]:
    """What a tiny model was built from, as its marker file holds it (its `seed` is the
    initial weights' seed: the key is kept so that models built before still match)."""
    return {"arch": arch, "overrides": overrides or {}, "seed": init_seed}


def _read_marker(marker: Path) -> object:
    """What the tiny model of a run directory was built from; a damaged marker is named,
    with the way out (the model is rebuilt from its seed)."""
    try:
        return json.loads(marker.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(
            f"{marker}: damaged (not the JSON this file holds); delete {marker.parent} and "
            "rerun: a tiny:* model is built again from its seed"
        ) from None
