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
  samples(program_id, sample, ...) verdict, build/pass, copy flag, program speedup, and
                                   `inputs`: hashes of what the verdict depends on (program
                                   and tests, toolchain, measurement settings); a sample is
                                   reused on resume only when all of them still match
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

from asmopt.errors import AsmoptError
from asmopt.evaluate import CheckResult
from asmopt.fresh import Grading
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
    inputs TEXT,
    grading TEXT,
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
    detail TEXT,
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


# The parts of a run's fingerprint that decide whether two runs' numbers can be compared:
# a resumed run on other values gets a warning, `results compare` lists them.
COMPARABILITY_KEYS = ("cpu_model", "kernel", "compiler", "sandbox", "measure", "valgrind")


def environment_differences(
    a: dict[str, Any], b: dict[str, Any]
) -> dict[str, tuple[Any, Any]]:
    """The comparability keys on which two fingerprints differ, with both values."""
    return {k: (a.get(k), b.get(k)) for k in COMPARABILITY_KEYS if a.get(k) != b.get(k)}


class StoreError(AsmoptError, RuntimeError):
    """The run directory cannot be used as asked; the message says what to do."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _test_detail(text: str | None) -> dict[str, Any]:
    """A stored test's difference kind, size class and drawn-input record."""
    data = json.loads(text) if text else {}
    return {k: data[k] for k in ("difference", "size_class", "drawn") if k in data}


def _json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), default=str)


def db_path(run_dir: str | os.PathLike[str]) -> Path:
    p = Path(run_dir)
    return p if p.suffix == ".db" else p / DB_NAME


