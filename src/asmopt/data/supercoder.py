"""Import rows in the SuperCoder (verl parquet) schema, from parquet or JSONL files.

Each row becomes one program: `extra_info.c_code` is the source, `extra_info.inputs` /
`extra_info.outputs` (lists of strings) are the tests' stdin and expected stdout, and
`extra_info.split` the split ('val' is read as validation). The given -O3 assembly, from
`reward_model.ground_truth` (else `extra_info.unoptimized_assembly`, else the fenced
`extra_info.answer`), is kept verbatim as `metadata.baseline_asm`, because it was made by
the reference's compiler and is what the published scores were measured against; exports
reuse it instead of recompiling. Ids are `PREFIX-SPLIT-INDEX` from `extra_info.index`
(row number when absent).

A file without the `extra_info` column (or whose `extra_info` lacks c_code, inputs or
outputs) is reported as `missing_column` and skipped; a bad row is reported and skipped;
the other files and rows are imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from asmopt.programs.model import Program, ProgramError, Suite, TestCase

from .common import DataError, ItemError, json_safe, normalize_split_name, safe_id
from .prompt import extract_fenced_assembly
from .report import DataReport

REQUIRED_FIELDS = ("c_code", "inputs", "outputs")


def _files(paths: Sequence[str | Path], report: DataReport) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            # .json only when named explicitly: directories hold manifests and other JSON
            inside = sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".jsonl"))
            if not inside:
                report.drop(str(path), "missing_file", f"{path}: no .parquet or .jsonl files")
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            report.drop(str(path), "missing_file", f"{path}: file not found")
    return found


def _parquet_rows(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("reading parquet needs pyarrow (pip install pyarrow)") from None
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:
        raise ItemError("unreadable", f"{path}: not a readable parquet file ({exc})") from None
    schema = pf.schema_arrow
    if "extra_info" not in schema.names:
        raise ItemError(
            "missing_column",
            f"{path}: missing column extra_info (columns: {', '.join(schema.names)})",
        )
    extra_type = schema.field("extra_info").type
    names = (
        [extra_type.field(i).name for i in range(extra_type.num_fields)]
        if hasattr(extra_type, "num_fields")
        else []
    )
    missing = [f"extra_info.{f}" for f in REQUIRED_FIELDS if f not in names]
    if missing:
        raise ItemError("missing_column", f"{path}: missing column(s) {', '.join(missing)}")
    row_no = 0
    for batch in pf.iter_batches(batch_size=256):
        for row in batch.to_pylist():
            yield row_no, row
            row_no += 1


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ItemError("not_utf8", f"{path}: not UTF-8 (byte offset {exc.start})") from None
    except OSError as exc:
        raise ItemError("unreadable", f"{path}: cannot read ({exc.strerror})") from None
    stripped = text.lstrip()
    if path.suffix == ".json" and stripped.startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ItemError("bad_row", f"{path}: invalid JSON at line {exc.lineno}") from None
        yield from enumerate(rows)
        return
    row_no = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield row_no, json.loads(line)
        except json.JSONDecodeError as exc:
            yield row_no, ItemError("bad_row", f"{path}:{line_no}: invalid JSON ({exc.msg})")
        row_no += 1


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
    inputs, outputs = extra["inputs"], extra["outputs"]
    if not isinstance(code, str) or not code.strip():
        raise ItemError("bad_row", f"{where}: row {row_no} ({pid}): c_code is empty")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ItemError("bad_row", f"{where}: row {row_no} ({pid}): inputs/outputs not lists")
    if len(inputs) != len(outputs):
        raise ItemError(
            "io_mismatch",
            f"{where}: row {row_no} ({pid}): {len(inputs)} inputs but {len(outputs)} outputs",
        )
    if not inputs:
        raise ItemError("no_tests", f"{where}: row {row_no} ({pid}): no inputs")
    if not all(isinstance(x, str) for x in [*inputs, *outputs]):
        raise ItemError("bad_row", f"{where}: row {row_no} ({pid}): inputs/outputs not strings")
    width = max(2, len(str(len(inputs) - 1)))
    tests = tuple(
        TestCase(name=f"t{i:0{width}d}", stdin=inp.encode(), expected_stdout=out.encode())
        for i, (inp, out) in enumerate(zip(inputs, outputs, strict=True))
    )
    meta: dict[str, Any] = {"source": "supercoder", "problem": pid, "origin": where}
    baseline = _baseline(row, extra)
    if baseline is not None:
        meta["baseline_asm"] = baseline
    if row.get("data_source") is not None:
        meta["data_source"] = json_safe(row["data_source"])
    meta["row_index"] = json_safe(index)
    try:
        program = Program(id=pid, source=code, tests=tests, metadata=tuple(sorted(meta.items())))
    except ProgramError as exc:
        raise ItemError("invalid_program", f"{where}: row {row_no}: {exc}") from None
    return program, split


def import_supercoder(
    paths: Sequence[str | Path],
    *,
    prefix: str = "supercoder",
    default_split: str = "train",
    name: str = "supercoder",
    progress: bool = False,
) -> tuple[Suite, DataReport]:
    """Read SuperCoder-schema rows from parquet / JSONL files or directories of them."""
    report = DataReport("import supercoder")
    programs: dict[str, Program] = {}
    splits: dict[str, str] = {}
    no_baseline = 0
    from tqdm import tqdm

    bar = tqdm(desc="supercoder", unit="row", disable=not progress)
    for path in _files(paths, report):
        reader = _parquet_rows if path.suffix == ".parquet" else _jsonl_rows
        try:
            for row_no, row in reader(path):
                bar.update(1)
                try:
                    if isinstance(row, ItemError):
                        raise row
                    program, split = row_to_program(row, row_no, path.name, prefix, default_split)
                    if program.id in programs:
                        raise ItemError(
                            "duplicate_id",
                            f"{path.name}: row {row_no}: id {program.id} already imported "
                            "(same split and index)",
                        )
                except ItemError as exc:
                    report.drop(f"{path.name}:{row_no}", exc.reason, exc.detail)
                    continue
                programs[program.id] = program
                splits[program.id] = split
                no_baseline += "baseline_asm" not in program.meta
        except ItemError as exc:
            report.drop(str(path.name), exc.reason, exc.detail)
    bar.close()
    if no_baseline:
        report.note(
            f"{no_baseline} row(s) carry no -O3 assembly; their baseline will be compiled here"
        )
    report.kept = sorted(programs)
    suite = Suite(
        name=name,
        programs=programs,
        splits=splits,
        description="rows imported from the SuperCoder verl schema",
    )
    return suite, report
