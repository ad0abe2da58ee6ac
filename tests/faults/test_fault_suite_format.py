"""Faults 2, 3, 6: the suite format is validated with types at load time (docs/faults.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from faultkit import error_line, run_asmopt, write_program, write_suite

from asmopt.programs.suite_io import SuiteFormatError, load_suite


def test_fault2_program_without_tests_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_program(root, "none", tests={})
    write_suite(root, ["none"])
    line = error_line(run_asmopt("suite", "list", "--suite", str(root)))
    assert "no tests" in line and "programs/none" in line


def test_fault2_explicit_empty_test_list_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "s"
    write_program(root, "empty", spec={"tests": []})
    write_suite(root, ["empty"])
    with pytest.raises(SuiteFormatError, match=r"program.json: field 'tests'"):
        load_suite(root)


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"ldflags": "-lm"}, "ldflags"),
        (
            {
                "tests": [
                    {"name": "t1", "stdin": "tests/t1.in", "stdout": "tests/t1.out", "argv": "abc"}
                ]
            },
            "tests[0].argv",
        ),
    ],
)
def test_fault3_strings_are_never_split_into_characters(
    tmp_path: Path, spec: dict[str, object], field: str
) -> None:
    root = tmp_path / "s"
    write_program(root, "p", spec=spec)
    write_suite(root, ["p"])
    line = error_line(run_asmopt("suite", "list", "--suite", str(root)))
    assert f"field '{field}' must be a list" in line
    assert "programs/p/program.json" in line


@pytest.mark.parametrize(
    "spec, needle",
    [
        ({"cflags": 5}, "field 'cflags' must be a list, got 5"),
        ({"metadata": [1, 2, 3]}, "field 'metadata' must be an object"),
        (
            {"tests": [{"name": "t1", "stdout": "tests/t1.out", "exit_code": None}]},
            "field 'tests[0].exit_code' must be an integer, got None",
        ),
        (
            {"tests": [{"name": 5, "stdout": "tests/t1.out"}]},
            "field 'tests[0].name' must be a string, got 5",
        ),
        ({"headers": "util.h"}, "field 'headers' must be a list"),
        (
            {"compare": {"mode": "numeric", "abs_tol": "x"}},
            "field 'compare.abs_tol' must be a number",
        ),
    ],
)
@pytest.mark.parametrize("command", [("suite", "list"), ("data", "export")])
def test_fault6_wrong_types_name_file_field_and_type(
    tmp_path: Path, spec: dict[str, object], needle: str, command: tuple[str, ...]
) -> None:
    root = tmp_path / "s"
    write_program(root, "typed", spec=spec)
    write_suite(root, ["typed"])
    extra = ("-o", str(tmp_path / "out.jsonl"), "--format", "jsonl") if command[0] == "data" else ()
    line = error_line(run_asmopt(*command, "--suite", str(root), *extra))
    assert needle in line, line
    assert "programs/typed/program.json" in line


def test_fault6_suite_index_types(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "s", ["a"])
    (root / "suite.json").write_text(
        '{"format": "asmopt-suite", "version": 1, "programs": [{"id": "a", "split": 3}]}'
    )
    with pytest.raises(SuiteFormatError, match=r"suite.json: field 'programs\[0\].split'"):
        load_suite(root)


def test_saved_suite_reads_back_through_the_same_models(tmp_path: Path) -> None:
    from asmopt.programs.suite_io import save_suite

    root = tmp_path / "s"
    write_program(root, "p", spec={"ldflags": ["-lm", "-lpthread"], "metadata": {"k": None}})
    write_suite(root, ["p"])
    suite = load_suite(root)
    again = load_suite(save_suite(suite, tmp_path / "copy"))
    assert again.get("p") == suite.get("p")


def test_a_test_file_that_is_a_link_loop_is_one_line(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", ["a"])
    stdin = suite / "programs" / "a" / "tests" / "t1.in"
    stdin.unlink()
    stdin.symlink_to(stdin.name)  # a link to itself
    for args in (("suite", "list", "--suite", str(suite)),
                 ("eval", "--suite", str(suite), "--measure", "none",
                  "--run-dir", str(tmp_path / "run"))):
        line = error_line(run_asmopt(*args))
        assert "t1.in" in line and "cannot be resolved" in line, line


@pytest.mark.slow  # seconds of real runs; make test-slow
@pytest.mark.ml
def test_study_diagnose_of_a_model_that_is_no_plt_is_one_line(tiny_model_dir: Path) -> None:
    line = error_line(run_asmopt("study", "diagnose", str(tiny_model_dir)))
    assert "model_type 'llama'" in line and "asmopt_plt" in line, line
