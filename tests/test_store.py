"""The results store: round trips, resuming after a kill, refusing mixed runs, exports."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from asmopt.errors import InputError
from asmopt.evaluate import CheckResult, MeasureOptions, SampleOutcome
from asmopt.judge import TestVerdict, Verdict
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup, TestSpeedup
from asmopt.policies import get_policy
from asmopt.programs.model import Program, TestCase
from asmopt.report.export import export_records, write_jsonl, write_parquet
from asmopt.run import RunHooks, evaluate_programs, summarize
from asmopt.sandbox import Sandbox
from asmopt.store import ResultStore, StoreError
from asmopt.toolchain import Toolchain

ECHO_C = '#include <stdio.h>\nint main(void){int n; scanf("%d",&n); printf("%d\\n",n); return 0;}\n'

# A run that a test can kill: a slow policy logs every program it is asked about.
RUNNER = textwrap.dedent(
    """
    import sys, time
    from asmopt.run import RunHooks, evaluate_programs
    from asmopt.policies.base import Candidate, PolicyRequest
    from asmopt.programs.model import Program, TestCase
    from asmopt.sandbox import Sandbox
    from asmopt.store import ResultStore
    from asmopt.toolchain import Toolchain

    run_dir, log_path, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
    SRC = {src!r}

    class SlowPolicy:
        name = "slow"
        def propose(self, request: PolicyRequest) -> list[Candidate]:
            with open(log_path, "a") as fh:
                fh.write(request.program.id + "\\n")
            time.sleep(delay)
            return [Candidate(request.baseline_asm)] * request.num_samples

    programs = [Program(id=f"p{{i}}", source=SRC + f"/* {{i}} */\\n",
                        tests=(TestCase("t1", b"7\\n", b"7\\n"),)) for i in range(6)]
    sandbox = Sandbox(); sandbox.check()
    store = ResultStore(run_dir)
    store.begin_run({{"suite": "s", "policy": "slow", "measure": "none"}}, {{}})
    evaluate_programs(programs, SlowPolicy(), Toolchain(sandbox=sandbox), sandbox,
                      jobs=1, progress=False, hooks=RunHooks(store=store))
    store.close()
    """
).format(src=ECHO_C)


def _finished(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_killed_run_resumes_and_skips_finished_work(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(RUNNER)
    run_dir, log = tmp_path / "run", tmp_path / "proposed.log"
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, str(script), str(run_dir), str(log), "0.4"], env=env)
    deadline = time.monotonic() + 60
    while _finished(run_dir / "results.db") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = _finished(run_dir / "results.db")
    assert 2 <= done_before < 6, "the run was not killed mid-way"
    first = log.read_text().split()
    log.write_text("")
    subprocess.run([sys.executable, str(script), str(run_dir), str(log), "0"], env=env, check=True)
    second = log.read_text().split()
    with ResultStore(run_dir, create=False) as store:
        rows = store.sample_rows()
        sessions = store.get_meta("sessions")
    assert len(rows) == 6 and all(r["verdict"] == "pass" for r in rows)
    finished_first = {r["program_id"] for r in rows} - set(second)
    assert len(finished_first) == done_before  # nothing finished was judged again
    assert set(second) == {f"p{i}" for i in range(6)} - finished_first
    assert set(first) >= finished_first
    assert len(sessions) == 2


def _outcome(pid: str, sample: int, ratio: float) -> SampleOutcome:
    t = TestSpeedup(
        "t1",
        MeasureMode.TIME,
        MeasureStatus.MEASURED,
        ratio=ratio,
        low=ratio * 0.98,
        high=ratio * 1.02,
        n=6,
        raw={"base_cpu": [0.01] * 6, "cand_cpu": [0.01 / ratio] * 6},
        context={"cores": [1]},
    )
    sp = ProgramSpeedup(
        MeasureMode.TIME, MeasureStatus.MEASURED, ratio, ratio * 0.98, ratio * 1.02, tests=[t]
    )
    check = CheckResult(
        pid, Verdict.PASS, "ok", [TestVerdict("t1", Verdict.PASS)], speedup=sp
    )
    return SampleOutcome(pid, sample, check, assembly=f"main: # {pid}\n ret\n")


def test_round_trip_and_exports(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as store:
        store.begin_run({"suite": "s", "policy": "p", "measure": "time"}, {"cpu_model": "x"})
        store.record(_outcome("a", 0, 1.25))
        store.record(_outcome("b", 0, 0.9))
        loaded = store.load_outcomes()
        records = export_records(store, raw=True)
    assert [o.program_id for o in loaded] == ["a", "b"]
    assert loaded[0].check.speedup is not None and loaded[0].check.speedup.ratio == 1.25
    # Per-test speedups live in one place: the answer's speedup record.
    assert [t.test for t in loaded[0].check.speedup.tests] == ["t1"]
    assert loaded[0].check.speedup.tests[0].raw["base_cpu"] == [0.01] * 6
    assert loaded[0].resumed and loaded[0].assembly == "main: # a\n ret\n"
    metrics = summarize(loaded)["metrics"]
    assert metrics["strict"]["significantly_faster"] == pytest.approx(0.5)
    write_jsonl(records, tmp_path / "r.jsonl")
    first = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert first["tests"][0]["timing"]["raw"]["base_cpu"] == [0.01] * 6
    pq = pytest.importorskip("pyarrow.parquet")
    write_parquet(records, tmp_path / "r.parquet")
    assert pq.read_table(tmp_path / "r.parquet").num_rows == 2


def test_stored_verdicts_read_back_as_members_and_a_bad_one_is_named(tmp_path: Path) -> None:
    """A verdict is written as its name and read back as the `Verdict` it names; a stored
    name that is none fails naming the database, the row and the value."""
    with ResultStore(tmp_path) as store:
        store.begin_run({"suite": "s", "policy": "p", "measure": "time"}, {})
        store.record(_outcome("a", 0, 1.25))
        [loaded] = store.load_outcomes()
        [record] = export_records(store)
    assert loaded.check.verdict is Verdict.PASS and loaded.check.tests[0].verdict is Verdict.PASS
    assert '"verdict": "pass"' in json.dumps(record)
    conn = sqlite3.connect(tmp_path / "results.db")
    with conn:
        conn.execute("UPDATE tests SET verdict = 'wrong_outptu'")
    conn.close()
    bad = r"program a sample 0, test t1: unknown verdict 'wrong_outptu'; did you mean 'wrong_o"
    with ResultStore(tmp_path, create=False) as store:
        with pytest.raises(InputError, match=bad):
            store.load_outcomes()
        with pytest.raises(InputError, match=bad):
            export_records(store)


def test_a_different_run_in_the_same_directory_is_refused(tmp_path: Path) -> None:
    with ResultStore(tmp_path) as store:
        store.begin_run({"suite": "s", "policy": "p", "measure": "time"}, {"kernel": "1"})
        notes = store.begin_run({"suite": "s", "policy": "p", "measure": "time"}, {"kernel": "2"})
        assert notes and "kernel" in notes[0]
        with pytest.raises(StoreError, match="measure"):
            store.begin_run({"suite": "s", "policy": "p", "measure": "none"}, {})
    with pytest.raises(StoreError, match="asmopt eval"):
        ResultStore(tmp_path / "missing", create=False)


def test_changed_program_replaces_its_stale_samples(tmp_path: Path) -> None:
    """A program stored with other content is replaced and its samples, which judged the old
    program, are deleted (the evaluation judges them again)."""
    from asmopt.evaluate import CheckResult, SampleOutcome
    from asmopt.judge import Verdict

    p1 = Program(id="x", source="int main(){return 0;}", tests=())
    p2 = Program(id="x", source="int main(){return 1;}", tests=())
    with ResultStore(tmp_path) as store:
        store.put_program(p1, "test", "asm")
        store.record(SampleOutcome("x", 0, CheckResult("x", Verdict.PASS, "")))
        store.put_program(p2, "test", "asm")
        assert store.sample_rows() == []
        assert store.baseline_asm("x") == "asm"


def test_eval_stores_and_resumes(toolchain: Toolchain, sandbox: Sandbox, tmp_path: Path) -> None:
    programs = [
        Program(id=f"e{i}", source=ECHO_C + f"/* {i} */\n", tests=(TestCase("t", b"3\n", b"3\n"),))
        for i in range(3)
    ]
    policy = get_policy("identity")
    options = MeasureOptions(mode=MeasureMode.TIME)
    with ResultStore(tmp_path) as store:
        # The same evaluation twice into one store: the second resumes the first.
        first, again = [
            evaluate_programs(
                programs,
                policy,
                toolchain,
                sandbox,
                samples=2,
                progress=False,
                measure=options,
                hooks=RunHooks(store=store),
            )
            for _ in range(2)
        ]
    assert len(first) == len(again) == 6
    assert not any(o.resumed for o in first) and all(o.resumed for o in again)
    assert all(o.is_copy and o.check.speedup is not None for o in again)
    assert all(o.check.speedup.status == MeasureStatus.COPY for o in again if o.check.speedup)


def test_same_named_suites_get_their_own_run_directories(tmp_path: Path) -> None:
    """Two imports that share a name (different programs) never share a default run
    directory, and a store refuses the second one if pointed at the first's directory."""
    from asmopt.programs.model import Suite
    from asmopt.run import default_run_dir, suite_identity

    def suite(*ids: str) -> Suite:
        progs = {i: Program(id=i, source="int main(){return 0;}", tests=()) for i in ids}
        return Suite(name="llvm-test-suite", programs=progs, splits={})

    a, b = suite("Shootout-ary3", "Shootout-fib2"), suite("Polybench-2mm")
    assert suite_identity(a) != suite_identity(b)
    assert suite_identity(a) == suite_identity(suite("Shootout-fib2", "Shootout-ary3"))
    dirs = {default_run_dir(suite_identity(x), "identity", "all", "none") for x in (a, b)}
    assert len(dirs) == 2
    with ResultStore(tmp_path) as store:
        run = {"suite": "llvm-test-suite", "policy": "p", "measure": "none"}
        store.begin_run({**run, "suite_id": suite_identity(a)}, {})
        with pytest.raises(StoreError, match="suite_id"):
            store.begin_run({**run, "suite_id": suite_identity(b)}, {})
