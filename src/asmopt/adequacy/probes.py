"""The trivial probes: the assembly of a `main` that returns 0 at once, of one that prints
nothing and exits with the first test's expected code, and of one that prints the first
test's expected output whatever the input. Each is a whole .s, built and judged like any
answer (check.py).
"""

from __future__ import annotations

from asmopt.programs.model import Program

TRIVIAL_PROBES: tuple[str, ...] = ("return0", "print_nothing", "constant_output")
_MAIN_HEAD = "\t.text\n\t.globl\tmain\n\t.type\tmain, @function\nmain:\n"
_MAIN_TAIL = '\t.size\tmain, .-main\n\t.section\t.note.GNU-stack,"",@progbits\n'


def exit_assembly(code: int = 0) -> str:
    """A `main` that prints nothing and returns `code` at once."""
    body = "\txorl\t%eax, %eax\n" if code == 0 else f"\tmovl\t${code}, %eax\n"
    return _MAIN_HEAD + body + "\tret\n" + _MAIN_TAIL


def return0_assembly() -> str:
    return exit_assembly(0)


def ascii_directives(data: bytes, chunk: int = 64) -> str:
    """`data` as GNU as `.ascii` lines that reproduce it byte for byte.

    Printable ASCII goes through as is (`"` and `\\` escaped); every other byte is a
    three-digit octal escape, which the assembler never extends with a following digit."""
    lines = []
    for start in range(0, len(data), chunk):
        parts = []
        for b in data[start : start + chunk]:
            if b in (0x22, 0x5C):
                parts.append("\\" + chr(b))
            elif 0x20 <= b < 0x7F:
                parts.append(chr(b))
            else:
                parts.append(f"\\{b:03o}")
        lines.append('\t.ascii\t"' + "".join(parts) + '"\n')
    return "".join(lines)


def constant_output_assembly(stdout: bytes, code: int = 0) -> str:
    """A `main` that writes `stdout` (embedded in .rodata) with write(2) and returns `code`.

    Raw system calls, not stdio, so nothing is buffered and a partial write to a pipe is
    simply continued; an interrupted write is retried, any other error ends the loop."""
    if not stdout:
        return exit_assembly(code)
    set_code = "\txorl\t%eax, %eax\n" if code == 0 else f"\tmovl\t${code}, %eax\n"
    return (
        "\t.section\t.rodata\n"
        ".Lconst_out:\n"
        + ascii_directives(stdout)
        + _MAIN_HEAD
        + "\tleaq\t.Lconst_out(%rip), %rsi\n"
        + f"\tmovq\t${len(stdout)}, %rdx\n"
        + ".Lconst_loop:\n"
        + "\ttestq\t%rdx, %rdx\n"
        + "\tje\t.Lconst_done\n"
        + "\tmovl\t$1, %edi\n"
        + "\tmovl\t$1, %eax\n"
        + "\tsyscall\n"
        + "\tcmpq\t$-4, %rax\n"
        + "\tje\t.Lconst_loop\n"
        + "\ttestq\t%rax, %rax\n"
        + "\tjle\t.Lconst_done\n"
        + "\taddq\t%rax, %rsi\n"
        + "\tsubq\t%rax, %rdx\n"
        + "\tjmp\t.Lconst_loop\n"
        + ".Lconst_done:\n"
        + set_code
        + "\tret\n"
        + _MAIN_TAIL
    )


def trivial_probes(program: Program) -> dict[str, str]:
    """Probe name -> assembly. Probes identical to an earlier one are left out (the caller
    copies the earlier verdict), so no probe is run twice."""
    first = program.tests[0] if program.tests else None
    code = first.expected_exit if first else 0
    out = {"return0": return0_assembly()}
    if code != 0:
        out["print_nothing"] = exit_assembly(code)
    if first is not None and first.expected_stdout:
        out["constant_output"] = constant_output_assembly(first.expected_stdout, code)
    return out


def same_as(name: str, probes: dict[str, str]) -> str:
    """The probe whose assembly `name` shares (see trivial_probes)."""
    if name in probes:
        return name
    if name == "print_nothing":
        return "return0"
    return "print_nothing" if "print_nothing" in probes else "return0"
