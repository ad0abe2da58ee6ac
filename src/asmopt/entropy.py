"""No answer can be precomputed: is every graded input of a program unknowable in advance?

Fresh inputs (fresh.py) make a run's input unpredictable, but not its *answer*: where a
class draws one small number (`n` in 0..2700), a candidate can carry the answer for every
value it can draw, or checkpoints of a running computation every few thousand values, and
be correct on every input while doing none of the work. The design rule (docs/sandbox.md,
"No answer can be precomputed"): every input that grades a candidate carries enough drawn
information that the answers for all the inputs it could be cannot fit in any candidate,
and the output depends on that information. Two measures of each timed class (a class a
fixed test stands for, so its draws are checked and timed):

* **declared entropy**: a lower bound on the min-entropy of one input, computed from the
  generator's spec (`InputGenerator.entropy_bits`, no run needed). Below
  `MIN_ENTROPY_BITS` a table of the likeliest inputs' answers covers a share of the draws
  that a binary of a few megabytes can hold;
* **measured dependence**: over `DRAWS` draws the baseline's outputs must all be distinct
  (an output collision means the answer space is smaller than the input space: a prefix
  of the work is shared, or a field is ignored), and changing any single drawn field (for
  a 64-bit field, also only its high half; for a string, only its second half) must
  change the output in most draws.

A class that fails either is *tabulable*, and a program with a tabulable timed class is
unfit for reward (`adequacy.is_reward_fit` reads the declared bound at once and a stored
measurement from `metadata.entropy`); an evaluation still runs it and marks it.
"""

from __future__ import annotations

import math
import secrets
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from asmopt.errors import InputError
from asmopt.evaluate import baseline_binary
from asmopt.fresh import DEFAULT_PER_CLASS
from asmopt.programs.generators import derive_seed
from asmopt.programs.model import Program
from asmopt.sample_limits import ATTACKS, SampleLimits, bend
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import MAX_INPUTS, Sandbox
from asmopt.toolchain import Toolchain

# 2^64 inputs: no table of their answers fits in any binary, and a table of 2^k of them
# (k = 24 is a 16 M-entry table, far past the completion cap) covers 2^(k-64) of the draws.
MIN_ENTROPY_BITS = 64.0
# Draws per class whose baseline outputs must be pairwise distinct. With 64 bits of
# output-relevant entropy a collision among 256 draws has probability about 2^-49; one seen
# means the answer space is tiny (or a field is ignored), not bad luck.
DRAWS = 256
# Draws per field in the dependence check, and the share of them in which changing the
# field must change the output ("most draws": a field may matter only in some draws, e.g.
# a bound that a short list never reaches, but a field that matters in fewer than half
# carries too little of the answer to count as its data).
FIELD_DRAWS = 16
FIELD_MIN_SHARE = 0.5
MARK_KEY = "entropy"
# The most a constant answer per class (or a memorised one with a constant default) may pass
# one grading with: a training run grades about 10^5 answers, so such an answer would pass
# about 0.1 gradings in a whole run.
MAX_DEFAULT_PASS = 1e-6
# The most drawn inputs per class a grading may be raised to for a program whose outputs
# repeat (a sum over a long list has a few hundred values, a yes/no answer two): the
# checks' drawn runs then cost up to 4x the default's.
MAX_PER_CLASS = 8
# The most an answer right only inside the samples' limits (asmopt.sample_limits) may pass
# one grading with: what DRAWS draws can show at the default drawn inputs per class. A
# class whose changed draws never matched bounds it at 1.4e-4 with two draws; the attacks
# that pass at real rates (14 or 29 of 32 changed draws on imported programs) stay far
# above it at any K; showing MAX_DEFAULT_PASS at K = 2 would take about 3,000 draws a class.
MAX_ATTACK_PASS = 1e-3
# What each answer right only inside the samples' limits assumes (asmopt.sample_limits).
ATTACK_WHAT = {
    "range": "values clamped to the samples' range",
    "prefix": "words cut to the samples' longest",
    "size": "input cut to the largest sample's tokens",
}


