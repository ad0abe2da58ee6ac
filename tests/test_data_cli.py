"""`asmopt data ...` end to end on a tiny plain-layout pool: import, build, export, errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

import asmopt.cli
import asmopt.programs
from asmopt.cli import data as data_cli
from asmopt.cli.common import common_parser
from asmopt.programs.suite_io import load_suite

PROG = (
    '#include <stdio.h>\nint main(void){long n,s=0; if(scanf("%ld",&n)!=1) return 1;'
    ' for(long i=0;i<n;i++) s+=i%9; printf("%ld\\n", s); return 0;}\n'
)


def make_pool(root: Path) -> Path:
    for name, n in (("alpha", 10), ("beta", 20)):
        (root / name / "tests").mkdir(parents=True)
        (root / name / f"{name}.c").write_text(PROG.replace("%9", f"%{n % 7 + 2}"))
        (root / name / "tests" / "a.in").write_text(f"{n}\n")
    (root / "gamma").mkdir()
    (root / "gamma" / "main.c").write_bytes(b"/* \xff */ int main(void){return 0;}\n")
    return root


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = asmopt.cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_register_adds_the_data_group() -> None:
    parser = argparse.ArgumentParser(prog="asmopt")
    sub = parser.add_subparsers(dest="command")
    data_cli.register(sub, common_parser())
    args = parser.parse_args(
        ["data", "import", "llvm-test-suite", "a", "b", "-o", "out", "--size", "large"]
    )
    assert args.paths == ["a", "b"] and args.size == "large"
    # run with signals handled, the output checked first (_import_command)
    assert args.func.__wrapped__.__wrapped__ is data_cli._import_llvm
    args = parser.parse_args(
        ["data", "export", "S", "--format", "jsonl", "-o", "x.jsonl", "--json"]
    )
    assert args.suite_path == "S" and args.json


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_import_build_export_through_the_cli(tmp_path: Path, capsys) -> None:
    pool = make_pool(tmp_path / "pool")
    code, out, _ = run(["data", "import", "dir", str(pool), "-o", str(tmp_path / "s")], capsys)
    assert code == 0
    assert "kept 2, dropped 1" in out and "not_utf8" in out and "data build" in out
    assert sorted(load_suite(tmp_path / "s").programs) == ["alpha", "beta"]

    code, out, err = run(["data", "import", "dir", str(pool), "-o", str(tmp_path / "s")], capsys)
    assert code == 2 and "asmopt: error:" in err and "--force" in err

    code, out, _ = run(
        [
            "data",
            "build",
            str(tmp_path / "s"),
            "-o",
            str(tmp_path / "b"),
            "--speedup",
            "0",
            "--timing-runs",
            "1",
            "--val-frac",
            "0",
            "--json",
        ],
        capsys,
    )
    assert code == 0
    result = json.loads(out)
    assert result["programs"] == 2 and result["report"]["kept"] == 2
    assert result["report"]["stats"]["pool_report"]["dropped"] == 1
    built = load_suite(tmp_path / "b")
    assert built.programs["alpha"].tests[0].expected_stdout == b"%d\n" % sum(
        i % 5 for i in range(10)
    )
    assert (tmp_path / "b" / "data_report.json").is_file()

    export = [
        "data",
        "export",
        str(tmp_path / "b"),
        "--format",
        "jsonl",
        "-o",
        str(tmp_path / "e" / "rows.jsonl"),
    ]
    # Each built program has one test and a generator learnt from it, so its adequacy is
    # judged on drawn inputs too (one fixed input alone is no reason); but the generator
    # draws one small number, so the program is unfit first of all (tabulable), refused...
    mark = built.programs["alpha"].meta["adequacy"]
    assert not any("one fixed input" in r for r in mark["reasons"]), mark
    assert built.programs["alpha"].inputs is not None
    code, _, err = run(export, capsys)
    assert code == 2 and "refusing export for 2 program(s)" in err
    assert "alpha (tabulable" in err and "beta (tabulable" in err
    # ... unless allowed explicitly.
    code, out, _ = run([*export, "--allow-unfit"], capsys)
    assert code == 0 and "wrote 2 rows (train 2)" in out
    assert len((tmp_path / "e" / "rows.jsonl").read_text().splitlines()) == 2


def test_nothing_kept_is_an_error_and_writes_nothing(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "pool"
    (empty / "bad").mkdir(parents=True)
    (empty / "bad" / "main.c").write_bytes(b"\xfe\xff")
    code, _, err = run(["data", "import", "dir", str(empty), "-o", str(tmp_path / "s")], capsys)
    assert code == 2 and "no programs kept" in err and "not_utf8=1" in err
    assert not (tmp_path / "s").exists()
    code, _, err = run(
        ["data", "import", "codenet", str(tmp_path), "-o", str(tmp_path / "c")], capsys
    )
    assert code == 2 and "not a CodeNet checkout" in err


def test_through_the_asmopt_command(tmp_path: Path, capsys, monkeypatch) -> None:
    pool = make_pool(tmp_path / "pool")
    code = asmopt.cli.main(["data", "import", "dir", str(pool), "-o", str(tmp_path / "s")])
    assert code == 0
    code = asmopt.cli.main(
        [
            "data",
            "export",
            "--suite",
            str(tmp_path / "s"),
            "--format",
            "verl-parquet",
            "-o",
            str(tmp_path / "x.parquet"),
            "--split",
            "validation",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "nothing to export" in err


def test_export_format_aliases_name_the_same_writer(tmp_path: Path, capsys) -> None:
    """`--format verl` (the name a verl user types first) writes the verl parquet; an
    unknown name lists every format and alias."""
    from asmopt.data.common import DataError
    from asmopt.data.export import canonical_format

    assert canonical_format("verl") == canonical_format("parquet") == "verl-parquet"
    with pytest.raises(DataError, match=r"verl-parquet, jsonl, hf, verl \(= verl-parquet\)"):
        canonical_format("csv")
    suite = str(Path(asmopt.programs.__file__).parent / "builtin")
    out = tmp_path / "rows.parquet"
    argv = ["data", "export", suite, "--format", "verl", "-o", str(out), "--split", "test"]
    code, text, err = run(argv, capsys)
    assert code == 0, err
    assert out.is_file() and "as verl-parquet" in text
    assert out.read_bytes()[:4] == b"PAR1"


def test_every_drop_reason_is_documented() -> None:
    from asmopt.data.report import REASONS

    doc = (Path(__file__).resolve().parents[1] / "docs" / "datasets.md").read_text()
    assert [r for r in REASONS if f"`{r}`" not in doc] == []


def test_import_checks_its_destination_before_any_work(tmp_path: Path, capsys) -> None:
    """A non-empty destination is refused at once: the import does not parse (or verify)
    anything first, so a missing input directory is not even reached."""
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    code, _, err = run(
        ["data", "import", "llvm-test-suite", str(tmp_path / "nowhere"), "-o", str(out)], capsys
    )
    assert code == 2 and "not empty" in err and "nowhere" not in err
    assert (out / "notes.txt").read_text() == "mine\n"


def test_llvm_suite_name_comes_from_the_imported_directories() -> None:
    from asmopt.data.llvm_test_suite import suite_name_for

    assert suite_name_for(["x/SingleSource/Benchmarks/Polybench"]) == "llvm-Polybench"
    assert suite_name_for(["a/Stanford", "a/Shootout/"]) == "llvm-Shootout+Stanford"
    long = suite_name_for([f"d/Directory{i:02d}" for i in range(12)])
    assert len(long) <= 64 and long != suite_name_for([f"d/Directory{i:02d}" for i in range(11)])
