"""The `asmopt` command as a user runs it: real processes, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from asmopt.programs import load_builtin_suite

PROGRAM = sorted(load_builtin_suite().programs)[0]


def asmopt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "asmopt.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=os.environ.copy(),
    )


def test_suite_list_json() -> None:
    proc = asmopt("suite", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == len(load_builtin_suite())
    assert {"id", "split", "tests"} <= set(rows[0])


def test_suite_show_and_baseline() -> None:
    proc = asmopt("suite", "show", PROGRAM)
    assert proc.returncode == 0 and "int main" in proc.stdout
    proc = asmopt("baseline", PROGRAM)
    assert proc.returncode == 0 and "main:" in proc.stdout and ".cfi_endproc" in proc.stdout


def test_check_identity_and_corrupted(tmp_path: Path) -> None:
    asm = asmopt("baseline", PROGRAM).stdout
    good = tmp_path / "good.s"
    good.write_text(asm)
    proc = asmopt("check", PROGRAM, str(good), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"] == "pass" and result["passed"] == result["total"] >= 5
    bad = tmp_path / "bad.s"
    bad.write_text(asm.replace("main:", "notmain:"))
    proc = asmopt("check", PROGRAM, str(bad))
    assert proc.returncode == 1
    assert (
        "link_error" in proc.stdout or "assemble_error" in proc.stdout
    ) and "main" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("suite", "show", "no_such_program"), "no program 'no_such_program'"),
        (("baseline", "no_such_program"), "no program 'no_such_program'"),
        (("check", PROGRAM, "/nonexistent/cand.s"), "assembly file not found"),
        (("check", PROGRAM, "/"), "is a directory"),
        (("eval", "--policy", "identty"), "did you mean 'identity'"),
        (("eval", "--jobs", "0"), "--jobs must be at least 1"),
        (("eval", "--split", "dev"), "unknown split 'dev'"),
        (("suite", "list", "--suite", "/nonexistent-suite"), "suite not found"),
    ],
)
def test_bad_input_is_one_clear_line(args: tuple[str, ...], needle: str) -> None:
    proc = asmopt(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_binary_and_non_utf8_assembly_files(tmp_path: Path) -> None:
    binary = tmp_path / "cand.s"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    proc = asmopt("check", PROGRAM, str(binary))
    assert proc.returncode == 2 and "binary file" in proc.stderr
    latin = tmp_path / "latin.s"
    latin.write_bytes(b"\t.text\n# caf\xe9\n")
    proc = asmopt("check", PROGRAM, str(latin))
    assert proc.returncode == 2 and "not UTF-8" in proc.stderr


def test_wrong_schema_version_suite(tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_text(
        json.dumps({"format": "asmopt-suite", "version": 99, "programs": []})
    )
    proc = asmopt("suite", "list", "--suite", str(tmp_path))
    assert proc.returncode == 2
    assert "schema version 99" in proc.stderr and "suite.json" in proc.stderr


def test_missing_expected_output(tmp_path: Path) -> None:
    (tmp_path / "suite.json").write_text(
        json.dumps({"format": "asmopt-suite", "version": 1, "programs": ["p"]})
    )
    pdir = tmp_path / "programs" / "p" / "tests"
    pdir.mkdir(parents=True)
    (pdir.parent / "main.c").write_text("int main(void){return 0;}\n")
    (pdir / "t1.in").write_text("1\n")
    proc = asmopt("suite", "list", "--suite", str(tmp_path))
    assert proc.returncode == 2
    assert "t1.in" in proc.stderr and "no expected output" in proc.stderr


def test_flags_value_may_start_with_a_dash(capsys) -> None:  # type: ignore[no-untyped-def]
    from asmopt.cli import main

    assert main(["baseline", "lcs_dp", "--flags", "-O1"]) == 0
    o1 = capsys.readouterr().out
    assert main(["baseline", "lcs_dp", "--flags=-O1"]) == 0
    assert capsys.readouterr().out == o1 and "main:" in o1


def test_eval_default_max_tokens_leaves_room_for_a_whole_answer() -> None:
    """Answers are whole assembly files, up to about 6,300 tokens on the built-in training
    split (docs/training.md): a default below that cuts most answers short."""
    from asmopt.cli.main import build_parser
    from asmopt.policies.llm import SamplingParams

    args = build_parser().parse_args(["eval", "--policy", "openai", "--model", "m"])
    assert args.max_tokens >= 6300
    assert SamplingParams().max_new_tokens == args.max_tokens


def test_seed_flags_say_which_seed(capsys: pytest.CaptureFixture[str]) -> None:
    """`--seed` meant the sampler's seed under `eval` and the split hash under `data`: each
    flag now says which seed it sets, and the bare `--seed` is no flag of either."""
    from asmopt.cli.eval import policy_spec
    from asmopt.cli.main import build_parser

    parser = build_parser()
    args = parser.parse_args(["eval", "--policy", "openai", "--model", "m", "--base-url",
                              "http://127.0.0.1:1/v1", "--sampling-seed", "5"])  # fmt: skip
    assert policy_spec(args).sampling().sampling_seed == 5
    args = parser.parse_args(["data", "import", "dir", "pool", "-o", "out", "--split-seed", "s"])
    assert args.split_seed == "s"
    for argv in (["eval", "--seed", "5"], ["data", "import", "dir", "p", "-o", "o", "--seed", "s"]):
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(argv)
        assert exc.value.code == 2
        assert "unrecognized arguments: --seed" in capsys.readouterr().err


def test_a_bug_is_an_internal_error_not_bad_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user's mistake (an AsmoptError) is one line and exit 2; anything else is ours: an
    internal error (exit 70) asking for a report, with the traceback under -v only."""
    import asmopt.cli.suite
    from asmopt.cli.main import EXIT_INTERNAL_ERROR, main

    def broken(args: object) -> int:
        raise KeyError("a bug of ours")

    monkeypatch.setattr(asmopt.cli.suite, "cmd_suite_list", broken)
    assert main(["suite", "list"]) == EXIT_INTERNAL_ERROR == 70
    err = capsys.readouterr().err
    assert "asmopt: internal error: KeyError" in err and "please report it" in err
    assert "Traceback" not in err
    assert main(["suite", "list", "-v"]) == 70
    assert "Traceback" in capsys.readouterr().err
    # A ValueError from our code is a bug too, no longer read as bad input.
    monkeypatch.setattr(
        asmopt.cli.suite, "cmd_suite_list", lambda args: int("not a number")
    )
    assert main(["suite", "list"]) == 70
    assert "internal error: ValueError" in capsys.readouterr().err
    assert main(["suite", "show", "no_such_program"]) == 2
    assert capsys.readouterr().err.startswith("asmopt: error:")