@dataclass
class ClassEntropy:
    """The two measures of one size class."""

    size_class: str
    declared_bits: float
    draws: int = 0  # draws the baseline accepted
    distinct: int = 0  # distinct (stdout, exit) among them
    refused: int = 0  # draws the baseline did not accept (non-zero exit, crash, timeout)
    top_count: int = 0  # draws that gave the most common output
    # field -> share of draws in which changing it changed the output; `name^hi` is the
    # high half of a 64-bit field, or the second half of a string.
    fields: dict[str, float] = field(default_factory=dict)
    # The declared bits without the fields that changed the output in under FIELD_MIN_SHARE
    # of draws (the half's bits less for a 64-bit field or a string whose high or second
    # half did not matter, `InputGenerator.half_bits`); None in
    # measurements made before it was kept.
    effective_bits: float | None = None
    # attack -> [draws the bend changed, of those the draws whose output it still got
    # right] (asmopt.sample_limits; a learnt generator's classes only, empty otherwise).
    attacks: dict[str, list[int]] = field(default_factory=dict)

    def weak_fields(self) -> list[str]:
        return sorted(name for name, share in self.fields.items() if share < FIELD_MIN_SHARE)

    @property
    def collisions(self) -> int:
        return self.draws - self.distinct

    def top_share_bound(self) -> float:
        """A one-sided 95% upper bound on the probability of the class's most common
        output (Clopper-Pearson on `top_count` of `draws`): what a constant answer, or a
        memorised default for inputs it has not seen, passes one draw with at most."""
        return binomial_upper_bound(self.top_count, self.draws) if self.draws else 1.0

    def attack_match_bound(self, kind: str) -> float:
        """A one-sided 95% upper bound on the probability that an answer right only inside
        the samples' `kind` limits gets one draw of this class right (a draw it leaves
        alone by right); 1 where the attack was not measured."""
        if kind not in self.attacks or not self.draws:
            return 1.0
        changed, matched = self.attacks[kind]
        return binomial_upper_bound(self.draws - changed + matched, self.draws)

    def problems(self, collisions_count: bool = True) -> list[str]:
        """Why this class is tabulable (empty: it is not). `collisions_count`: whether an
        output collision alone makes it so (see `EntropyReport.problems`)."""
        out = []
        if self.declared_bits < MIN_ENTROPY_BITS:
            out.append(
                f"{self.size_class}: {bits_text(self.declared_bits)} bits of declared entropy "
                f"(< {MIN_ENTROPY_BITS:g})"
            )
        if self.collisions and collisions_count:
            out.append(
                f"{self.size_class}: {self.collisions} output collision(s) in {self.draws} draws"
            )
        if collisions_count or self.effective_bits is None:
            for name in self.weak_fields():
                out.append(
                    f"{self.size_class}: changing {name} changed the output in only "
                    f"{self.fields[name]:.0%} of draws"
                )
        elif self.effective_bits < MIN_ENTROPY_BITS:
            left = bits_text(self.effective_bits)
            out.append(
                f"{self.size_class}: {left} bits once the fields the output "
                f"rarely depends on ({', '.join(self.weak_fields())}) are left out "
                f"(< {MIN_ENTROPY_BITS:g})"
            )
        return out


