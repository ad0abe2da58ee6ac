"""The on-disk suite format (version 1), readable and writable by hand.

```
SUITE/
  suite.json                     {"format": "asmopt-suite", "version": 1, "name": ...,
                                  "description": ..., "programs": [{"id": ..., "split": ...}]}
  programs/ID/program.json       optional; see below
  programs/ID/main.c             the C source (name configurable with "source")
  programs/ID/*.h                headers listed in "headers" (default: every *.h beside it)
  programs/ID/tests/NAME.in      stdin of test NAME
  programs/ID/tests/NAME.out     expected stdout of test NAME
```

`program.json` (every key optional):
`{"source": "main.c", "headers": ["util.h"], "cflags": [], "ldflags": ["-lm"],
  "metadata": {...}, "compare": {"mode": "exact"},
  "tests": [{"name": "t1", "stdin": "tests/t1.in", "stdout": "tests/t1.out",
             "argv": [], "exit_code": 0, "compare": {...}}]}`.
Without "tests", every `tests/NAME.in` with a matching `tests/NAME.out` is a test (sorted by
name) using the program-level "compare". Paths never leave the program directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from asmopt.programs.model import (
    Comparison,
    Program,
    ProgramError,
    Suite,
    TestCase,
    check_program_id,
    decode_source,
    encode_source,
)

SUITE_FORMAT = "asmopt-suite"
SUITE_VERSION = 1
_PROGRAM_KEYS = {"source", "headers", "cflags", "ldflags", "metadata", "compare", "tests"}
_TEST_KEYS = {"name", "stdin", "stdout", "argv", "exit_code", "compare"}


class SuiteFormatError(ProgramError):
    """The suite on disk does not follow the documented format; the message names the file."""


def _read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SuiteFormatError(f"{path}: file not found") from None
    except OSError as exc:
        raise SuiteFormatError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SuiteFormatError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise SuiteFormatError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None


def read_text_file(path: Path, what: str) -> str:
    """Read a UTF-8 text file or raise an error that names it and says what is wrong."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SuiteFormatError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise SuiteFormatError(f"{path}: {what} is a directory") from None
    except OSError as exc:
        raise SuiteFormatError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if b"\x00" in raw:
        raise SuiteFormatError(f"{path}: {what} is a binary file (contains NUL bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteFormatError(
            f"{path}: {what} is not UTF-8 (invalid byte at offset {exc.start})"
        ) from None


def read_source_file(path: Path, what: str) -> str:
    """A C source or header, byte for byte: gcc compiles the odd Latin-1 byte in a comment,
    so non-UTF-8 bytes are kept (see `decode_source`) instead of refusing the program."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SuiteFormatError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise SuiteFormatError(f"{path}: {what} is a directory") from None
    except OSError as exc:
        raise SuiteFormatError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if b"\x00" in raw:
        raise SuiteFormatError(f"{path}: {what} is a binary file (contains NUL bytes)")
    return decode_source(raw)


def _inside(base: Path, rel: str, what: str) -> Path:
    if not isinstance(rel, str) or not rel:
        raise SuiteFormatError(f"{base}: {what} must be a non-empty relative path")
    path = (base / rel).resolve()
    if not str(path).startswith(str(base.resolve()) + os.sep):
        raise SuiteFormatError(f"{base}: {what} {rel!r} points outside the program directory")
    return path


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise SuiteFormatError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise SuiteFormatError(f"{path}: cannot read {what} ({exc.strerror})") from None


def load_program_dir(directory: Path, program_id: str | None = None) -> Program:
    """Load one program directory (see the module docstring for the layout)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SuiteFormatError(f"{directory}: program directory not found")
    pid = check_program_id(program_id or directory.name)
    spec_path = directory / "program.json"
    spec: dict[str, Any] = {}
    if spec_path.exists():
        spec = _read_json(spec_path)
        if not isinstance(spec, dict):
            raise SuiteFormatError(f"{spec_path}: must be a JSON object")
        unknown = set(spec) - _PROGRAM_KEYS
        if unknown:
            raise SuiteFormatError(f"{spec_path}: unknown keys {', '.join(sorted(unknown))}")
    source_path = _inside(directory, spec.get("source", "main.c"), "source")
    source = read_source_file(source_path, "C source")
    header_names = spec.get("headers")
    if header_names is None:
        header_names = sorted(p.name for p in directory.glob("*.h"))
    headers = tuple(
        (name, read_source_file(_inside(directory, name, "header"), "header"))
        for name in header_names
    )
    try:
        default_compare = Comparison.from_dict(spec.get("compare"))
        tests = _load_tests(directory, spec, default_compare)
        return Program(
            id=pid,
            source=source,
            tests=tests,
            headers=headers,
            cflags=tuple(spec.get("cflags", ())),
            ldflags=tuple(spec.get("ldflags", ("-lm",))),
            metadata=tuple(sorted(dict(spec.get("metadata", {})).items())),
        )
    except SuiteFormatError:
        raise
    except ProgramError as exc:
        raise SuiteFormatError(f"{directory}: {exc}") from None


