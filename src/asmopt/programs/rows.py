"""Rows in the SuperCoder schema (the published dataset's verl-parquet layout) as Programs.

Each row's `extra_info.c_code` is the source, `extra_info.inputs` / `extra_info.outputs`
(lists of strings; tuples and one-dimensional numpy arrays, as pandas reads them back, are
taken element by element) are the tests, `extra_info.split` the split; the given -O3 assembly
(`reward_model.ground_truth`, else `extra_info.unoptimized_assembly`, else the fenced
`extra_info.answer`) is kept as `metadata.baseline_asm`. Both the importer (data/) and the
verl reward plug-in (reward/adapters.py) read rows this way, so the schema lives here, below
both, with the id and split conventions it needs.

Rows written by asmopt carry two more `extra_info` fields, so that a reward computed from
the row alone can draw fresh inputs instead of grading the fixed ones (which a candidate
could memorise): `program_id` (the program the row was exported from) and `inputs_spec`
(its input generator as a JSON string, programs/generators.py, with the tests named as the
row names them; null for a program with fixed inputs only). Both are optional: rows
without them (the published file) read as before, as programs with fixed inputs.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from asmopt.programs.generators import GeneratorError, InputGenerator
from asmopt.programs.model import SPLITS, Program, ProgramError, TestCase

REQUIRED_FIELDS = ("c_code", "inputs", "outputs")
# Optional extra_info fields of rows written by asmopt (module docstring).
PROGRAM_ID_FIELD = "program_id"
INPUTS_SPEC_FIELD = "inputs_spec"
FENCE = "```"


class ItemError(Exception):
    """One item is unusable: carries the report reason code and a detail naming the cause."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_.\-]+")


def safe_id(*parts: str) -> str:
    """Join parts into a valid program id ('-' between parts, unsafe characters -> '_').

    Ids become directory names, so the result is limited to the characters the suite format
    allows; very long ids are shortened with a hash suffix to stay unique."""
    raw = "-".join(_UNSAFE_ID_CHARS.sub("_", p).strip("_.-") or "x" for p in parts)
    if not raw[0].isalnum():
        raw = "p" + raw
    if len(raw) > 128:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
        raw = raw[:117] + "-" + digest
    return raw


def normalize_split_name(name: object) -> str | None:
    """Map split names used in the wild ('val', 'valid', 'dev', 'eval') onto ours."""
    text = str(name or "").strip().lower()
    aliases = {"val": "validation", "valid": "validation", "dev": "validation", "eval": "test"}
    text = aliases.get(text, text)
    return text if text in SPLITS else None


def json_safe(value: object) -> object:
    """Round-trip through JSON so metadata stays serialisable in program.json."""
    return json.loads(json.dumps(value, default=str))


def extract_fenced_assembly(text: str) -> str | None:
    """The text after the LAST opening assembly fence, cut at the last closing fence."""
    opener = f"{FENCE}assembly"
    start = text.rfind(opener)
    if start < 0:
        return None
    body = text[start + len(opener) :]
    body = body[body.find("\n") + 1 :] if "\n" in body else ""
    end = body.rfind(FENCE)
    if end >= 0:
        body = body[:end]
    return body.strip("\n") + "\n" if body.strip() else None


def row_test_names(n: int) -> list[str]:
    """The names the tests of a row with `n` inputs get (`t00`, `t01`, ...)."""
    width = max(2, len(str(n - 1)))
    return [f"t{i:0{width}d}" for i in range(n)]


def row_inputs_spec(program: Program) -> str | None:
    """The program's input generator as a row carries it: JSON, with each fixed test
    renamed as the row's reader will name it (`row_test_names`); None without one."""
    if program.inputs is None:
        return None
    spec = program.inputs.to_dict()
    names = dict(
        zip((t.name for t in program.tests), row_test_names(len(program.tests)), strict=True)
    )
    spec["tests"] = {names[t]: c for t, c in spec.get("tests", {}).items() if t in names}
    # Never sort the keys: vars are drawn in the order written, and a var may name an
    # earlier one (a sorted spec draws other bytes, or cannot be read at all).
    return json.dumps(spec)


def _row_generator(extra: dict[str, Any], where: str) -> InputGenerator | None:
    raw = extra.get(INPUTS_SPEC_FIELD)
    if raw is None or raw == "":
        return None
    try:
        data = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise ItemError("bad_row", f"{where}: {exc}") from None
    except ValueError:  # an integer past Python's 4,300 digits, which no spec may hold
        raise ItemError(
            "bad_row",
            f"{where}: extra_info.{INPUTS_SPEC_FIELD} holds an integer of more than 4,300 "
            "digits",
        ) from None
    try:
        return InputGenerator.from_dict(data, f"extra_info.{INPUTS_SPEC_FIELD}")
    except GeneratorError as exc:
        raise ItemError("bad_row", f"{where}: {exc}") from None


