"""Faults 7-10 and 15: corrupt, empty, read-only and full stores; output paths; messages
that name the right cause (docs/faults.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from faultkit import ECHO_C, asmopt_cmd, env, error_line, run_asmopt, write_program, write_suite

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap to mount read-only/full")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One small finished run (two programs, correctness only)."""
    base = tmp_path_factory.mktemp("store")
    suite = write_suite(base / "s", ["a", "b"])
    run = base / "run"
    proc = run_asmopt("eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run))
    assert proc.returncode == 0, proc.stderr
    return run


def _copy(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns(".eval.lock"))
    return dest


READERS = [
    ("results", "show"),
    ("results", "export", "-o", "OUT/x.jsonl"),
    ("report", "-o", "OUT", "--no-plots"),
]


def _damage(db: Path, how: str) -> None:
    data = db.read_bytes()
    if how == "random":
        db.write_bytes(os.urandom(len(data)))
    elif how == "truncated":
        db.write_bytes(data[: len(data) // 3])
    elif how == "empty":
        db.write_bytes(b"")


@pytest.mark.parametrize("how", ["random", "truncated", "empty"])
@pytest.mark.parametrize("command", READERS)
def test_fault7_damaged_store_is_one_line(
    finished_run: Path, tmp_path: Path, how: str, command: tuple[str, ...]
) -> None:
    run = _copy(finished_run, tmp_path / "run")
    for extra in ("results.db-wal", "results.db-shm"):
        (run / extra).unlink(missing_ok=True)
    _damage(run / "results.db", how)
    before = (run / "results.db").read_bytes()
    args = [a.replace("OUT", str(tmp_path / "out")) for a in command]
    line = error_line(
        run_asmopt(*args[:2], str(run), *args[2:])
        if args[0] == "results"
        else run_asmopt(args[0], str(run), *args[1:])
    )
    assert str(run / "results.db") in line
    assert "--restart" in line or "move it away" in line or "remove it" in line
    assert (run / "results.db").read_bytes() == before  # nothing written into it


def test_fault7_damaged_store_refused_by_eval_and_compare(
    finished_run: Path, tmp_path: Path
) -> None:
    run = _copy(finished_run, tmp_path / "run")
    (run / "results.db-wal").unlink(missing_ok=True)
    _damage(run / "results.db", "random")
    suite = write_suite(tmp_path / "s", ["a"])
    line = error_line(
        run_asmopt("eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run))
    )
    assert "results.db" in line and "--restart" in line
    line = error_line(run_asmopt("results", "compare", str(finished_run), str(run)))
    assert "results.db" in line
    # --restart is the documented way out (--fresh, its old name, still works).
    proc = run_asmopt(
        "eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run), "--restart"
    )
    assert proc.returncode == 0, proc.stderr


def _in_bwrap(
    mounts: list[str], command: list[str], child_env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`command` under bubblewrap: the host's file system as it is (a new /dev and /proc)
    with `mounts` on top."""
    assert BWRAP is not None
    return subprocess.run(
        [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *mounts, *command],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env,
    )


def _in_read_only(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`asmopt ARGS` with `path` mounted read-only (a real read-only file system)."""
    return _in_bwrap(["--ro-bind", str(path), str(path)], asmopt_cmd(*args), env(), timeout=300)


@needs_bwrap
def test_fault8_read_only_run_is_shown_and_reported(finished_run: Path, tmp_path: Path) -> None:
    run = _copy(finished_run, tmp_path / "run")
    listing = sorted(p.name for p in run.iterdir())
    proc = _in_read_only(run, "results", "show", str(run))
    assert proc.returncode == 0, proc.stderr
    assert "2 samples" in proc.stdout
    out = tmp_path / "report"
    proc = _in_read_only(run, "report", str(run), "-o", str(out), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    assert any(out.iterdir())
    line = error_line(_in_read_only(run, "report", str(run), "--no-plots"))
    assert "-o" in line and "Read-only" in line
    suite = write_suite(tmp_path / "s", ["a"])
    line = error_line(
        _in_read_only(
            run, "eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run)
        )
    )
    assert str(run) in line and "writable" in line
    assert sorted(p.name for p in run.iterdir()) == listing


def _on_a_small_disk(
    disk: Path, size: int, script: str, child_env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`sh -c SCRIPT` with a tmpfs of `size` bytes mounted at `disk` (a disk that fills)."""
    mounts = ["--size", str(size), "--tmpfs", str(disk)]
    return _in_bwrap(mounts, ["sh", "-c", script], child_env, timeout)


FULL_SCRIPT = """
set -u
"$PY" -m asmopt.cli eval --suite "$SUITE" --only p0 --measure none --run-dir "$DISK/run" \
    > /dev/null || exit 90
avail=$(df --output=avail -B1 "$DISK" | tail -1)
dd if=/dev/zero of="$DISK/filler" bs=4096 count=$(( (avail - 48 * 1024) / 4096 )) 2>/dev/null
"$PY" -m asmopt.cli eval --suite "$SUITE" --measure none --run-dir "$DISK/run" -j 1
echo "rc=$?"
echo "cache-tmp=$(find "$ASMOPT_CACHE_DIR" -name '.tmp*' | wc -l)"
echo "tmp=$(ls -A "$TMPDIR" | wc -l)"
rm "$DISK/filler"
"$PY" -m asmopt.cli eval --suite "$SUITE" --measure none --run-dir "$DISK/run" -j 1 \
    > /dev/null
echo "rerun=$?"
"""


@needs_bwrap
def test_fault9_full_disk_mid_eval(tmp_path: Path) -> None:
    ids = [f"p{i}" for i in range(30)]
    suite = tmp_path / "s"
    for i, pid in enumerate(ids):  # distinct programs, so every sample writes new rows
        write_program(
            suite,
            pid,
            source=f"/* {i} */ static int pad{i}[64] = {{1}};\n" + ECHO_C.replace("WORK", "1"),
        )
    write_suite(suite, ids)
    disk = Path(tempfile.mkdtemp(prefix="fault9-disk-"))
    tmp = Path(tempfile.mkdtemp(prefix="fault9-tmp-"))
    tmp.chmod(0o755)
    child_env = env()
    child_env.update(
        PY=sys.executable,
        SUITE=str(suite),
        DISK=str(disk),
        TMPDIR=str(tmp),
        ASMOPT_CACHE_DIR=str(disk / "cache"),
    )
    proc = _on_a_small_disk(disk, 4_000_000, FULL_SCRIPT, child_env, timeout=600)
    out = proc.stdout
    assert "rc=2" in out, (out, proc.stderr)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "results.db: database or disk is full" in errors[0]
    assert "rerun" in errors[0]
    assert "cache-tmp=0" in out and "tmp=0" in out  # no temporary files left behind
    assert "rerun=0" in out  # with space again, the same command resumes and finishes


def test_fault10_output_paths(finished_run: Path, tmp_path: Path) -> None:
    run = _copy(finished_run, tmp_path / "run")
    a_dir = tmp_path / "dir"
    a_dir.mkdir()
    a_file = tmp_path / "file.txt"
    a_file.write_text("keep me\n")
    line = error_line(run_asmopt("results", "export", str(run), "-o", str(a_dir)))
    assert "is a directory" in line
    assert list(a_dir.iterdir()) == []  # no stray .tmp
    line = error_line(run_asmopt("report", str(run), "-o", str(a_file), "--no-plots"))
    assert "is a file" in line
    line = error_line(run_asmopt("data", "export", "--format", "jsonl", "-o", str(a_file)))
    assert "existing file" in line
    assert a_file.read_text() == "keep me\n"


def test_fault15_export_without_bubblewrap_names_the_sandbox(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for entry in Path("/usr/bin").iterdir():
        if entry.name != "bwrap":
            (bin_dir / entry.name).symlink_to(entry)
    child_env = env()
    child_env.update(PATH=str(bin_dir), ASMOPT_CACHE_DIR=str(tmp_path / "empty-cache"))
    proc = subprocess.run(
        asmopt_cmd("data", "export", "--format", "jsonl", "-o", str(tmp_path / "x.jsonl")),
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env,
    )
    line = error_line(proc)
    assert "bubblewrap" in line and "compile_failed" not in line


def test_fault15_unknown_set_key_names_the_command_line() -> None:
    pytest.importorskip("yaml")
    line = error_line(
        run_asmopt("train", "ppo", "--config", "ppo_tiny", "--set", "bogus_key=1", "--print-config")
    )
    assert line.startswith("asmopt: error: --set bogus_key: unknown key")
    assert "ppo_tiny.yaml" not in line


SUITE_SCRIPT = """
"$PY" -m asmopt.cli data import dir "$POOL" -o "$DISK/suite" --no-adequacy
echo "rc=$?"
echo "leftover=$(find "$DISK" -name '*.tmp*' | wc -l)"
"""


@needs_bwrap
def test_fault9_full_disk_while_writing_a_suite_leaves_no_temporary_files(
    tmp_path: Path,
) -> None:
    pool = tmp_path / "pool"
    for i in range(3):
        pdir = pool / f"p{i}"
        (pdir / "tests").mkdir(parents=True)
        (pdir / f"p{i}.c").write_text(ECHO_C.replace("WORK", "1"))
        (pdir / "tests" / "t.in").write_text("3\n" * 20_000)  # 40 KB per test input
        (pdir / "tests" / "t.out").write_text("3\n")
    disk = Path(tempfile.mkdtemp(prefix="fault9-suite-"))
    child_env = env()
    child_env.update(PY=sys.executable, POOL=str(pool), DISK=str(disk))
    proc = _on_a_small_disk(disk, 100_000, SUITE_SCRIPT, child_env, timeout=300)
    assert "rc=2" in proc.stdout, (proc.stdout, proc.stderr)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("asmopt: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "No space left on device" in errors[0] and "free disk space" in errors[0]
    assert "leftover=0" in proc.stdout


KILLED_WRITER = """
import os, sys
from asmopt.evaluate import CheckResult, SampleOutcome
from asmopt.judge import Verdict
from asmopt.store import ResultStore
store = ResultStore(sys.argv[1])
store._conn.execute("PRAGMA wal_autocheckpoint=0")
store.record(SampleOutcome("late", 0, CheckResult("late", Verdict.PASS, "")))
os._exit(0)  # killed: the sample stays in the write-ahead log, never merged
"""


@needs_bwrap
def test_fault8_read_only_run_never_drops_unmerged_samples(
    finished_run: Path, tmp_path: Path
) -> None:
    run = _copy(finished_run, tmp_path / "run")
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(run)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert (run / "results.db-wal").stat().st_size > 0
    proc = _in_read_only(run, "results", "show", str(run))
    assert proc.returncode == 0, proc.stderr
    assert "3 samples" in proc.stdout  # the late sample is read from the log
    (run / "results.db-shm").unlink()  # without its index the log cannot be read in place
    line = error_line(_in_read_only(run, "results", "show", str(run)))
    assert "results.db-wal" in line and "copy the run directory" in line
