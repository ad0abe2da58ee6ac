"""Prompt templates: plain files with `$c_code`, `$assembly` and `$feedback` placeholders.

`string.Template` is used (not str.format) because C code and assembly are full of braces.
A template is named by a built-in name (`reference`, `c_only`, `few_shot`, `diff`) or a
path to the user's own file.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asmopt.programs.model import ProgramError

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
BUILTIN_TEMPLATES = ("reference", "c_only", "few_shot", "diff")
PLACEHOLDERS = ("c_code", "assembly", "feedback")


class TemplateError(ProgramError):
    """A template file is missing or uses placeholders we do not fill."""


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str

    @property
    def edit_format(self) -> str:
        """`diff` when the model is asked for a unified diff, else `full`."""
        return "diff" if "```diff" in self.text else "full"

    def render(self, c_code: str, assembly: str, feedback: str | None = None) -> str:
        block = f"\nFeedback on your previous attempt:\n{feedback.strip()}\n" if feedback else ""
        # A source kept byte for byte may hold non-UTF-8 bytes (a Latin-1 comment); a prompt
        # is text, so those bytes are shown as U+FFFD.
        c_code = c_code.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return string.Template(self.text).substitute(
            c_code=c_code.rstrip("\n"), assembly=assembly.rstrip("\n"), feedback=block
        )

    def messages(self, c_code: str, assembly: str, feedback: str | None = None) -> list[dict]:
        """One user turn, as in the reference setup."""
        return [{"role": "user", "content": self.render(c_code, assembly, feedback)}]


def load_template(name_or_path: str) -> PromptTemplate:
    """A built-in template by name, or a user template file by path."""
    path = TEMPLATE_DIR / f"{name_or_path}.txt"
    if name_or_path not in BUILTIN_TEMPLATES:
        path = Path(name_or_path)
        if not path.is_file():
            raise TemplateError(
                f"unknown template {name_or_path!r}: not a built-in "
                f"({', '.join(BUILTIN_TEMPLATES)}) and no such file"
            )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(f"{path}: cannot read template ({exc})") from None
    try:
        names = {
            m.group("named") or m.group("braced")
            for m in string.Template.pattern.finditer(text)
            if m.group("named") or m.group("braced")
        }
    except ValueError as exc:
        raise TemplateError(f"{path}: malformed placeholder ({exc})") from None
    unknown = names - set(PLACEHOLDERS)
    if unknown:
        raise TemplateError(
            f"{path}: unknown placeholders {sorted(unknown)}; use {', '.join(PLACEHOLDERS)} "
            "(write $$ for a literal $)"
        )
    if "c_code" not in names and "assembly" not in names:
        raise TemplateError(f"{path}: the template uses neither $c_code nor $assembly")
    return PromptTemplate(name=path.stem, text=text)


def render_prompt(tokenizer: Any, prompt: str | list[dict[str, str]]) -> str:
    """The text the model sees, as the local back-end renders it: the chat template with the
    generation prompt when `tokenizer` (a transformers tokenizer) has one, else the message
    texts joined by blank lines (a plain string prompt as it is)."""
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in prompt)


def prompt_token_count(tokenizer: Any, messages: list[dict[str, str]]) -> int:
    """Tokens of a chat prompt as the policy sees it (`render_prompt`), tokenized without
    added special tokens (a template writes its own): what verl's overlong-prompt filter and
    TRL count."""
    return len(tokenizer(render_prompt(tokenizer, messages), add_special_tokens=False)["input_ids"])
