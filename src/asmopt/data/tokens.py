"""Counting prompt + answer length: a local tokenizer, or a documented character estimate.

The reference dataset keeps programs whose prompt and answer fit 4,000 tokens of the
policy model's tokenizer. A tokenizer is loaded only from a local path (no downloads): a
`tokenizer.json` file, a directory holding one, or a directory that transformers'
AutoTokenizer can read. Without one, tokens are estimated as ceil(characters / 3.5), which
is close to code tokenizers such as Qwen2.5-Coder's on C and x86 assembly (they average
about 3-4 characters per token); the estimate is marked as such in every report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from .common import DataError

DEFAULT_CHARS_PER_TOKEN = 3.5


class TokenCounter:
    """`count(text) -> int` backed by a tokenizer or the character estimate."""

    def __init__(
        self, tokenizer_path: str | None = None, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    ) -> None:
        if chars_per_token <= 0:
            raise DataError(f"chars per token must be positive, got {chars_per_token}")
        self.chars_per_token = chars_per_token
        self._encode: Callable[[str], int] | None = None
        self.description = f"estimate: ceil(chars / {chars_per_token:g})"
        if tokenizer_path:
            self._encode = _load(Path(tokenizer_path))
            self.description = f"tokenizer {tokenizer_path}"

    @property
    def estimated(self) -> bool:
        return self._encode is None

    def count(self, text: str) -> int:
        if self._encode is None:
            return math.ceil(len(text) / self.chars_per_token)
        return self._encode(text)


def _load(path: Path) -> Callable[[str], int]:
    if not path.exists():
        raise DataError(f"{path}: tokenizer not found (give a tokenizer.json or its directory)")
    json_file = path if path.is_file() else path / "tokenizer.json"
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
        return lambda text: len(tok.encode(text, add_special_tokens=False).ids)
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise DataError(
            f"{path}: no tokenizer.json here, and transformers is not installed to read "
            "other tokenizer formats (pip install transformers)"
        ) from None
    try:
        hf = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:
        raise DataError(f"{path}: cannot load tokenizer ({exc})") from None
    return lambda text: len(hf.encode(text, add_special_tokens=False))
