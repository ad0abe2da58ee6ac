"""Importers never read outside the tree they import, and never open a FIFO or a device
(docs/faults.md): a symlink out of the tree, an absolute or `..` path written in the data
(a CodeNet CSV row, a CMakeLists.txt) drops the program with `outside_pool`, naming the
file and where it points; a non-regular file drops it with `not_regular_file` without
being opened. Links that stay inside the tree keep working."""

from __future__ import annotations

import json
import os
from pathlib import Path

from faultkit import ECHO_C, run_asmopt

from asmopt.data.codenet import import_codenet
from asmopt.data.llvm_test_suite import collect_llvm_programs
from asmopt.data.plain_dir import import_plain_dir
from asmopt.data.report import DataReport
from asmopt.data.supercoder import import_supercoder

SECRET = "a secret line that must never be imported\n"
ECHO = ECHO_C.replace("WORK", "1")
CSV_HEADER = "submission_id,problem_id,language,status,filename_ext\n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _secret(tmp_path: Path) -> Path:
    return _write(tmp_path / "elsewhere" / "secret.txt", SECRET)


def _drop(report: DataReport, item: str) -> tuple[str, str]:
    found = [d for d in report.dropped if d.item == item]
    assert found, (item, report.dropped)
    return found[0].reason, found[0].detail


def _no_secret_in(out: Path) -> bool:
    return not any(SECRET.strip() in p.read_text(errors="replace") for p in out.rglob("*.*"))


# ---------------------------------------------------------------------------- CodeNet
def _codenet(root: Path, subs: list[str]) -> Path:
    rows = "".join(f"{s},p00001,C,Accepted,c\n" for s in subs)
    _write(root / "metadata" / "p00001.csv", CSV_HEADER + rows)
    for s in subs:
        _write(root / "data/p00001/C" / f"{s}.c", ECHO)
    io = root / "derived/input_output/data/p00001"
    _write(io / "input.txt", "3\n")
    _write(io / "output.txt", "3\n")
    return root


