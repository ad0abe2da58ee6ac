"""The two features of issue 14 asked for while testing: `asmopt check --measure` prints the
speedup over -O3 with its interval, and `asmopt eval --policy answers` judges answers
produced elsewhere, stored and resumable like any evaluation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from faultkit import error_line, eval_args, run_asmopt, write_suite


def _baseline(suite: Path, pid: str, flags: str = "-O3") -> str:
    proc = run_asmopt("baseline", "--suite", str(suite), pid, "--flags", flags)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_check_measure_prints_speedup_and_interval(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", ["a"])
    o1 = tmp_path / "o1.s"
    o1.write_text(_baseline(suite, "a", "-O1"))
    proc = run_asmopt("check", "--suite", str(suite), "a", str(o1), "--measure", "instructions")
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("speedup over -O3"))
    assert "(instructions)" in line and "98% interval [" in line
    proc = run_asmopt(
        "check", "--suite", str(suite), "a", str(o1), "--measure", "instructions", "--json"
    )
    speedup = json.loads(proc.stdout)["speedup"]
    assert speedup["status"] == "measured"
    assert speedup["low"] <= speedup["ratio"] <= speedup["high"]
    # A copy of the baseline is 1.0 by rule, as in eval.
    o3 = tmp_path / "o3.s"
    o3.write_text(_baseline(suite, "a"))
    proc = run_asmopt("check", "--suite", str(suite), "a", str(o3), "--measure", "instructions")
    assert "speedup over -O3 (instructions): 1.000x" in proc.stdout and "copy" in proc.stdout


def _answers(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _eval_answers_args(suite: Path, run: Path, answers: Path, *extra: str) -> tuple[str, ...]:
    """`asmopt eval` of two samples per program, taken from the answers file `answers`."""
    return eval_args(
        suite, run, "--policy", "answers", "--answers", str(answers), "--samples", "2", *extra
    )


def test_eval_answers_file_is_judged_stored_and_resumed(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "s", ["a", "b"])
    asm_a, asm_b = _baseline(suite, "a"), _baseline(suite, "b")
    rows = [
        {"program": "a", "sample": 0, "text": f"Here it is:\n```asm\n{asm_a}```\n"},
        {"program": "a", "sample": 1, "text": "I cannot do that."},
        {"program": "b", "sample": 0, "text": f"```assembly\n{asm_b}```"},
        {"program": "b", "sample": 1, "text": "```asm\nmain:\n\tret\n```", "model": "x"},
    ]
    answers = _answers(tmp_path / "answers.jsonl", rows)
    run = tmp_path / "run"
    args = _eval_answers_args(suite, run, answers, "--json")
    proc = run_asmopt(*args)
    assert proc.returncode == 0, proc.stderr
    got = {(r["program"], r["sample"]): r["verdict"] for r in json.loads(proc.stdout)["results"]}
    assert got[("a", 0)] == "pass" and got[("b", 0)] == "pass"
    assert got[("a", 1)] == "extraction_error"
    assert got[("b", 1)] not in ("pass", "extraction_error")
    # Resumed: nothing judged again.
    out = json.loads(run_asmopt(*args).stdout)
    assert all(r["resumed"] for r in out["results"])
    # One answer edited: that program's samples are judged again, the other's are reused.
    rows[1]["text"] = f"```asm\n{asm_a}```"
    _answers(answers, rows)
    proc = run_asmopt(*args)
    out = json.loads(proc.stdout)
    by = {(r["program"], r["sample"]): r for r in out["results"]}
    assert by[("a", 1)]["verdict"] == "pass" and not by[("a", 1)]["resumed"]
    assert by[("b", 0)]["resumed"]
    assert "the policy's answers changed" in proc.stderr


@pytest.mark.parametrize(
    "content, needle",
    [
        ('{"program": "a", "sample": "0", "text": "x"}\n', "answers.jsonl:1: field 'sample'"),
        ('{"program": "a", "sample": 0}\n', "answers.jsonl:1: field 'text'"),
        ('\n{"program": "a", "sample": 0, "text": "x"}\nnot json\n', "answers.jsonl:3: not a JSON"),
        ('{"program": "a", "sample": 0, "text": "x"}\n' * 2, "a second answer"),
        ('{"program": "a", "sample": 0, "text": "x"}\n', "no answer for 1 of the 4 samples"),
    ],
)
def test_eval_answers_file_errors_name_line_and_field(
    tmp_path: Path, content: str, needle: str
) -> None:
    suite = write_suite(tmp_path / "s", ["a", "b"])
    if "4 samples" in needle:
        content += "".join(
            json.dumps({"program": p, "sample": i, "text": "x"}) + "\n"
            for p, i in (("a", 1), ("b", 0))
        )
    answers = tmp_path / "answers.jsonl"
    answers.write_text(content)
    line = error_line(run_asmopt(*_eval_answers_args(suite, tmp_path / "run", answers)))
    assert needle in line
