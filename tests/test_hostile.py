"""The hostile-binary corpus: each gets the right verdict and leaves nothing behind.

Every program here is compiled to assembly and then goes through the same path as a
model-written candidate: sandboxed assembler and linker, then the sandboxed runner.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import sandboxed_processes

from asmopt.evaluate import check_candidate
from asmopt.judge import Verdict
from asmopt.programs.model import Program, TestCase
from asmopt.sandbox import Limits, Sandbox
from asmopt.toolchain import Toolchain

HOSTILE = Path(__file__).parent / "hostile"
LIMITS = Limits(
    cpu_seconds=1,
    wall_seconds=4.0,
    address_space=256 << 20,
    file_size=8 << 20,
    tmp_size=32 << 20,
    stdout_cap=1 << 20,
)


def _program(name: str, stdin: bytes = b"", expected: bytes = b"42\n") -> Program:
    source = (HOSTILE / f"{name}.c").read_text()
    return Program(id=name, source=source, tests=(TestCase("t1", stdin, expected),))


# The CPU-time case gets a wall limit far past its CPU limit: on a busy machine (two
# processes per core and more) one CPU second can take many wall seconds, and the wall
# limit must not fire first.
LIMITS_OF = {"infinite_loop": replace(LIMITS, wall_seconds=60.0)}


def _check(name: str, toolchain: Toolchain, sandbox: Sandbox, **kw: object):
    program = _program(name, **kw)  # type: ignore[arg-type]
    asm = toolchain.baseline_assembly(program, flags=("-O1",))
    return check_candidate(program, asm, toolchain, sandbox, limits=LIMITS_OF.get(name, LIMITS))


@pytest.mark.parametrize(
    ("name", "verdict", "needle"),
    [
        ("infinite_loop", Verdict.TIMEOUT, "CPU time limit"),
        ("sleep_forever", Verdict.TIMEOUT, "wall-clock"),
        ("fork_bomb", Verdict.SANDBOX_VIOLATION, "forbidden system call"),
        ("orphan_child", Verdict.SANDBOX_VIOLATION, "forbidden system call"),
        ("network", Verdict.SANDBOX_VIOLATION, "forbidden system call"),
        ("exec_shell", Verdict.SANDBOX_VIOLATION, "forbidden system call"),
        ("kill_parent", Verdict.SANDBOX_VIOLATION, "forbidden system call"),
        ("memory_hog", Verdict.NONZERO_EXIT, "exit code 3"),
        ("huge_file", Verdict.OUTPUT_LIMIT, "larger than"),
        ("giant_stdout", Verdict.OUTPUT_LIMIT, "stdout exceeded"),
        ("closed_stdout", Verdict.WRONG_OUTPUT, "no output"),
        ("segfault", Verdict.CRASH, "SIGSEGV"),
        ("sigfpe", Verdict.CRASH, "SIGFPE"),
    ],
)
def test_hostile_binary_is_contained(
    name: str,
    verdict: Verdict,
    needle: str,
    toolchain: Toolchain,
    sandbox: Sandbox,
    no_leftovers: None,
) -> None:
    start = time.monotonic()
    result = _check(name, toolchain, sandbox)
    assert result.verdict == verdict, result.message
    assert needle in result.message
    assert time.monotonic() - start < LIMITS_OF.get(name, LIMITS).wall_seconds + 10
    assert not Path("/tmp/huge.bin").exists()


def test_memory_hog_stays_under_the_address_space_limit(
    toolchain: Toolchain, sandbox: Sandbox
) -> None:
    result = _check("memory_hog", toolchain, sandbox)
    assert result.tests[0].peak_rss_kb * 1024 <= LIMITS.address_space


def test_secrets_and_expected_outputs_are_invisible(
    toolchain: Toolchain, sandbox: Sandbox, tmp_path: Path, no_leftovers: None
) -> None:
    secret = tmp_path / "t1.out"
    secret.write_text("THE-EXPECTED-ANSWER\n")
    secret.chmod(0o644)
    tmp_path.chmod(0o755)
    program = _program(
        "read_secrets", stdin=str(secret).encode() + b"\n", expected=b"THE-EXPECTED-ANSWER\n"
    )
    asm = toolchain.baseline_assembly(program, flags=("-O1",))
    result = check_candidate(program, asm, toolchain, sandbox, limits=LIMITS)
    assert result.verdict == Verdict.WRONG_OUTPUT
    assert "nothing readable" in result.message


def test_incbin_of_host_files_fails_at_assembly(
    toolchain: Toolchain, sandbox: Sandbox, tmp_path: Path
) -> None:
    secret = tmp_path / "expected.out"
    secret.write_text("SECRET\n")
    program = _program("closed_stdout")
    asm = toolchain.baseline_assembly(program, flags=("-O1",))
    for target in ("/etc/shadow", str(secret), "/etc/hostname"):
        evil = asm + f'\n\t.section .rodata\nleak:\n\t.incbin "{target}"\n'
        result = check_candidate(program, evil, toolchain, sandbox, limits=LIMITS)
        assert result.verdict == Verdict.ASSEMBLE_ERROR, (target, result.message)
        assert "file not found" in result.message


def test_assembler_bomb_is_stopped(toolchain: Toolchain, sandbox: Sandbox) -> None:
    program = _program("closed_stdout")
    for body in (".rept 1000000000\n.quad 0\n.endr", ".fill 400000000, 1, 0"):
        bomb = f".data\n{body}\n.text\n.globl main\nmain:\nret\n"
        result = check_candidate(program, bomb, toolchain, sandbox, limits=LIMITS)
        assert result.verdict == Verdict.ASSEMBLE_ERROR, result.message
        assert any(
            s in result.message.lower() for s in ("file size limit", "timed out", "out of memory")
        )


def test_no_sandboxed_process_survives_the_corpus() -> None:
    assert sandboxed_processes() == []
