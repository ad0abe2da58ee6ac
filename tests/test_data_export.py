"""Exports: verl parquet read back with pyarrow against the SuperCoder schema, JSONL, the
HF dataset, self-contained c_code, lossy programs, and the round trip through the
SuperCoder importer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asmopt.adequacy import UnfitProgramError
from asmopt.data.common import DataError
from asmopt.data.export import export_suite, flatten_program, verl_schema
from asmopt.data.prompt import extract_fenced_assembly
from asmopt.data.report import DataReport
from asmopt.data.supercoder import import_supercoder
from asmopt.programs.model import Comparison, Program, Suite, TestCase

ECHO = (
    '#include <stdio.h>\nint main(void){int a; if(scanf("%d",&a)!=1) return 1; '
    'printf("%d\\n", a * 2); return 0;}\n'
)
GIVEN_ASM = "\t.text\n\t.globl main\nmain:\n\txorl %eax, %eax\n\tret\n"


def t(name: str, stdin: bytes, out: bytes, **kw: object) -> TestCase:
    return TestCase(name=name, stdin=stdin, expected_stdout=out, **kw)  # type: ignore[arg-type]


def make_suite() -> Suite:
    """Programs with fixed inputs on purpose (unfit for reward: no input generator): what a
    row must carry of a test's bytes, argv, headers, flags and comparison is the point, so
    every export below passes allow_unfit=True."""
    programs = [
        Program(
            "given",
            ECHO,
            (t("a", b"1\n", b"2\n"), t("b", b"5\n", b"10\n")),
            metadata=(("baseline_asm", GIVEN_ASM),),
        ),
        Program("compiled", ECHO, (t("a", b"3\n", b"6\n"),)),
        Program(
            "flat",
            '#include <stdio.h>\n#include "k.h"\nint main(void){ printf("%d\\n", K * SCALE); '
            "return 0; }\n",
            (t("a", b"", b"42\n"),),
            headers=(("k.h", "#ifndef K_H\n#define K_H\n#define K 21\n#endif\n"),),
            cflags=("-DSCALE=2", "-Wall"),
        ),
        Program("argv", ECHO, (t("a", b"1\n", b"2\n", argv=("x",)),)),
        Program("tol", ECHO, (t("a", b"1\n", b"2\n", compare=Comparison("numeric", 0.1)),)),
        Program("binary", ECHO, (t("a", b"1\n", b"\xff\n"),)),
    ]
    splits = {
        "given": "train",
        "compiled": "train",
        "flat": "test",
        "argv": "test",
        "tol": "test",
        "binary": "validation",
    }
    return Suite("mini", {p.id: p for p in programs}, splits)


@pytest.fixture()
def baseline_fn(toolchain):
    return lambda p: toolchain.baseline_assembly(p)


def test_verl_parquet_matches_schema_and_content(tmp_path: Path, baseline_fn) -> None:
    pq = pytest.importorskip("pyarrow.parquet")

    with pytest.raises(UnfitProgramError, match=r"refusing export .*given \(fixed_inputs"):
        export_suite(make_suite(), tmp_path / "out", "verl-parquet", baseline_fn=baseline_fn)
    assert not (tmp_path / "out").exists()
    written, report = export_suite(
        make_suite(), tmp_path / "out", "verl-parquet", baseline_fn=baseline_fn, allow_unfit=True
    )
    assert sorted(p.name for p in written) == ["test.parquet", "train.parquet"]
    assert report.reason_counts() == {"unsupported": 3}
    assert any(n.startswith("given: exported although marked unfit") for n in report.notes)
    assert {d.item for d in report.dropped} == {"argv", "tol", "binary"}
    train = pq.read_table(tmp_path / "out" / "train.parquet")
    assert train.schema.equals(verl_schema())
    assert train.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    rows = train.to_pylist()
    assert [r["extra_info"]["index"] for r in rows] == [0, 1]
    compiled, given = rows  # id order: compiled < given
    assert given["data_source"] == "mini" and given["ability"] == "code"
    assert given["reward_model"] == {"style": "rule", "ground_truth": GIVEN_ASM}
    info = given["extra_info"]
    assert info["split"] == "train" and info["c_code"] == ECHO
    assert info["inputs"] == ["1\n", "5\n"] and info["outputs"] == ["2\n", "10\n"]
    assert info["unoptimized_assembly"] == GIVEN_ASM
    assert extract_fenced_assembly(info["answer"]) == GIVEN_ASM
    assert given["prompt"] == [{"role": "user", "content": info["question"]}]
    q = info["question"]
    assert "```c\n" + ECHO.rstrip() in q and "```assembly\n" + GIVEN_ASM.rstrip() in q
    assert q.rstrip().endswith("Optimized Assembly Code:")
    assert "Assembly Code:" not in info["c_only_question"].replace("Optimized Assembly", "")
    assert "main:" in compiled["reward_model"]["ground_truth"]  # compiled here at -O3
    manifest = json.loads((tmp_path / "out" / "export.manifest.json").read_text())
    assert [e["id"] for e in manifest["splits"]["train"]] == ["compiled", "given"]


def test_flattened_c_code_builds_alone_and_behaves(tmp_path: Path, toolchain, sandbox) -> None:
    pq = pytest.importorskip("pyarrow.parquet")

    written, _ = export_suite(
        make_suite(),
        tmp_path / "flat.parquet",
        "verl-parquet",
        splits=("test",),
        baseline_fn=lambda p: toolchain.baseline_assembly(p),
        allow_unfit=True,  # fixed inputs on purpose (make_suite)
    )
    (row,) = pq.read_table(written[0]).to_pylist()
    code = row["extra_info"]["c_code"]
    assert code.startswith("#define SCALE 2\n") and "#define K 21" in code
    assert '#include "k.h"' not in code
    alone = Program("alone", code, (t("a", b"", b"42\n"),))
    build = toolchain.compile_binary(alone, ("-O2",))
    assert build.ok, build.message
    assert sandbox.run_program(build.output, stdin=b"").stdout == b"42\n"
    flat, lossy = flatten_program(make_suite().programs["flat"])
    assert lossy == [] and flat.cflags == () and flat.headers == ()


def test_jsonl_hf_and_lossy(tmp_path: Path, baseline_fn) -> None:
    datasets = pytest.importorskip("datasets")
    pq = pytest.importorskip("pyarrow.parquet")

    suite = make_suite()
    fixed = {"baseline_fn": baseline_fn, "allow_unfit": True}  # fixed inputs (make_suite)
    (pq_file,), _ = export_suite(suite, tmp_path / "all.parquet", "verl-parquet", **fixed)
    (jl_file,), _ = export_suite(suite, tmp_path / "all.jsonl", "jsonl", **fixed)
    jl_rows = [json.loads(line) for line in jl_file.read_text().splitlines()]
    assert jl_rows == pq.read_table(pq_file).to_pylist()
    assert [r["extra_info"]["split"] for r in jl_rows] == ["train", "train", "test"]

    written, report = export_suite(suite, tmp_path / "hf", "hf", allow_lossy=True, **fixed)
    dd = datasets.load_from_disk(str(written[0]))
    assert sorted(dd) == ["test", "train"]
    assert dd["test"].num_rows == 3 and dd["train"].num_rows == 2
    assert report.reason_counts() == {"unsupported": 1}  # non-UTF-8 output: never exportable
    assert any("argv" in n for n in report.notes)
    assert dd["train"][1]["reward_model"]["ground_truth"] == GIVEN_ASM

    with pytest.raises(DataError, match=r"writes \.jsonl"):
        export_suite(suite, tmp_path / "x.parquet", "jsonl", **fixed)
    with pytest.raises(DataError, match="nothing to export"):
        export_suite(suite, tmp_path / "v", "jsonl", splits=("validation",), **fixed)


def test_round_trip_through_the_supercoder_importer(tmp_path: Path, baseline_fn) -> None:
    pytest.importorskip("pyarrow")  # the verl-parquet export
    suite = make_suite()
    # fixed inputs on purpose (make_suite): the rows read back as the published file's
    export_suite(suite, tmp_path / "rt", "verl-parquet", baseline_fn=baseline_fn, allow_unfit=True)
    back, report = import_supercoder([tmp_path / "rt"])
    assert report.dropped == []
    assert sorted(back.programs) == [
        "supercoder-test-00000",
        "supercoder-train-00000",
        "supercoder-train-00001",
    ]
    given = back.programs["supercoder-train-00001"]
    assert given.meta["baseline_asm"] == GIVEN_ASM
    assert [(x.stdin, x.expected_stdout) for x in given.tests] == [
        (x.stdin, x.expected_stdout) for x in suite.programs["given"].tests
    ]
    assert back.splits["supercoder-test-00000"] == "test"


def _export_prompts(
    suite: Suite,
    out: Path,
    asm: dict[str, str],
    max_prompt_tokens: int | None = None,
    tokenizer: str | None = None,
) -> tuple[list[Path], DataReport]:
    """`suite` as verl parquet at `out`, each program's baseline taken from `asm`. ECHO has
    fixed inputs: only the prompts' lengths matter to these tests, hence allow_unfit."""
    return export_suite(
        suite,
        out,
        "verl-parquet",
        baseline_fn=lambda p: asm[p.id],
        max_prompt_tokens=max_prompt_tokens,
        tokenizer=tokenizer,
        allow_unfit=True,
    )


