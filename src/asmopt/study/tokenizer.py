"""A byte-level BPE tokenizer trained on the corpus, saved in the Hugging Face format.

Byte-level means every text (any byte sequence of the assembly or C) has an encoding, so no
document is ever lost to an unknown token. The merges are learnt on the training split only:
held-out programs must not shape the vocabulary. Two special tokens: `<|eot|>` ends every
document (and stops generation), `<|pad|>` pads batches.

The tokenizer is written with `PreTrainedTokenizerFast.save_pretrained`, so the same
directory sits beside each trained model and `AutoTokenizer.from_pretrained` loads it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from asmopt.errors import InputError

EOT = "<|eot|>"
PAD = "<|pad|>"
SPECIAL_TOKENS = (EOT, PAD)
TOKENIZER_FILE = "tokenizer.json"
TRAINED_MARKER = "asmopt_bpe.json"


def train_tokenizer(
    texts: Iterable[str], vocab_size: int, out_dir: str | Path, *, min_frequency: int = 2
) -> Any:
    """Learns merges on `texts` and saves the tokenizer to `out_dir`; returns the HF tokenizer.

    `vocab_size` counts the 256 byte tokens and the special tokens; it must leave room for
    merges.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < 256 + len(SPECIAL_TOKENS) + 1:
        raise InputError(
            f"vocab_size {vocab_size} leaves no room for merges (256 bytes + "
            f"{len(SPECIAL_TOKENS)} special tokens)"
        )
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fast = wrap(tok)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    mark_trained(out, {"vocab_size": vocab_size, "min_frequency": min_frequency})
    return fast


def mark_trained(path: str | Path, settings: dict[str, Any]) -> None:
    """Records what a saved tokenizer was trained with (and on), so it is reused only then."""
    (Path(path) / TRAINED_MARKER).write_text(json.dumps(settings) + "\n", encoding="utf-8")


def wrap(tok: Any) -> Any:
    """A `tokenizers.Tokenizer` as a transformers fast tokenizer with eos/pad set."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOT, pad_token=PAD)


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer saved in `path` (a tokenizer or model directory)."""
    from tokenizers import Tokenizer

    file = Path(path) / TOKENIZER_FILE
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no tokenizer here")
    return wrap(Tokenizer.from_file(str(file)))


def trained_with(path: str | Path) -> dict[str, Any] | None:
    """The settings a saved tokenizer was trained with, or None when there is none."""
    marker = Path(path) / TRAINED_MARKER
    if not marker.is_file() or not (Path(path) / TOKENIZER_FILE).is_file():
        return None
    return json.loads(marker.read_text(encoding="utf-8"))


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of `text` with no special tokens added (documents add `<|eot|>` themselves)."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
