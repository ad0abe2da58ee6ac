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
outputs) is reported as `missing_column` and skipped; a bad row is reported and skipped,
and so is a row whose program the suite loader would refuse once written (a NUL in
`c_code`, a generator naming a test the row lacks; `common.check_loadable`), so one bad
row never makes the written suite unloadable; the other files and rows are imported. A
file found in a given directory that is a symlink out of it, or any file that is a FIFO
or a device, is refused without being opened (data/paths.py).

A row exported by asmopt may carry its program's input generator (`extra_info.inputs_spec`,
programs/rows.py); it is kept. With `mutator=True` every other row's program gets a
generator learnt from its test inputs where its builds accept the drawn inputs
(`common.learn_inputs`, data/mutator.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from asmopt.programs.model import Program, Suite
from asmopt.programs.rows import REQUIRED_FIELDS, ItemError, row_to_program
from asmopt.safe_io import loads_json

from .common import DataError, ImportRun, check_loadable, learn_inputs
from .paths import Tree, check_regular
from .report import DataReport


def _files(paths: Sequence[str | Path], report: DataReport) -> list[Path]:
    """The row files to read. A file found in a given directory must stay inside it (a
    symlink out is refused, data/paths.py); a file named on the command line is read
    where it leads. Either must be a regular file: a FIFO or device is never opened."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            # .json only when named explicitly: directories hold manifests and other JSON
            inside = sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".jsonl"))
            if not inside:
                report.drop(str(path), "missing_file", f"{path}: no .parquet or .jsonl files")
            tree = Tree(path, "the directory")
            found.extend(_usable(inside, report, tree.check_file))
        elif os.path.lexists(path):
            found.extend(_usable([path], report, check_regular))
        else:
            report.drop(str(path), "missing_file", f"{path}: file not found")
    return found


def _usable(
    files: list[Path], report: DataReport, check: Callable[[Path, str], object]
) -> list[Path]:
    """The files `check` accepts; each refused one is dropped, named with the reason."""
    usable = []
    for path in files:
        try:
            check(path, "rows file")
        except ItemError as exc:
            report.drop(path.name, exc.reason, exc.detail)
            continue
        usable.append(path)
    return usable


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
            rows = loads_json(text)
        except json.JSONDecodeError as exc:
            raise ItemError("bad_row", f"{path}: invalid JSON at line {exc.lineno}") from None
        yield from enumerate(rows)
        return
    row_no = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield row_no, loads_json(line)
        except json.JSONDecodeError as exc:
            yield row_no, ItemError("bad_row", f"{path}:{line_no}: invalid JSON ({exc.msg})")
        row_no += 1


def _row_program(
    row: Any, row_no: int, where: str, prefix: str, default_split: str
) -> tuple[Program, str]:
    """`row_to_program`, with text no file can hold (a lone surrogate such as JSON's
    `\\ud800`, which cannot be encoded as UTF-8) reported as a bad row, not a traceback."""
    try:
        return row_to_program(row, row_no, where, prefix, default_split)
    except UnicodeEncodeError as exc:
        raise ItemError(
            "bad_row",
            f"{where}: row {row_no}: text holds a lone surrogate ({exc.object[exc.start]!a} "
            f"at offset {exc.start}), which UTF-8 cannot encode",
        ) from None


def import_supercoder(
    paths: Sequence[str | Path],
    *,
    prefix: str = "supercoder",
    default_split: str = "train",
    name: str = "supercoder",
    run: ImportRun | None = None,
) -> tuple[Suite, DataReport]:
    """Read SuperCoder-schema rows from parquet / JSONL files or directories of them.
    `run.mutator` learns fresh inputs from the tests (`common.learn_inputs`)."""
    run = run or ImportRun()
    report = DataReport("import supercoder")
    programs: dict[str, Program] = {}
    splits: dict[str, str] = {}
    no_baseline = 0
    from tqdm import tqdm

    bar = tqdm(desc="supercoder", unit="row", disable=not run.progress)
    for path in _files(paths, report):
        reader = _parquet_rows if path.suffix == ".parquet" else _jsonl_rows
        try:
            for row_no, row in reader(path):
                bar.update(1)
                try:
                    if isinstance(row, ItemError):
                        raise row
                    program, split = _row_program(row, row_no, path.name, prefix, default_split)
                    if program.id in programs:
                        raise ItemError(
                            "duplicate_id",
                            f"{path.name}: row {row_no}: id {program.id} already imported "
                            "(same split and index)",
                        )
                    check_loadable(program)
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
    if run.mutator and programs:
        suite = learn_inputs(suite, report, run)
    return suite, report
