"""Export a suite as verl parquet (the SuperCoder row schema), JSONL or a HF dataset.

One row per program, exactly the reference schema so verl recipes and reward plug-ins
written for the published file run unchanged:

```
data_source   string
prompt        list<struct<role: string, content: string>>   one user turn: the question
ability       string                                         "code"
reward_model  struct<style: string, ground_truth: string>    "rule", the -O3 assembly
extra_info    struct<split: string, index: int64, c_code: string, question: string,
                     c_only_question: string, answer: string, inputs: list<string>,
                     outputs: list<string>, unoptimized_assembly: string,
                     program_id: string, inputs_spec: string>
```

`unoptimized_assembly` holds the -O3 baseline, as in the published data. The last two
fields are ours, after the published ones (readers of the published schema that look
fields up by name are unaffected): `program_id` names the program, and `inputs_spec` is its
input generator as a JSON string (null for a program with fixed inputs only), so a reward
computed from the row alone draws fresh inputs (programs/rows.py). Rows are in
program-id order within each split and `index` is the row's position in its split; a
manifest written beside the output maps (split, index) back to program ids and content
hashes. The baseline is `metadata.baseline_asm` when the program carries one (SuperCoder
imports), else `gcc -O3 -S` in the sandboxed toolchain.

`c_code` is self-contained: the program's own headers are inlined and `-D` flags become
`#define` lines (see `flatten_program`), and the baseline is compiled from that text. The
schema cannot express argv, a non-zero expected exit code, numeric tolerance, non-UTF-8
test data or other cflags; such programs are skipped with reason `unsupported` (or
included anyway with `allow_lossy=True`, and named in the notes).

With `max_prompt_tokens`, rows whose prompt is longer than that many tokens are dropped
(reason `prompt_too_long`, with the count), counted with the policy model's tokenizer
(`tokenizer`, a local path) or else the character estimate of `tokens.py`. A trainer that
filters overlong prompts itself (verl's `filter_overlong_prompts`) would otherwise drop them
silently at load time. With a tokenizer that has a chat template the count is the rendered
template with the generation prompt, as verl's filter counts it, so the same limit can be
given to both; without one (a bare tokenizer.json, or the estimate) the template's tokens
are not counted, and the trainer's limit needs room for them.

Programs whose test-adequacy mark says UNFIT (their tests accept a trivial or mutated
program, docs/adequacy.md) are refused with an error naming them: a training row for them
would pay a reward for wrong answers. `allow_unfit=True` exports them anyway, named in the
notes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from asmopt.programs.model import SPLITS, Program, Suite, encode_source
from asmopt.programs.rows import INPUTS_SPEC_FIELD, PROGRAM_ID_FIELD, row_inputs_spec
from asmopt.safe_io import check_output_file

from .common import DataError, ItemError
from .prompt import build_c_only_question, build_question, format_answer
from .report import DataReport

FORMATS = ("verl-parquet", "jsonl", "hf")
# Other names a user reaches for first: verl's own docs call its input "the parquet".
FORMAT_ALIASES = {"verl": "verl-parquet", "parquet": "verl-parquet"}
SUFFIX = {"verl-parquet": ".parquet", "jsonl": ".jsonl"}
MANIFEST_SUFFIX = ".manifest.json"


def canonical_format(fmt: str) -> str:
    """The export format `fmt` names (an alias resolved), or a DataError listing them."""
    fmt = FORMAT_ALIASES.get(fmt, fmt)
    if fmt not in FORMATS:
        names = ", ".join([*FORMATS, *(f"{a} (= {f})" for a, f in FORMAT_ALIASES.items())])
        raise DataError(f"unknown export format {fmt!r}; expected one of {names}")
    return fmt


def verl_schema() -> Any:
    """The pyarrow schema of a SuperCoder / verl row."""
    import pyarrow as pa

    return pa.schema(
        [
            ("data_source", pa.string()),
            (
                "prompt",
                pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])),
            ),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            (
                "extra_info",
                pa.struct(
                    [
                        ("split", pa.string()),
                        ("index", pa.int64()),
                        ("c_code", pa.string()),
                        ("question", pa.string()),
                        ("c_only_question", pa.string()),
                        ("answer", pa.string()),
                        ("inputs", pa.list_(pa.string())),
                        ("outputs", pa.list_(pa.string())),
                        ("unoptimized_assembly", pa.string()),
                        ("program_id", pa.string()),
                        ("inputs_spec", pa.string()),
                    ]
                ),
            ),
        ]
    )


# Includes of the program's own headers: with quotes, or with angle brackets for a header
# found through `-I.` (llvm-test-suite's shared headers, bundled by the importer).
_QUOTE_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">]+)[">][^\n]*$', re.MULTILINE)


def flatten_program(program: Program) -> tuple[Program, list[str]]:
    """One self-contained C text, so a row's `c_code` compiles alone with plain gcc.

    `-DNAME[=VALUE]` flags become `#define` lines at the top (the same thing for a single
    translation unit) and quoted includes of the program's own headers are inlined (each
    header once, which is what include guards do anyway), `-include` of a bundled header
    is inlined first, as gcc reads it, and `-I.` (where bundled headers sit) goes with
    them. Warning flags (-W...) are dropped as harmless. Returns the flattened program and
    what could not be expressed (other cflags, extra ldflags, argv, exit codes,
    tolerances)."""
    lossy: list[str] = []
    defines: list[str] = []
    kept_flags: list[str] = []
    forced: list[str] = []  # `-include NAME` of a bundled header: inlined first
    flags = list(program.cflags)
    i = 0
    while i < len(flags):
        flag = flags[i]
        i += 1
        if flag == "-include" and i < len(flags) and flags[i] in program.header_files:
            forced.append(f'#include "{flags[i]}"')
            i += 1
        elif flag == "-I.":
            continue  # the build directory, where bundled headers sit: they are inlined
        elif flag.startswith("-D") and len(flag) > 2:
            name, _, value = flag[2:].partition("=")
            defines.append(f"#define {name} {value or '1'}")
        elif flag.startswith("-W"):
            continue
        else:
            kept_flags.append(flag)
    if kept_flags:
        lossy.append(f"cflags {' '.join(kept_flags)}")
    extra_ld = [f for f in program.ldflags if f != "-lm"]
    if extra_ld:
        lossy.append(f"ldflags {' '.join(extra_ld)}")
    for t in program.tests:
        if t.argv:
            lossy.append(f"test {t.name} has argv")
        if t.expected_exit:
            lossy.append(f"test {t.name} expects exit code {t.expected_exit}")
        if t.compare.mode != "exact":
            lossy.append(f"test {t.name} uses {t.compare.mode} comparison")
    headers = program.header_files
    inlined: set[str] = set()

    def inline(text: str, depth: int) -> str:
        def repl(m: re.Match[str]) -> str:
            name = m.group(2)
            if name not in headers or depth > 20:
                return m.group(0)
            if name in inlined:
                return f"/* {name} already included above */"
            inlined.add(name)
            return inline(headers[name], depth + 1).rstrip("\n")

        return _QUOTE_INCLUDE.sub(repl, text)

    source = (
        inline("\n".join([*forced, program.source]), 0) if forced else inline(program.source, 0)
    )
    if defines:
        source = "\n".join(defines) + "\n" + source
    if source == program.source and not program.headers and not program.cflags:
        return program, lossy
    flat = replace(program, source=source, headers=(), cflags=tuple(kept_flags))
    return flat, lossy


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ItemError("unsupported", f"{what} is not UTF-8 text") from None


def make_row(
    program: Program, split: str, index: int, baseline: str, data_source: str
) -> dict[str, Any]:
    """One verl row (see the module docstring)."""
    # A source kept byte for byte (docs/suite_format.md) may not be UTF-8; rows are text.
    _text(encode_source(program.source), "C source")
    question = build_question(program.source, baseline)
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": question}],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": baseline},
        "extra_info": {
            "split": split,
            "index": index,
            "c_code": program.source,
            "question": question,
            "c_only_question": build_c_only_question(program.source),
            "answer": format_answer(baseline),
            "inputs": [_text(t.stdin, f"test {t.name} input") for t in program.tests],
            "outputs": [_text(t.expected_stdout, f"test {t.name} output") for t in program.tests],
            "unoptimized_assembly": baseline,
            PROGRAM_ID_FIELD: program.id,
            INPUTS_SPEC_FIELD: row_inputs_spec(program),
        },
    }


def build_rows(
    suite: Suite,
    *,
    splits: Sequence[str] = SPLITS,
    data_source: str | None = None,
    allow_lossy: bool = False,
    allow_unfit: bool = False,
    baseline_fn: Callable[[Program], str] | None = None,
    report: DataReport | None = None,
    progress: bool = False,
    max_prompt_tokens: int | None = None,
    tokenizer: str | None = None,
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[str]], DataReport]:
    """Rows per split, program ids per split (row order), and the report. Raises
    UnfitProgramError naming every selected program marked unfit, unless `allow_unfit`.
    Wide because it takes `export_suite`'s options one for one, plus the report it fills."""
    from asmopt.adequacy import require_fit, unfit_programs

    report = report or DataReport("export")
    source = data_source or suite.name
    if baseline_fn is None:
        from asmopt.toolchain import default_toolchain

        toolchain = default_toolchain()

        def baseline_fn(p: Program) -> str:
            return toolchain.baseline_assembly(p)

    from tqdm import tqdm

    from .tokens import TokenCounter

    counter = TokenCounter(tokenizer) if max_prompt_tokens is not None else None
    longest = 0
    rows: dict[str, list[dict[str, Any]]] = {}
    ids: dict[str, list[str]] = {}
    chosen = [p for p in suite.select() if suite.splits[p.id] in splits]
    require_fit(chosen, "export", allow_unfit)
    for pid, why in unfit_programs(chosen).items():
        report.note(f"{pid}: exported although marked unfit (--allow-unfit): {why}")
    for program in tqdm(chosen, desc="export", unit="prog", disable=not progress):
        split = suite.splits[program.id]
        flat, lossy = flatten_program(program)
        if lossy and not allow_lossy:
            report.drop(program.id, "unsupported", "; ".join(lossy))
            continue
        try:
            given = program.meta.get("baseline_asm")
            baseline = given if isinstance(given, str) and given.strip() else baseline_fn(flat)
            row = make_row(flat, split, len(rows.get(split, [])), baseline, source)
        except ItemError as exc:
            report.drop(program.id, exc.reason, exc.detail)
            continue
        except Exception as exc:  # the baseline could not be compiled
            report.drop(program.id, "compile_failed", str(exc))
            continue
        if counter is not None and max_prompt_tokens is not None:
            n = counter.count_prompt(row["prompt"])
            if n > max_prompt_tokens:
                report.drop(
                    program.id,
                    "prompt_too_long",
                    f"{n} prompt tokens > {max_prompt_tokens} ({counter.description})",
                )
                continue
            longest = max(longest, n)
        if lossy:
            report.note(f"{program.id}: exported without {'; '.join(lossy)}")
        rows.setdefault(split, []).append(row)
        ids.setdefault(split, []).append(program.id)
        report.keep(program.id)
    report.stats["rows"] = {s: len(r) for s, r in rows.items()}
    if counter is not None:
        report.stats["prompt_tokens"] = {
            "limit": max_prompt_tokens,
            "longest_kept": longest,
            "counted_by": counter.description,
        }
    return rows, ids, report


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("the verl-parquet export needs pyarrow (pip install pyarrow)") from None
    table = pa.Table.from_pylist(rows, schema=verl_schema())
    pq.write_table(table, path)