def test_max_prompt_tokens_drops_and_names_long_prompts(tmp_path: Path) -> None:
    """Rows over the limit are dropped with their count (a trainer's own length filter
    would drop them silently); row indices stay contiguous; the longest kept is reported."""
    import pyarrow.parquet as pq

    from asmopt.data.tokens import TokenCounter

    long_asm = GIVEN_ASM + "".join(f"\tnop # padding line {i}\n" for i in range(400))
    suite = Suite(
        "lengths",
        {
            "short": Program("short", ECHO, (t("a", b"1\n", b"2\n"),)),
            "long": Program("long", ECHO, (t("a", b"1\n", b"2\n"),)),
            "short2": Program("short2", ECHO, (t("a", b"2\n", b"4\n"),)),
        },
        {"short": "train", "long": "train", "short2": "train"},
    )
    asm = {"short": GIVEN_ASM, "long": long_asm, "short2": GIVEN_ASM}
    count = TokenCounter()  # the character estimate; a tokenizer path works the same way
    (full,), _ = _export_prompts(suite, tmp_path / "all.parquet", asm)
    lengths = {
        r["reward_model"]["ground_truth"]: count.count(r["prompt"][0]["content"])
        for r in pq.read_table(full).to_pylist()
    }
    short_len, long_len = lengths[GIVEN_ASM], lengths[long_asm]
    assert short_len < long_len
    limit = (short_len + long_len) // 2
    (out,), report = _export_prompts(suite, tmp_path / "cut.parquet", asm, max_prompt_tokens=limit)
    rows = pq.read_table(out).to_pylist()
    assert [r["extra_info"]["index"] for r in rows] == [0, 1]
    assert all(r["reward_model"]["ground_truth"] == GIVEN_ASM for r in rows)
    (drop,) = report.dropped
    assert drop.item == "long" and drop.reason == "prompt_too_long"
    assert f"{long_len} prompt tokens > {limit}" in drop.detail
    assert report.stats["prompt_tokens"]["longest_kept"] == short_len


