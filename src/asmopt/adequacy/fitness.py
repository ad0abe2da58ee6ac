"""Whether a program is fit for reward (`is_reward_fit`), read from the program itself and
the marks in its metadata, and the refusal of unfit programs (`require_fit`,
`UnfitProgramError`) that the reward paths, training rows and exports share;
`marked_program` stores a report as the adequacy mark. Nothing here builds or runs a
program: the rules read its input generator, its entropy marks (asmopt.entropy) and its
adequacy mark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from asmopt.adequacy.report import AdequacyReport
from asmopt.entropy import declared_problems
from asmopt.entropy import read_mark as read_entropy_mark
from asmopt.entropy import unreadable_mark as unreadable_entropy_mark
from asmopt.errors import InputError
from asmopt.programs.model import Program

MARK_KEY = "adequacy"


class UnfitProgramError(InputError):
    """Programs unfit for reward (no input generator, a tabulable class, or tests found
    inadequate) were about to be used for reward or training; the message names each, why,
    and how to allow them anyway."""


def read_mark(program: Program) -> AdequacyReport | None:
    """The stored report of `program`, or None when it has none (or an unreadable one)."""
    try:
        return _parse_mark(program)
    except (ValueError, TypeError, KeyError):
        return None


def _parse_mark(program: Program) -> AdequacyReport | None:
    """The stored report of `program`, None when it has none; an unreadable one raises."""
    raw = program.meta.get(MARK_KEY)
    if raw is None:
        return None
    return AdequacyReport.from_dict(raw)


def is_reward_fit(program: Program) -> tuple[bool, str]:
    """(usable for reward, why), from the program itself and the marks in its metadata.

    The rule (docs/sandbox.md, "No answer can be precomputed"): a reward is paid only where
    no answer can be known in advance. So a program is UNFIT when

    * it has no input generator, whatever its metadata says: every input that would grade
      a candidate is a fixed one, whose answer a candidate can memorise (`fixed_inputs`);
    * a timed class has less declared entropy than entropy.MIN_ENTROPY_BITS, or a stored
      entropy measurement (`metadata.entropy`, for the program as it is now) found output
      collisions (a declared generator), a constant answer that passes too often (a learnt
      one) or a field the output does not depend on (`tabulable`): a table of answers, of
      checkpoints of a running computation, or a constant, would be paid;
    * its adequacy mark says its tests accept trivial or mutated programs.

    An adequacy mark that is missing or stale (the source or tests changed since:
    `program_hash` differs) means "not checked" and does not make a program unfit:
    the generator rules above already refuse what a table could pass, and the mark is
    cheap to add with `asmopt suite verify --write-marks`. A mark that is there but cannot
    be read (a corrupt verdict, `fit` not a boolean) makes it unfit, naming the problem."""
    if program.inputs is None:
        return False, (
            "fixed_inputs: it has no input generator, so every input that grades an answer "
            "is a fixed one and a memorised answer would be paid; give it inputs "
            "(`asmopt data import ... --mutator`, or an `inputs` spec in program.json: "
            "docs/suite_format.md)"
        )
    corrupt = unreadable_entropy_mark(program)
    if corrupt:
        return False, (
            f"unreadable: {corrupt}; measure it again and store a new mark (`asmopt suite "
            "verify --write-marks`)"
        )
    tabulable = declared_problems(program)
    measured = read_entropy_mark(program)
    if measured is not None:
        tabulable += [p for p in measured.problems() if p not in tabulable]
    if tabulable:
        return False, (
            "tabulable: " + "; ".join(tabulable) + " (an answer known in advance would be "
            "paid: docs/suite_format.md, 'Entropy')"
        )
    if MARK_KEY not in program.meta:
        return True, "not checked"
    try:
        mark = _parse_mark(program)
    except (ValueError, TypeError, KeyError) as exc:
        # A mark that is there but cannot be read may have said "unfit": it is never read
        # as "not checked", which would let such a program through.
        return False, (
            f"unreadable adequacy mark ({exc}); check the program again and store a new "
            "mark: `asmopt suite verify --write-marks`"
        )
    if mark is None:
        return True, "not checked"
    if mark.program_hash and mark.program_hash != program.content_hash():
        return True, "not checked (stale mark: the source or tests changed since the check)"
    if mark.fit:
        return True, mark.summary()
    return False, "; ".join(mark.reasons) or "unfit"


def unfit_programs(programs: Iterable[Program]) -> dict[str, str]:
    """Program id -> why, for every program whose mark says UNFIT."""
    out: dict[str, str] = {}
    for program in programs:
        fit, why = is_reward_fit(program)
        if not fit:
            out[program.id] = why
    return out


def require_fit(programs: Iterable[Program], what: str, allow_unfit: bool = False) -> None:
    """Raise UnfitProgramError naming every unfit program, unless `allow_unfit`.

    `what` names the use ("reward", "training rows", "export") so the message says what
    was refused and how to allow it."""
    if allow_unfit:
        return
    bad = unfit_programs(programs)
    if not bad:
        return
    shown = [f"{pid} ({why})" for pid, why in sorted(bad.items())[:10]]
    more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
    raise UnfitProgramError(
        f"refusing {what} for {len(bad)} program(s) unfit for reward (a reward hole: an "
        f"answer could be known in advance or a trivial one passes): {'; '.join(shown)}"
        f"{more}. Fix the inputs or tests (and re-run `asmopt suite verify`), or allow them "
        "explicitly (allow_unfit=True / --allow-unfit; recorded with every score)"
    )


def marked_program(program: Program, report: AdequacyReport, toolchain_identity: str) -> Program:
    """`program` with `report` as its adequacy mark (an unchecked report leaves it as is)."""
    if report.error:
        return program
    meta = dict(program.metadata)
    meta[MARK_KEY] = report.to_mark(toolchain_identity)
    return replace(program, metadata=tuple(sorted(meta.items())))