@dataclass
class EntropyReport:
    """The measures of every timed class of one program."""

    program_id: str
    program_hash: str
    classes: list[ClassEntropy] = field(default_factory=list)
    draws: int = DRAWS
    origin: str = "declared"  # the generator's: declared (a suite's spec) or learnt
    # Basic blocks the fixed tests and the draws reach (measure/coverage.py: `fixed`,
    # `drawn`, `missed`, `draws`), for a learnt generator; None where not measured.
    coverage: dict[str, int] | None = None
    # The output measures of the classes no fixed test stands for (checking classes,
    # data/checking_classes.py): every grading draws them too, so a constant answer must
    # pass them as well; their entropy and fields are not the table rule's business.
    checking: list[ClassEntropy] = field(default_factory=list)

    @property
    def tabulable(self) -> bool:
        return bool(self.problems())

    def problems(self) -> list[str]:
        """Why the program is tabulable (empty: it is not).

        A declared generator's outputs must not collide and each of its fields must
        matter in most draws: its author controls the program and can make the output
        carry the data (a hash of the results), and a collision means the answer depends
        on the input only through something small, which a table can be keyed by. A
        learnt generator's program prints what its problem asks (a sum, the largest value,
        `YES`), whose values repeat and which one element of a list rarely changes; there
        the rules are the ones these endanger: no constant answer per class may pass a
        grading with probability over MAX_DEFAULT_PASS at the drawn inputs per class the
        grading uses, raised up to MAX_PER_CLASS where needed (`required_per_class`), and
        the fields the output does depend on must carry MIN_ENTROPY_BITS by themselves."""
        strict = self.origin != "learnt"
        out = [p for c in self.classes for p in c.problems(collisions_count=strict)]
        cov = self.coverage
        if cov is not None and cov.get("drawn", 0) < cov.get("fixed", 0):
            out.append(
                f"the drawn inputs reach {cov['drawn']} basic blocks, fewer than the fixed "
                f"tests' {cov['fixed']} (they test less than the samples do)"
            )
        if self.classes and self.required_per_class() is None:
            if self.default_pass_bound(MAX_PER_CLASS) > MAX_DEFAULT_PASS:
                out.append(
                    "a constant answer per class passes one grading with probability up to "
                    f"{self.default_pass_bound(MAX_PER_CLASS):.1e} even at {MAX_PER_CLASS} "
                    f"drawn inputs per class (> {MAX_DEFAULT_PASS:g})"
                )
            for kind in ATTACKS:
                bound = self.attack_pass_bound(kind, MAX_PER_CLASS)
                if bound > MAX_ATTACK_PASS:
                    out.append(
                        f"an answer right only inside the samples' limits ({kind}: "
                        f"{ATTACK_WHAT[kind]}) passes one grading with probability up to "
                        f"{bound:.1e} even at {MAX_PER_CLASS} drawn inputs per class "
                        f"(> {MAX_ATTACK_PASS:g})"
                    )
        return out

    def class_problems(self) -> dict[str, str]:
        """Class -> why it is tabulable by itself, for the classes that are (the program's
        own rule on a constant answer, over all classes together, is not in it)."""
        strict = self.origin != "learnt"
        out = {c.size_class: "; ".join(c.problems(collisions_count=strict)) for c in self.classes}
        return {k: why for k, why in out.items() if why}

    def required_per_class(self) -> int | None:
        """The fewest drawn inputs per class (at least the default) at which a constant
        answer passes one grading with probability at most MAX_DEFAULT_PASS, and an answer
        right only inside the samples' limits at most MAX_ATTACK_PASS, or None when even
        MAX_PER_CLASS is not enough."""
        for k in range(DEFAULT_PER_CLASS, MAX_PER_CLASS + 1):
            if self.default_pass_bound(k) <= MAX_DEFAULT_PASS and all(
                self.attack_pass_bound(kind, k) <= MAX_ATTACK_PASS for kind in ATTACKS
            ):
                return k
        return None

    def attack_pass_bound(self, kind: str, per_class: int = DEFAULT_PER_CLASS) -> float:
        """An upper bound on the probability that an answer right only inside the
        samples' `kind` limits (asmopt.sample_limits) passes one grading that draws
        `per_class` inputs of every class; 0 where no class measured it (a declared
        generator's program, a measurement made before it was kept), where it changed no
        draw (the samples already reach the limits the draws keep to), or where it changed
        no output of the draws it changed (the program's answers ignore what it bends: a
        threshold the clamp stays past, letters no answer reads). There the answer is the
        program on every draw, and wrong on no input the draws show; one that the bend
        makes wrong on some draws and right on most is a gap in the draws."""
        measured = [c for c in [*self.classes, *self.checking] if kind in c.attacks]
        if all(c.attacks[kind][1] == c.attacks[kind][0] for c in measured):
            return 0.0
        bound = 1.0
        for c in measured:
            bound *= c.attack_match_bound(kind) ** per_class
        return bound

    def default_pass_bound(self, per_class: int = DEFAULT_PER_CLASS) -> float:
        """An upper bound on the probability that a constant answer per class (the
        likeliest output of each; a candidate can tell the classes apart by size) passes
        one grading that draws `per_class` inputs of every class, timed or checking."""
        bound = 1.0
        for c in [*self.classes, *self.checking]:
            bound *= c.top_share_bound() ** per_class
        return bound

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program_id,
            "program_hash": self.program_hash,
            "draws": self.draws,
            "origin": self.origin,
            "tabulable": self.tabulable,
            # What a grading draws per class at least (asmopt.fresh reads it).
            "per_class": self.required_per_class(),
            "classes": [asdict(c) for c in self.classes],
            "coverage": self.coverage,
            "checking": [asdict(c) for c in self.checking],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EntropyReport:
        return cls(
            program_id=str(data["program"]),
            program_hash=str(data.get("program_hash", "")),
            classes=[ClassEntropy(**c) for c in data.get("classes", [])],
            draws=int(data.get("draws", DRAWS)),
            origin=str(data.get("origin", "declared")),
            coverage=data.get("coverage") if isinstance(data.get("coverage"), dict) else None,
            checking=[ClassEntropy(**c) for c in data.get("checking", [])],
        )


