"""Fold a learnt generator's tabulable classes into a class that carries enough entropy.

A learnt generator has one class per fixed test, drawn in that test's shape. A sample of
one record (`1` then `++X`) gives a class of a few bits even where its sibling tests, of
the same problem, give classes of hundreds: the sample is small, the problem is not. One
tabulable class used to make the whole program unfit (asmopt.entropy: a table of its
answers would be paid). Folding keeps the program and removes only the hole: the weak
class's fixed test stands for the kept class nearest in declared entropy, so every timed
pair of it runs on a fresh draw of that class, never on its fixed input, and the weak
class stays in the generator with no test standing for it: a checking class
(data/checking_classes.py), whose draws every grading checks and nothing times. Its
answers are few enough to tabulate, so they may not be what pays; but an answer wrong on
inputs of the sample's shape (a special case for one record, a memorised fixed answer)
still fails on fresh ones, and the draws reach what that sample reaches. The fixed test
still runs as a fixed test (its answer can be memorised, as every fixed answer can: the
drawn inputs are what grade).

Nothing is folded when no class would be left: then the program stays unfit, by name.
What was folded, and why, is the program's `metadata.inputs_report["folded"]`.
"""

from __future__ import annotations

from dataclasses import replace

from asmopt.programs.generators import InputGenerator
from asmopt.programs.model import Program

REPORT_KEY = "folded"


def fold_classes(program: Program, weak: dict[str, str]) -> Program | None:
    """`program` with the fixed tests of the classes in `weak` (class -> why it is
    tabulable) standing for the kept class of fewest declared bits, the weak classes kept
    as checking classes; None when there is nothing to fold or no class would be left."""
    generator = program.inputs
    if generator is None:
        return None
    timed = {klass for _, klass in generator.tests}
    weak = {k: why for k, why in weak.items() if k in timed}
    kept = [k for k in generator.class_names if k in timed and k not in weak]
    if not weak or not kept:
        return None
    target = min(kept, key=generator.entropy_bits)
    data = generator.to_dict()
    data["tests"] = {t: target if k in weak else k for t, k in data["tests"].items()}
    folded = InputGenerator.from_dict(data)
    meta = program.meta
    report = dict(meta.get("inputs_report") or {})
    report[REPORT_KEY] = {
        **(report.get(REPORT_KEY) or {}),
        **{
            k: f"{why}; its test(s) now stand for class {target}, its draws are checked, "
            "not timed"
            for k, why in weak.items()
        },
    }
    meta["inputs_report"] = report
    return replace(program, inputs=folded, metadata=tuple(sorted(meta.items())))
