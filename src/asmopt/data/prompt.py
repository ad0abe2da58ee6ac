"""The question and answer texts of exported rows, rendered by the prompt templates.

An exported row's question is the `reference` template (the C-only variant: `c_only`)
rendered exactly as an evaluation renders it for a policy (policies/prompts.py), so a model
trained on exported rows is evaluated on the same text. The templates follow the reference
dataset (docs/datasets.md): one user turn with a sentence stating the task, the C source in
a `c` fence, the -O3 assembly in an `assembly` fence, instructions to output only the
optimised assembly in an `assembly` fence, and the closing line `Optimized Assembly Code:`.
The answer is the -O3 assembly in an `assembly` fence.
"""

from __future__ import annotations

from asmopt.policies.prompts import load_template
from asmopt.programs.rows import FENCE, extract_fenced_assembly

__all__ = ["FENCE", "build_c_only_question", "build_question", "extract_fenced_assembly"]


def build_question(c_code: str, assembly: str) -> str:
    """The C + assembly prompt (the default in the reference dataset)."""
    return load_template("reference").render(c_code, assembly)


def build_c_only_question(c_code: str) -> str:
    """The variant that gives only the C code."""
    return load_template("c_only").render(c_code, "")


def format_answer(assembly: str) -> str:
    """The reference answer: the -O3 assembly in an `assembly` fence."""
    return f"{FENCE}assembly\n{assembly.rstrip()}\n{FENCE}"