def bits_text(bits: float) -> str:
    """Bits to one decimal, rounded down: 63.99 bits is short of 64, and reads `63.9`."""
    return f"{math.floor(bits * 10) / 10:.1f}"


def binomial_upper_bound(successes: int, trials: int, alpha: float = 0.05) -> float:
    """The Clopper-Pearson one-sided upper bound q: the largest success probability under
    which seeing at most `successes` in `trials` still has probability at least `alpha`
    (found by bisection on the binomial CDF, which falls as q grows)."""
    if successes >= trials:
        return 1.0

    def cdf(q: float) -> float:
        return sum(
            math.comb(trials, i) * q**i * (1.0 - q) ** (trials - i) for i in range(successes + 1)
        )

    lo, hi = successes / trials, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) > alpha else (lo, mid)
    return hi


def timed_classes(program: Program) -> tuple[str, ...]:
    """The classes a fixed test stands for: each grading checks them and times them."""
    if program.inputs is None:
        return ()
    named = {klass for _, klass in program.inputs.tests}
    return tuple(c for c in program.inputs.class_names if c in named)


def declared_problems(program: Program) -> list[str]:
    """The timed classes whose declared entropy is below the bound (no run needed)."""
    if program.inputs is None:
        return []
    out = []
    for size_class in timed_classes(program):
        bits = program.inputs.entropy_bits(size_class)
        if bits < MIN_ENTROPY_BITS:
            out.append(
                f"{size_class}: {bits_text(bits)} bits of declared entropy (< {MIN_ENTROPY_BITS:g})"
            )
    return out


def declared_class_problems(program: Program) -> dict[str, str]:
    """Class -> its declared-entropy problem, for the timed classes below the bound."""
    if program.inputs is None:
        return {}
    return {p.split(": ", 1)[0]: p for p in declared_problems(program)}


def read_mark(program: Program) -> EntropyReport | None:
    """The stored measurement of `program` if it is for the program as it is now."""
    if not isinstance(program.meta.get(MARK_KEY), dict):
        return None
    try:
        report = _parse_mark(program)
    except (KeyError, TypeError, ValueError):
        return None
    return report if report.program_hash == program.content_hash() else None


def _parse_mark(program: Program) -> EntropyReport:
    """The stored measurement of `program` (its mark must be a mapping); raises when it
    cannot be read."""
    return EntropyReport.from_dict(program.meta[MARK_KEY])


