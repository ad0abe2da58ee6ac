"""The results store: one SQLite database per run directory.

Why SQLite: one file, no server, transactions. Each finished (program, sample) is written
in ONE transaction with its tests and timings, so a run that is killed loses only the
samples in flight, and re-running the same command skips every finished sample (SWE-bench's
resume, lm-eval-harness's per-sample records). WAL mode lets `asmopt results show` read
while an evaluation writes.

Schema (version 1; docs/measurement.md describes every column):
  meta(key, value)                 run configuration and environment fingerprint (JSON)
  programs(program_id, ...)        content hash, split, test count, baseline assembly
  candidates(hash, ...)            every distinct answer text, by sha256, with its
                                   canonical hash (copy detection)
  samples(program_id, sample, ...) verdict, build/pass, copy flag, program speedup
  tests(program_id, sample, test, ...)    per-test verdict and run times
  timings(program_id, sample, test, ...)  per-test speedup, interval, raw samples, context

Infra errors are stored (never silently dropped) but do not count as finished: a rerun
retries them.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asmopt.evaluate import CheckResult
from asmopt.judge import TestVerdict, Verdict
from asmopt.measure.canonical import canonical_hash, content_hash
from asmopt.measure.speedup import MeasureMode, MeasureStatus, ProgramSpeedup, TestSpeedup

if TYPE_CHECKING:
    from asmopt.evaluate import SampleOutcome
    from asmopt.programs.model import Program

SCHEMA_VERSION = 1
DB_NAME = "results.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS programs (
    program_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    split TEXT,
    n_tests INTEGER NOT NULL,
    test_names TEXT NOT NULL,
    baseline_hash TEXT,
    baseline_asm TEXT
);
CREATE TABLE IF NOT EXISTS candidates (
    hash TEXT PRIMARY KEY,
    canonical_hash TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    assembly TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS samples (
    program_id TEXT NOT NULL,
    sample INTEGER NOT NULL,
    candidate_hash TEXT,
    verdict TEXT NOT NULL,
    message TEXT NOT NULL,
    passed INTEGER NOT NULL,
    total INTEGER NOT NULL,
    built INTEGER NOT NULL,
    correct INTEGER NOT NULL,
    is_copy INTEGER NOT NULL,
    build_seconds REAL,
    measure_mode TEXT,
    measure_status TEXT,
    measure_message TEXT,
    speedup REAL,
    speedup_low REAL,
    speedup_high REAL,
    reliable INTEGER,
    policy_info TEXT,
    seconds REAL,
    finished_at TEXT NOT NULL,
    PRIMARY KEY (program_id, sample)
);
CREATE TABLE IF NOT EXISTS tests (
    program_id TEXT NOT NULL,
    sample INTEGER NOT NULL,
    test TEXT NOT NULL,
    verdict TEXT NOT NULL,
    message TEXT NOT NULL,
    exit_code INTEGER,
    signal TEXT,
    user_time_s REAL,
    sys_time_s REAL,
    wall_time_s REAL,
    peak_rss_kb INTEGER,
    PRIMARY KEY (program_id, sample, test)
);
CREATE TABLE IF NOT EXISTS timings (
    program_id TEXT NOT NULL,
    sample INTEGER NOT NULL,
    test TEXT NOT NULL,
    mode TEXT NOT NULL,
    status TEXT NOT NULL,
    ratio REAL,
    low REAL,
    high REAL,
    n INTEGER,
    n_outliers INTEGER,
    reliable INTEGER,
    warnings TEXT,
    message TEXT,
    base_mean REAL,
    cand_mean REAL,
    log_mean REAL,
    log_se REAL,
    df REAL,
    raw TEXT,
    context TEXT,
    PRIMARY KEY (program_id, sample, test)
);
"""


