"""A caller that holds hundreds of descriptors still runs programs: the sandbox launcher
takes a program's descriptor under any number, the one it executes from (200) included.

An import that measured several programs at once held enough files open that a binary's
descriptor came out as 200, and the launcher refused it ("bad program descriptor"), so the
program's drawn outputs went unmeasured. Real gcc, real sandbox, in a child process whose
lowest free descriptor is made 200 before the sandbox opens the binary."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os
    from asmopt.programs.model import Program, TestCase
    from asmopt.sandbox.runner import default_sandbox
    from asmopt.toolchain import default_toolchain

    sandbox = default_sandbox()
    toolchain = default_toolchain()
    program = Program("echo", "#include <stdio.h>\\nint main(void){int x; "
                      "if (scanf(\\"%d\\", &x) != 1) return 1; printf(\\"%d\\\\n\\", x + 1);}\\n",
                      (TestCase("t", b"41\\n", b"42\\n"),))
    binary = toolchain.compile_binary(program, ("-O2",)).output
    held = []
    while True:  # hold every descriptor below 200, so the next one opened is 200
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd >= 200:
            os.close(fd)
            break
        held.append(fd)
    assert os.open(os.devnull, os.O_RDONLY) == 200
    os.close(200)
    result = sandbox.run_program(binary, stdin=b"41\\n")
    assert result.infra_error is None, result.infra_error
    print(result.stdout.decode().strip())
    """
)


def test_a_program_descriptor_numbered_as_the_exec_descriptor_still_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "42"