def _baseline(row: dict[str, Any], extra: dict[str, Any]) -> str | None:
    reward = row.get("reward_model")
    truth = reward.get("ground_truth") if isinstance(reward, dict) else None
    if isinstance(truth, str) and truth.strip():
        return truth
    given = extra.get("unoptimized_assembly")
    if isinstance(given, str) and given.strip():
        return given
    if isinstance(extra.get("answer"), str):
        return extract_fenced_assembly(extra["answer"])
    return None


def row_sequence(value: object) -> list[object] | None:
    """A row's list field as a plain list, element by element; None if it is not a list.

    A row read back from parquet holds its lists as whatever the reader made of them:
    Python lists (pyarrow, Hugging Face datasets), tuples, or one-dimensional numpy arrays
    (pandas, and the batches verl builds from pandas frames). Each is taken element by
    element; the elements are not converted, so the caller's check of their types stays
    as strict as for a list. A string, a mapping or an array of any other rank is refused.
    numpy is not imported: asmopt's reward runs where numpy may be absent, so an array is
    recognised by its `ndim` and `tolist` (which turns numpy's own scalar strings into
    Python ones and leaves objects as they are)."""
    if isinstance(value, list | tuple):
        return list(value)
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 1:
        items = value.tolist()  # type: ignore[attr-defined]
        return items if isinstance(items, list) else None
    return None


def row_to_program(
    row: Any, row_no: int, where: str, prefix: str, default_split: str
) -> tuple[Program, str]:
    """One row -> (program, split); ItemError names what is wrong with the row."""
    if not isinstance(row, dict):
        raise ItemError("bad_row", f"{where}: row {row_no} is not an object")
    extra = row.get("extra_info")
    if not isinstance(extra, dict):
        raise ItemError("missing_column", f"{where}: row {row_no} has no extra_info object")
    missing = [f for f in REQUIRED_FIELDS if extra.get(f) is None]
    if missing:
        raise ItemError(
            "missing_column",
            f"{where}: row {row_no} lacks " + ", ".join(f"extra_info.{f}" for f in missing),
        )
    split = normalize_split_name(extra.get("split")) or default_split
    index = extra.get("index", row_no)
    pid = safe_id(prefix, split, f"{int(index):05d}" if isinstance(index, int) else str(index))
    code = extra["c_code"]
    inputs, outputs = row_sequence(extra["inputs"]), row_sequence(extra["outputs"])
    if not isinstance(code, str) or not code.strip():
        raise ItemError("bad_row", f"{where}: row {row_no} ({pid}): c_code is empty")
    if inputs is None or outputs is None:
        raise ItemError(
            "bad_row",
            f"{where}: row {row_no} ({pid}): inputs/outputs not lists "
            f"(got {type(extra['inputs']).__name__}, {type(extra['outputs']).__name__})",
        )
    if len(inputs) != len(outputs):
        raise ItemError(
            "io_mismatch",
            f"{where}: row {row_no} ({pid}): {len(inputs)} inputs but {len(outputs)} outputs",
        )
    if not inputs:
        raise ItemError("no_tests", f"{where}: row {row_no} ({pid}): no inputs")
    if not all(isinstance(x, str) for x in [*inputs, *outputs]):
        raise ItemError("bad_row", f"{where}: row {row_no} ({pid}): inputs/outputs not strings")
    tests = tuple(
        TestCase(name=name, stdin=inp.encode(), expected_stdout=out.encode())
        for name, inp, out in zip(row_test_names(len(inputs)), inputs, outputs, strict=True)
    )
    generator = _row_generator(extra, f"{where}: row {row_no} ({pid})")
    meta: dict[str, Any] = {"source": "supercoder", "problem": pid, "origin": where}
    baseline = _baseline(row, extra)
    if baseline is not None:
        meta["baseline_asm"] = baseline
    if row.get("data_source") is not None:
        meta["data_source"] = json_safe(row["data_source"])
    meta["row_index"] = json_safe(index)
    if isinstance(extra.get(PROGRAM_ID_FIELD), str) and extra[PROGRAM_ID_FIELD]:
        meta["program_id"] = extra[PROGRAM_ID_FIELD]
    try:
        program = Program(
            id=pid,
            source=code,
            tests=tests,
            metadata=tuple(sorted(meta.items())),
            inputs=generator,
        )
    except ProgramError as exc:
        raise ItemError("invalid_program", f"{where}: row {row_no}: {exc}") from None
    return program, split