def test_max_prompt_tokens_counts_the_chat_template_as_the_trainer_does(tmp_path: Path) -> None:
    """With a tokenizer that has a chat template, the limit applies to the rendered template
    with the generation prompt (what verl's overlong filter and TRL see), not to the bare
    message text: a row between the two counts is dropped, and `trl_columns`' count is the
    same number."""
    import pyarrow.parquet as pq

    pytest.importorskip("transformers")
    from tiny_model import build_tiny_model
    from transformers import AutoTokenizer

    from asmopt.policies.prompts import prompt_token_count

    tok_dir = build_tiny_model(tmp_path / "tok")
    hf = AutoTokenizer.from_pretrained(str(tok_dir))
    long_asm = GIVEN_ASM + "".join(f"\tnop # padding line {i}\n" for i in range(200))
    suite = Suite(
        "template",
        {
            "p": Program("p", ECHO, (t("a", b"1\n", b"2\n"),)),
            "long": Program("long", ECHO, (t("a", b"1\n", b"2\n"),)),
        },
        {"p": "train", "long": "train"},
    )
    asm = {"p": GIVEN_ASM, "long": long_asm}
    (full,), _ = _export_prompts(suite, tmp_path / "all.parquet", asm)
    by_id = {r["reward_model"]["ground_truth"]: r for r in pq.read_table(full).to_pylist()}
    messages = [{"role": m["role"], "content": m["content"]} for m in by_id[GIVEN_ASM]["prompt"]]
    text = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    templated = len(hf(text, add_special_tokens=False)["input_ids"])
    bare = len(
        hf("\n\n".join(m["content"] for m in messages), add_special_tokens=False)["input_ids"]
    )
    assert templated > bare
    assert prompt_token_count(hf, messages) == templated  # trl_columns' count

    def export_at(limit: int) -> list[str]:
        _, report = _export_prompts(
            suite,
            tmp_path / f"cut{limit}.parquet",
            asm,
            max_prompt_tokens=limit,
            tokenizer=str(tok_dir),
        )
        assert "with its chat template" in report.stats["prompt_tokens"]["counted_by"]
        return sorted(d.item for d in report.dropped if d.reason == "prompt_too_long")

    assert export_at(templated) == ["long"]
    with pytest.raises(DataError):  # nothing left to export: said, not an empty file
        export_at(templated - 1)


def test_non_utf8_source_is_kept_in_the_suite_but_not_exported_as_text() -> None:
    """Rows and prompts are text: a byte-exact Latin-1 source is refused by the row builder
    (named) and shown with U+FFFD in a prompt, never sent as broken text."""
    from asmopt.data.common import ItemError
    from asmopt.data.export import make_row
    from asmopt.policies.prompts import load_template
    from asmopt.programs.model import Program, TestCase, decode_source

    source = decode_source(b"/* caf\xe9 */\nint main(void){return 0;}\n")
    program = Program(id="latin", source=source, tests=(TestCase("t", b"", b""),))
    with pytest.raises(ItemError, match="C source is not UTF-8"):
        make_row(program, "train", 0, "main:\n\tret\n", "test")
    prompt = load_template("reference").render(source, "main:\n\tret\n")
    assert "caf\ufffd" in prompt
    prompt.encode("utf-8")  # valid text