def _load_tests(
    directory: Path, spec: dict[str, Any], default_compare: Comparison
) -> tuple[TestCase, ...]:
    entries = spec.get("tests")
    if entries is None:
        tests_dir = directory / "tests"
        ins = sorted(tests_dir.glob("*.in")) if tests_dir.is_dir() else []
        entries = []
        for stdin_path in ins:
            out_path = stdin_path.with_suffix(".out")
            if not out_path.exists():
                raise SuiteFormatError(
                    f"{stdin_path}: test input has no expected output (missing {out_path.name})"
                )
            entries.append(
                {
                    "name": stdin_path.stem,
                    "stdin": f"tests/{stdin_path.name}",
                    "stdout": f"tests/{out_path.name}",
                }
            )
        orphans = sorted(
            p.name
            for p in (tests_dir.glob("*.out") if tests_dir.is_dir() else [])
            if not p.with_suffix(".in").exists()
        )
        if orphans:
            raise SuiteFormatError(
                f"{tests_dir}: expected outputs without inputs: {', '.join(orphans[:5])}"
            )
    if not isinstance(entries, list):
        raise SuiteFormatError(f"{directory}/program.json: 'tests' must be a list")
    tests = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise SuiteFormatError(f"{directory}: test #{i} must be an object")
        unknown = set(entry) - _TEST_KEYS
        if unknown:
            raise SuiteFormatError(f"{directory}: test #{i} has unknown keys {sorted(unknown)}")
        name = entry.get("name") or f"t{i}"
        if "stdout" not in entry:
            raise SuiteFormatError(f"{directory}: test {name!r} has no expected output ('stdout')")
        stdin = (
            _read_bytes(_inside(directory, entry["stdin"], "stdin"), "test input")
            if entry.get("stdin")
            else b""
        )
        stdout = _read_bytes(_inside(directory, entry["stdout"], "stdout"), "expected output")
        compare = Comparison.from_dict(entry["compare"]) if "compare" in entry else default_compare
        tests.append(
            TestCase(
                name=name,
                stdin=stdin,
                expected_stdout=stdout,
                argv=tuple(entry.get("argv", ())),
                expected_exit=int(entry.get("exit_code", 0)),
                compare=compare,
            )
        )
    return tuple(tests)


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Load a suite directory; every error names the file and the problem."""
    root = Path(path)
    if not root.exists():
        raise SuiteFormatError(f"{root}: suite not found")
    index_path = root / "suite.json"
    index = _read_json(index_path)
    if not isinstance(index, dict):
        raise SuiteFormatError(f"{index_path}: must be a JSON object")
    if index.get("format") != SUITE_FORMAT:
        raise SuiteFormatError(
            f"{index_path}: 'format' is {index.get('format')!r}, expected {SUITE_FORMAT!r}"
        )
    version = index.get("version")
    if version != SUITE_VERSION:
        raise SuiteFormatError(
            f"{index_path}: schema version {version!r} is not supported "
            f"(this asmopt reads version {SUITE_VERSION})"
        )
    entries = index.get("programs")
    if not isinstance(entries, list):
        raise SuiteFormatError(f"{index_path}: 'programs' must be a list")
    programs: dict[str, Program] = {}
    splits: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = {"id": entry}
        if not isinstance(entry, dict) or "id" not in entry:
            raise SuiteFormatError(f"{index_path}: programs[{i}] needs an 'id'")
        pid = entry["id"]
        try:
            check_program_id(pid)
        except ProgramError as exc:
            raise SuiteFormatError(f"{index_path}: programs[{i}]: {exc}") from None
        if pid in programs:
            raise SuiteFormatError(f"{index_path}: program {pid!r} listed twice")
        programs[pid] = load_program_dir(root / "programs" / pid, pid)
        splits[pid] = entry.get("split", "test")
    try:
        return Suite(
            name=str(index.get("name", root.name)),
            programs=programs,
            splits=splits,
            description=str(index.get("description", "")),
        )
    except ProgramError as exc:
        raise SuiteFormatError(f"{index_path}: {exc}") from None


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def save_suite(suite: Suite, path: str | os.PathLike[str]) -> Path:
    """Write a suite in format version 1 (explicit program.json with every test listed)."""
    root = Path(path)
    (root / "programs").mkdir(parents=True, exist_ok=True)
    for program in suite.select():
        pdir = root / "programs" / program.id
        (pdir / "tests").mkdir(parents=True, exist_ok=True)
        _atomic_write(pdir / "main.c", encode_source(program.source))
        for hname, htext in program.headers:
            _atomic_write(pdir / hname, encode_source(htext))
        tests = []
        for t in program.tests:
            _atomic_write(pdir / "tests" / f"{t.name}.in", t.stdin)
            _atomic_write(pdir / "tests" / f"{t.name}.out", t.expected_stdout)
            entry: dict[str, Any] = {
                "name": t.name,
                "stdin": f"tests/{t.name}.in",
                "stdout": f"tests/{t.name}.out",
            }
            if t.argv:
                entry["argv"] = list(t.argv)
            if t.expected_exit:
                entry["exit_code"] = t.expected_exit
            if t.compare != Comparison():
                entry["compare"] = t.compare.to_dict()
            tests.append(entry)
        spec = {
            "source": "main.c",
            "headers": [h for h, _ in program.headers],
            "cflags": list(program.cflags),
            "ldflags": list(program.ldflags),
            "metadata": program.meta,
            "tests": tests,
        }
        _atomic_write(pdir / "program.json", (json.dumps(spec, indent=2) + "\n").encode())
    index = {
        "format": SUITE_FORMAT,
        "version": SUITE_VERSION,
        "name": suite.name,
        "description": suite.description,
        "programs": [{"id": p.id, "split": suite.splits[p.id]} for p in suite.select()],
    }
    _atomic_write(root / "suite.json", (json.dumps(index, indent=2) + "\n").encode())
    return root


def set_program_metadata(
    root: str | os.PathLike[str], program_id: str, key: str, value: Any
) -> Path:
    """Set one `metadata` key in programs/ID/program.json, keeping everything else as written.

    Checks and tools record findings about a program (e.g. its test-adequacy mark) this way
    without rewriting a hand-written suite through `save_suite`, which would replace its
    layout (implicit tests, header lists) with the explicit form. A missing program.json is
    created holding only the metadata, which leaves the program's meaning unchanged."""
    pdir = Path(root) / "programs" / check_program_id(program_id)
    if not pdir.is_dir():
        raise SuiteFormatError(f"{pdir}: program directory not found")
    spec_path = pdir / "program.json"
    spec: dict[str, Any] = {}
    if spec_path.exists():
        spec = _read_json(spec_path)
        if not isinstance(spec, dict):
            raise SuiteFormatError(f"{spec_path}: must be a JSON object")
    meta = spec.get("metadata", {})
    if not isinstance(meta, dict):
        raise SuiteFormatError(f"{spec_path}: 'metadata' must be an object")
    spec["metadata"] = {**meta, key: value}
    _atomic_write(spec_path, (json.dumps(spec, indent=2) + "\n").encode())
    return spec_path


def builtin_suite_path() -> Path:
    return Path(__file__).resolve().parent / "builtin"


def load_builtin_suite() -> Suite:
    return load_suite(builtin_suite_path())