def _write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _write_hf(rows: dict[str, list[dict[str, Any]]], path: Path) -> None:
    try:
        import datasets
    except ImportError:
        raise DataError(
            "the hf export needs the 'datasets' package (pip install datasets)"
        ) from None
    features = datasets.Features.from_arrow_schema(verl_schema())
    dd = datasets.DatasetDict(
        {split: datasets.Dataset.from_list(r, features=features) for split, r in rows.items()}
    )
    dd.save_to_disk(str(path))


def export_suite(
    suite: Suite,
    out: str | Path,
    fmt: str,
    *,
    splits: Sequence[str] = SPLITS,
    data_source: str | None = None,
    allow_lossy: bool = False,
    allow_unfit: bool = False,
    baseline_fn: Callable[[Program], str] | None = None,
    progress: bool = False,
    max_prompt_tokens: int | None = None,
    tokenizer: str | None = None,
) -> tuple[list[Path], DataReport]:
    """Write the export; returns the files written and the report.

    `out` ending in .parquet / .jsonl is one file holding every selected split; any other
    path is a directory with one file per non-empty split (SPLIT.parquet / SPLIT.jsonl),
    the shape verl's `data.train_files` / `data.val_files` expect. The `hf` format always
    writes a `datasets.DatasetDict` directory (load it with `datasets.load_from_disk`).

    Wide because its keywords are the `data export` command's options one for one, each with a
    default, so callers set only those they change."""
    fmt = canonical_format(fmt)
    out = Path(out)
    if fmt != "hf" and out.suffix in (".parquet", ".jsonl"):  # never over a device or FIFO
        for path in (out, out.with_name(out.name + MANIFEST_SUFFIX)):
            check_output_file(path)
    rows, ids, report = build_rows(
        suite,
        splits=splits,
        data_source=data_source,
        allow_lossy=allow_lossy,
        allow_unfit=allow_unfit,
        baseline_fn=baseline_fn,
        progress=progress,
        report=DataReport(f"export {fmt}"),
        max_prompt_tokens=max_prompt_tokens,
        tokenizer=tokenizer,
    )
    if not rows:
        raise DataError(
            f"nothing to export from suite {suite.name!r} (splits {', '.join(splits)}): "
            + (", ".join(f"{r}={n}" for r, n in report.reason_counts().items()) or "no programs")
        )
    written: list[Path] = []
    manifest: dict[str, Any] = {
        "suite": suite.name,
        "format": fmt,
        "splits": {
            s: [
                {"index": i, "id": pid, "content_hash": suite.programs[pid].content_hash()}
                for i, pid in enumerate(ids[s])
            ]
            for s in ids
        },
    }
    if fmt == "hf":
        out.mkdir(parents=True, exist_ok=True)
        _write_hf(rows, out)
        written.append(out)
        manifest_path = out / f"export{MANIFEST_SUFFIX}"
    elif out.suffix in (".parquet", ".jsonl"):
        if out.suffix != SUFFIX[fmt]:
            raise DataError(f"{out}: format {fmt} writes {SUFFIX[fmt]} files")
        out.parent.mkdir(parents=True, exist_ok=True)
        flat = [r for s in SPLITS if s in rows for r in rows[s]]
        (_write_parquet if fmt == "verl-parquet" else _write_jsonl)(flat, out)
        written.append(out)
        manifest_path = out.with_name(out.name + MANIFEST_SUFFIX)
    else:
        out.mkdir(parents=True, exist_ok=True)
        for split, split_rows in rows.items():
            path = out / f"{split}{SUFFIX[fmt]}"
            (_write_parquet if fmt == "verl-parquet" else _write_jsonl)(split_rows, path)
            written.append(path)
        manifest_path = out / f"export{MANIFEST_SUFFIX}"
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    report.stats["manifest"] = manifest_path.name
    return written, report
