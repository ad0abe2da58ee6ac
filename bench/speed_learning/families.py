"""The task families a speed-learning run can train on, each behind one small interface.

A run needs the same five things from every family: its suite, the warm start's answers
for a training program, a name for the edit an answer makes, the best simple rule's answer,
and the words the report uses for them. `popcount` (`family.py`) is the family with one
fast edit; `rich` (`rich_family.py`) has speedups that compose, one that no substitution
rule writes (`reuse`), and traps. Everything else in `speed_learning_run.py` is shared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from speed_learning import family as popcount
from speed_learning import rich_family as rich


@dataclass(frozen=True)
class TaskFamily:
    name: str
    # suite directory writer: (dest) -> dest, 7 programs per kernel, seed 0
    write_suite: Callable[[Path], Path]
    # the edits each variant's warm start is shown ("main" shows them all)
    variants: dict[str, tuple[str, ...]]
    # (kernel, -O3 assembly, shown edits) -> [(edit label, answer assembly)], one per example
    sft_answers: Callable[[str, str, tuple[str, ...]], list[tuple[str, str]]]
    # (kernel, -O3 assembly, applied answer or None) -> the answer's edit label
    classify: Callable[[str, str, str | None], str]
    # -O3 assembly -> the best simple rule's answer (full assembly)
    rule: Callable[[str], str]
    rule_name: str
    # edit labels counted in a row's "share" column, and that column's name
    share_labels: Callable[[str], bool]
    share_name: str
    # one line for the report's header: what the family is
    task_line: str


def same_lines(a: str, b: str) -> bool:
    """Two assembly texts that are the same line for line, trailing spaces aside."""
    return [line.rstrip() for line in a.splitlines()] == [line.rstrip() for line in b.splitlines()]


# --------------------------------------------------------------------------- popcount
def _popcount_answers(kernel: str, baseline: str, edits: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(edit, popcount.rewrite(baseline, edit)) for edit in edits]


def classify_popcount(baseline: str, answer_asm: str | None) -> str:
    """Which edit an applied answer is: `fast`, `align`, `wrong`, `partial` (some call sites
    fast, the rest untouched), `wrong_partial`, `other`, or `none` (the diff did not apply)."""
    if answer_asm is None:
        return "none"
    for edit in ("fast", "align", "wrong"):
        if same_lines(answer_asm, popcount.rewrite(baseline, edit)):
            return edit
    lines = [line.rstrip() for line in answer_asm.splitlines()]
    base = [line.rstrip() for line in baseline.splitlines()]
    if len(lines) == len(base):
        changed = [(b, a) for b, a in zip(base, lines, strict=True) if a != b]
        if changed and all(
            b == popcount.POPCOUNT_CALL and a == popcount.FAST_LINE for b, a in changed
        ):
            return "partial"
        if changed and all(
            b == popcount.POPCOUNT_CALL and a == popcount.WRONG_LINE for b, a in changed
        ):
            return "wrong_partial"
    return "other"


def _popcount_rule(baseline: str) -> str:
    from speed_learning.baselines import popcnt_rule

    return popcnt_rule(baseline)


POPCOUNT = TaskFamily(
    name="popcount",
    write_suite=lambda dest: popcount.write_suite(dest, per_kernel=7, seed=0),
    variants={"main": ("fast", "align", "wrong"), "discovery": ("align", "wrong")},
    sft_answers=_popcount_answers,
    classify=lambda kernel, baseline, answer: classify_popcount(baseline, answer),
    rule=_popcount_rule,
    rule_name="rule: every `call __popcountdi2@PLT` -> `popcntq %rdi, %rax`",
    share_labels=lambda label: label in ("fast", "partial"),
    share_name="fast share",
    task_line="`bench/speed_learning/family.py` (8 kernel templates x 7 programs; "
    "train/validation/test 32/8/16, the test split 2 programs of each template)",
)


# --------------------------------------------------------------------------- rich
def rich_label(edits: tuple[str, ...], kernel: str) -> str:
    """An edit set's label: its edits joined by `+` in the family's order; a trap (an edit
    the kernel calls wrong) is prefixed `wrong-`."""
    traps = rich.TRAPS.get(kernel, ())
    ordered = [e for e in rich.EDITS if e in edits]
    return "+".join(f"wrong-{e}" if e in traps else e for e in ordered)


def _rich_spec(kernel: str) -> rich.RichProgram:
    return rich.RichProgram(kernel, kernel, rich.KERNELS[kernel][0], "", [])


def _rich_answers(kernel: str, baseline: str, edits: tuple[str, ...]) -> list[tuple[str, str]]:
    """One example per non-empty set of the shown edits the kernel has (so compositions
    too), and one per trap alone: the warm start writes every known answer, and which is
    fastest (a composition, where there is one) can only be learnt from the timed reward."""
    spec = _rich_spec(kernel)
    mine = [e for e in rich.EDITS if e in edits and e in spec.edits]
    sets = [c for k in range(1, len(mine) + 1) for c in combinations(mine, k)]
    sets += [(t,) for t in rich.TRAPS.get(kernel, ()) if t in edits]
    return [(rich_label(c, kernel), rich.witness(baseline, spec, c)) for c in sets]


def _rich_classify(kernel: str, baseline: str, answer: str | None) -> str:
    """The edit set whose witness the applied answer is, line for line (trailing spaces
    aside); `other` for any other text, `none` when the diff did not apply."""
    if answer is None:
        return "none"
    spec = _rich_spec(kernel)
    known = spec.edits + rich.TRAPS.get(kernel, ())
    for k in range(1, len(known) + 1):
        for subset in combinations(known, k):
            try:
                text = rich.witness(baseline, spec, subset)
            except ValueError:
                continue
            if same_lines(answer, text):
                return rich_label(subset, kernel)
    return "other"


def _beyond_rule(label: str) -> bool:
    """An answer that holds an edit no substitution rule writes, and no trap."""
    parts = label.split("+")
    return any(p in ("reuse", "inline") for p in parts) and not any(
        p.startswith("wrong-") for p in parts
    )


RICH = TaskFamily(
    name="rich",
    write_suite=lambda dest: rich.write_suite(dest, per_kernel=7, seed=0),
    variants={"main": rich.EDITS},
    sft_answers=_rich_answers,
    classify=_rich_classify,
    rule=_popcount_rule,  # the same substitution: every popcount libcall, nothing else
    rule_name=POPCOUNT.rule_name,
    share_labels=_beyond_rule,
    share_name="share with reuse or inline",
    task_line=f"`bench/speed_learning/rich_family.py` ({len(rich.KERNELS)} kernel templates x "
    f"7 programs; train/validation/test {4 * len(rich.KERNELS)}/{len(rich.KERNELS)}/"
    f"{2 * len(rich.KERNELS)}, the test split 2 programs of each template)",
)

FAMILIES: dict[str, TaskFamily] = {f.name: f for f in (POPCOUNT, RICH)}


def kernel_of(program: Any) -> str:
    """A suite program's kernel template, from the metadata the family wrote."""
    return str(program.meta.get("kernel"))
