"""Typed models of the on-disk suite format (suite.json and programs/ID/program.json).

The format is written by hand, so its errors must be caught where the file is read, with
the file, the field and the expected type named; a hand-rolled `tuple(spec["ldflags"])`
quietly turned `"-lm"` into `('-', 'l', 'm')` and `"cflags": 5` into a TypeError far from
the file. These pydantic models are strict (no coercion of a string into a list or of
null into a number) and forbid unknown keys. The loader (suite_io.load_suite) validates
with them and `save_suite` writes through them, so what asmopt writes is what it reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

SUITE_FORMAT = "asmopt-suite"
SUITE_VERSION = 1

M = TypeVar("M", bound=BaseModel)

_STRICT = ConfigDict(extra="forbid", strict=True)
_NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


def _no_nul(value: str) -> str:
    """A NUL cannot reach the sandbox (argv strings and file names end at it); refused
    here, where the message can name the field, instead of failing far from the file."""
    if "\x00" in value:
        raise ValueError(f"must not contain a NUL byte (offset {value.index(chr(0))})")
    return value


# A string that argv, a file name or a compiler flag can carry.
Text = Annotated[str, AfterValidator(_no_nul)]


class CompareSpec(BaseModel):
    """How a test's output is compared (see programs.model.Comparison)."""

    model_config = _STRICT

    mode: Literal["exact", "whitespace", "numeric", "md5"] = "exact"
    abs_tol: _NonNegative = 0.0
    rel_tol: _NonNegative = 0.0


class TestSpec(BaseModel):
    """One entry of program.json's "tests"."""

    __test__ = False  # not a pytest class
    model_config = _STRICT

    name: Annotated[Text, Field(min_length=1, max_length=128)] | None = None
    stdin: Text | None = None
    stdout: Annotated[Text, Field(min_length=1)]
    argv: list[Text] = Field(default_factory=list)
    exit_code: Annotated[int, Field(ge=0, le=255)] = 0
    compare: CompareSpec | None = None


class ProgramSpec(BaseModel):
    """programs/ID/program.json; every key optional."""

    model_config = _STRICT

    source: Annotated[Text, Field(min_length=1)] = "main.c"
    headers: list[Text] | None = None
    cflags: list[Text] = Field(default_factory=list)
    ldflags: list[Text] = Field(default_factory=lambda: ["-lm"])
    metadata: dict[str, Any] = Field(default_factory=dict)
    compare: CompareSpec | None = None
    # An explicit empty list would make every candidate pass: refused at load time.
    tests: Annotated[list[TestSpec], Field(min_length=1)] | None = None
    # How to draw fresh inputs (programs/generators.py validates the body itself, so its
    # errors name the rule); absent: the program has fixed inputs only.
    inputs: dict[str, Any] | None = None
    # Tests that may be shown to a model (quoted in prompts and feedback); no other test's
    # bytes ever reach a policy.
    examples: list[Text] = Field(default_factory=list)


class SuiteEntry(BaseModel):
    """One program of suite.json's "programs" list."""

    model_config = _STRICT

    id: str
    split: Literal["train", "validation", "test"] = "test"


class SuiteIndex(BaseModel):
    """suite.json ("format" and "version" are checked first, with their own messages)."""

    model_config = _STRICT

    format: Literal["asmopt-suite"]
    version: Literal[1]
    name: str | None = None
    description: str = ""
    programs: list[SuiteEntry]

    @field_validator("version", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        """`true == 1` in Python, so a literal 1 would accept `"version": true`."""
        if isinstance(value, bool):
            raise ValueError(f"must be the integer {SUITE_VERSION}, not true or false")
        return value

    @field_validator("programs", mode="before")
    @classmethod
    def _bare_ids(cls, value: Any) -> Any:
        """A bare id string is short for {"id": ID} (split `test`)."""
        if isinstance(value, list):
            return [{"id": v} if isinstance(v, str) else v for v in value]
        return value


_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "int_type": "an integer",
    "float_type": "a number",
    "dict_type": "an object",
    "model_type": "an object",
    "bool_type": "true or false",
    "missing": "present (it is required)",
}


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "SuiteEntry", "TestSpec", "CompareSpec") or part.startswith(
            "function-"
        ):
            continue  # union branch labels, not fields
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def describe_errors(path: Path | str, exc: ValidationError) -> str:
    """One message naming the file and, per problem, the field, the expected type and the
    value found (the first three problems; the count of the rest)."""
    seen: dict[str, str] = {}
    for err in exc.errors():
        where = _where(tuple(err["loc"]))
        if where in seen:
            continue
        kind = err["type"]
        if kind == "extra_forbidden":
            seen[where] = f"unknown keys: {where!r} is not a field of this format"
            continue
        expected = _EXPECTED.get(kind)
        if kind == "value_error":  # our own validators' words, without pydantic's prefix
            what = str(err.get("ctx", {}).get("error", err["msg"]))
        elif expected:
            what = f"must be {expected}"
        else:
            what = err["msg"][0].lower() + err["msg"][1:]
        got = "" if kind == "missing" else f", got {err.get('input')!r}"[:120]
        seen[where] = f"field {where!r} {what}{got}"
    items = list(seen.values())
    more = f" (and {len(items) - 3} more)" if len(items) > 3 else ""
    return f"{path}: " + "; ".join(items[:3]) + more


def parse_model(model: type[M], data: Any, path: Path | str) -> M:
    """Validate `data` read from `path`; raises ValueError whose message names the file."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(describe_errors(path, exc)) from None
