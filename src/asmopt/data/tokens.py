"""Counting prompt + answer length: a local tokenizer, or a documented character estimate.

The reference dataset keeps programs whose prompt and answer fit 4,000 tokens of the
policy model's tokenizer. A tokenizer is loaded only from a local path (no downloads): a
`tokenizer.json` file, a directory holding one, or a directory that transformers'
AutoTokenizer can read. Without one, tokens are estimated as ceil(characters / 3.5), which
is close to code tokenizers such as Qwen2.5-Coder's on C and x86 assembly (they average
about 3-4 characters per token); the estimate is marked as such in every report.

Chat prompts (`count_prompt`, and `asmopt.policies.prompts.prompt_token_count` for a
tokenizer object) are counted as trainers count them: a
tokenizer directory with a chat template (in `tokenizer_config.json` or a
`chat_template.jinja` / `.json` file beside it) is read with AutoTokenizer, and the prompt is
the template rendered with the generation prompt, tokenized without added special tokens,
which is what verl's overlong-prompt filter and TRL see. Without a template, the message texts
joined by blank lines. `asmopt data export --max-prompt-tokens` and `train.data.trl_columns`
share this count, so a limit means the same in both and in the trainer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from asmopt.policies.prompts import prompt_token_count

from .common import DataError

DEFAULT_CHARS_PER_TOKEN = 3.5


class TokenCounter:
    """`count(text) -> int` backed by a tokenizer or the character estimate; `count_prompt`
    for chat messages (the chat template included when the tokenizer has one)."""

    def __init__(
        self, tokenizer_path: str | None = None, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    ) -> None:
        if chars_per_token <= 0:
            raise DataError(f"chars per token must be positive, got {chars_per_token}")
        self.chars_per_token = chars_per_token
        self._encode: Callable[[str], int] | None = None
        self._chat: Any = None  # a transformers tokenizer with a chat template
        self.description = f"estimate: ceil(chars / {chars_per_token:g})"
        if tokenizer_path:
            self._encode, self._chat = _load(Path(tokenizer_path))
            template = "with its chat template" if self._chat is not None else "no chat template"
            self.description = f"tokenizer {tokenizer_path}, {template}"

    @property
    def estimated(self) -> bool:
        return self._encode is None

    def count(self, text: str) -> int:
        if self._encode is None:
            return math.ceil(len(text) / self.chars_per_token)
        return self._encode(text)

    def count_prompt(self, messages: list[dict[str, str]]) -> int:
        """A chat prompt's tokens: `prompt_token_count` with a chat template, else `count`
        of the texts joined by blank lines."""
        if self._chat is not None:
            return prompt_token_count(self._chat, messages)
        return self.count("\n\n".join(m["content"] for m in messages))


def _has_chat_template(directory: Path) -> bool:
    if (directory / "chat_template.jinja").is_file() or (
        directory / "chat_template.json"
    ).is_file():
        return True
    try:
        config = json.loads((directory / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and bool(config.get("chat_template"))


def _load(path: Path) -> tuple[Callable[[str], int], Any]:
    """(count of a text, the transformers tokenizer when it has a chat template, else None)."""
    if not path.exists():
        raise DataError(f"{path}: tokenizer not found (give a tokenizer.json or its directory)")
    json_file = path if path.is_file() else path / "tokenizer.json"
    if path.is_dir() and _has_chat_template(path):
        try:
            from transformers import AutoTokenizer
        except ImportError:
            pass  # counted without the template (said in the description)
        else:
            return _auto_tokenizer(AutoTokenizer, path)
    if json_file.is_file():
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise DataError(
                "reading tokenizer.json needs the 'tokenizers' package (pip install tokenizers)"
            ) from None
        try:
            tok = Tokenizer.from_file(str(json_file))
        except Exception as exc:
            raise DataError(f"{json_file}: cannot load tokenizer ({exc})") from None
        return (lambda text: len(tok.encode(text, add_special_tokens=False).ids)), None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise DataError(
            f"{path}: no tokenizer.json here, and transformers is not installed to read "
            "other tokenizer formats (pip install transformers)"
        ) from None
    return _auto_tokenizer(AutoTokenizer, path)


def _auto_tokenizer(auto: Any, path: Path) -> tuple[Callable[[str], int], Any]:
    """A local directory read by transformers' AutoTokenizer (no downloads)."""
    try:
        hf = auto.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:
        raise DataError(f"{path}: cannot load tokenizer ({exc})") from None
    chat = hf if getattr(hf, "chat_template", None) else None
    return (lambda text: len(hf.encode(text, add_special_tokens=False))), chat
