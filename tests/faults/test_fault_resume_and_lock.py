"""Faults 1, 5 and 13: stale results, concurrent evaluations, Ctrl-C (docs/faults.md)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from faultkit import ECHO_C, asmopt_cmd, env, error_line, eval_args, run_asmopt, write_suite


def _eval(suite: Path, run_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_asmopt(*eval_args(suite, run_dir, "--json", *extra))


def _verdicts(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, str, bool]]:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    return [(r["program"], r["verdict"], r["resumed"]) for r in out["results"]]


def test_fault1_edited_expected_output_is_judged_again(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", ["echo"])
    run = tmp_path / "run"
    assert _verdicts(_eval(suite, run)) == [("echo", "pass", False)]
    (suite / "programs/echo/tests/t1.out").write_text("4\n")  # the answer is now wrong
    proc = _eval(suite, run)
    assert _verdicts(proc) == [("echo", "wrong_output", False)]
    assert "re-evaluating 1 stored sample(s) of echo: the program or its tests changed" in (
        proc.stderr
    )
    # Unchanged inputs: reused, and nothing is said about re-evaluating.
    proc = _eval(suite, run)
    assert _verdicts(proc) == [("echo", "wrong_output", True)]
    assert "re-evaluating" not in proc.stderr


def test_fault1_reimported_workload_is_not_reused(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", ["heavy"], source=ECHO_C.replace("WORK", "1"))
    run = tmp_path / "run"
    _verdicts(_eval(suite, run))
    # Same output, another workload (what a re-import with other sizes does).
    (suite / "programs/heavy/main.c").write_text(ECHO_C.replace("WORK", "(1 + 0 * 100000000L)"))
    proc = _eval(suite, run)
    assert _verdicts(proc) == [("heavy", "pass", False)]
    assert "re-evaluating 1 stored sample(s) of heavy" in proc.stderr


def test_fault5_second_eval_names_the_holder_and_exits_2(tmp_path: Path) -> None:
    from asmopt.store import RunLock

    suite = write_suite(tmp_path / "s", ["echo"])
    run = tmp_path / "run"
    with RunLock(run).acquire():
        line = error_line(_eval(suite, run))
    assert f"pid {os.getpid()}" in line and "--wait" in line
    assert not (run / "results.db").exists()  # it wrote nothing


def test_fault5_wait_blocks_until_the_holder_is_done(tmp_path: Path) -> None:
    from asmopt.store import RunLock

    suite = write_suite(tmp_path / "s", ["echo"])
    run = tmp_path / "run"
    lock = RunLock(run).acquire()
    proc = subprocess.Popen(
        asmopt_cmd(
            "eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run), "--wait"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # blocks until it reports the wait
        assert "waiting for" in first and f"pid {os.getpid()}" in first
        assert proc.poll() is None  # still waiting while the lock is held
    finally:
        lock.release()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "1 samples" in out


def _slow_suite(root: Path, n: int) -> Path:
    """Programs whose single test takes a noticeable moment, so an eval is interruptible."""
    spin = ECHO_C.replace(
        "int main(void) {",
        "int main(void) {\n    volatile unsigned long s = 0;\n"
        "    for (unsigned long i = 0; i < 200000000UL; i++) s += i;",
    ).replace("WORK", "1")
    return write_suite(root, [f"p{i}" for i in range(n)], source=spin)


def _stored(run: Path) -> int:
    db = run / "results.db"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM samples").fetchone()[0]
    except sqlite3.Error:
        return 0


def _private_tmp() -> Path:
    """A temporary directory for one child eval, so anything it leaves behind is seen; in
    the test run's temporary directory (the sandbox needs to reach it, tmp_path is private)."""
    tmp = Path(tempfile.mkdtemp(prefix="fault13-"))
    tmp.chmod(0o755)
    return tmp


