"""One bad row never breaks a whole suite (docs/faults.md): every program an importer is
about to write is first written and read back the way the suite loader reads it, so a row
the loader would refuse (a NUL in the source or in an argv string, a generator naming a
test the row lacks, text that cannot be written) is dropped and named, and the suite that
is written always loads."""

from __future__ import annotations

import json
from pathlib import Path

from faultkit import ECHO_C, run_asmopt

from asmopt.data.supercoder import import_supercoder
from asmopt.programs.suite_io import load_suite

ECHO = ECHO_C.replace("WORK", "1")


def _row(index: int, **extra: object) -> dict[str, object]:
    body = {"c_code": ECHO, "inputs": ["3\n"], "outputs": ["3\n"], "split": "train"}
    return {"extra_info": {**body, "index": index, **extra}}


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_bad_rows_are_dropped_and_the_written_suite_loads(tmp_path: Path) -> None:
    """A NUL in `c_code`, and a generator naming a test the row lacks (Program() accepts
    it, the loader does not): before the check, that row was written with the others and
    no command could load the suite."""
    spec = {"version": 1, "classes": {"a": {"template": "5\n", "vars": {}}}, "tests": {"t99": "a"}}
    rows = [_row(1), _row(2, c_code=ECHO + "\x00"), _row(3, inputs_spec=json.dumps(spec))]
    out = tmp_path / "suite"
    proc = run_asmopt(
        "data", "import", "supercoder", str(_jsonl(tmp_path / "rows.jsonl", rows)),
        "-o", str(out), "--no-mutator", "--no-adequacy", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["report"]
    assert report["kept_ids"] == ["supercoder-train-00001"]
    nul, generator = report["drops"]
    assert nul["item"] == "rows.jsonl:1" and "NUL" in nul["detail"]
    assert generator["item"] == "rows.jsonl:2" and generator["reason"] == "not_loadable"
    assert "t99" in generator["detail"] and "supercoder-train-00003" in generator["detail"]
    assert sorted(load_suite(out).programs) == ["supercoder-train-00001"]
    listed = run_asmopt("suite", "list", "--suite", str(out))
    assert listed.returncode == 0, listed.stderr


def test_row_with_text_that_cannot_be_written_is_dropped(tmp_path: Path) -> None:
    """A lone surrogate (JSON `\\ud800`) is a Python string no file can hold."""
    rows = [_row(1), _row(2, c_code=ECHO + "/* \ud800 */\n"), _row(3, inputs=["\ud800\n"])]
    suite, report = import_supercoder([_jsonl(tmp_path / "rows.jsonl", rows)])
    assert sorted(suite.programs) == ["supercoder-train-00001"]
    assert sorted(d.item for d in report.dropped) == ["rows.jsonl:1", "rows.jsonl:2"]
    assert all("surrogate" in d.detail for d in report.dropped), report.dropped
