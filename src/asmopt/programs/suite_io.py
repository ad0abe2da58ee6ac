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

Every file is read only if it is a regular file of at most `MAX_INPUT_FILE_BYTES`
(256 MiB), checked before it is opened, and JSON may nest at most `MAX_JSON_DEPTH` levels
(asmopt.safe_io); docs/suite_format.md states both limits.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from asmopt.programs.generators import GeneratorError, InputGenerator
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
from asmopt.programs.schema import (
    SUITE_FORMAT,
    SUITE_VERSION,
    CompareSpec,
    ProgramSpec,
    SuiteEntry,
    SuiteIndex,
    TestSpec,
    parse_model,
)
from asmopt.safe_io import (
    MAX_INPUT_FILE_BYTES,
    InputFileError,
    JsonNestingError,
    loads_json,
    read_regular_file,
)


class SuiteFormatError(ProgramError):
    """The suite on disk does not follow the documented format; the message names the file."""


def _read_suite_file(path: Path, what: str) -> bytes:
    """A file of the suite, read only if it is a regular file within the size cap (a FIFO
    would block the loader forever, a device or a huge file would fill memory)."""
    try:
        return read_regular_file(path, what, MAX_INPUT_FILE_BYTES)
    except InputFileError as exc:
        raise SuiteFormatError(str(exc)) from None
    except FileNotFoundError:
        raise SuiteFormatError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise SuiteFormatError(f"{path}: cannot read {what} ({exc.strerror})") from None


def _read_json(path: Path) -> Any:
    raw = _read_suite_file(path, "JSON file")
    try:
        return loads_json(raw)
    except UnicodeDecodeError:
        raise SuiteFormatError(f"{path}: not UTF-8 text") from None
    except JsonNestingError as exc:
        raise SuiteFormatError(
            f"{path}: JSON {exc.msg} (line {exc.lineno}); the suite format needs far fewer"
        ) from None
    except json.JSONDecodeError as exc:
        raise SuiteFormatError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # an integer past Python's 4,300 digits: no field holds one
        raise SuiteFormatError(f"{path}: {_json_number_problem(exc)}") from None


def _json_number_problem(exc: ValueError) -> str:
    """What a ValueError from `json.loads` (not a JSONDecodeError) says, for a person: Python
    refuses to read an integer of more than 4,300 digits, and its message names a Python
    setting no suite author can change."""
    if "digits" in str(exc):
        return (
            "JSON holds an integer of more than 4,300 digits; no field of the suite format "
            "holds a number that large"
        )
    return f"invalid JSON: {exc}"


