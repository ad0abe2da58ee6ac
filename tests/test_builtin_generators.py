"""The built-in suite's input generators: every program can draw fresh inputs of every size
class, every fixed test stands for a class, draws are reproducible from their seed, and
drawn inputs are ones the program accepts (its -O0 and -O3 builds agree on them).

A grading judges a candidate on inputs drawn from a secret seed (asmopt.fresh), with the
-O3 baseline's output as the expected one; a generator that drew inputs the program
refuses, or on which its builds disagree, would make that judgement meaningless.
`scripts/build_builtin_suite.py --check-generators N` is the full sweep (sanitizers, the
heavy class's cost); here is a sample that fits the default test run.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from asmopt.compare import compare_output
from asmopt.programs import load_builtin_suite
from asmopt.programs.generators import InputGenerator, derive_seed
from asmopt.programs.model import Program

CLASSES = ("edge", "small", "medium", "large", "heavy")
LIGHT = ("edge", "small", "medium", "large")
RUN_TIMEOUT_S = 60.0

SUITE = load_builtin_suite()
PROGRAMS = list(SUITE)


def _gen(program: Program) -> InputGenerator:
    assert program.inputs is not None, f"{program.id} has no input generator"
    return program.inputs


def test_every_builtin_program_has_a_generator_of_every_class() -> None:
    assert len(PROGRAMS) == 45
    for program in PROGRAMS:
        gen = _gen(program)
        assert gen.class_names == CLASSES, program.id
        assert not program.fixed_inputs


def test_every_fixed_test_stands_for_a_class() -> None:
    for program in PROGRAMS:
        heavy = set(program.meta.get("heavy_tests", []))
        assert heavy, program.id
        for test in program.tests:
            klass = program.size_class(test.name)
            assert klass in CLASSES, (program.id, test.name)
            assert (klass == "heavy") == (test.name in heavy), (program.id, test.name)
        assert program.size_class("t1") == program.size_class("t2") == "edge", program.id


@pytest.mark.slow  # seconds of real runs; make test-slow
def test_draws_are_deterministic_in_the_seed_and_differ_across_seeds() -> None:
    for program in PROGRAMS:
        gen = _gen(program)
        for klass in LIGHT:
            draws = [gen.draw(klass, derive_seed(7, program.id, klass, k)) for k in range(4)]
            again = [gen.draw(klass, derive_seed(7, program.id, klass, k)) for k in range(4)]
            assert draws == again, (program.id, klass)
            assert len(set(draws)) > 1, (program.id, klass)
        a, b = gen.draw("heavy", 1), gen.draw("heavy", 2)
        assert a == gen.draw("heavy", 1) and a != b, program.id


def test_the_generator_survives_program_json() -> None:
    """What the suite loads is what the build script wrote, keys in the order written
    (vars are drawn in that order), so a seed draws the same input after a round trip."""
    for program in PROGRAMS:
        gen = _gen(program)
        again = InputGenerator.from_dict(gen.to_dict())
        assert again.spec == gen.spec
        for klass in LIGHT:
            assert again.draw(klass, 99) == gen.draw(klass, 99), (program.id, klass)


def test_jacobi_heat_edge_class_draws_grid_sizes_5_and_6() -> None:
    """A known mutant of jacobi_heat (`jne` -> `je` in the vectorised stencil) prints a
    different answer only for n = 5 and 6, which no fixed test uses: drawn edge inputs
    must reach them, and both odd and even interior widths."""
    gen = _gen(SUITE.get("jacobi_heat"))
    sizes = {int(gen.draw("edge", seed).split()[0]) for seed in range(200)}
    assert {5, 6} <= sizes
    assert min(sizes) == 3


# ---------------------------------------------------------------------------- runs
def _compile(program: Program, out: Path, opt: str) -> Path:
    src = out.with_suffix(".c")
    src.write_text(program.source)
    exe = out.with_name(f"{out.name}{opt}")
    subprocess.run(
        ["gcc", opt, "-o", str(exe), str(src), *program.ldflags],
        check=True,
        capture_output=True,
    )
    return exe


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, Path]]]:
    """Every built-in program at -O0 and -O3, built once (in parallel)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc not found")
    work = tmp_path_factory.mktemp("generators")

    def build(program: Program) -> tuple[str, tuple[Path, Path]]:
        base = work / program.id
        return program.id, (_compile(program, base, "-O0"), _compile(program, base, "-O3"))

    with ThreadPoolExecutor(max_workers=4) as pool:
        yield dict(pool.map(build, PROGRAMS))


def _agree(program: Program, exes: tuple[Path, Path], stdin: bytes, where: str) -> None:
    outs = []
    for exe in exes:
        proc = subprocess.run([str(exe)], input=stdin, capture_output=True,
                              timeout=RUN_TIMEOUT_S)
        assert proc.returncode == 0, f"{where} ({exe.name}): exit {proc.returncode}"
        assert not proc.stderr, f"{where} ({exe.name}): {proc.stderr[:200]!r}"
        outs.append(proc.stdout)
    assert outs[0].strip() and not outs[0].startswith(b"bad "), f"{where}: {outs[0][:60]!r}"
    diff = compare_output(outs[0], outs[1], program.tests[0].compare)
    assert diff is None, f"{where}: -O3 differs from -O0: {diff}"


def _check_sample(builds: dict[str, tuple[Path, Path]], classes: tuple[str, ...], draws: int,
                  secret: int) -> None:
    jobs = [
        (program, klass, derive_seed(secret, program.id, klass, k))
        for program in PROGRAMS
        for klass in classes
        for k in range(draws)
    ]

    def one(job: tuple[Program, str, int]) -> None:
        program, klass, seed = job
        stdin = _gen(program).draw(klass, seed)
        _agree(program, builds[program.id], stdin, f"{program.id} {klass} seed {seed}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, jobs))


@pytest.mark.slow  # seconds of real runs; make test-slow
def test_drawn_light_inputs_are_accepted_and_builds_agree(builds) -> None:
    """Two draws of every light class of every program: exit 0, no stderr, no refusal,
    and -O0 and -O3 print the same (by the program's comparison)."""
    _check_sample(builds, LIGHT, 2, secret=20240611)


@pytest.mark.slow
def test_many_drawn_inputs_of_every_class_are_accepted(builds) -> None:
    """The longer sweep: ten draws of every light class and two heavy ones (the heavy
    class's cost is checked by the build script, which times it against the heavy test)."""
    _check_sample(builds, LIGHT, 10, secret=77)
    _check_sample(builds, ("heavy",), 2, secret=78)
