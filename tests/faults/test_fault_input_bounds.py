"""Faults 18-22: sizes and shapes of what a suite, an answers file or an imported row may be
(docs/faults.md): regular files within a cap, JSON within a nesting bound, a loader that
grows with the number of tests, strict versions, no NUL in argv or sources."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from faultkit import error_line, run_asmopt, write_program, write_suite

from asmopt.data.supercoder import import_supercoder
from asmopt.policies.answers import read_answers
from asmopt.policies.llm import PolicyError
from asmopt.programs.model import Program, ProgramError, TestCase
from asmopt.programs.suite_io import load_suite
from asmopt.safe_io import MAX_INPUT_FILE_BYTES, MAX_JSON_DEPTH

# A command blocked on a FIFO with no writer would run into this.
TIMEOUT = 60
DEEP = 100_000  # far past Python's recursion limit


def _echo_suite(root: Path) -> Path:
    return write_suite(root, ["p"])


def test_fault18_a_fifo_test_input_is_refused_not_opened(tmp_path: Path) -> None:
    root = _echo_suite(tmp_path / "s")
    fifo = root / "programs" / "p" / "tests" / "t1.in"
    fifo.unlink()
    os.mkfifo(fifo)
    line = error_line(run_asmopt("suite", "list", "--suite", str(root), timeout=TIMEOUT))
    assert str(fifo) in line and "FIFO" in line and "not a regular file" in line


def test_fault18_a_test_file_over_the_cap_is_refused_before_reading(tmp_path: Path) -> None:
    root = _echo_suite(tmp_path / "s")
    big = root / "programs" / "p" / "tests" / "t1.out"
    with open(big, "wb") as fh:  # sparse: the size is there, the disk blocks are not
        fh.truncate(MAX_INPUT_FILE_BYTES + 1)
    line = error_line(run_asmopt("suite", "list", "--suite", str(root), timeout=TIMEOUT))
    assert str(big) in line and "expected output" in line
    assert str(MAX_INPUT_FILE_BYTES + 1) in line and "256.0 MiB cap" in line


def _many_tests(root: Path, n: int) -> Path:
    tests = {f"t{i:05d}": ("1\n", "1\n") for i in range(n)}
    write_program(root, "p", tests=tests)
    return write_suite(root, ["p"])


def _load_seconds(root: Path) -> float:
    """CPU seconds (user and system) of the fastest of three loads: other work on the
    machine slows the wall clock, not the work done."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        suite = load_suite(root)
        best = min(best, time.process_time() - start)
    assert len(suite.programs["p"].tests) > 0
    return best


@pytest.mark.slow  # loads 10k- and 2.5k-test programs three times each
def test_fault19_loading_grows_linearly_with_the_number_of_tests(tmp_path: Path) -> None:
    small = _load_seconds(_many_tests(tmp_path / "small", 2_500))
    large = _load_seconds(_many_tests(tmp_path / "large", 10_000))
    # Linear is 4; the per-test duplicate-name count made it about 8 (16 at the limit).
    assert large / small < 6, (small, large)


def test_fault20_deeply_nested_program_json_is_one_line(tmp_path: Path) -> None:
    root = _echo_suite(tmp_path / "s")
    spec = root / "programs" / "p" / "program.json"
    spec.write_text('{"metadata": {"x": ' + "[" * DEEP + "]" * DEEP + "}}")
    line = error_line(run_asmopt("suite", "list", "--suite", str(root), timeout=TIMEOUT))
    assert str(spec) in line and f"nested deeper than {MAX_JSON_DEPTH} levels" in line
    # Brackets inside strings are text, not nesting.
    spec.write_text(json.dumps({"metadata": {"description": "[" * DEEP + '"{'}}))
    assert load_suite(root).programs["p"].meta["description"].startswith("[[[")


def test_fault20_deeply_nested_answers_line_names_the_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    good = json.dumps({"program": "p", "sample": 0, "text": "x"})
    answers.write_text(good + "\n" + "[" * DEEP + "]" * DEEP + "\n")
    with pytest.raises(PolicyError, match=rf"{answers}:2: JSON nested deeper than"):
        read_answers(answers)


def _sc_row(index: int) -> dict[str, object]:
    return {
        "data_source": "supercoder",
        "prompt": [{"role": "user", "content": "q"}],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": "\t.text\nmain:\n\tret\n"},
        "extra_info": {
            "split": "train",
            "index": index,
            "c_code": "int main(void){return 0;}\n",
            "inputs": ["1\n"],
            "outputs": [""],
        },
    }


def test_fault20_a_deep_supercoder_row_is_dropped_and_the_import_goes_on(tmp_path: Path) -> None:
    rows = tmp_path / "rows"
    rows.mkdir()
    deep = "[" * DEEP + "]" * DEEP
    (rows / "a.jsonl").write_text(json.dumps(_sc_row(0)) + "\n" + deep + "\n")
    (rows / "b.jsonl").write_text(json.dumps(_sc_row(1)) + "\n")
    suite, report = import_supercoder([rows])
    assert sorted(suite.programs) == ["supercoder-train-00000", "supercoder-train-00001"]
    dropped = {d.item: (d.reason, d.detail) for d in report.dropped}
    assert dropped["a.jsonl:1"][0] == "bad_row"
    assert "nested deeper than" in dropped["a.jsonl:1"][1]


def test_fault21_version_true_is_not_version_1(tmp_path: Path) -> None:
    root = _echo_suite(tmp_path / "s")
    index = json.loads((root / "suite.json").read_text())
    (root / "suite.json").write_text(json.dumps({**index, "version": True}))
    line = error_line(run_asmopt("suite", "list", "--suite", str(root), timeout=TIMEOUT))
    assert "suite.json" in line and "field 'version' must be an integer, got true" in line


@pytest.mark.parametrize(
    "spec, field",
    [
        (
            {"tests": [{"name": "t1", "stdin": "tests/t1.in", "stdout": "tests/t1.out",
                        "argv": ["ok", "a\u0000b"]}]},
            "tests[0].argv[1]",
        ),
        ({"source": "ma\u0000in.c"}, "source"),
        ({"cflags": ["-O2\u0000"]}, "cflags[0]"),
    ],
)
def test_fault22_a_nul_in_program_json_names_the_field(
    tmp_path: Path, spec: dict[str, object], field: str
) -> None:
    root = tmp_path / "s"
    write_program(root, "p", spec=spec)
    write_suite(root, ["p"])
    line = error_line(run_asmopt("suite", "list", "--suite", str(root), timeout=TIMEOUT))
    assert "program.json" in line and f"field '{field}' must not contain a NUL byte" in line


def test_fault22_a_nul_in_a_built_program_names_the_field() -> None:
    test = TestCase(name="t", stdin=b"", expected_stdout=b"")
    with pytest.raises(ProgramError, match=r"field 'source' contains a NUL byte \(offset 11\)"):
        Program(id="p", source="int main(){\x00return 0;}", tests=(test,))
    with pytest.raises(ProgramError, match=r"field 'argv\[0\]' contains a NUL byte"):
        TestCase(name="t", stdin=b"", expected_stdout=b"", argv=("a\x00",))