def test_codenet_source_symlinked_out_of_the_checkout_is_dropped(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    root = _codenet(tmp_path / "codenet", ["s1", "s2"])
    (root / "data/p00001/C/s2.c").unlink()
    (root / "data/p00001/C/s2.c").symlink_to(secret)
    suite, report = import_codenet(root)
    assert sorted(suite.programs) == ["p00001-s1"]
    reason, detail = _drop(report, "p00001-s2")
    assert reason == "outside_pool"
    assert "s2.c" in detail and str(secret) in detail and "\n" not in detail


def test_codenet_expected_output_symlinked_out_is_dropped_and_never_written(
    tmp_path: Path,
) -> None:
    secret = _secret(tmp_path)
    root = _codenet(tmp_path / "codenet", ["s1"])
    out_file = root / "derived/input_output/data/p00001/output.txt"
    out_file.unlink()
    out_file.symlink_to(secret)
    out = tmp_path / "suite"
    proc = run_asmopt(
        "data", "import", "codenet", str(root), "-o", str(out), "--no-adequacy", "--no-mutator"
    )
    # nothing is left to write: one line, exit 2, and the secret is nowhere
    assert proc.returncode == 2, proc.stderr
    assert "output.txt" in proc.stdout and str(secret) in proc.stdout
    assert "Traceback" not in proc.stderr
    assert not out.exists() or _no_secret_in(out)


def test_codenet_row_naming_a_path_out_of_the_checkout_is_dropped(tmp_path: Path) -> None:
    """The source path is built from CSV fields; `..` in a field must not reach outside."""
    secret = _secret(tmp_path)
    _write(secret.with_suffix(".c"), ECHO)
    root = _codenet(tmp_path / "codenet", ["s1"])
    csv = root / "metadata" / "p00001.csv"
    csv.write_text(csv.read_text() + "../../../../elsewhere/secret,p00001,C,Accepted,c\n")
    suite, report = import_codenet(root)
    assert sorted(suite.programs) == ["p00001-s1"]
    (drop,) = report.dropped
    assert drop.reason == "outside_pool" and "points outside" in drop.detail


def test_codenet_links_inside_the_checkout_still_work(tmp_path: Path) -> None:
    root = _codenet(tmp_path / "codenet", ["s1", "s2"])
    (root / "data/p00001/C/s2.c").unlink()
    (root / "data/p00001/C/s2.c").symlink_to("s1.c")
    suite, report = import_codenet(root)
    assert sorted(suite.programs) == ["p00001-s1", "p00001-s2"], report.dropped


def test_codenet_fifo_expected_output_is_refused_without_opening_it(tmp_path: Path) -> None:
    root = _codenet(tmp_path / "codenet", ["s1"])
    out_file = root / "derived/input_output/data/p00001/output.txt"
    out_file.unlink()
    os.mkfifo(out_file)
    suite, report = import_codenet(root)
    assert len(suite) == 0
    reason, detail = _drop(report, "p00001")
    assert reason == "not_regular_file" and "output.txt" in detail and "FIFO" in detail


# ---------------------------------------------------------------------------- llvm-test-suite
def _llvm(root: Path, cmake: str = "") -> Path:
    """A checkout with SingleSource/Benchmarks/Mini holding one program, `main`."""
    mini = root / "SingleSource" / "Benchmarks" / "Mini"
    _write(mini / "CMakeLists.txt", cmake + "llvm_singlesource()\n")
    _write(mini / "main.c", '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n')
    _write(mini / "main.reference_output", "hi\nexit 0\n")
    return mini


def test_llvm_reference_output_symlinked_out_is_dropped(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    mini = _llvm(tmp_path / "llvm")
    (mini / "main.reference_output").unlink()
    (mini / "main.reference_output").symlink_to(secret)
    programs, report = collect_llvm_programs([mini])
    assert programs == []
    reason, detail = _drop(report, "Mini-main")
    assert reason == "outside_pool" and "main.reference_output" in detail
    assert str(secret) in detail


def test_llvm_stdin_filename_outside_the_checkout_is_dropped(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    for raw in (str(secret), "../../../../elsewhere/secret.txt"):
        mini = _llvm(tmp_path / f"llvm{len(raw)}", f"set(STDIN_FILENAME {raw})\n")
        programs, report = collect_llvm_programs([mini])
        assert programs == [], raw
        reason, detail = _drop(report, "Mini-main")
        assert reason == "outside_pool" and "STDIN_FILENAME" in detail, detail
        assert str(secret) in detail


def test_llvm_source_listed_outside_the_checkout_is_dropped(tmp_path: Path) -> None:
    outside = _write(tmp_path / "elsewhere" / "other.c", ECHO)
    _write(tmp_path / "elsewhere" / "other.reference_output", "exit 0\n")
    mini = _llvm(tmp_path / "llvm", f"set(Source main.c {outside})\n")
    programs, report = collect_llvm_programs([mini])
    assert [p.id for p in programs] == ["Mini-main"]
    reason, detail = _drop(report, "Mini-other")
    assert reason == "outside_pool" and str(outside) in detail


def test_llvm_include_directory_outside_the_checkout_is_dropped(tmp_path: Path) -> None:
    """An absolute -I outside the checkout would bundle whatever header it holds."""
    inc = tmp_path / "elsewhere" / "inc"
    _write(inc / "leak.h", "/* " + SECRET + " */\n")
    mini = _llvm(tmp_path / "llvm", f"list(APPEND CFLAGS -I{inc})\n")
    (mini / "main.c").write_text(
        "#include <leak.h>\n#include <stdio.h>\nint main(void){return 0;}\n"
    )
    programs, report = collect_llvm_programs([mini])
    assert programs == []
    reason, detail = _drop(report, "Mini-main")
    assert reason == "outside_pool" and str(inc) in detail


def test_llvm_links_inside_the_checkout_still_work(tmp_path: Path) -> None:
    mini = _llvm(tmp_path / "llvm", "set(STDIN_FILENAME ../data/in.txt)\n")
    _write(mini.parent / "data" / "in.txt", "7\n")
    _write(mini / "shared.out", "hi\nexit 0\n")
    (mini / "main.reference_output").unlink()
    (mini / "main.reference_output").symlink_to("shared.out")
    programs, report = collect_llvm_programs([mini])
    assert [p.id for p in programs] == ["Mini-main"], report.dropped
    assert programs[0].tests[0].stdin == b"7\n"


def test_llvm_fifo_stdin_is_refused_without_opening_it(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes; the import must not wait."""
    mini = _llvm(tmp_path / "llvm", "set(STDIN_FILENAME in.fifo)\n")
    os.mkfifo(mini / "in.fifo")
    out = tmp_path / "suite"
    proc = run_asmopt(
        "data", "import", "llvm-test-suite", str(mini), "-o", str(out),
        "--no-verify", "--no-mutator", "--no-adequacy", timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "not_regular_file" in proc.stdout and "in.fifo" in proc.stdout
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("asmopt: error:")
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------- plain layout
def test_plain_dir_fifo_test_input_is_refused(tmp_path: Path) -> None:
    pdir = tmp_path / "pool" / "fifo"
    _write(pdir / "fifo.c", ECHO)
    _write(pdir / "tests" / "t.out", "3\n")
    os.mkfifo(pdir / "tests" / "t.in")
    _write(tmp_path / "pool" / "good" / "good.c", ECHO)
    suite, report = import_plain_dir(tmp_path / "pool")
    assert sorted(suite.programs) == ["good"]
    reason, detail = _drop(report, "fifo")
    assert reason == "not_regular_file" and "t.in" in detail


# ---------------------------------------------------------------------------- SuperCoder
def _row(index: int) -> str:
    extra = {"c_code": ECHO, "inputs": ["3\n"], "outputs": ["3\n"], "split": "train"}
    return json.dumps({"extra_info": {**extra, "index": index}}) + "\n"


def test_supercoder_row_file_symlinked_out_of_a_directory_is_refused(tmp_path: Path) -> None:
    outside = _write(tmp_path / "elsewhere" / "rows.jsonl", _row(7))
    rows = tmp_path / "rows"
    _write(rows / "good.jsonl", _row(1))
    (rows / "leak.jsonl").symlink_to(outside)
    suite, report = import_supercoder([rows])
    assert sorted(suite.programs) == ["supercoder-train-00001"]
    reason, detail = _drop(report, "leak.jsonl")
    assert reason == "outside_pool" and str(outside) in detail


def test_supercoder_fifo_in_a_directory_is_refused_without_opening_it(tmp_path: Path) -> None:
    rows = tmp_path / "rows"
    _write(rows / "good.jsonl", _row(1))
    os.mkfifo(rows / "pipe.jsonl")
    out = tmp_path / "suite"
    proc = run_asmopt(
        "data", "import", "supercoder", str(rows), "-o", str(out),
        "--no-mutator", "--no-adequacy", "--json", timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["report"]
    assert report["kept_ids"] == ["supercoder-train-00001"]
    (drop,) = report["drops"]
    assert drop["reason"] == "not_regular_file" and "pipe.jsonl" in drop["detail"]