_INSERT_CANDIDATE = (
    "INSERT OR IGNORE INTO candidates(hash, canonical_hash, bytes, assembly) VALUES (?, ?, ?, ?)"
)
_INSERT_SAMPLE = (
    "INSERT OR REPLACE INTO samples(program_id, sample, candidate_hash, verdict, "
    "message, passed, total, built, correct, is_copy, build_seconds, measure_mode, "
    "measure_status, measure_message, speedup, speedup_low, speedup_high, reliable, "
    "policy_info, seconds, finished_at, inputs, grading) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_TEST = (
    "INSERT INTO tests(program_id, sample, test, verdict, message, exit_code, "
    "signal, user_time_s, sys_time_s, wall_time_s, peak_rss_kb, detail) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_TIMING = (
    "INSERT INTO timings(program_id, sample, test, mode, status, ratio, low, "
    "high, n, n_outliers, reliable, warnings, message, base_mean, cand_mean, "
    "log_mean, log_se, df, raw, context) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The samples that need no more work: neither judged nor measured by an infra error of
# ours (those are judged again on a rerun), with the two values it binds.
_FINISHED = "WHERE verdict != ? AND COALESCE(measure_status, '') != ?"
_OURS = (Verdict.INFRA_ERROR.value, MeasureStatus.INFRA_ERROR.value)


def _candidate_row(assembly: str) -> tuple[Any, ...]:
    return (
        content_hash(assembly),
        canonical_hash(assembly),
        len(assembly.encode("utf-8", "replace")),
        assembly,
    )


def _sample_row(
    outcome: SampleOutcome, cand_hash: str | None, inputs: dict[str, str] | None
) -> tuple[Any, ...]:
    check, sp = outcome.check, outcome.check.speedup
    ratio = sp is not None and sp.has_ratio
    return (
        outcome.program_id,
        outcome.sample,
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
        sp.ratio if ratio else None,
        sp.low if ratio else None,
        sp.high if ratio else None,
        int(sp.reliable) if sp else None,
        _json(outcome.policy_info),
        outcome.seconds,
        _now(),
        _json(inputs) if inputs else None,
        _json(check.inputs.to_dict()) if check.inputs else None,
    )


def _test_row(key: tuple[str, int], t: TestVerdict) -> tuple[Any, ...]:
    detail = {
        k: v
        for k, v in (("difference", t.difference), ("size_class", t.size_class), ("drawn", t.drawn))
        if v
    }
    return (
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
        _json(detail) if detail else None,
    )


def _timing_row(key: tuple[str, int], ts: TestSpeedup) -> tuple[Any, ...]:
    return (
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
    )


class ResultStore:
    """A run's database. Thread-safe: one connection, one lock, one transaction per sample."""

    def __init__(self, run_dir: str | os.PathLike[str], *, create: bool = True) -> None:
        """Open (and with `create`, make) a run's database.

        `create=False` is for readers (`asmopt results`, `asmopt report`): the database is
        opened read-only, so a finished run on read-only media can still be shown, and
        nothing (no schema, no WAL file) is written into a file that is not a run. Every
        fault of the file itself (missing, empty, not SQLite, corrupt, unwritable) is a
        StoreError naming the file and what to do."""
        self.path = db_path(run_dir)
        self.read_only = not create
        if not self.path.exists():
            if not create:
                raise StoreError(
                    f"no results in {self.path.parent} (no {DB_NAME}); run `asmopt eval "
                    f"--run-dir {self.path.parent}` first"
                )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"{self.path.parent}: cannot create the run directory ({exc.strerror}); "
                    "choose another --run-dir"
                ) from None
        else:
            self._check_file()
        self._lock = threading.Lock()
        try:
            self._conn = self._connect()
        except sqlite3.Error as exc:
            raise self.fault(exc) from None
        version = self.get_meta("schema_version")
        if version is None and not self.read_only:
            self.set_meta("schema_version", SCHEMA_VERSION)
        elif version is not None and int(version) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this asmopt writes version "
                f"{SCHEMA_VERSION}: use a new --run-dir"
            )

    def _check_file(self) -> None:
        """Refuse what SQLite would either misread or silently turn into a new database."""
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory, not a results database")
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(16)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot read ({exc.strerror})") from None
        if not head:
            raise StoreError(
                f"{self.path}: empty file, not a results database (an interrupted copy?); "
                "remove it, or rerun `asmopt eval` with --restart to start the run over"
            )
        if head != b"SQLite format 3\x00":
            raise StoreError(
                f"{self.path}: not a results database (the file is not SQLite: overwritten "
                "or corrupt); move it away, or rerun `asmopt eval` with --restart"
            )

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            uri = f"file:{self.path.resolve()}?mode=ro"
            try:
                conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=60.0)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:
                # Read-only media: SQLite cannot create the WAL index beside the database.
                # Nothing writes to a run on such media, so it is read as immutable; but an
                # immutable read ignores the write-ahead log, so one holding samples that
                # were never merged (a killed run) must not be read that way.
                wal = self.path.with_name(self.path.name + "-wal")
                if wal.exists() and wal.stat().st_size > 0:
                    raise StoreError(
                        f"{self.path}: its latest samples are still in {wal.name} and the "
                        "run directory cannot be written to merge them; copy the run "
                        "directory somewhere writable and read the copy"
                    ) from None
                conn = sqlite3.connect(
                    f"{uri}&immutable=1", uri=True, check_same_thread=False, timeout=60.0
                )
            conn.isolation_level = None
        else:
            conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=60.0
            )
        conn.row_factory = sqlite3.Row
        if not self.read_only:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            columns = {r["name"] for r in conn.execute("PRAGMA table_info(samples)")}
            if "inputs" not in columns:  # stored before input hashes were recorded
                conn.execute("ALTER TABLE samples ADD COLUMN inputs TEXT")
            if "grading" not in columns:  # stored before inputs were drawn fresh
                conn.execute("ALTER TABLE samples ADD COLUMN grading TEXT")
            test_columns = {r["name"] for r in conn.execute("PRAGMA table_info(tests)")}
            if "detail" not in test_columns:
                conn.execute("ALTER TABLE tests ADD COLUMN detail TEXT")
        check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            conn.close()
            raise sqlite3.DatabaseError(f"database disk image is malformed ({check})")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"meta", "samples"} <= tables:
            conn.close()
            raise StoreError(
                f"{self.path}: a SQLite file but not an asmopt results database (no "
                "'samples' table); check the path"
            )
        return conn

    def fault(self, exc: sqlite3.Error) -> StoreError:
        """One line for a database error: which file, what happened, what to do."""
        text = str(exc)
        if "full" in text:
            fix = "free disk space, then rerun the same command to resume"
        elif "readonly" in text or "read-only" in text or "unable to open" in text:
            fix = (
                "the run directory is not writable; `asmopt results show` and `asmopt report "
                "-o ELSEWHERE` read it as it is, or copy it somewhere writable to resume"
            )
        elif "locked" in text or "busy" in text:
            fix = "another process holds the database; wait for it or use another --run-dir"
        else:
            fix = "the file is damaged; move it away, or rerun `asmopt eval` with --restart"
        return StoreError(f"{self.path}: {text}; {fix}")

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
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise self.fault(exc) from None

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str) -> Any:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        row = rows[0] if rows else None
        return None if row is None else json.loads(row["value"])

    def set_meta(self, key: str, value: Any) -> None:
        with self._transaction() as c:
            c.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, _json(value)),
            )

    def meta(self) -> dict[str, Any]:
        rows = self._rows("SELECT key, value FROM meta")
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
                    f"{run.get(key)!r}; use another --run-dir (or --restart to replace it)"
                )
        changed = environment_differences(self.get_meta("fingerprint") or {}, fingerprint)
        if changed:
            notes.append(
                "resuming on a different environment ("
                + ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in changed.items())
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
        """Register a program. A program of that id stored with other content (its source or
        tests were edited, or it was re-imported) is replaced, and its stored samples, which
        judged the old program, are deleted: the caller re-evaluates them."""
        h = program.content_hash()
        rows = self._rows(
            "SELECT content_hash, baseline_asm FROM programs WHERE program_id = ?", (program.id,)
        )
        row = rows[0] if rows else None
        changed = row is not None and row["content_hash"] != h
        if row is not None and not changed and (row["baseline_asm"] or baseline_asm is None):
            return
        with self._transaction() as c:
            if changed:
                for table in ("samples", "tests", "timings", "programs"):
                    c.execute(f"DELETE FROM {table} WHERE program_id = ?", (program.id,))
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
        rows = self._rows("SELECT baseline_asm FROM programs WHERE program_id = ?", (program_id,))
        row = rows[0] if rows else None
        return None if row is None else row["baseline_asm"]

    def candidate_asm(self, h: str) -> str | None:
        rows = self._rows("SELECT assembly FROM candidates WHERE hash = ?", (h,))
        row = rows[0] if rows else None
        return None if row is None else row["assembly"]

    # ------------------------------------------------------------------ samples
    def finished(self) -> set[tuple[str, int]]:
        """(program, sample) pairs that need no more work: judged, and not by an infra error."""
        rows = self._rows(f"SELECT program_id, sample FROM samples {_FINISHED}", _OURS)
        return {(r["program_id"], r["sample"]) for r in rows}

    def finished_inputs(self) -> dict[tuple[str, int], dict[str, str]]:
        """Finished samples with the input hashes they were judged under ({} when stored by an
        asmopt that did not record them: such samples count as stale)."""
        rows = self._rows(f"SELECT program_id, sample, inputs FROM samples {_FINISHED}", _OURS)
        return {(r["program_id"], r["sample"]): json.loads(r["inputs"] or "{}") for r in rows}

    def record(self, outcome: SampleOutcome, inputs: dict[str, str] | None = None) -> None:
        """Write one finished sample, its tests and its timings, atomically."""
        check = outcome.check
        key = (outcome.program_id, outcome.sample)
        cand_hash = content_hash(outcome.assembly) if outcome.assembly is not None else None
        with self._transaction() as c:
            if outcome.assembly is not None:
                c.execute(_INSERT_CANDIDATE, _candidate_row(outcome.assembly))
            c.execute("DELETE FROM tests WHERE program_id = ? AND sample = ?", key)
            c.execute("DELETE FROM timings WHERE program_id = ? AND sample = ?", key)
            c.execute(_INSERT_SAMPLE, _sample_row(outcome, cand_hash, inputs))
            c.executemany(_INSERT_TEST, [_test_row(key, t) for t in check.tests])
            timings = check.speedup.tests if check.speedup else []
            c.executemany(_INSERT_TIMING, [_timing_row(key, ts) for ts in timings])

    # ------------------------------------------------------------------ reading
    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            try:
                return [dict(r) for r in self._conn.execute(sql, args).fetchall()]
            except sqlite3.Error as exc:
                raise self.fault(exc) from None

    def sample_rows(self) -> list[dict[str, Any]]:
        """Every stored sample, its verdict read back as the `Verdict` it names."""
        return self._verdicts(self._rows("SELECT * FROM samples ORDER BY program_id, sample"))

    def test_rows(self) -> list[dict[str, Any]]:
        """Every stored test run, its verdict read back as the `Verdict` it names."""
        return self._verdicts(self._rows("SELECT * FROM tests ORDER BY program_id, sample, test"))

    def _verdicts(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`rows` with each verdict parsed: a value that names none fails here, naming the
        database, the row and the value, instead of reading as a verdict no code expects."""
        for r in rows:
            r["verdict"] = Verdict.parse(r["verdict"], f"{self.path}: {_row_name(r)}")
        return rows

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
            tests.setdefault((r["program_id"], r["sample"]), []).append(_test_from_row(r))
        timings: dict[tuple[str, int], list[TestSpeedup]] = {}
        for r in self.timing_rows():
            timings.setdefault((r["program_id"], r["sample"]), []).append(_timing_from_row(r))
        assemblies = {
            r["hash"]: r["assembly"] for r in self._rows("SELECT hash, assembly FROM candidates")
        }
        out = []
        for r in self.sample_rows():
            key = (r["program_id"], r["sample"])
            check = CheckResult(
                program_id=r["program_id"],
                verdict=r["verdict"],
                message=r["message"],
                tests=tests.get(key, []),
                build_seconds=r["build_seconds"] or 0.0,
                speedup=_speedup_from_row(r, timings.get(key, [])),
                inputs=Grading.from_dict(json.loads(r["grading"])) if r.get("grading") else None,
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


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _row_name(r: dict[str, Any]) -> str:
    """Which stored row `r` is, for an error about it: its sample, and test if it has one."""
    test = f", test {r['test']}" if "test" in r else ""
    return f"program {r['program_id']} sample {r['sample']}{test}"


def _test_from_row(r: dict[str, Any]) -> TestVerdict:
    return TestVerdict(
        test=r["test"],
        verdict=r["verdict"],
        message=r["message"],
        exit_code=r["exit_code"],
        signal=r["signal"],
        user_time_s=r["user_time_s"] or 0.0,
        sys_time_s=r["sys_time_s"] or 0.0,
        wall_time_s=r["wall_time_s"] or 0.0,
        peak_rss_kb=r["peak_rss_kb"] or 0,
        **_test_detail(r.get("detail")),
    )


def _timing_from_row(r: dict[str, Any]) -> TestSpeedup:
    return TestSpeedup(
        test=r["test"],
        mode=MeasureMode(r["mode"]),
        status=MeasureStatus(r["status"]),
        ratio=_or(r["ratio"], 1.0),
        low=_or(r["low"], 1.0),
        high=_or(r["high"], 1.0),
        n=r["n"] or 0,
        n_outliers=r["n_outliers"] or 0,
        reliable=bool(r["reliable"]),
        warnings=r["warnings"] or [],
        message=r["message"] or "",
        base_mean=r["base_mean"],
        cand_mean=r["cand_mean"],
        log_mean=r["log_mean"] or 0.0,
        log_se=_or(r["log_se"], 0.0),
        df=_or(r["df"], math.inf),
        raw=r["raw"] or {},
        context=r["context"] or {},
    )


def _speedup_from_row(r: dict[str, Any], per_test: list[TestSpeedup]) -> ProgramSpeedup | None:
    if r["measure_status"] is None:
        return None
    return ProgramSpeedup(
        mode=MeasureMode(r["measure_mode"]),
        status=MeasureStatus(r["measure_status"]),
        ratio=_or(r["speedup"], 1.0),
        low=_or(r["speedup_low"], 1.0),
        high=_or(r["speedup_high"], 1.0),
        reliable=bool(r["reliable"]),
        message=r["measure_message"] or "",
        tests=per_test,
    ).fill_means()


LOCK_NAME = ".eval.lock"


class RunLock:
    """An exclusive lock on a run directory while an evaluation writes to it.

    Two evaluations of one run directory would both do all the work and interleave their
    writes (last writer wins). The lock is an flock on RUN_DIR/.eval.lock, released by the
    kernel when the holder exits however it exits (no stale lock after a kill); the file
    records who holds it so the second evaluation can say so."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None

    def holder(self) -> str:
        """The holder as recorded in the lock file (best effort: it may be mid-write)."""
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            info = {}
        if not info:
            return "another process"
        return (
            f"pid {info.get('pid')} on {info.get('host')}, since {info.get('started')}: "
            f"{info.get('command', '?')}"
        )

    def acquire(self, *, wait: bool = False, on_wait: Any = None) -> RunLock:
        """Take the lock; without `wait`, a held lock is a StoreError naming its holder.
        With `wait`, `on_wait(holder)` is called once and the call blocks until it is free."""
        import fcntl
        import socket
        import sys

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(
                f"{self.path.parent}: cannot write to the run directory ({exc.strerror}); "
                "choose a writable --run-dir"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self.holder()
            if not wait:
                os.close(fd)
                raise StoreError(
                    f"{self.path.parent} is in use by another evaluation ({holder}); wait "
                    "for it to finish, rerun with --wait, or use another --run-dir"
                ) from None
            if on_wait is not None:
                on_wait(holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _now(),
            "command": " ".join(["asmopt", *sys.argv[1:]])[:300],
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
