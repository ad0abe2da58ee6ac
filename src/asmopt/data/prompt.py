"""The reference prompt, answer and question texts used in exported rows.

The structure follows the reference dataset (see docs/datasets.md): one user turn with a
sentence stating the task, the C source in a `c` fence, the -O3 assembly in an `assembly`
fence, instructions to output only the optimised assembly in an `assembly` fence, and the
closing line `Optimized Assembly Code:`. A C-only variant omits the assembly. The answer is
the -O3 assembly in an `assembly` fence.
"""

from __future__ import annotations

from asmopt.programs.rows import FENCE, extract_fenced_assembly

__all__ = ["FENCE", "extract_fenced_assembly"]

_TASK = (
    "Given the following C code and assembly code, your task is to generate highly "
    "optimized x86-64 assembly code."
)
_TASK_C_ONLY = (
    "Given the following C code, your task is to generate highly optimized x86-64 assembly code."
)
_INSTRUCTIONS = (
    "Only output the optimized assembly code. Do not include any other text. "
    "Do not write any comments in the assembly code. "
    f"Wrap the assembly code in {FENCE}assembly {FENCE} tags."
)


def _fenced(tag: str, body: str) -> str:
    return f"{FENCE}{tag}\n{body.rstrip()}\n{FENCE}"


def build_question(c_code: str, assembly: str) -> str:
    """The C + assembly prompt (the default in the reference dataset)."""
    return (
        f"{_TASK}\n\nC Code:\n\n{_fenced('c', c_code)}\n\n"
        f"Assembly Code:\n\n{_fenced('assembly', assembly)}\n\n"
        f"{_INSTRUCTIONS}\n\nOptimized Assembly Code:\n"
    )


def build_c_only_question(c_code: str) -> str:
    """The variant that gives only the C code."""
    return (
        f"{_TASK_C_ONLY}\n\nC Code:\n\n{_fenced('c', c_code)}\n\n"
        f"{_INSTRUCTIONS}\n\nOptimized Assembly Code:\n"
    )


def format_answer(assembly: str) -> str:
    """The reference answer: the -O3 assembly in an `assembly` fence."""
    return _fenced("assembly", assembly)


