"""Faults 16-17: an output path (`-o`, `--save-failing`) that already holds something other
than a regular file is refused, never replaced; `-` writes to standard output on purpose
(docs/faults.md)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from faultkit import asmopt_cmd, env, error_line, run_asmopt, write_suite

# Long enough for a real run; a command blocked on a FIFO with no reader hits it.
TIMEOUT = 120


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small finished run (two programs, correctness only)."""
    base = tmp_path_factory.mktemp("outputs")
    suite = write_suite(base / "s", ["a", "b"])
    run = base / "run"
    proc = run_asmopt("eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run))
    assert proc.returncode == 0, proc.stderr
    return run


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays, as a listener's would
    return path


def _char_device(path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("creating a device node needs root")
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 7))  # the numbers of /dev/full
    return path


def _link_to_fifo(path: Path) -> Path:
    path.symlink_to(_fifo(path.with_name("real-fifo")))
    return path


SPECIAL: dict[str, tuple[Callable[[Path], Path], str]] = {
    "fifo": (_fifo, "FIFO"),
    "socket": (_socket, "socket"),
    "char-device": (_char_device, "character device"),
    "link-to-fifo": (_link_to_fifo, "FIFO"),
}


def _kind(path: Path) -> tuple[bool, int]:
    """What sits at `path`: whether it is a link, and the type it leads to."""
    return path.is_symlink(), stat.S_IFMT(os.stat(path).st_mode)


@pytest.mark.parametrize("special", sorted(SPECIAL))
def test_fault16_results_export_refuses_a_special_file(
    finished_run: Path, tmp_path: Path, special: str
) -> None:
    make, word = SPECIAL[special]
    out = make(tmp_path / "out.jsonl")
    before = _kind(out)
    line = error_line(
        run_asmopt("results", "export", str(finished_run), "-o", str(out), timeout=TIMEOUT)
    )
    assert str(out) in line and word in line and "not a regular file" in line
    assert _kind(out) == before  # still what it was
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_fault16_results_export_dash_writes_stdout_and_counts_what_it_wrote(
    finished_run: Path, tmp_path: Path
) -> None:
    proc = run_asmopt(
        "results", "export", str(finished_run), "-o", "-", cwd=tmp_path, timeout=TIMEOUT
    )
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["program_id"] for r in records} == {"a", "b"}
    assert f"wrote {len(records)} samples to standard output" in proc.stderr
    assert list(tmp_path.iterdir()) == []  # no file named "-"


def test_fault16_results_export_to_a_full_stdout_is_one_line(
    finished_run: Path, tmp_path: Path
) -> None:
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            asmopt_cmd("results", "export", str(finished_run), "-o", "-"),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            env=env(),
            cwd=tmp_path,
        )
    line = error_line(proc)
    assert "standard output" in line and "No space left" in line
    assert "wrote" not in proc.stderr


def test_fault16_results_export_through_a_link_keeps_the_link(
    finished_run: Path, tmp_path: Path
) -> None:
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    proc = run_asmopt("results", "export", str(finished_run), "-o", str(link), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and link.resolve() == target
    assert len(target.read_text().splitlines()) == 2
    assert "wrote 2 samples" in proc.stdout


def test_fault16_report_refuses_a_fifo_among_its_files(finished_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    out.mkdir()
    _fifo(out / "report.html")
    line = error_line(
        run_asmopt("report", str(finished_run), "-o", str(out), "--no-plots", timeout=TIMEOUT)
    )
    assert str(out / "report.html") in line and "FIFO" in line
    assert sorted(p.name for p in out.iterdir()) == ["report.html"]  # nothing else written
    assert stat.S_ISFIFO(os.stat(out / "report.html").st_mode)


def test_fault16_data_export_refuses_a_fifo_as_its_one_file(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", ["a"])
    out = _fifo(tmp_path / "rows.jsonl")
    line = error_line(
        run_asmopt(
            "data", "export", str(suite), "--format", "jsonl", "-o", str(out), timeout=TIMEOUT
        )
    )
    assert str(out) in line and "FIFO" in line
    assert stat.S_ISFIFO(os.stat(out).st_mode)
    assert not (tmp_path / "rows.jsonl.manifest.json").exists()


@pytest.mark.parametrize("where", ["fifo", "-"])
def test_fault17_check_save_failing_refuses_what_it_cannot_write(
    tmp_path: Path, where: str
) -> None:
    suite = write_suite(tmp_path / "s", ["a"])
    asm = tmp_path / "cand.s"
    asm.write_text("\t.text\n")
    target = "-" if where == "-" else str(_fifo(tmp_path / "failing.in"))
    line = error_line(
        run_asmopt(
            "check", "a", str(asm), "--suite", str(suite), "--save-failing", target,
            timeout=TIMEOUT,
        )
    )
    assert line.startswith(f"asmopt: error: --save-failing {target}:")
    if where == "fifo":
        assert "FIFO" in line and stat.S_ISFIFO(os.stat(target).st_mode)


def test_fault16_a_replaced_export_keeps_its_permissions(
    finished_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "shared.jsonl"
    out.write_text("old\n")
    out.chmod(0o640)
    proc = run_asmopt("results", "export", str(finished_run), "-o", str(out), timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


def test_study_report_refuses_a_device_as_its_output(tmp_path: Path) -> None:
    """`study report -o /dev/null` would have replaced the device node with a file."""
    from asmopt.study.report import raw_data_path

    root = Path(__file__).resolve().parents[2]
    study = root / "docs" / "study" / "loops_cpu_seeds_study.json"
    link = tmp_path / "report.md"
    link.symlink_to("/dev/null")
    proc = run_asmopt("study", "report", str(study), "-o", str(link), timeout=TIMEOUT)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "report.md" in error_line(proc)
    assert os.path.islink(link) and stat.S_ISCHR(os.stat(link).st_mode)
    assert not raw_data_path(link).exists()  # refused before anything was written