def unreadable_mark(program: Program) -> str | None:
    """Why the stored measurement of `program` cannot be read, or None (no mark, or one
    that reads). A mark that is there but corrupt may have found problems, so the fitness
    rule refuses it rather than reading it as absent."""
    if MARK_KEY not in program.meta:
        return None
    raw = program.meta[MARK_KEY]
    if not isinstance(raw, dict):
        return f"the entropy mark is a {type(raw).__name__}, not a mapping"
    try:
        _parse_mark(program)
    except (KeyError, TypeError, ValueError) as exc:
        return f"the entropy mark cannot be read ({exc})"
    return None


def _outputs(
    program: Program, baseline: Any, sandbox: Sandbox, inputs: Sequence[bytes], limits: Limits
) -> list[tuple[bytes, int] | None]:
    """The baseline's (stdout, exit code) on each input; None where it did not end cleanly
    (a crash, a timeout, an output cap): such an input is not one the program accepts."""
    out: list[tuple[bytes, int] | None] = []
    for start in range(0, len(inputs), MAX_INPUTS):
        chunk = list(inputs[start : start + MAX_INPUTS])
        result = sandbox.run_binaries(
            [baseline],
            [0] * len(chunk),
            stdin=chunk,
            feed=list(range(len(chunk))),
            limits=limits,
            marker=secrets.token_hex(16),
        )
        if result.infra_error:
            raise RuntimeError(f"the baseline's sandbox failed: {result.infra_error}")
        runs = result.each_run()[: len(chunk)]
        for run in runs:
            clean = run.signal is None and not run.timed_out and not run.stdout_truncated
            clean = clean and run.exit_code is not None and run.exec_error is None
            out.append((run.stdout, int(run.exit_code or 0)) if clean else None)
        out += [None] * (len(chunk) - len(runs))
    return out


def _measure_outputs(
    program: Program,
    size_class: str,
    baseline: Any,
    sandbox: Sandbox,
    limits: Limits,
    *,
    draws: int,
    input_seed: int,
) -> tuple[ClassEntropy, list[int], list[tuple[bytes, int] | None]]:
    """The output measures of one class over `draws` draws (distinct outputs, the most
    common one's count, and for a learnt generator the answers right only inside its
    samples' limits), with the draws' seeds and outputs."""
    gen = program.inputs
    assert gen is not None
    report = ClassEntropy(size_class, gen.entropy_bits(size_class))
    seeds = [derive_seed(input_seed, program.id, "entropy", size_class, k) for k in range(draws)]
    inputs = [gen.draw(size_class, s) for s in seeds]
    outputs = _outputs(program, baseline, sandbox, inputs, limits)
    accepted = [o for o in outputs if o is not None]
    report.draws, report.refused = len(accepted), len(outputs) - len(accepted)
    report.distinct = len(set(accepted))
    report.top_count = max(Counter(accepted).values(), default=0)
    if gen.origin == "learnt":
        # A learnt generator's fixed tests are samples of a contract it guessed: whether its
        # draws reach past them is measured (a suite's own generator is written with its
        # tests, and its classes are sized as they are on purpose).
        sample = SampleLimits.of([t.stdin for t in program.tests])
        report.attacks = _attack_counts(program, baseline, sandbox, limits, inputs, outputs, sample)
    return report, seeds, outputs


def _attack_counts(
    program: Program,
    baseline: Any,
    sandbox: Sandbox,
    limits: Limits,
    inputs: Sequence[bytes],
    outputs: Sequence[tuple[bytes, int] | None],
    sample: SampleLimits,
) -> dict[str, list[int]]:
    """Per attack (asmopt.sample_limits): [the accepted draws its bend changes, those of
    them on whose bent copy the baseline still gives its output on the original]. Such an
    answer's output is the program's on the bent input, so only the baseline runs."""
    found: dict[str, list[int]] = {}
    for kind in ATTACKS:
        todo = []
        for k, (data, out) in enumerate(zip(inputs, outputs, strict=True)):
            bent = bend(data, kind, sample)
            if out is not None and bent != data:
                todo.append((k, bent))
        got = _outputs(program, baseline, sandbox, [b for _, b in todo], limits) if todo else []
        matched = sum(1 for (k, _), out in zip(todo, got, strict=True) if out == outputs[k])
        found[kind] = [len(todo), matched]
    return found