def _start_eval(suite: Path, run: Path, tmp: Path) -> subprocess.Popen[str]:
    child_env = env()
    child_env["TMPDIR"] = str(tmp)
    return subprocess.Popen(
        asmopt_cmd(
            "eval", "--suite", str(suite), "--measure", "none", "--run-dir", str(run), "-j", "1"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env,
    )


def _wait_for_first_sample(proc: subprocess.Popen[str], run: Path) -> None:
    deadline = time.monotonic() + 240
    while _stored(run) == 0:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no sample was stored"
        time.sleep(0.2)


def test_fault13_first_ctrl_c_stops_scheduling_and_prints_the_summary(tmp_path: Path) -> None:
    n = 5
    suite = _slow_suite(tmp_path / "s", n)
    run, tmp = tmp_path / "run", _private_tmp()
    proc = _start_eval(suite, run, tmp)
    _wait_for_first_sample(proc, run)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted; rerun the same command to resume" in err
    assert "Traceback" not in err
    stored = _stored(run)
    assert 1 <= stored < n  # it stopped early and kept what finished
    assert f"{stored} samples" in out  # the summary of what is stored
    assert list(tmp.iterdir()) == []  # no temporary directory survives
    # The rerun resumes: it judges only what was left.
    proc = _start_eval(suite, run, tmp)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert f"({stored} from earlier sessions)" in out


def test_fault13_second_ctrl_c_exits_at_once_and_cleans_up(tmp_path: Path) -> None:
    suite = _slow_suite(tmp_path / "s", 6)
    run, tmp = tmp_path / "run", _private_tmp()
    proc = _start_eval(suite, run, tmp)
    _wait_for_first_sample(proc, run)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert list(tmp.iterdir()) == []
    # Nothing half-judged was stored as a verdict: every stored sample passed.
    with sqlite3.connect(run / "results.db") as conn:
        verdicts = {v for (v,) in conn.execute("SELECT verdict FROM samples")}
    assert verdicts == {"pass"}


SLEEPY_C = """#include <stdio.h>
#include <unistd.h>
int main(void) {
    long x = 0;
    if (scanf("%ld", &x) != 1) return 1;
    sleep(15);
    printf("%ld\\n", x);
    return 0;
}
"""


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_fault13_running_samples_are_cancelled_after_the_grace_period(tmp_path: Path) -> None:
    """A sample that would run long after the first Ctrl-C (a slow program, or one being
    timed) is cancelled after the grace period and not stored; the run ends with the summary
    of what is stored."""
    from faultkit import write_program

    suite = tmp_path / "s"
    write_program(suite, "a_fast")
    write_program(
        suite, "b_slow", source=SLEEPY_C, tests={f"t{i}": ("3\n", "3\n") for i in range(3)}
    )
    write_suite(suite, ["a_fast", "b_slow"])
    run, tmp = tmp_path / "run", _private_tmp()
    proc = _start_eval(suite, run, tmp)
    _wait_for_first_sample(proc, run)  # a_fast is stored, b_slow is running its 45 s
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "cancelled" in err and "interrupted; rerun the same command to resume" in err
    with sqlite3.connect(run / "results.db") as conn:
        stored = [p for (p,) in conn.execute("SELECT program_id FROM samples")]
    assert stored == ["a_fast"]  # the cancelled sample left no verdict behind
    assert "1 samples" in out
    assert list(tmp.iterdir()) == []


def test_fault13_sigterm_is_handled_like_ctrl_c(tmp_path: Path) -> None:
    """What a job scheduler, `timeout` or a container stop sends: what finished is stored,
    no temporary directory is left, exit 143 (128 + SIGTERM) as a shell reports it."""
    suite = _slow_suite(tmp_path / "s", 5)
    run, tmp = tmp_path / "run", _private_tmp()
    proc = _start_eval(suite, run, tmp)
    _wait_for_first_sample(proc, run)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "SIGTERM" in err and "interrupted; rerun the same command to resume" in err
    assert "Traceback" not in err
    stored = _stored(run)
    assert 1 <= stored < 5 and f"{stored} samples" in out
    assert list(tmp.iterdir()) == []


LOCK_HOLDER = """
import sys
from pathlib import Path
from asmopt.measure.timing.cores import CoreLayout, CoreLock
lock = CoreLock(CoreLayout(timing=(0,), general=(0,), isolated=False), Path(sys.argv[1]))
with lock.hold():
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_fault13_an_interrupt_ends_a_wait_for_a_timing_core(tmp_path: Path) -> None:
    """A sample waiting for the machine-wide timing lock (another process holds the core)
    is no child process a kill can end: the grace period's end cancels the wait itself, so
    the first Ctrl-C still ends the run about 10 s later."""
    import sys

    locks = tmp_path / "locks"
    locks.mkdir()
    child_env = env()
    child_env.update(ASMOPT_TIMING_LOCK_DIR=str(locks), ASMOPT_TIMING_CORES="0")
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(locks)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        suite = write_suite(tmp_path / "s", ["p0", "p1"])
        tmp = _private_tmp()
        child_env["TMPDIR"] = str(tmp)
        cmd = asmopt_cmd(
            "eval", "--suite", str(suite), "--measure", "time", "--time-copies",
            "--run-dir", str(tmp_path / "run"), "-j", "1",
        )  # fmt: skip
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env
        )
        time.sleep(8)  # checked, now waiting for the held core
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        assert proc.returncode == 130, err
        assert took < 20, f"the run ended {took:.0f} s after the first Ctrl-C"
        assert "Traceback" not in err and list(tmp.iterdir()) == []
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)


def test_an_id_given_twice_is_judged_once(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", ["p0", "p1"])
    run = tmp_path / "run"
    proc = run_asmopt(
        "eval", "--suite", str(suite), "--measure", "none", "--only", "p0", "p0",
        "--run-dir", str(run), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [r["program"] for r in out["results"]] == ["p0"]
    assert out["summary"]["samples"] == _stored(run) == 1