def _read_file_bytes(path: Path, what: str, max_bytes: int | None = None) -> bytes:
    """A file's bytes, or an error that names it and says what is wrong. Without
    `max_bytes` the file is one of a suite's (`_read_suite_file`: regular files only). With
    it, any file the command line names (`/dev/stdin` included) is read to at most that
    much plus one byte, so a device or a huge file (`/dev/zero`) is refused before it
    fills memory. NUL bytes mean a binary file, never a text input."""
    try:
        if max_bytes is None:
            raw = _read_suite_file(path, what)
        else:
            with open(path, "rb") as fh:
                raw = fh.read(max_bytes + 1)
            if len(raw) > max_bytes:
                raise SuiteFormatError(
                    f"{path}: {what} is larger than {max_bytes >> 20} MiB; refusing to read it"
                )
    except FileNotFoundError:
        raise SuiteFormatError(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise SuiteFormatError(f"{path}: {what} is a directory") from None
    except OSError as exc:
        raise SuiteFormatError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if b"\x00" in raw:
        raise SuiteFormatError(f"{path}: {what} is a binary file (contains NUL bytes)")
    return raw


def read_text_file(path: Path, what: str, max_bytes: int | None = None) -> str:
    """Read a UTF-8 text file or raise an error that names it and says what is wrong."""
    raw = _read_file_bytes(path, what, max_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SuiteFormatError(
            f"{path}: {what} is not UTF-8 (invalid byte at offset {exc.start})"
        ) from None


def read_source_file(path: Path, what: str) -> str:
    """A C source or header, byte for byte: gcc compiles the odd Latin-1 byte in a comment,
    so non-UTF-8 bytes are kept (see `decode_source`) instead of refusing the program."""
    return decode_source(_read_file_bytes(path, what))


def _inside(base: Path, rel: str, what: str, real_base: str | None = None) -> Path:
    """`base / rel`, refused when it leads outside `base` (links included). `real_base`
    is `base` already resolved: a program with thousands of tests resolves it once."""
    if not isinstance(rel, str) or not rel:
        raise SuiteFormatError(f"{base}: {what} must be a non-empty relative path")
    try:
        path = (base / rel).resolve()
    except (RuntimeError, OSError) as exc:  # a link loop (RuntimeError before Python 3.13)
        raise SuiteFormatError(f"{base}: {what} {rel!r} cannot be resolved ({exc})") from None
    if not str(path).startswith((real_base or str(base.resolve())) + os.sep):
        raise SuiteFormatError(f"{base}: {what} {rel!r} points outside the program directory")
    return path


def _program_spec(directory: Path) -> ProgramSpec:
    spec_path = directory / "program.json"
    if not spec_path.exists():
        return ProgramSpec()
    data = _read_json(spec_path)
    if not isinstance(data, dict):
        raise SuiteFormatError(f"{spec_path}: must be a JSON object")
    try:
        return parse_model(ProgramSpec, data, spec_path)
    except ValueError as exc:
        raise SuiteFormatError(str(exc)) from None


def _comparison(spec: CompareSpec | None, default: Comparison) -> Comparison:
    if spec is None:
        return default
    return Comparison(mode=spec.mode, abs_tol=spec.abs_tol, rel_tol=spec.rel_tol)


def _generator(data: dict[str, Any] | None, directory: Path) -> InputGenerator | None:
    if data is None:
        return None
    try:
        return InputGenerator.from_dict(data, "inputs")
    except GeneratorError as exc:
        raise SuiteFormatError(f"{directory / 'program.json'}: {exc}") from None


def load_program_dir(directory: Path, program_id: str | None = None) -> Program:
    """Load one program directory (see the module docstring for the layout)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SuiteFormatError(f"{directory}: program directory not found")
    pid = check_program_id(program_id or directory.name)
    spec = _program_spec(directory)
    source_path = _inside(directory, spec.source, "source")
    source = read_source_file(source_path, "C source")
    header_names = spec.headers
    if header_names is None:
        header_names = sorted(p.name for p in directory.glob("*.h"))
    headers = tuple(
        (name, read_source_file(_inside(directory, name, "header"), "header"))
        for name in header_names
    )
    try:
        default_compare = _comparison(spec.compare, Comparison())
        tests = _load_tests(directory, spec, default_compare)
        if not tests:
            raise SuiteFormatError(
                f"{directory}: program {pid!r} has no tests (add tests/NAME.in with "
                "tests/NAME.out, or list them in program.json); without tests every "
                "candidate would pass"
            )
        program = Program(
            id=pid,
            source=source,
            tests=tests,
            headers=headers,
            cflags=tuple(spec.cflags),
            ldflags=tuple(spec.ldflags),
            metadata=tuple(sorted(spec.metadata.items())),
            inputs=_generator(spec.inputs, directory),
            examples=tuple(spec.examples),
        )
        unknown = program.unknown_test_names()
        if unknown:
            raise SuiteFormatError(
                f"{directory / 'program.json'}: 'examples' or 'inputs.tests' name tests the "
                f"program does not have: {', '.join(unknown)}"
            )
        return program
    except SuiteFormatError:
        raise
    except ProgramError as exc:
        raise SuiteFormatError(f"{directory}: {exc}") from None


def _discover_tests(tests_dir: Path) -> list[TestSpec]:
    """Every tests/NAME.in with its tests/NAME.out, in the order of the input files' names.
    The folder is listed once and pairs are matched by name, so the work grows with the
    number of tests instead of costing file checks per test and per pairing."""
    names = set(os.listdir(tests_dir)) if tests_dir.is_dir() else set()
    ins = sorted(n for n in names if n.endswith(".in") and len(n) > 3)
    missing = [n for n in ins if f"{n[:-3]}.out" not in names]
    if missing:
        raise SuiteFormatError(
            f"{tests_dir / missing[0]}: test input has no expected output "
            f"(missing {missing[0][:-3]}.out)"
        )
    orphans = sorted(
        n for n in names if n.endswith(".out") and len(n) > 4 and f"{n[:-4]}.in" not in names
    )
    if orphans:
        raise SuiteFormatError(
            f"{tests_dir}: expected outputs without inputs: {', '.join(orphans[:5])}"
        )
    return [TestSpec(name=n[:-3], stdin=f"tests/{n}", stdout=f"tests/{n[:-3]}.out") for n in ins]


def _load_tests(
    directory: Path, spec: ProgramSpec, default_compare: Comparison
) -> tuple[TestCase, ...]:
    entries = spec.tests if spec.tests is not None else _discover_tests(directory / "tests")
    real_base = str(directory.resolve())
    tests = []
    for i, entry in enumerate(entries):
        name = entry.name or f"t{i}"
        stdin = (
            _read_suite_file(_inside(directory, entry.stdin, "stdin", real_base), "test input")
            if entry.stdin
            else b""
        )
        stdout = _read_suite_file(
            _inside(directory, entry.stdout, "stdout", real_base), "expected output"
        )
        tests.append(
            TestCase(
                name=name,
                stdin=stdin,
                expected_stdout=stdout,
                argv=tuple(entry.argv),
                expected_exit=entry.exit_code,
                compare=_comparison(entry.compare, default_compare),
            )
        )
    return tuple(tests)


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Load a suite directory; every error names the file and the problem."""
    root = Path(path)
    if not root.exists():
        raise SuiteFormatError(f"{root}: suite not found")
    index_path = root / "suite.json"
    raw_index = _read_json(index_path)
    if not isinstance(raw_index, dict):
        raise SuiteFormatError(f"{index_path}: must be a JSON object")
    if raw_index.get("format") != SUITE_FORMAT:
        raise SuiteFormatError(
            f"{index_path}: 'format' is {raw_index.get('format')!r}, expected {SUITE_FORMAT!r}"
        )
    version = raw_index.get("version")
    if isinstance(version, bool):  # True == 1 in Python; in the file it is not a version
        raise SuiteFormatError(
            f"{index_path}: field 'version' must be an integer, got {json.dumps(version)}"
        )
    if version != SUITE_VERSION:
        raise SuiteFormatError(
            f"{index_path}: schema version {version!r} is not supported "
            f"(this asmopt reads version {SUITE_VERSION})"
        )
    try:
        index = parse_model(SuiteIndex, raw_index, index_path)
    except ValueError as exc:
        raise SuiteFormatError(str(exc)) from None
    programs: dict[str, Program] = {}
    splits: dict[str, str] = {}
    for i, entry in enumerate(index.programs):
        pid = entry.id
        try:
            check_program_id(pid)
        except ProgramError as exc:
            raise SuiteFormatError(f"{index_path}: programs[{i}]: {exc}") from None
        if pid in programs:
            raise SuiteFormatError(f"{index_path}: program {pid!r} listed twice")
        programs[pid] = load_program_dir(root / "programs" / pid, pid)
        splits[pid] = entry.split
    try:
        return Suite(
            name=index.name if index.name is not None else root.name,
            programs=programs,
            splits=splits,
            description=index.description,
        )
    except ProgramError as exc:
        raise SuiteFormatError(f"{index_path}: {exc}") from None


def _atomic_write(path: Path, data: bytes) -> None:
    """Write beside the target and rename; the temporary file is removed on any failure
    (a full disk included), so a failed write leaves the old file and nothing else."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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
            tests.append(
                TestSpec(
                    name=t.name,
                    stdin=f"tests/{t.name}.in",
                    stdout=f"tests/{t.name}.out",
                    argv=list(t.argv),
                    exit_code=t.expected_exit,
                    compare=None
                    if t.compare == Comparison()
                    else CompareSpec(**t.compare.to_dict()),
                )
            )
        spec = ProgramSpec(
            source="main.c",
            headers=[h for h, _ in program.headers],
            cflags=list(program.cflags),
            ldflags=list(program.ldflags),
            metadata=program.meta,
            tests=tests or None,
            inputs=program.inputs.to_dict() if program.inputs is not None else None,
            examples=list(program.examples),
        )
        # Defaults are left out (they read back the same), which keeps the file short.
        text = json.dumps(spec.model_dump(exclude_defaults=True), indent=2)
        _atomic_write(pdir / "program.json", (text + "\n").encode())
    index = SuiteIndex(
        format=SUITE_FORMAT,
        version=SUITE_VERSION,
        name=suite.name,
        description=suite.description,
        programs=[SuiteEntry(id=p.id, split=suite.splits[p.id]) for p in suite.select()],  # type: ignore[arg-type]
    )
    _atomic_write(root / "suite.json", (json.dumps(index.model_dump(), indent=2) + "\n").encode())
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