def measure_class(
    program: Program,
    size_class: str,
    baseline: Any,
    sandbox: Sandbox,
    limits: Limits,
    *,
    draws: int = DRAWS,
    field_draws: int = FIELD_DRAWS,
    input_seed: int = 0,
) -> ClassEntropy:
    """Both measures of one class: `draws` draws for distinct outputs, then `field_draws`
    of them with each field drawn again (and the high half of each 64-bit field, the
    second half of each string)."""
    gen = program.inputs
    if gen is None:
        raise InputError(f"program {program.id!r} has fixed inputs only")
    report, seeds, outputs = _measure_outputs(
        program, size_class, baseline, sandbox, limits, draws=draws, input_seed=input_seed
    )
    base = [(s, o) for s, o in zip(seeds, outputs, strict=True) if o is not None][:field_draws]
    variants = [(name, False) for name in gen.fields(size_class)]
    variants += [(name, True) for name in gen.wide_fields(size_class)]
    tally: dict[tuple[str, bool], list[int]] = {v: [0, 0] for v in variants}
    # Two halves: a field whose first half of the draws all changed the output already
    # changes it in at least half of them all (FIELD_MIN_SHARE), so only the others are
    # drawn again; a program of hundreds of fields that all matter costs half the runs.
    half = (len(base) + 1) // 2
    for start, stop in ((0, half), (half, len(base))):
        todo = [v for v in variants if not (half and tally[v] == [half, half])]
        changed_inputs, owners = [], []
        for name, high in todo:
            for k, (s, _) in enumerate(base[start:stop], start=start):
                other = derive_seed(
                    input_seed, program.id, "entropy-field", size_class, name, high, k
                )
                changed_inputs.append(gen.draw_changed(size_class, s, name, other, high))
                owners.append((name, high, k))
        changed = _outputs(program, baseline, sandbox, changed_inputs, limits)
        for (name, high, k), out in zip(owners, changed, strict=True):
            hit = tally[(name, high)]
            hit[1] += 1
            hit[0] += int(out != base[k][1])  # refused (None) counts as changed
    report.fields = {
        f"{name}^hi" if high else name: round(n / d, 4)
        for (name, high), (n, d) in tally.items()
        if d
    }
    weak = report.weak_fields()
    whole = frozenset(w for w in weak if not w.endswith("^hi"))
    halves = sum(
        gen.half_bits(size_class, w[:-3])
        for w in weak
        if w.endswith("^hi") and w[:-3] not in whole
    )
    report.effective_bits = max(0.0, gen.entropy_bits(size_class, without=whole) - halves)
    return report


def measure_entropy(
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    draws: int = DRAWS,
    field_draws: int = FIELD_DRAWS,
    limits: Limits | None = None,
    input_seed: int = 0,
) -> EntropyReport:
    """Measure every timed class of `program` with its -O3 baseline (the program's own
    output is what a table would have to hold). Deterministic in `input_seed`, the seed its
    inputs are drawn from."""
    if draws < 2 or field_draws < 1:
        raise InputError("entropy draws must be at least 2 and field draws at least 1")
    limits = limits or sandbox.limits
    report = EntropyReport(program.id, program.content_hash(), draws=draws)
    if program.inputs is None:
        return report
    report.origin = program.inputs.origin
    baseline = baseline_binary(program, toolchain)
    timed = timed_classes(program)
    for size_class in timed:
        report.classes.append(
            measure_class(
                program, size_class, baseline, sandbox, limits,
                draws=draws, field_draws=field_draws, input_seed=input_seed,
            )
        )
    for size_class in program.inputs.class_names:
        if size_class not in timed:
            measured, _, _ = _measure_outputs(
                program, size_class, baseline, sandbox, limits,
                draws=draws, input_seed=input_seed,
            )
            report.checking.append(measured)
    return report
