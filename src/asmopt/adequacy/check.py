"""The adequacy check of one program or many: the trivial probes and the mutants built in
the toolchain sandbox and judged by `evaluate.check_candidate` as any answer is (the fixed
tests, then inputs drawn from a secret seed), each survivor checked for equivalence on
drawn inputs, and the verdict that fills an `AdequacyReport` (the rules: the package's
docstring, asmopt/adequacy/__init__.py).
"""

from __future__ import annotations

import logging
import math
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from asmopt.adequacy.mutants import apply_mutation, ordered_sites
from asmopt.adequacy.probes import TRIVIAL_PROBES, same_as, trivial_probes
from asmopt.adequacy.report import EQUIVALENCE_DRAWS, EQUIVALENT_NOTE, AdequacyReport, Mutation
from asmopt.adequacy.summary import kill_depth
from asmopt.evaluate import CheckResult, baseline_binary, check_binary, check_candidate
from asmopt.fresh import DEFAULT_PER_CLASS, FreshInputs, expected_tests, new_seed
from asmopt.judge import Verdict
from asmopt.parallel import parallel_map
from asmopt.programs.generators import derive_seed
from asmopt.programs.model import Program
from asmopt.sandbox.records import Limits
from asmopt.sandbox.runner import Sandbox
from asmopt.toolchain import Toolchain, ToolchainError
from asmopt.typed_config import Renamed, renamed_keywords

log = logging.getLogger(__name__)

DEFAULT_MUTANTS = 6
# A mutant's CPU limit: this many times the baseline's slowest test (at least
# MIN_MUTANT_CPU_S). A mutant that loops forever is killed quickly; a correct but slower one
# still finishes.
MUTANT_TIME_FACTOR = 10
MIN_MUTANT_CPU_S = 2
ONE_INPUT_REASON = "one fixed input: printing the constant answer passes"
# Size classes never used for the equivalence check: their inputs cost what a timed run
# costs, and 1,000 of them would take minutes per survivor.
HEAVY_CLASSES = ("heavy",)
NO_TESTS_REASON = "no tests: every program passes"


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


# Keyword arguments that were renamed: `seed=` is refused naming the new one.
RENAMED_KEYWORDS: Renamed = {
    "seed": (
        "input_seed",
        "the secret seed the mutants' inputs are drawn from; the mutants themselves are "
        "not drawn",
    ),
}


@renamed_keywords(RENAMED_KEYWORDS)
def check_adequacy(
    program: Program,
    toolchain: Toolchain,
    sandbox: Sandbox | None = None,
    *,
    mutants: int = DEFAULT_MUTANTS,
    limits: Limits | None = None,
    input_seed: int | None = None,
    per_class: int = DEFAULT_PER_CLASS,
    equivalence_draws: int = EQUIVALENCE_DRAWS,
) -> AdequacyReport:
    """Run the probes and mutants of one program (see the package docstring for the rules).

    Mutants are judged on the fixed tests plus `per_class` inputs per size class drawn
    from `input_seed` (a fresh secret one when None), as `check_candidate` judges any answer;
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
    seed = new_seed() if input_seed is None else input_seed
    fresh = FreshInputs(seed=seed, per_class=per_class, timed=False)
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
        report.probes[name] = result.verdict
    for name in TRIVIAL_PROBES:
        if name not in probes:
            report.probes[name] = report.probes[same_as(name, probes)]
    for name in probes:
        if report.probes[name] == Verdict.PASS and not (
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


@renamed_keywords(RENAMED_KEYWORDS)
def check_programs(
    programs: Iterable[Program],
    toolchain: Toolchain,
    sandbox: Sandbox,
    *,
    jobs: int = 2,
    progress: bool = True,
    limits: Limits | None = None,
    mutants: int = DEFAULT_MUTANTS,
    input_seed: int | None = None,
    per_class: int = DEFAULT_PER_CLASS,
    equivalence_draws: int = EQUIVALENCE_DRAWS,
) -> list[AdequacyReport]:
    """`check_adequacy` over many programs in parallel; reports in program order. One
    input seed (a fresh secret one when None) serves the whole check: each program's and each
    mutant's draws are labelled apart. Wide because it takes `check_adequacy`'s keyword
    options one for one, beside the parallel run's own (jobs, progress)."""
    programs = list(programs)
    input_seed = new_seed() if input_seed is None else input_seed

    def one(program: Program) -> AdequacyReport:
        return check_adequacy(
            program,
            toolchain,
            sandbox,
            mutants=mutants,
            limits=limits,
            input_seed=input_seed,
            per_class=per_class,
            equivalence_draws=equivalence_draws,
        )

    return parallel_map(one, programs, jobs=jobs, desc="adequacy", progress=progress)
