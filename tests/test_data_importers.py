"""Importers on small fixtures written here: CodeNet tree, SuperCoder parquet/JSONL,
llvm-test-suite directory, plain layout. Each includes bad input that must be named and
skipped while the rest imports."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from asmopt.data.codenet import import_codenet
from asmopt.data.common import DataError, ImportRun
from asmopt.data.llvm_test_suite import (
    STDERR_HEADER,
    collect_llvm_programs,
    split_reference_output,
    verify_and_filter,
)
from asmopt.data.plain_dir import import_plain_dir
from asmopt.data.supercoder import import_supercoder
from asmopt.programs.model import encode_source
from asmopt.programs.suite_io import load_suite, save_suite

HELLO = (
    '#include <stdio.h>\nint main(void){int a,b; if(scanf("%d %d",&a,&b)!=2) return 1;'
    ' printf("%d\\n",a+b); return 0;}\n'
)


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------- CodeNet
CSV_HEADER = (
    "submission_id,problem_id,user_id,date,language,original_language,filename_ext,status,"
    "cpu_time,memory,code_size,accuracy\n"
)


def _row(sub: str, problem: str, lang: str = "C", status: str = "Accepted") -> str:
    return (
        f"{sub},{problem},u1,1,{lang},{lang} (GCC),{'c' if lang == 'C' else 'py'},{status},0,0,1,\n"
    )


def make_codenet(root: Path) -> Path:
    meta = root / "metadata"
    # p00001: three accepted C (one not UTF-8, one listed twice), one WA, one Python.
    write(
        meta / "p00001.csv",
        CSV_HEADER
        + _row("s1", "p00001")
        + _row("s2", "p00001")
        + _row("s2", "p00001")
        + _row("s3", "p00001")
        + _row("s4", "p00001", status="Wrong Answer")
        + _row("s5", "p00001", lang="Python"),
    )
    write(root / "data/p00001/C/s1.c", HELLO)
    write(root / "data/p00001/C/s2.c", HELLO.replace("a+b", "b+a"))
    write(root / "data/p00001/C/s3.c", b"/* \xff\xfe shift-jis comment */\n" + HELLO.encode())
    io = root / "derived/input_output/data/p00001"
    write(io / "input.txt", "1 2\n")
    write(io / "output.txt", "3\n")
    write(io / "input.1.txt", "5 5\n")
    write(io / "output.1.txt", "10\n")
    # p00002: a submission whose file is missing, and a mismatched test folder.
    write(meta / "p00002.csv", CSV_HEADER + _row("s9", "p00002"))
    io2 = root / "derived/input_output/data/p00002"
    write(io2 / "input.txt", "1 2\n")
    write(io2 / "input.1.txt", "1 2\n")
    write(io2 / "output.txt", "3\n")
    # p00003: good tests, one missing source file, one good submission.
    write(meta / "p00003.csv", CSV_HEADER + _row("s20", "p00003") + _row("s21", "p00003"))
    write(root / "data/p00003/C/s21.c", HELLO)
    write(root / "derived/input_output/data/p00003/input.txt", "2 2\n")
    write(root / "derived/input_output/data/p00003/output.txt", "4\n")
    # p00004: a CSV without the status column.
    write(meta / "p00004.csv", "submission_id,problem_id,language\ns30,p00004,C\n")
    write(meta / "problem_list.csv", "id,name\np00001,A\n")
    return root


def test_codenet_import_keeps_accepted_c_and_names_every_problem(tmp_path: Path) -> None:
    suite, report = import_codenet(make_codenet(tmp_path / "cn"), val_frac=0.5, test_frac=0.0)
    assert sorted(suite.programs) == ["p00001-s1", "p00001-s2", "p00003-s21"]
    prog = suite.programs["p00001-s1"]
    assert [t.name for t in prog.tests] == ["input", "input.1"]
    assert prog.tests[0].stdin == b"1 2\n" and prog.tests[0].expected_stdout == b"3\n"
    assert prog.meta["problem"] == "p00001" and prog.meta["source"] == "codenet"
    reasons = {d.item: d.reason for d in report.dropped}
    assert reasons == {
        "p00001-s2": "duplicate_id",
        "p00001-s3": "not_utf8",
        "p00002": "io_mismatch",
        "p00003-s20": "missing_file",
        "p00004": "missing_column",
    }
    details = " ".join(d.detail for d in report.dropped)
    assert "status" in details and "s3.c" in details and "output.1.txt" not in details
    assert report.filtered == {"status is not Accepted": 1, "language is not C": 1}
    # submissions to one problem share a split
    assert suite.splits["p00001-s1"] == suite.splits["p00001-s2"]


def test_codenet_per_problem_limit_and_missing_root(tmp_path: Path) -> None:
    suite, report = import_codenet(make_codenet(tmp_path / "cn"), per_problem=1)
    assert sorted(suite.programs) == ["p00001-s1", "p00003-s21"]
    assert report.filtered["beyond 1 submissions per problem"] == 3  # s2, s2 again, s3
    with pytest.raises(DataError, match="not a CodeNet checkout"):
        import_codenet(tmp_path / "nowhere")


# ---------------------------------------------------------------------------- SuperCoder
def sc_row(index: int, split: str = "train", **extra: object) -> dict:
    info = {
        "split": split,
        "index": index,
        "c_code": HELLO,
        "question": "q",
        "c_only_question": "q",
        "answer": "```assembly\nANSWER\n```",
        "inputs": ["1 2\n", "3 4\n"],
        "outputs": ["3\n", "7\n"],
        "unoptimized_assembly": "\t.text\nmain:\n\tret\n",
    }
    info.update(extra)
    return {
        "data_source": "supercoder",
        "prompt": [{"role": "user", "content": "q"}],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": "\t.text\nmain:\n\tret\n"},
        "extra_info": info,
    }


def test_supercoder_parquet_rows_bad_rows_and_missing_columns(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")

    rows = [
        sc_row(0),
        sc_row(1, split="val"),
        sc_row(2, outputs=["3\n"]),  # mismatched counts
        sc_row(0),  # duplicate id
        sc_row(3, inputs=[], outputs=[]),
    ]
    good = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), good)
    bad = tmp_path / "broken.parquet"
    pq.write_table(pa.Table.from_pylist([{"data_source": "x", "prompt": "p"}]), bad)
    suite, report = import_supercoder([good, bad, tmp_path / "absent.parquet"])
    assert sorted(suite.programs) == ["supercoder-train-00000", "supercoder-validation-00001"]
    assert suite.splits["supercoder-validation-00001"] == "validation"
    prog = suite.programs["supercoder-train-00000"]
    assert prog.meta["baseline_asm"] == "\t.text\nmain:\n\tret\n"
    assert [(t.stdin, t.expected_stdout) for t in prog.tests] == [
        (b"1 2\n", b"3\n"),
        (b"3 4\n", b"7\n"),
    ]
    by_item = {d.item: (d.reason, d.detail) for d in report.dropped}
    assert by_item["train.parquet:2"][0] == "io_mismatch"
    assert "2 inputs but 1 outputs" in by_item["train.parquet:2"][1]
    assert by_item["train.parquet:3"][0] == "duplicate_id"
    assert by_item["train.parquet:4"][0] == "no_tests"
    assert by_item["broken.parquet"][0] == "missing_column"
    assert "extra_info" in by_item["broken.parquet"][1]
    assert by_item[str(tmp_path / "absent.parquet")][0] == "missing_file"


def test_supercoder_jsonl_with_bad_line_and_fallback_baseline(tmp_path: Path) -> None:
    row = sc_row(5)
    del row["reward_model"]
    row["extra_info"]["unoptimized_assembly"] = ""
    row["extra_info"]["answer"] = "```assembly\n\tmovl $0, %eax\n\tret\n```"
    lines = [json.dumps(row), "{not json", json.dumps(sc_row(6, c_code=None))]
    path = write(tmp_path / "rows.jsonl", "\n".join(lines) + "\n")
    suite, report = import_supercoder([path])
    assert list(suite.programs) == ["supercoder-train-00005"]
    assert suite.programs["supercoder-train-00005"].meta["baseline_asm"] == (
        "\tmovl $0, %eax\n\tret\n"
    )
    assert report.reason_counts() == {"bad_row": 1, "missing_column": 1}


# ---------------------------------------------------------------------------- llvm-test-suite
LLVM_MAIN = """#include <stdio.h>
#include "helper.h"
int main(int argc, char **argv) {
#ifdef SMALL_PROBLEM_SIZE
  int n = 10;
#else
  int n = 100;
#endif
  printf("%s %d %.4f\\n", argc > 1 ? argv[1] : "none", twice(n), 1.0 / 3.0);
  return 3;
}
"""


def make_llvm_dir(root: Path) -> Path:
    d = root / "SingleSource" / "Benchmarks" / "Mini"
    write(
        d / "CMakeLists.txt",
        "list(APPEND LDFLAGS -lm)\n"
        "set(FP_TOLERANCE 0.01) # relative\n"
        'set(RUN_OPTIONS "hello")\n'
        'if(ARCH STREQUAL "x86")\n  list(APPEND CFLAGS -fno-strict-aliasing)\n'
        "else()\n  list(APPEND CFLAGS -DNOT_X86)\nendif()\n"
        "set(Source main.c quiet.c nores.c latin.c)\n"
        "if(NOT TEST_SUITE_BENCHMARKING_ONLY)\n  list(APPEND Source extra.c)\nendif()\n"
        "llvm_singlesource(PREFIX Mini-)\n"
        "set_property(TARGET Mini-quiet PROPERTY C_STANDARD 99)\n",
    )
    write(d / "helper.h", '#include "deeper.h"\nstatic int twice(int x) { return deeper(x); }\n')
    write(d / "deeper.h", "static int deeper(int x) { return 2 * x; }\n")
    write(d / "main.c", LLVM_MAIN)
    write(d / "main.reference_output", "hello 200 0.3333\nexit 3\n")
    write(d / "main.reference_output.small", "hello 20 0.3333\nexit 3\n")
    # output without a trailing newline: "exit 0" is glued to the last line
    write(d / "quiet.c", '#include <stdio.h>\nint main(void){ printf("42"); return 0; }\n')
    write(d / "quiet.reference_output", "42exit 0\n")
    write(d / "nores.c", "int main(void){return 0;}\n")  # no reference output
    write(d / "latin.c", b"/* caf\xe9 */ int main(void){return 0;}\n")
    write(d / "latin.reference_output", "exit 0\n")
    write(d / "extra.c", "int main(void){return 0;}\n")
    write(d / "extra.reference_output", "exit 0\n")
    return root / "SingleSource"


def test_reference_output_split() -> None:
    assert split_reference_output(b"a\nb\nexit 0\n") == (b"a\nb\n", 0)
    assert split_reference_output(b"hello world\n\nexit 0\n") == (b"hello world\n\n", 0)
    assert split_reference_output(b"42exit 7\n") == (b"42", 7)
    assert split_reference_output(b"exit 0") == (b"", 0)
    with pytest.raises(Exception, match="exit N"):
        split_reference_output(b"no trailer\n")


def test_llvm_directory_fields(tmp_path: Path) -> None:
    programs, report = collect_llvm_programs([make_llvm_dir(tmp_path)], size="small")
    by_id = {p.id: p for p in programs}
    assert sorted(by_id) == ["Mini-extra", "Mini-latin", "Mini-main", "Mini-quiet"]
    main = by_id["Mini-main"]
    (test,) = main.tests
    assert test.expected_stdout == b"hello 20 0.3333\n" and test.expected_exit == 3
    assert test.argv == ("hello",) and test.stdin == b""
    assert test.compare.mode == "numeric" and test.compare.rel_tol == pytest.approx(0.01)
    assert main.cflags == ("-fno-strict-aliasing", "-DSMALL_PROBLEM_SIZE")
    assert main.ldflags == ("-lm",)
    assert [h for h, _ in main.headers] == ["deeper.h", "helper.h"]
    assert main.meta["origin"] == "SingleSource/Benchmarks/Mini/main.c"
    assert by_id["Mini-quiet"].tests[0].expected_stdout == b"42"
    assert by_id["Mini-quiet"].cflags[-1] == "-std=gnu99"
    # a Latin-1 byte in a comment: kept byte for byte (gcc compiles it), and noted
    latin = by_id["Mini-latin"]
    assert (
        encode_source(latin.source)
        == (tmp_path / "SingleSource/Benchmarks/Mini/latin.c").read_bytes()
    )
    assert any("latin.c: not UTF-8" in n for n in report.notes)
    assert report.reason_counts() == {"missing_file": 1}
    assert "no nores.reference_output" in report.dropped[0].detail
    large, _ = collect_llvm_programs([make_llvm_dir(tmp_path / "l")], size="large")
    big = next(p for p in large if p.id == "Mini-main")
    assert big.tests[0].expected_stdout == b"hello 200 0.3333\n"
    assert "-DSMALL_PROBLEM_SIZE" not in big.cflags


def test_llvm_verification_drops_programs_that_cannot_pass(
    tmp_path: Path, toolchain, sandbox
) -> None:
    root = make_llvm_dir(tmp_path)
    mini = root / "Benchmarks" / "Mini"
    # a wrong reference output: the program prints 42, the file says 43
    (mini / "quiet.reference_output").write_text("43exit 0\n")
    programs, report = collect_llvm_programs([root])
    kept = verify_and_filter(
        programs, report, run=ImportRun(toolchain=toolchain, sandbox=sandbox)
    )
    assert sorted(p.id for p in kept) == ["Mini-extra", "Mini-latin", "Mini-main"]
    drop = next(d for d in report.dropped if d.item == "Mini-quiet")
    assert drop.reason == "verify_failed" and "wrong_output" in drop.detail


# A kernel in the Polybench style: a shared header found through an -I directory written
# against CMAKE_SOURCE_DIR and included with angle brackets, every result written to stderr,
# and a reference that holds only the MD5 of the recorded output (HASH_PROGRAM_OUTPUT).
KERNEL_MAIN = """#include <stdio.h>
#include <kutil.h>
#include "kernel.h"
int main(void) {
  double a[N];
  for (int i = 0; i < N; i++) a[i] = i * 0.5;
  for (int i = 0; i < N; i++) dump(a[i]);
  return 0;
}
"""
KERNEL_STDERR = b"".join(b"%0.2f " % (i * 0.5) for i in range(8)).replace(b" ", b"\n")
# A Linpack-style program: a banner on stdout, progress on stderr. llvm's combined output
# file holds the unbuffered stderr first and the block-buffered stdout at exit.
MIXED_MAIN = """#include <stdio.h>
int main(void) {
  printf("Rolled result\\n");
  for (int i = 0; i < 3; i++) fprintf(stderr, "pass %d\\n", i);
  return 0;
}
"""


def make_llvm_checkout(root: Path) -> Path:
    """A miniature checkout: SingleSource/Benchmarks/{Kern/k1, Mixed}, a shared utility
    directory, a C++ program beside the C ones."""
    bench = root / "SingleSource" / "Benchmarks"
    util = bench / "Kern" / "utilities"
    write(
        util / "kutil.h",
        '#include <stdio.h>\nstatic void dump(double x) { fprintf(stderr, "%0.2f\\n", x); }\n',
    )
    k1 = bench / "Kern" / "k1"
    write(
        k1 / "CMakeLists.txt",
        "set(KUTIL SingleSource/Benchmarks/Kern/utilities)\n"
        "list(APPEND CFLAGS -I ${CMAKE_SOURCE_DIR}/${KUTIL} -DKERNEL_DUMP)\n"
        "set(HASH_PROGRAM_OUTPUT 1)\n"
        "add_definitions(-DFP_ABSTOLERANCE=1e-5)\n"
        "llvm_singlesource()\n",
    )
    write(k1 / "kernel.h", "#define N 8\n")
    write(k1 / "k1.c", KERNEL_MAIN)
    digest = hashlib.md5(KERNEL_STDERR + b"exit 0\n").hexdigest()
    write(k1 / "k1.reference_output", digest + "\n")
    mixed = bench / "Mixed"
    write(
        mixed / "CMakeLists.txt",
        "set(PROGRAMS_TO_SKIP skipme)\nllvm_singlesource()\nllvm_add_subdirectories(Sub)\n",
    )
    write(mixed / "skipme.c", "int main(void){return 0;}\n")
    write(mixed / "mixed.c", MIXED_MAIN)
    write(mixed / "mixed.reference_output", "pass 0\npass 1\npass 2\nRolled result\nexit 0\n")
    write(mixed / "cxx.cpp", "int main() { return 0; }\n")
    write(mixed / "cxx.reference_output", "exit 0\n")
    return bench


def test_llvm_hash_stderr_and_cxx_fixtures_parse(tmp_path: Path) -> None:
    bench = make_llvm_checkout(tmp_path)
    programs, report = collect_llvm_programs([bench / "Kern", bench / "Mixed"])
    by_id = {p.id: p for p in programs}
    assert sorted(by_id) == ["Mixed-mixed", "k1-k1"], report.dropped
    k1 = by_id["k1-k1"]
    (test,) = k1.tests
    assert test.compare.mode == "md5" and test.expected_exit == 0
    assert test.expected_stdout == (bench / "Kern/k1/k1.reference_output").read_bytes()
    # the -I directory is bundled and replaced by the build directory
    assert "kutil.h" in dict(k1.headers) and "kernel.h" in dict(k1.headers)
    assert "-I." in k1.cflags and not any("utilities" in f for f in k1.cflags)
    assert "-DFP_ABSTOLERANCE=1e-5" in k1.cflags and "-DKERNEL_DUMP" in k1.cflags
    assert k1.meta["stderr_in_output"] is True and k1.meta["hash_program_output"] is True
    mixed = by_id["Mixed-mixed"]
    assert mixed.tests[0].expected_stdout == b"pass 0\npass 1\npass 2\nRolled result\n"
    assert mixed.cflags[:2] == ("-include", STDERR_HEADER)
    assert report.filtered == {
        "C++ source (asmopt imports C programs only)": 1,
        "listed in PROGRAMS_TO_SKIP by its CMakeLists.txt": 1,
    }
    assert not any("ignored CMake command" in n for n in report.notes)


def test_llvm_hash_and_stderr_fixtures_verify(tmp_path: Path, toolchain, sandbox) -> None:
    """The -O0 and -O3 builds reproduce the suite's recorded output: stderr in llvm's order,
    and the hash over output plus the exit line. A wrong digest is caught."""
    bench = make_llvm_checkout(tmp_path)
    (bench / "Kern/k2").mkdir()
    for name in ("CMakeLists.txt", "kernel.h"):
        (bench / "Kern/k2" / name).write_bytes((bench / "Kern/k1" / name).read_bytes())
    write(bench / "Kern/k2/k2.c", KERNEL_MAIN.replace("i * 0.5", "i * 0.25"))
    write(bench / "Kern/k2/k2.reference_output", "0" * 32 + "\n")
    programs, report = collect_llvm_programs([bench])
    kept = verify_and_filter(
        programs, report, run=ImportRun(toolchain=toolchain, sandbox=sandbox)
    )
    assert sorted(p.id for p in kept) == ["Mixed-mixed", "k1-k1"], report.dropped
    (drop,) = report.dropped
    assert drop.item == "k2-k2" and "output hash differs" in drop.detail


def test_llvm_hash_reference_without_the_setting_is_explained(tmp_path: Path) -> None:
    bench = make_llvm_checkout(tmp_path)
    cm = bench / "Kern/k1/CMakeLists.txt"
    cm.write_text(cm.read_text().replace("set(HASH_PROGRAM_OUTPUT 1)\n", ""))
    programs, report = collect_llvm_programs([bench / "Kern"])
    assert programs == []
    (drop,) = report.dropped
    assert "MD5 digest" in drop.detail and "HASH_PROGRAM_OUTPUT" in drop.detail


def test_llvm_missing_include_dir_is_explained(tmp_path: Path) -> None:
    bench = make_llvm_checkout(tmp_path)
    for f in (bench / "Kern/utilities").iterdir():
        f.unlink()
    (bench / "Kern/utilities").rmdir()
    _, report = collect_llvm_programs([bench / "Kern"])
    (drop,) = report.dropped
    assert drop.reason == "missing_file" and "include directory" in drop.detail


def test_llvm_missing_path_is_reported(tmp_path: Path) -> None:
    programs, report = collect_llvm_programs([tmp_path / "nope", tmp_path])
    assert programs == []
    assert report.reason_counts() == {"missing_file": 1, "no_tests": 1}


# The real llvm-test-suite checkout: $ASMOPT_LLVM_TEST_SUITE, else shared/data/ in a
# directory above the repository.
def _real_llvm() -> Path:
    if os.environ.get("ASMOPT_LLVM_TEST_SUITE"):
        return Path(os.environ["ASMOPT_LLVM_TEST_SUITE"])
    for base in Path(__file__).resolve().parents[1].parents:
        if (base / "shared/data/llvm-test-suite").is_dir():
            return base / "shared/data/llvm-test-suite"
    return Path("shared/data/llvm-test-suite")


REAL_LLVM = _real_llvm()
REAL_DIRS = [REAL_LLVM / "SingleSource/Benchmarks" / d for d in ("Shootout", "Stanford")]


@pytest.mark.skipif(
    not REAL_LLVM.is_dir(), reason="llvm-test-suite data not present (set ASMOPT_LLVM_TEST_SUITE)"
)
def test_real_llvm_directories_parse(toolchain, sandbox) -> None:
    programs, report = collect_llvm_programs(REAL_DIRS)
    by_id = {p.id: p for p in programs}
    assert len(by_id) == 25 and report.dropped == []
    assert by_id["Shootout-hello"].tests[0].expected_stdout == b"hello world\n\n"
    assert "simple_hash.h" in dict(by_id["Shootout-hash"].headers)
    assert by_id["Shootout-fib2"].tests[0].expected_stdout == b"165580141\n"  # .small
    assert by_id["Shootout-methcall"].cflags[-1] == "-std=gnu17"
    assert by_id["Stanford-Queens"].tests[0].compare.rel_tol == pytest.approx(0.001)
    sample = [by_id[i] for i in ("Shootout-hello", "Shootout-fib2", "Stanford-Queens")]
    kept = verify_and_filter(
        sample, report, run=ImportRun(toolchain=toolchain, sandbox=sandbox)
    )
    assert len(kept) == 3, report.dropped


@pytest.mark.slow
@pytest.mark.skipif(
    not REAL_LLVM.is_dir(), reason="llvm-test-suite data not present (set ASMOPT_LLVM_TEST_SUITE)"
)
def test_real_llvm_directories_import_and_verify_whole(toolchain, sandbox) -> None:
    """Every C program of the real directories present is imported and passes at -O0 and
    -O3; whatever is dropped must say why (never a silent loss)."""
    dirs = [d for d in (REAL_LLVM / "SingleSource/Benchmarks").iterdir() if d.is_dir()]
    programs, report = collect_llvm_programs(dirs)
    found = len(programs) + len(report.dropped)
    kept = verify_and_filter(
        programs, report, run=ImportRun(toolchain=toolchain, sandbox=sandbox)
    )
    print(f"{len(kept)} of {found} C programs imported and verified; drops: {report.dropped}")
    assert all(d.detail for d in report.dropped)
    assert len(kept) >= 0.93 * found, report.dropped


# ---------------------------------------------------------------------------- plain layout
def test_plain_dir_layout(tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    write(pool / "adder/adder.c", HELLO)
    write(pool / "adder/tests/a.in", "1 1\n")
    write(pool / "adder/tests/a.out", "2\n")
    write(pool / "two/fast.c", HELLO)
    write(pool / "two/slow.c", HELLO.replace("a+b", "b+a"))
    write(pool / "two/util.h", "#define UNUSED 1\n")
    write(pool / "two/tests/x.in", "1 2\n")
    write(pool / "two/tests/x.out", "3\n")
    write(pool / "noout/main.c", HELLO)
    write(pool / "noout/tests/q.in", "4 4\n")
    write(pool / "silent/main.c", "int main(void){return 0;}\n")
    write(pool / "broken/main.c", HELLO)
    write(pool / "broken/tests/a.in", "1\n")
    write(pool / "broken/tests/b.out", "1\n")
    write(pool / "empty/readme.txt", "nothing here")
    suite, report = import_plain_dir(pool)
    assert sorted(suite.programs) == ["adder", "noout", "silent", "two-fast", "two-slow"]
    assert suite.programs["two-fast"].meta["problem"] == "two"
    assert [h for h, _ in suite.programs["two-slow"].headers] == ["util.h"]
    assert suite.programs["noout"].tests[0].expected_stdout == b""
    assert suite.programs["silent"].tests[0].stdin == b""
    assert set(suite.splits.values()) == {"test"}
    assert report.reason_counts() == {"io_mismatch": 1, "missing_file": 1}
    assert any("run `asmopt data build`" in n for n in report.notes)
    # the suite round-trips through the on-disk format
    out = save_suite(suite, tmp_path / "out")
    assert sorted(load_suite(out).programs) == sorted(suite.programs)


def test_llvm_bundled_headers_flatten_for_export(tmp_path: Path) -> None:
    """`-include` of the stderr header, `-I.` and angle-bracket includes of bundled headers
    all become one self-contained source; only the hash comparison stays lossy."""
    from asmopt.data.export import flatten_program

    bench = make_llvm_checkout(tmp_path)
    programs, _ = collect_llvm_programs([bench / "Kern"])
    (k1,) = programs
    flat, lossy = flatten_program(k1)
    assert lossy == ["test reference uses md5 comparison"]
    assert flat.cflags == () and flat.headers == ()
    assert flat.source.index("dup2(1, 2)") < flat.source.index("static void dump(")
    assert "#include <kutil.h>" not in flat.source and "#define KERNEL_DUMP 1" in flat.source


def test_cmake_conditions_expand_quoted_references(tmp_path: Path) -> None:
    from asmopt.data.cmake import evaluate_cmake

    cm = write(
        tmp_path / "CMakeLists.txt",
        'if("${ARCH}" STREQUAL "x86")\n  set(ON_X86 1)\nendif()\n'
        'if("${ARCH}" STREQUAL "XCore")\n  set(ON_XCORE 1)\nendif()\n'
        "add_definitions(-DA=1 -DB)\n",
    )
    result = evaluate_cmake(cm)
    assert result.get("ON_X86") == ["1"] and result.get("ON_XCORE") is None
    assert result.get("ADD_DEFINITIONS") == ["-DA=1", "-DB"]
