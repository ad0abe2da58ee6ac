"""Test adequacy: do a program's tests reject trivial and slightly wrong programs?

A reward is only as honest as the tests behind it. If a program's tests accept a `main`
that returns 0 at once, or one that prints the same text for every input, or the -O3
assembly with one `add` turned into `sub`, then a policy is paid for answers that are
wrong: a reward hole. This module looks for such holes by building and running probe
candidates through the normal sandboxed path (the toolchain sandbox to assemble and link,
`evaluate.check_candidate` with `stop_on_failure=True` to run), exactly as a model's answer
would be judged:

* `return0`: `main` returns 0 at once and prints nothing;
* `print_nothing`: prints nothing and exits with the first test's expected exit code
  (the same probe as `return0` when that code is 0);
* `constant_output`: prints the first test's expected stdout, whatever the input, and exits
  with that test's expected exit code;
* mutants: the program's -O3 baseline with ONE arithmetic or branch instruction changed
  (`add`<->`sub`, `imul`->`add`, `xor`->`or`, `je`<->`jne`, ...; see `MUTATIONS`).

Rules (docs/adequacy.md):

* no tests, or one test and no input generator (one fixed input: printing the constant
  answer passes) -> UNFIT by construction; with a generator, one fixed test is judged like
  any other number of them, since every check also draws inputs;
* any trivial probe passing every test (the fixed ones and K drawn inputs per class, as
  any answer is judged) -> UNFIT;
* the -O3 baseline failing its own tests -> UNFIT (nothing can be judged against it);
* mutants are judged like any answer: on the fixed tests and then on K inputs per size
  class drawn from a secret seed (`fresh`, asmopt.fresh), so a program's drawn inputs
  count towards killing them as much as its fixed tests;
* a mutant that survives may be an *equivalent* mutant (a change that cannot alter the
  output, e.g. a flipped branch into two identical blocks). Where the program can draw
  inputs, each survivor is run against the baseline on EQUIVALENCE_DRAWS inputs of its
  light classes; one that never differs is reported as equivalent and not counted. The
  kill rate is killed / built and killed / (built - equivalent);
* one survivor proves nothing, but when at least half of the non-equivalent mutants
  survive, equivalence cannot explain it away: the tests barely look at the computation.
  So: UNFIT when survivors >= half of the non-equivalent mutants built; otherwise FIT,
  with a warning naming every survivor.

The result is an `AdequacyReport`. Its mark lives in the program's metadata on disk
(`program.json` -> `metadata.adequacy`, with `checked_with` naming the toolchain), and
`is_reward_fit` reads it, beside the rule that no answer can be precomputed (a program
without an input generator, or with a tabulable timed class, asmopt.entropy, is unfit
whatever its marks say): the reward service, every other reward path, training rows and
exports refuse unfit programs unless explicitly allowed. A program with a generator that
was never checked (or whose source or tests changed since) counts as fit but "not
checked"; the mark is cheap to add with `asmopt suite verify --write-marks`.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from asmopt.entropy import declared_problems
from asmopt.entropy import read_mark as read_entropy_mark
from asmopt.errors import InputError
from asmopt.evaluate import CheckResult, baseline_binary, check_binary, check_candidate
from asmopt.fresh import DEFAULT_PER_CLASS, FreshInputs, expected_tests, new_seed
from asmopt.judge import Verdict
from asmopt.parallel import parallel_map
from asmopt.programs.generators import derive_seed
from asmopt.programs.model import Program
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import Sandbox
from asmopt.toolchain import Toolchain, ToolchainError

log = logging.getLogger(__name__)

MARK_KEY = "adequacy"
DEFAULT_MUTANTS = 6
# A mutant's CPU limit: this many times the baseline's slowest test (at least
# MIN_MUTANT_CPU_S). A mutant that loops forever is killed quickly; a correct but slower one
# still finishes.
MUTANT_TIME_FACTOR = 10
MIN_MUTANT_CPU_S = 2
TRIVIAL_PROBES: tuple[str, ...] = ("return0", "print_nothing", "constant_output")
ONE_INPUT_REASON = "one fixed input: printing the constant answer passes"
# A survivor that agrees with the baseline on this many drawn inputs of the light classes
# is reported as equivalent (EQUIVALENT_NOTE) and left out of the kill rate.
EQUIVALENCE_DRAWS = 1000
EQUIVALENT_NOTE = f"equivalent on {EQUIVALENCE_DRAWS} drawn inputs"
# Size classes never used for the equivalence check: their inputs cost what a timed run
# costs, and 1,000 of them would take minutes per survivor.
HEAVY_CLASSES = ("heavy",)
NO_TESTS_REASON = "no tests: every program passes"


class UnfitProgramError(InputError):
    """Programs unfit for reward (no input generator, a tabulable class, or tests found
    inadequate) were about to be used for reward or training; the message names each, why,
    and how to allow them anyway."""


# ---------------------------------------------------------------------------- reports
@dataclass(frozen=True)
class Mutation:
    """One changed instruction: where (function, 1-based line of the .s) and what."""

    function: str
    line: int
    original: str
    mutated: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "line": self.line,
            "original": self.original,
            "mutated": self.mutated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Mutation:
        return cls(
            function=str(data["function"]),
            line=int(data["line"]),
            original=str(data["original"]),
            mutated=str(data["mutated"]),
        )

    def describe(self) -> str:
        before, after = " ".join(self.original.split()), " ".join(self.mutated.split())
        return f"{self.function}:{self.line} {before} -> {after}"


@dataclass
class AdequacyReport:
    """The outcome of one adequacy check.

    `probes` maps each trivial probe to its verdict; `survivors` are the mutants that passed
    every test. `error` is set when our side failed (sandbox, toolchain): such a report is
    no judgement of the tests and is never stored as a mark."""

    program_id: str
    fit: bool
    reasons: list[str] = field(default_factory=list)
    probes: dict[str, str] = field(default_factory=dict)
    mutants_killed: int = 0
    mutants_total: int = 0
    survivors: list[Mutation] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tests: int = 0
    program_hash: str = ""
    error: str = ""
    checked_with: str = ""
    # Survivors that never differed from the baseline on EQUIVALENCE_DRAWS drawn inputs
    # (not in `survivors`, not counted in the kill rate).
    equivalent: list[Mutation] = field(default_factory=list)
    # Mutation (`describe()`) -> the test that killed it: a fixed test's name or a drawn
    # one's (`class~i`, the i-th draw of that class), so the kill rate at a smaller K can
    # be read off one check (`kill_rate_at`).
    killed_by: dict[str, str] = field(default_factory=dict)
    # How the mutants' drawn inputs were drawn ({"seed", "per_class"}; empty: fixed only).
    fresh: dict[str, int] = field(default_factory=dict)

    @property
    def checked(self) -> bool:
        return not self.error

    @property
    def mutation_score(self) -> float | None:
        """killed / built."""
        return self.mutants_killed / self.mutants_total if self.mutants_total else None

    @property
    def mutants_equivalent(self) -> int:
        return len(self.equivalent)

    @property
    def kill_rate(self) -> float | None:
        """killed / (built - equivalent): the share of mutants that can be caught that
        were caught (None when every built mutant is equivalent, or none was built)."""
        judged = self.mutants_total - self.mutants_equivalent
        return self.mutants_killed / judged if judged > 0 else None

    def summary(self) -> str:
        """One line: FIT/UNFIT and why."""
        if self.error:
            return f"not checked: {self.error}"
        score = (
            f"mutants killed {self.mutants_killed}/{self.mutants_total}"
            if self.mutants_total
            else "no mutants"
        )
        if self.equivalent:
            score += f", {self.mutants_equivalent} {EQUIVALENT_NOTE}"
        if self.fit:
            return f"fit ({score})" + (f"; warning: {self.warnings[0]}" if self.warnings else "")
        return "unfit: " + "; ".join(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "program": self.program_id,
            "fit": self.fit,
            "reasons": list(self.reasons),
            "probes": dict(self.probes),
            "mutants_killed": self.mutants_killed,
            "mutants_total": self.mutants_total,
            "survivors": [m.to_dict() for m in self.survivors],
            "warnings": list(self.warnings),
            "seconds": round(self.seconds, 3),
            "tests": self.tests,
            "program_hash": self.program_hash,
        }
        if self.equivalent:
            out["equivalent"] = [m.to_dict() for m in self.equivalent]
        if self.killed_by:
            out["killed_by"] = dict(self.killed_by)
        if self.fresh:
            out["fresh"] = dict(self.fresh)
        if self.error:
            out["error"] = self.error
        if self.checked_with:
            out["checked_with"] = self.checked_with
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdequacyReport:
        if not isinstance(data, dict) or "fit" not in data or "program" not in data:
            raise InputError("an adequacy report needs at least 'program' and 'fit'")
        return cls(
            program_id=str(data["program"]),
            fit=bool(data["fit"]),
            reasons=[str(r) for r in data.get("reasons", [])],
            probes={str(k): str(v) for k, v in dict(data.get("probes", {})).items()},
            mutants_killed=int(data.get("mutants_killed", 0)),
            mutants_total=int(data.get("mutants_total", 0)),
            survivors=[Mutation.from_dict(m) for m in data.get("survivors", [])],
            warnings=[str(w) for w in data.get("warnings", [])],
            seconds=float(data.get("seconds", 0.0)),
            tests=int(data.get("tests", 0)),
            program_hash=str(data.get("program_hash", "")),
            error=str(data.get("error", "")),
            checked_with=str(data.get("checked_with", "")),
            equivalent=[Mutation.from_dict(m) for m in data.get("equivalent", [])],
            killed_by={str(k): str(v) for k, v in dict(data.get("killed_by", {})).items()},
            fresh={str(k): int(v) for k, v in dict(data.get("fresh", {})).items()},
        )

    def to_mark(self, toolchain_identity: str) -> dict[str, Any]:
        """The dict stored as `metadata.adequacy` in program.json."""
        if self.error:
            raise InputError(f"{self.program_id}: an unchecked report is not a mark ({self.error})")
        return {**self.to_dict(), "checked_with": toolchain_identity}


# ---------------------------------------------------------------------------- the mark
def read_mark(program: Program) -> AdequacyReport | None:
    """The stored report of `program`, or None when it has none (or an unreadable one)."""
    raw = program.meta.get(MARK_KEY)
    if raw is None:
        return None
    try:
        return AdequacyReport.from_dict(raw)
    except (ValueError, TypeError, KeyError):
        return None


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

    An adequacy mark that is missing, unreadable or stale (the source or tests changed
    since: `program_hash` differs) means "not checked" and does not make a program unfit:
    the generator rules above already refuse what a table could pass, and the mark is
    cheap to add with `asmopt suite verify --write-marks`."""
    if program.inputs is None:
        return False, (
            "fixed_inputs: it has no input generator, so every input that grades an answer "
            "is a fixed one and a memorised answer would be paid; give it inputs "
            "(`asmopt data import ... --mutator`, or an `inputs` spec in program.json: "
            "docs/suite_format.md)"
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
    mark = read_mark(program)
    if mark is None:
        return True, "not checked (the adequacy mark is unreadable)"
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


# ---------------------------------------------------------------------------- probes
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


def _same_as(name: str, probes: dict[str, str]) -> str:
    """The probe whose assembly `name` shares (see trivial_probes)."""
    if name in probes:
        return name
    if name == "print_nothing":
        return "return0"
    return "print_nothing" if "print_nothing" in probes else "return0"


# ---------------------------------------------------------------------------- mutants
_SIZE = "bwlq"
_ARITH: dict[str, str] = {
    "add": "sub",
    "sub": "add",
    "imul": "add",
    "xor": "or",
    "and": "or",
    "or": "and",
    "inc": "dec",
    "dec": "inc",
    "shl": "shr",
    "sal": "shr",
    "shr": "shl",
    "sar": "shr",
}
# SSE / AVX forms have no size suffix; a leading `v` (AVX) is kept.
_VECTOR: dict[str, str] = {
    "addsd": "subsd",
    "subsd": "addsd",
    "addss": "subss",
    "subss": "addss",
    "mulsd": "addsd",
    "mulss": "addss",
    "divsd": "mulsd",
    "divss": "mulss",
    "addpd": "subpd",
    "subpd": "addpd",
    "addps": "subps",
    "subps": "addps",
    "mulpd": "addpd",
    "mulps": "addps",
    "paddb": "psubb",
    "paddw": "psubw",
    "paddd": "psubd",
    "paddq": "psubq",
    "psubb": "paddb",
    "psubw": "paddw",
    "psubd": "paddd",
    "psubq": "paddq",
    "pmulld": "paddd",
    "pmullw": "paddw",
    "pxor": "por",
    "pand": "por",
}
_COND: dict[str, str] = {
    "e": "ne",
    "ne": "e",
    "z": "nz",
    "nz": "z",
    "l": "ge",
    "ge": "l",
    "g": "le",
    "le": "g",
    "b": "ae",
    "ae": "b",
    "a": "be",
    "be": "a",
    "s": "ns",
    "ns": "s",
    "nb": "b",
    "nae": "ae",
    "c": "nc",
    "nc": "c",
}
# Documented set of mutation operators (mnemonic family -> replacement).
MUTATIONS: dict[str, str] = {
    **{f"{k}[bwlq]": f"{v}[bwlq]" for k, v in _ARITH.items()},
    **{f"[v]{k}": f"[v]{v}" for k, v in _VECTOR.items()},
    **{f"j{k}": f"j{v}" for k, v in _COND.items()},
    **{f"set{k}": f"set{v}" for k, v in _COND.items()},
    **{f"cmov{k}": f"cmov{v}" for k, v in _COND.items()},
}
# With the same register twice these are idioms, not arithmetic: `xor %eax, %eax` zeroes
# (before a variadic call it only sets %al, which `or` leaves as harmlessly large),
# `pxor %xmm0, %xmm0` breaks a dependency before a conversion, `and`/`or` of a register with
# itself only sets flags. Mutating them gives equivalent mutants, so they are no sites.
_SELF_IDIOMS = {"xor", "sub", "and", "or", "pxor", "pand", "psubb", "psubw", "psubd", "psubq"}
_PREFIXES = {"lock", "rep", "repe", "repz", "repne", "repnz", "notrack", "bnd", "data16"}
_TYPE_RE = re.compile(r"^\s*\.type\s+([^,\s]+)\s*,\s*[@%]function")
_SIZE_RE = re.compile(r"^\s*\.size\s+([^,\s]+)\s*,")
_LABEL_RE = re.compile(r"^\s*([A-Za-z_.$][\w.$@]*):\s*$")


def mutate_mnemonic(mnemonic: str) -> str | None:
    """The mutated mnemonic, or None when `mnemonic` is not a mutation site."""
    m = mnemonic.lower()
    if m.startswith("j") and m[1:] in _COND:
        return "j" + _COND[m[1:]]
    if m.startswith("set") and m[3:] in _COND:
        return "set" + _COND[m[3:]]
    if m.startswith("cmov"):
        rest = m[4:]
        if rest in _COND:
            return "cmov" + _COND[rest]
        if rest[:-1] in _COND and rest[-1:] in _SIZE:
            return "cmov" + _COND[rest[:-1]] + rest[-1]
        return None
    if m in _VECTOR:
        return _VECTOR[m]
    if m.startswith("v") and m[1:] in _VECTOR:
        return "v" + _VECTOR[m[1:]]
    if m in _ARITH:
        return _ARITH[m]
    if m[:-1] in _ARITH and m[-1:] in _SIZE:
        return _ARITH[m[:-1]] + m[-1]
    return None


@dataclass(frozen=True)
class MutationSite:
    """A line inside a function body whose instruction has a mutation."""

    function: str
    index: int  # 0-based line index in the assembly text
    original: str
    mutated_line: str

    @property
    def mutation(self) -> Mutation:
        return Mutation(self.function, self.index + 1, self.original, self.mutated_line.strip())


def _instruction(line: str) -> str:
    """The instruction text of a line: comments removed, stripped."""
    return line.split("#", 1)[0].strip()


def function_bodies(assembly: str) -> list[tuple[str, int, int]]:
    """(name, first body line index, end index) for every function the .s defines.

    A function is a symbol declared `.type NAME, @function`; its body runs from the line
    after `NAME:` to its `.size NAME, ...` directive (gcc's layout, also for clones such
    as `main.cold` or `f.constprop.0`)."""
    lines = assembly.splitlines()
    declared: set[str] = set()
    open_fn: dict[str, int] = {}
    out: list[tuple[str, int, int]] = []
    for i, line in enumerate(lines):
        m = _TYPE_RE.match(line)
        if m:
            declared.add(m.group(1))
            continue
        m = _LABEL_RE.match(line)
        if m and m.group(1) in declared and m.group(1) not in open_fn:
            open_fn[m.group(1)] = i + 1
            continue
        m = _SIZE_RE.match(line)
        if m and m.group(1) in open_fn:
            out.append((m.group(1), open_fn.pop(m.group(1)), i))
    return out


def mutation_sites(assembly: str) -> list[MutationSite]:
    """Every mutable instruction inside a function body, in file order.

    Directives (lines starting with `.`), labels and prefixed instructions are never sites,
    and neither is anything that touches %rsp (stack adjustments crash at once, which says
    nothing about the tests) nor a register-with-itself idiom (`_SELF_IDIOMS`)."""
    lines = assembly.splitlines()
    sites: list[MutationSite] = []
    for name, start, end in function_bodies(assembly):
        for i in range(start, end):
            text = _instruction(lines[i])
            if not text or text.startswith(".") or _LABEL_RE.match(lines[i]):
                continue
            parts = text.split(None, 1)
            mnemonic = parts[0]
            if mnemonic.lower() in _PREFIXES or mnemonic.endswith(":"):
                continue
            if "%rsp" in text or "%esp" in text:
                continue
            new = mutate_mnemonic(mnemonic)
            if new is None or _self_idiom(mnemonic, parts[1] if len(parts) > 1 else ""):
                continue
            pos = lines[i].index(mnemonic)
            mutated = lines[i][:pos] + new + lines[i][pos + len(mnemonic) :]
            sites.append(MutationSite(name, i, text, mutated))
    return sites


def _self_idiom(mnemonic: str, operands: str) -> bool:
    ops = [o.strip() for o in operands.split(",")]
    if len(ops) != 2 or ops[0] != ops[1] or not ops[0].startswith("%"):
        return False
    m = mnemonic.lower().removeprefix("v")
    return m in _SELF_IDIOMS or (m[:-1] in _SELF_IDIOMS and m[-1:] in _SIZE)


def _site_key(site: MutationSite) -> str:
    return hashlib.sha256(f"{site.function}\0{site.index}\0{site.original}".encode()).hexdigest()


def ordered_sites(assembly: str) -> list[MutationSite]:
    """Mutation sites in the order they are tried: spread over the functions.

    Functions with more sites come first (that is where the work is); within a function the
    order is a hash of (function, line, text), so it is fixed for a given assembly yet not
    bunched at the top of a function; then one site per function in turn."""
    by_fn: dict[str, list[MutationSite]] = {}
    for site in mutation_sites(assembly):
        by_fn.setdefault(site.function, []).append(site)
    order = sorted(by_fn, key=lambda f: -len(by_fn[f]))  # stable: file order on ties
    queues = [sorted(by_fn[f], key=_site_key) for f in order]
    out: list[MutationSite] = []
    depth = 0
    while any(depth < len(q) for q in queues):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out


def apply_mutation(assembly: str, site: MutationSite) -> str:
    """`assembly` with exactly the line of `site` replaced."""
    lines = assembly.splitlines(keepends=True)
    ending = lines[site.index][len(lines[site.index].rstrip("\r\n")) :]
    lines[site.index] = site.mutated_line + ending
    return "".join(lines)


# ---------------------------------------------------------------------------- the check
class _Infra(Exception):
    """Our side failed during the check; the report becomes `error`."""


@dataclass(frozen=True)
class _Bench:
    """Where a program's probes and mutants are built and run."""

    program: Program
    toolchain: Toolchain
    sandbox: Sandbox


def _run(
    bench: _Bench,
    assembly: str,
    limits: Limits | None,
    what: str,
    stop_on_failure: bool = True,
    fresh: FreshInputs | None = None,
    label: object = 0,
) -> CheckResult:
    result = check_candidate(
        bench.program,
        assembly,
        bench.toolchain,
        bench.sandbox,
        limits,
        stop_on_failure=stop_on_failure,
        fresh=fresh if fresh is not None else FreshInputs.off(),
        label=label,
    )
    if result.verdict == Verdict.INFRA_ERROR:
        raise _Infra(f"{what}: {result.message}")
    return result


def _mutant_limits(base: Limits, baseline: CheckResult) -> Limits:
    slowest = max((t.user_time_s + t.sys_time_s for t in baseline.tests), default=0.0)
    cpu = min(base.cpu_seconds, max(MIN_MUTANT_CPU_S, math.ceil(MUTANT_TIME_FACTOR * slowest)))
    return replace(base, cpu_seconds=cpu, wall_seconds=min(base.wall_seconds, 2.0 * cpu + 3.0))


def check_adequacy(
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox | None = None,
    *,
    mutants: int = DEFAULT_MUTANTS,
    limits: Limits | None = None,
    seed: int | None = None,
    per_class: int = DEFAULT_PER_CLASS,
    equivalence_draws: int = EQUIVALENCE_DRAWS,
) -> AdequacyReport:
    """Run the probes and mutants of one program (see the module docstring for the rules).

    Mutants are judged on the fixed tests plus `per_class` inputs per size class drawn
    from `seed` (a fresh secret one when None), as `check_candidate` judges any answer;
    `per_class=0` judges them on the fixed tests alone. Survivors are checked for
    equivalence on `equivalence_draws` drawn inputs (0: not checked).

    Never raises for the program's sake; a failure of ours (sandbox, compiler) gives a
    report with `error` set."""
    start = time.monotonic()
    sandbox = sandbox or toolchain.sandbox
    limits = limits or sandbox.limits
    report = AdequacyReport(
        program_id=program.id,
        fit=False,
        tests=len(program.tests),
        program_hash=program.content_hash(),
    )
    fresh = FreshInputs(seed=new_seed() if seed is None else seed, per_class=per_class, timed=False)
    try:
        _check(program, toolchain, sandbox, mutants, limits, report, fresh, equivalence_draws)
    except (_Infra, ToolchainError) as exc:
        report.error = str(exc)
    except Exception as exc:  # a bug of ours: the tests are not to blame
        log.error("adequacy check of %s raised: %s", program.id, traceback.format_exc())
        report.error = f"checker error: {type(exc).__name__}: {exc}"
    if report.error:
        report.fit = False
        report.reasons = [f"not checked: {report.error}"]
    report.seconds = round(time.monotonic() - start, 3)
    return report


@dataclass
class _MutantTally:
    """The mutants built so far and what became of each (killed, survived, equivalent)."""

    built: list[Mutation] = field(default_factory=list)
    killed: int = 0
    survivors: list[Mutation] = field(default_factory=list)
    equivalent: list[Mutation] = field(default_factory=list)


# Why a trivial probe that passes every test makes the tests unfit.
_PROBE_EXPLANATIONS = {
    "return0": "a main that returns 0 at once passes every test",
    "print_nothing": "printing nothing (with the expected exit code) passes every test",
    "constant_output": "printing the first test's expected output for every input "
    "passes every test",
}


def _check(
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox,
    n_mutants: int,
    limits: Limits,
    report: AdequacyReport,
    fresh: FreshInputs,
    equivalence_draws: int,
) -> None:
    """Fill `report`: the tests' count, the trivial probes, then (with two tests or more
    and a baseline that passes) the mutants, and whether the program is fit."""
    if not program.tests:
        report.reasons.append(NO_TESTS_REASON)
        return
    # One fixed input is unfit by construction only where nothing else grades: with a
    # generator, every check also draws inputs, and those decide (the probes and mutants
    # below are judged on them).
    one_input = len(program.tests) == 1 and program.inputs is None
    if one_input:
        report.reasons.append(ONE_INPUT_REASON)
    bench = _Bench(program, toolchain, sandbox)
    _probe_trivial_answers(bench, limits, report, fresh)
    if one_input:
        report.warnings.append("mutants not run: one test is unfit by construction")
        return
    # The baseline must pass before mutants of it mean anything.
    baseline_asm = toolchain.baseline_assembly(program)
    baseline = _run(bench, baseline_asm, limits, "-O3 baseline", stop_on_failure=False)
    if not baseline.correct:
        report.reasons.append(
            f"the -O3 baseline fails its own tests ({baseline.verdict}: {baseline.message})"
        )
        return
    mlimits = _mutant_limits(limits, baseline)
    if program.inputs is not None and fresh.per_class > 0:
        report.fresh = {"seed": fresh.seed, "per_class": fresh.per_class}
    tally = _run_mutants(bench, baseline_asm, n_mutants, mlimits, fresh, equivalence_draws, report)
    _judge_mutants(tally, report)
    report.fit = not report.reasons


def _probe_trivial_answers(
    bench: _Bench, limits: Limits, report: AdequacyReport, fresh: FreshInputs
) -> None:
    """Run each trivial probe, judged like any answer (the fixed tests, then inputs drawn
    as `fresh` says); one that passes is a reason the tests are unfit (printing the
    expected output is not, where one fixed input is all that grades: that is already
    ONE_INPUT_REASON)."""
    program = bench.program
    probes = trivial_probes(program)
    graded_alone = len(program.tests) == 1 and program.inputs is None
    for name, asm in probes.items():
        result = _run(bench, asm, limits, name, fresh=fresh)
        report.probes[name] = str(result.verdict)
    for name in TRIVIAL_PROBES:
        if name not in probes:
            report.probes[name] = report.probes[_same_as(name, probes)]
    for name in probes:
        if report.probes[name] == str(Verdict.PASS) and not (
            graded_alone and name == "constant_output"
        ):
            report.reasons.append(f"{name}: {_PROBE_EXPLANATIONS[name]}")


def _run_mutants(
    bench: _Bench,
    baseline_asm: str,
    n_mutants: int,
    mlimits: Limits,
    fresh: FreshInputs,
    equivalence_draws: int,
    report: AdequacyReport,
) -> _MutantTally:
    """Build and judge up to `n_mutants` mutants of the baseline, site by site (a site
    whose mutant does not build gives way to the next); each kill's first failing test
    goes in `report.killed_by`."""
    tally = _MutantTally()
    for site in ordered_sites(baseline_asm):
        if len(tally.built) >= n_mutants:
            break
        mutation = site.mutation
        result = _run(
            bench,
            apply_mutation(baseline_asm, site),
            mlimits,
            f"mutant {mutation.describe()}",
            fresh=fresh,
            label=f"mutant {site.index}",
        )
        if result.verdict in (Verdict.ASSEMBLE_ERROR, Verdict.LINK_ERROR):
            continue  # not a program; the next site takes its place
        tally.built.append(mutation)
        if not result.correct:
            tally.killed += 1
            report.killed_by[mutation.describe()] = _first_kill(result)
        elif result.binary is not None and equivalent_on_draws(
            bench.program,
            result.binary,
            bench.toolchain,
            bench.sandbox,
            mlimits,
            fresh,
            site.index,
            equivalence_draws,
        ):
            tally.equivalent.append(mutation)
        else:
            tally.survivors.append(mutation)
    return tally


def _first_kill(result: CheckResult) -> str:
    """The failure needing the fewest draws per class: a fixed test, else the
    lowest-numbered draw (drawn verdicts come class by class)."""
    failed = [t.test for t in result.tests if t.verdict != Verdict.PASS]
    return min(failed, key=kill_depth) if failed else result.verdict.value


def _judge_mutants(tally: _MutantTally, report: AdequacyReport) -> None:
    """Record the mutants' counts and say what they show: survivors of at least half the
    non-equivalent mutants make the tests unfit, fewer are a warning."""
    built, survivors, equivalent = tally.built, tally.survivors, tally.equivalent
    report.mutants_total = len(built)
    report.mutants_killed = tally.killed
    report.survivors = survivors
    report.equivalent = equivalent
    judged = len(built) - len(equivalent)
    if equivalent:
        report.warnings.append(
            f"{len(equivalent)} of {len(built)} mutants {EQUIVALENT_NOTE} (not counted): "
            + "; ".join(m.describe() for m in equivalent)
        )
    if not built:
        report.warnings.append("no mutant could be built (no arithmetic or branch to change)")
    elif not judged:
        report.warnings.append("every mutant built is equivalent: the mutants judge nothing")
    elif 2 * len(survivors) >= judged:
        report.reasons.append(
            f"{len(survivors)} of {judged} non-equivalent mutants survive (at least half): "
            "the tests do not notice changed arithmetic or branches; survivors: "
            + "; ".join(m.describe() for m in survivors)
        )
    elif survivors:
        report.warnings.append(
            f"{len(survivors)} of {judged} non-equivalent mutants survive: "
            + "; ".join(m.describe() for m in survivors)
        )


def light_classes(program: Program) -> tuple[str, ...]:
    """The size classes whose inputs are cheap: all but the heavy ones (a class named in
    HEAVY_CLASSES, or one that a test listed in metadata `heavy_tests` stands for)."""
    if program.inputs is None:
        return ()
    heavy = set(HEAVY_CLASSES)
    for name in program.meta.get("heavy_tests", []) or []:
        klass = program.size_class(str(name))
        if klass is not None:
            heavy.add(klass)
    return tuple(c for c in program.inputs.class_names if c not in heavy)


def equivalent_on_draws(
    program: Program,
    binary: Any,
    toolchain: Toolchain,
    sandbox: Sandbox,
    limits: Limits,
    fresh: FreshInputs,
    site: int,
    draws: int,
) -> bool:
    """True when the surviving mutant agrees with the baseline on `draws` inputs drawn
    over the light classes (round robin): no input the program's generator can draw tells
    them apart, so it is taken as an equivalent mutant rather than a hole in the tests.
    Without a generator (or with draws = 0) a survivor is never called equivalent."""
    classes = light_classes(program)
    if not classes or draws <= 0 or program.inputs is None:
        return False
    inputs = [
        (
            klass,
            program.inputs.draw(
                klass, derive_seed(fresh.seed, program.id, "equivalence", site, klass, k)
            ),
        )
        for k in range(draws)
        for klass in (classes[k % len(classes)],)
    ]
    baseline = baseline_binary(program, toolchain)
    for start in range(0, len(inputs), 250):
        tests = expected_tests(program, baseline, sandbox, inputs[start : start + 250], limits)
        if not tests:
            continue
        result = check_binary(program, binary, sandbox, limits, tests=tests, stop_on_failure=True)
        if result.verdict == Verdict.INFRA_ERROR:
            raise _Infra(f"equivalence check: {result.message}")
        if not result.correct:
            return False
    return True


def check_programs(
    programs: Iterable[Program],
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int = 2,
    progress: bool = True,
    limits: Limits | None = None,
    mutants: int = DEFAULT_MUTANTS,
    seed: int | None = None,
    per_class: int = DEFAULT_PER_CLASS,
    equivalence_draws: int = EQUIVALENCE_DRAWS,
) -> list[AdequacyReport]:
    """`check_adequacy` over many programs in parallel; reports in program order. One
    seed (a fresh secret one when None) serves the whole check: each program's and each
    mutant's draws are labelled apart. Wide because it takes `check_adequacy`'s keyword
    options one for one, beside the parallel run's own (jobs, progress)."""
    programs = list(programs)
    seed = new_seed() if seed is None else seed

    def one(program: Program) -> AdequacyReport:
        return check_adequacy(
            program,
            toolchain,
            sandbox,
            mutants=mutants,
            limits=limits,
            seed=seed,
            per_class=per_class,
            equivalence_draws=equivalence_draws,
        )

    return parallel_map(one, programs, jobs=jobs, desc="adequacy", progress=progress)


def marked_program(program: Program, report: AdequacyReport, toolchain_identity: str) -> Program:
    """`program` with `report` as its adequacy mark (an unchecked report leaves it as is)."""
    if report.error:
        return program
    meta = dict(program.metadata)
    meta[MARK_KEY] = report.to_mark(toolchain_identity)
    return replace(program, metadata=tuple(sorted(meta.items())))


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den > 0 else None


def kill_depth(test_name: str) -> int:
    """How many drawn inputs per class a check needs to fail on `test_name`: 0 for a fixed
    test, i for the i-th draw of a class (`class~i`)."""
    _, sep, index = test_name.rpartition("~")
    return int(index) if sep and index.isdigit() else 0


def kill_rate_at(reports: Sequence[AdequacyReport], per_class: int) -> dict[str, Any]:
    """The suite's kill rate had the mutants been judged with `per_class` drawn inputs per
    class instead (no more than the reports used): a mutant counts as killed when the test
    that killed it is a fixed test or a draw numbered `per_class` or lower. Draws with the
    same seed and label are the same whatever K is, so this is exact for one seed."""
    killed = built = equivalent = 0
    for r in reports:
        if not r.checked:
            continue
        built += r.mutants_total
        equivalent += r.mutants_equivalent
        killed += sum(kill_depth(t) <= per_class for t in r.killed_by.values())
    return {
        "per_class": per_class,
        "killed": killed,
        "built": built,
        "equivalent": equivalent,
        "rate": _rate(killed, built),
        "rate_nonequivalent": _rate(killed, built - equivalent),
    }


def kill_rates(reports: Sequence[AdequacyReport]) -> dict[str, dict[str, Any]]:
    """Program id -> killed, built, equivalent, killed / built and killed / (built -
    equivalent), for every checked program that built mutants."""
    return {
        r.program_id: {
            "killed": r.mutants_killed,
            "built": r.mutants_total,
            "equivalent": r.mutants_equivalent,
            "rate": _rate(r.mutants_killed, r.mutants_total),
            "rate_nonequivalent": _rate(r.mutants_killed, r.mutants_total - r.mutants_equivalent),
        }
        for r in reports
        if r.checked and r.mutants_total
    }


def kill_rate_lines(reports: Sequence[AdequacyReport]) -> list[str]:
    """One line per program with mutants and a total line, for a human reader."""
    rates = kill_rates(reports)
    lines = []
    for pid, k in rates.items():
        eq = f", {k['equivalent']} equivalent" if k["equivalent"] else ""
        share = k["rate_nonequivalent"]
        shown = f"{100 * share:.0f}%" if share is not None else "-"
        lines.append(f"{pid}: {k['killed']}/{k['built'] - k['equivalent']} killed ({shown}){eq}")
    killed = sum(k["killed"] for k in rates.values())
    judged = sum(k["built"] - k["equivalent"] for k in rates.values())
    if judged:
        lines.append(
            f"total: {killed}/{judged} non-equivalent mutants killed ({100 * killed / judged:.1f}%)"
        )
    return lines


def summarize_reports(reports: Sequence[AdequacyReport]) -> dict[str, Any]:
    """Counts, the unfit and unchecked programs with their reasons, and the mutation kill
    rates per program and over all (for --json)."""
    checked = [r for r in reports if r.checked]
    killed = sum(r.mutants_killed for r in checked)
    built = sum(r.mutants_total for r in checked)
    equivalent = sum(r.mutants_equivalent for r in checked)
    return {
        "checked": len(checked),
        "fit": sum(r.fit for r in checked),
        "unfit": {r.program_id: r.reasons for r in checked if not r.fit},
        "not_checked": {r.program_id: r.error for r in reports if not r.checked},
        "warnings": {r.program_id: r.warnings for r in checked if r.warnings},
        "kill_rates": kill_rates(reports),
        "mutants": {
            "killed": killed,
            "built": built,
            "equivalent": equivalent,
            "rate": _rate(killed, built),
            "rate_nonequivalent": _rate(killed, built - equivalent),
        },
    }