class StoreError(RuntimeError):
    """The run directory cannot be used as asked; the message says what to do."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), default=str)


def db_path(run_dir: str | os.PathLike[str]) -> Path:
    p = Path(run_dir)
    return p if p.suffix == ".db" else p / DB_NAME


class ResultStore:
    """A run's database. Thread-safe: one connection, one lock, one transaction per sample."""

    def __init__(self, run_dir: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = db_path(run_dir)
        if not self.path.exists():
            if not create:
                raise StoreError(
                    f"no results in {self.path.parent} (no {DB_NAME}); run `asmopt eval "
                    f"--run-dir {self.path.parent}` first"
                )
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=60.0
        )
        self._conn.row_factory = sqlite3.Row
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        version = self.get_meta("schema_version")
        if version is None:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif int(version) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this asmopt writes version "
                f"{SCHEMA_VERSION}: use a new --run-dir"
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str) -> Any:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row["value"])

    def set_meta(self, key: str, value: Any) -> None:
        with self._transaction() as c:
            c.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, _json(value)),
            )

    def meta(self) -> dict[str, Any]:
        with self._lock:
            rows = self._conn.execute("SELECT key, value FROM meta").fetchall()
        return {r["key"]: json.loads(r["value"]) for r in rows}

    def begin_run(self, run: dict[str, Any], fingerprint: dict[str, Any]) -> list[str]:
        """Record the run's configuration, or check a resumed run against it.

        A different suite, policy or measurement mode would mix incomparable results in one
        store: refused. A changed environment (another CPU, compiler, kernel) is allowed
        with a warning, and the fingerprint of each session is kept."""
        stored = self.get_meta("run")
        notes: list[str] = []
        if stored is None:
            self.set_meta("run", run)
            self.set_meta("created", _now())
            self.set_meta("fingerprint", fingerprint)
            self.set_meta("sessions", [{"started": _now(), "fingerprint": fingerprint}])
            return notes
        for key in ("suite", "suite_id", "policy", "measure"):
            if key == "suite_id" and stored.get(key) is None:
                continue  # recorded before runs named their suite's program set
            if stored.get(key) != run.get(key):
                raise StoreError(
                    f"{self.path.parent} holds a run with {key} {stored.get(key)!r}, not "
                    f"{run.get(key)!r}; use another --run-dir (or --fresh to replace it)"
                )
        old_fp = self.get_meta("fingerprint") or {}
        changed = [
            k
            for k in ("cpu_model", "kernel", "compiler", "sandbox", "valgrind")
            if old_fp.get(k) != fingerprint.get(k)
        ]
        if changed:
            notes.append(
                "resuming on a different environment ("
                + ", ".join(f"{k}: {old_fp.get(k)!r} -> {fingerprint.get(k)!r}" for k in changed)
                + "); results measured before and after are not strictly comparable"
            )
        sessions = self.get_meta("sessions") or []
        sessions.append(
            {"started": _now(), "fingerprint": fingerprint, "suite_id": run.get("suite_id")}
        )
        self.set_meta("sessions", sessions)
        return notes

    # ------------------------------------------------------------------ programs
    def put_program(self, program: Program, split: str | None, baseline_asm: str | None) -> None:
        """Register a program; refuse if a program of that id with other content is stored."""
        h = program.content_hash()
        with self._lock:
            row = self._conn.execute(
                "SELECT content_hash, baseline_asm FROM programs WHERE program_id = ?",
                (program.id,),
            ).fetchone()
        if row is not None and row["content_hash"] != h:
            raise StoreError(
                f"program {program.id!r} changed since this run started (its source or tests "
                "differ); results would mix two programs: use another --run-dir"
            )
        if row is not None and (row["baseline_asm"] or baseline_asm is None):
            return
        with self._transaction() as c:
            c.execute(
                "INSERT INTO programs(program_id, content_hash, split, n_tests, test_names, "
                "baseline_hash, baseline_asm) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(program_id) DO UPDATE SET baseline_hash = excluded.baseline_hash, "
                "baseline_asm = excluded.baseline_asm",
                (
                    program.id,
                    h,
                    split,
                    len(program.tests),
                    _json([t.name for t in program.tests]),
                    content_hash(baseline_asm) if baseline_asm else None,
                    baseline_asm,
                ),
            )

    def baseline_asm(self, program_id: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT baseline_asm FROM programs WHERE program_id = ?", (program_id,)
            ).fetchone()
        return None if row is None else row["baseline_asm"]

    def candidate_asm(self, h: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT assembly FROM candidates WHERE hash = ?", (h,)
            ).fetchone()
        return None if row is None else row["assembly"]

    # ------------------------------------------------------------------ samples
    def finished(self) -> set[tuple[str, int]]:
        """(program, sample) pairs that need no more work: judged, and not by an infra error."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT program_id, sample FROM samples WHERE verdict != 'infra_error' "
                "AND COALESCE(measure_status, '') != 'infra_error'"
            ).fetchall()
        return {(r["program_id"], r["sample"]) for r in rows}

    def record(self, outcome: SampleOutcome) -> None:
        """Write one finished sample, its tests and its timings, atomically."""
        check = outcome.check
        sp = check.speedup
        cand_hash = None
        with self._transaction() as c:
            if outcome.assembly is not None:
                cand_hash = content_hash(outcome.assembly)
                c.execute(
                    "INSERT OR IGNORE INTO candidates(hash, canonical_hash, bytes, assembly) "
                    "VALUES (?, ?, ?, ?)",
                    (
                        cand_hash,
                        canonical_hash(outcome.assembly),
                        len(outcome.assembly.encode("utf-8", "replace")),
                        outcome.assembly,
                    ),
                )
            key = (outcome.program_id, outcome.sample)
            c.execute("DELETE FROM tests WHERE program_id = ? AND sample = ?", key)
            c.execute("DELETE FROM timings WHERE program_id = ? AND sample = ?", key)
            c.execute(
                "INSERT OR REPLACE INTO samples(program_id, sample, candidate_hash, verdict, "
                "message, passed, total, built, correct, is_copy, build_seconds, measure_mode, "
                "measure_status, measure_message, speedup, speedup_low, speedup_high, reliable, "
                "policy_info, seconds, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    *key,
                    cand_hash,
                    str(check.verdict),
                    check.message,
                    check.passed,
                    check.total,
                    int(check.built),
                    int(check.correct),
                    int(outcome.is_copy),
                    check.build_seconds,
                    str(sp.mode) if sp else None,
                    str(sp.status) if sp else None,
                    sp.message if sp else None,
                    sp.ratio if sp and sp.has_ratio else None,
                    sp.low if sp and sp.has_ratio else None,
                    sp.high if sp and sp.has_ratio else None,
                    int(sp.reliable) if sp else None,
                    _json(outcome.policy_info),
                    outcome.seconds,
                    _now(),
                ),
            )
            for t in check.tests:
                c.execute(
                    "INSERT INTO tests(program_id, sample, test, verdict, message, exit_code, "
                    "signal, user_time_s, sys_time_s, wall_time_s, peak_rss_kb) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        *key,
                        t.test,
                        str(t.verdict),
                        t.message,
                        t.exit_code,
                        t.signal,
                        t.user_time_s,
                        t.sys_time_s,
                        t.wall_time_s,
                        t.peak_rss_kb,
                    ),
                )
            for ts in sp.tests if sp else []:
                c.execute(
                    "INSERT INTO timings(program_id, sample, test, mode, status, ratio, low, "
                    "high, n, n_outliers, reliable, warnings, message, base_mean, cand_mean, "
                    "log_mean, log_se, df, raw, context) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        *key,
                        ts.test,
                        str(ts.mode),
                        str(ts.status),
                        ts.ratio,
                        ts.low,
                        ts.high,
                        ts.n,
                        ts.n_outliers,
                        int(ts.reliable),
                        _json(ts.warnings),
                        ts.message,
                        ts.base_mean,
                        ts.cand_mean,
                        ts.log_mean,
                        ts.log_se,
                        ts.df,
                        _json(ts.raw),
                        _json(ts.context),
                    ),
                )

    # ------------------------------------------------------------------ reading
    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._conn.execute(sql, args).fetchall()]

    def sample_rows(self) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM samples ORDER BY program_id, sample")

    def test_rows(self) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM tests ORDER BY program_id, sample, test")

    def timing_rows(self) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM timings ORDER BY program_id, sample, test")
        for r in rows:
            for k in ("warnings", "raw", "context"):
                r[k] = json.loads(r[k]) if r[k] else None
        return rows


    def load_outcomes(self) -> list[SampleOutcome]:
        """Rebuild the stored samples as SampleOutcome objects (tests and speedups included)."""
        from asmopt.evaluate import SampleOutcome

        tests: dict[tuple[str, int], list[TestVerdict]] = {}
        for r in self.test_rows():
            tests.setdefault((r["program_id"], r["sample"]), []).append(
                TestVerdict(
                    test=r["test"],
                    verdict=Verdict(r["verdict"]),
                    message=r["message"],
                    exit_code=r["exit_code"],
                    signal=r["signal"],
                    user_time_s=r["user_time_s"] or 0.0,
                    sys_time_s=r["sys_time_s"] or 0.0,
                    wall_time_s=r["wall_time_s"] or 0.0,
                    peak_rss_kb=r["peak_rss_kb"] or 0,
                )
            )
        timings: dict[tuple[str, int], list[TestSpeedup]] = {}
        for r in self.timing_rows():
            timings.setdefault((r["program_id"], r["sample"]), []).append(
                TestSpeedup(
                    test=r["test"],
                    mode=MeasureMode(r["mode"]),
                    status=MeasureStatus(r["status"]),
                    ratio=r["ratio"] if r["ratio"] is not None else 1.0,
                    low=r["low"] if r["low"] is not None else 1.0,
                    high=r["high"] if r["high"] is not None else 1.0,
                    n=r["n"] or 0,
                    n_outliers=r["n_outliers"] or 0,
                    reliable=bool(r["reliable"]),
                    warnings=r["warnings"] or [],
                    message=r["message"] or "",
                    base_mean=r["base_mean"],
                    cand_mean=r["cand_mean"],
                    log_mean=r["log_mean"] or 0.0,
                    log_se=r["log_se"] if r["log_se"] is not None else 0.0,
                    df=r["df"] if r["df"] is not None else math.inf,
                    raw=r["raw"] or {},
                    context=r["context"] or {},
                )
            )
        assemblies = {
            r["hash"]: r["assembly"] for r in self._rows("SELECT hash, assembly FROM candidates")
        }
        out = []
        for r in self.sample_rows():
            key = (r["program_id"], r["sample"])
            speedup = None
            if r["measure_status"] is not None:
                per_test = timings.get(key, [])
                speedup = ProgramSpeedup(
                    mode=MeasureMode(r["measure_mode"]),
                    status=MeasureStatus(r["measure_status"]),
                    ratio=r["speedup"] if r["speedup"] is not None else 1.0,
                    low=r["speedup_low"] if r["speedup_low"] is not None else 1.0,
                    high=r["speedup_high"] if r["speedup_high"] is not None else 1.0,
                    reliable=bool(r["reliable"]),
                    message=r["measure_message"] or "",
                    tests=per_test,
                ).fill_means()
                by_name = {t.test: t for t in per_test}
                for tv in tests.get(key, []):
                    tv.speedup = by_name.get(tv.test)
            check = CheckResult(
                program_id=r["program_id"],
                verdict=Verdict(r["verdict"]),
                message=r["message"],
                tests=tests.get(key, []),
                build_seconds=r["build_seconds"] or 0.0,
                speedup=speedup,
            )
            out.append(
                SampleOutcome(
                    program_id=r["program_id"],
                    sample=r["sample"],
                    check=check,
                    assembly=assemblies.get(r["candidate_hash"]),
                    policy_info=json.loads(r["policy_info"] or "{}"),
                    is_copy=bool(r["is_copy"]),
                    seconds=r["seconds"] or 0.0,
                    resumed=True,
                )
            )
        return out











