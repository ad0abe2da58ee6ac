"""Data model and the on-disk suite format, including every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from asmopt.programs import (
    Comparison,
    Program,
    ProgramError,
    Suite,
    SuiteFormatError,
    TestCase,
    load_builtin_suite,
    load_suite,
    save_suite,
)


def _write_suite(root: Path, programs: dict[str, dict[str, bytes | str]], version: int = 1) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    index = {
        "format": "asmopt-suite",
        "version": version,
        "name": "t",
        "programs": [{"id": pid, "split": "train"} for pid in programs],
    }
    (root / "suite.json").write_text(json.dumps(index))
    for pid, files in programs.items():
        pdir = root / "programs" / pid
        for rel, data in files.items():
            path = pdir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


GOOD = {"main.c": "int main(void){return 0;}\n", "tests/a.in": "1\n", "tests/a.out": "2\n"}


def test_round_trip(tmp_path: Path) -> None:
    prog = Program(
        id="p1",
        source="int main(void){return 0;}\n",
        tests=(
            TestCase("t1", b"1 2\n", b"3\n"),
            TestCase(
                "t2",
                b"",
                b"1.5\n",
                argv=("-x",),
                expected_exit=3,
                compare=Comparison("numeric", 1e-6, 1e-3),
            ),
        ),
        headers=(("util.h", "#define X 1\n"),),
        cflags=("-DN=3",),
        metadata=(("category", "demo"),),
    )
    suite = Suite("s", {"p1": prog}, {"p1": "validation"}, "desc")
    save_suite(suite, tmp_path / "s")
    back = load_suite(tmp_path / "s")
    assert back.splits == {"p1": "validation"}
    got = back.get("p1")
    assert got == prog
    assert got.content_hash() == prog.content_hash()


def test_hand_written_layout_discovers_tests(tmp_path: Path) -> None:
    root = _write_suite(
        tmp_path / "s",
        {"p": {**GOOD, "tests/b.in": "", "tests/b.out": "x\n", "util.h": "#pragma once\n"}},
    )
    prog = load_suite(root).get("p")
    assert [t.name for t in prog.tests] == ["a", "b"]
    assert prog.header_files == {"util.h": "#pragma once\n"}
    assert prog.ldflags == ("-lm",)


@pytest.mark.parametrize(
    ("files", "needle"),
    [
        # non-UTF-8 bytes are kept (see the round-trip test); NUL bytes are refused
        ({"main.c": b"int\x00main", "tests/a.in": "", "tests/a.out": ""}, "binary"),
        ({"main.c": b"\x7fELF\x00\x00", "tests/a.in": "", "tests/a.out": ""}, "binary file"),
        ({"main.c": "int main(){}", "tests/a.in": "1"}, "no expected output"),
        ({"main.c": "int main(){}", "tests/a.out": "1"}, "without inputs"),
        ({"tests/a.in": "", "tests/a.out": ""}, "C source not found"),
        ({"main.c": "   \n", "tests/a.in": "", "tests/a.out": ""}, "C source is empty"),
        ({**GOOD, "program.json": "{not json"}, "invalid JSON"),
        ({**GOOD, "program.json": '{"sauce": "x.c"}'}, "unknown keys"),
        ({**GOOD, "program.json": '{"source": "../../../etc/passwd"}'}, "outside the program"),
        (
            {**GOOD, "program.json": '{"tests": [{"name": "a", "stdin": "tests/a.in"}]}'},
            "no expected output",
        ),
        ({**GOOD, "program.json": '{"compare": {"mode": "fuzzy"}}'}, "unknown comparison mode"),
        (
            {**GOOD, "program.json": '{"tests": [{"name": "a", "stdout": "tests/zz.out"}]}'},
            "expected output not found",
        ),
    ],
)
def test_bad_program_is_named(tmp_path: Path, files: dict[str, bytes | str], needle: str) -> None:
    root = _write_suite(tmp_path / "s", {"bad": files})
    with pytest.raises(SuiteFormatError) as err:
        load_suite(root)
    assert needle in str(err.value)
    assert "bad" in str(err.value)


def test_wrong_schema_version(tmp_path: Path) -> None:
    root = _write_suite(tmp_path / "s", {"p": GOOD}, version=7)
    with pytest.raises(SuiteFormatError, match="schema version 7 is not supported"):
        load_suite(root)


def test_missing_suite_and_missing_program(tmp_path: Path) -> None:
    with pytest.raises(SuiteFormatError, match="not found"):
        load_suite(tmp_path / "nope")
    root = _write_suite(tmp_path / "s", {"p": GOOD})
    suite = load_suite(root)
    with pytest.raises(ProgramError, match="no program 'q'"):
        suite.get("q")


def test_invalid_ids_and_tests() -> None:
    with pytest.raises(ProgramError, match="invalid program id"):
        Program(id="../x", source="int main(){}", tests=())
    with pytest.raises(ProgramError, match="exit code"):
        TestCase("t", b"", b"", expected_exit=300)
    with pytest.raises(ProgramError, match="duplicate test names"):
        Program(
            id="x", source="int main(){}", tests=(TestCase("t", b"", b""), TestCase("t", b"", b""))
        )


def test_builtin_suite_shape() -> None:
    suite = load_builtin_suite()
    assert len(suite) >= 40
    for program in suite:
        assert len(program.tests) >= 5, program.id
        assert program.meta.get("category"), program.id
    splits = set(suite.splits.values())
    assert splits == {"train", "validation", "test"}
    numeric = [p for p in suite if any(t.compare.mode == "numeric" for t in p.tests)]
    assert len(numeric) >= 4


def test_non_utf8_source_round_trips_byte_for_byte(tmp_path) -> None:
    """A Latin-1 byte in a comment is kept through save and load (gcc compiles it)."""
    from asmopt.programs.model import Program, Suite, TestCase, decode_source, encode_source
    from asmopt.programs.suite_io import load_suite, save_suite

    raw = b"/* caf\xe9, na\xefve */\nint main(void){return 0;}\n"
    program = Program(id="latin", source=decode_source(raw), tests=(TestCase("t", b"", b""),))
    assert encode_source(program.source) == raw
    save_suite(Suite("s", {"latin": program}, {}), tmp_path / "s")
    assert (tmp_path / "s/programs/latin/main.c").read_bytes() == raw
    loaded = load_suite(tmp_path / "s").programs["latin"]
    assert encode_source(loaded.source) == raw and loaded.content_hash() == program.content_hash()
