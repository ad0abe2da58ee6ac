"""Prompt templates: plain files with `$c_code`, `$assembly` and `$feedback` placeholders.

`string.Template` is used (not str.format) because C code and assembly are full of braces.
A template is named by a built-in name (`reference`, `c_only`, `few_shot`, `diff`) or a
path to the user's own file.

What a template asks for is its answer's form, `edit_format`: `assembly` (a whole assembly
file in an ```` ```assembly ```` block) or `diff` (a unified diff against the -O3 assembly in a
```` ```diff ```` block). The reward reads answers in the same vocabulary
(`ScoreConfig.edit_format`), so a template and a reward can be compared by value, and a
disagreement is refused once with the setting that fixes it (`answer_form_mismatch`).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from asmopt.errors import InputError
from asmopt.programs.model import ProgramError

if TYPE_CHECKING:  # transformers is imported by whoever loads the tokenizer
    from transformers import PreTrainedTokenizerBase

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
BUILTIN_TEMPLATES = ("reference", "c_only", "few_shot", "diff")
PLACEHOLDERS = ("c_code", "assembly", "feedback")

# An answer's form: a whole assembly file, or a unified diff against the -O3 baseline.
EditFormat = Literal["assembly", "diff"]
EDIT_FORMATS: tuple[str, ...] = ("assembly", "diff")
# Names an earlier release used for a whole-assembly answer (templates said `full`): refused
# with the current one, so a config written from an old error message is fixed in one step.
_RETIRED_EDIT_FORMATS = {"full": "assembly"}


class TemplateError(ProgramError):
    """A template file is missing or uses placeholders we do not fill."""


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str

    @property
    def edit_format(self) -> EditFormat:
        """`diff` when the model is asked for a unified diff, else `assembly`: the same two
        names `ScoreConfig.edit_format` takes, so the two compare by value."""
        return "diff" if "```diff" in self.text else "assembly"

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


def check_edit_format(value: object, key: str = "edit_format") -> EditFormat:
    """`value` as an answer form, or an InputError naming `key`, the two forms, and for a
    retired spelling (`full`) the name it has now."""
    if value in EDIT_FORMATS:
        return value  # type: ignore[return-value]
    if isinstance(value, str) and value in _RETIRED_EDIT_FORMATS:
        raise InputError(
            f"{key} {value!r} is now called {_RETIRED_EDIT_FORMATS[value]!r} (a whole "
            f"assembly file); use {key}: {_RETIRED_EDIT_FORMATS[value]}"
        )
    raise InputError(f"{key} must be assembly or diff, got {value!r}")


def answer_form_mismatch(
    template: PromptTemplate, reads: str, fix: str, who: str = "the reward"
) -> str | None:
    """Why a prompt template and a reward cannot be used together, or None when they agree.

    A `diff` template asks for diffs, which a reward reading whole assembly files finds no
    assembly in (and the reverse): every answer would be an extraction error, a run that
    trains on nothing. `fix` is the setting that makes them agree (`reward_options.
    edit_format`, a `score_config` key, ...), named in the message with the value to set."""
    if template.edit_format == reads:
        return None
    return (
        f"prompt template {template.name!r} asks for {template.edit_format} answers but "
        f"{who} reads {reads} answers; set {fix}: {template.edit_format} (or use a "
        f"template that asks for {reads} answers)"
    )


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


def render_prompt(tokenizer: PreTrainedTokenizerBase, prompt: str | list[dict[str, str]]) -> str:
    """The text the model sees, as the local back-end renders it: the chat template with the
    generation prompt when `tokenizer` (a transformers tokenizer) has one, else the message
    texts joined by blank lines (a plain string prompt as it is)."""
    if isinstance(prompt, str):
        return prompt
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in prompt)


def prompt_token_count(tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]]) -> int:
    """Tokens of a chat prompt as the policy sees it (`render_prompt`), tokenized without
    added special tokens (a template writes its own): what verl's overlong-prompt filter and
    TRL count."""
    return len(tokenizer(render_prompt(tokenizer, messages), add_special_tokens=False)["input_ids"])
