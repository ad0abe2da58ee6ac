"""Import the plain layout: bring your own C programs with a directory per problem.

```
POOL/
  NAME/                    one problem
    NAME.c                 a solution (any *.c name; several .c files = several solutions
                           to the same problem, sharing its tests)
    util.h                 headers beside the sources, included with quotes
    tests/T.in, tests/T.out
                           test stdin and expected stdout, paired by name
```

Ids are NAME when the problem has one source, NAME-STEM when it has several. POOL itself
may be a single problem directory. A problem with test inputs but no `.out` files at all
is imported with empty expected outputs and a note: run `asmopt data build` on it, which
regenerates every expected output from a reference build. A problem with no `tests/`
directory gets one test with empty stdin (programs that read nothing), also to be built.
Anything else unusual (unpaired .in/.out, non-UTF-8 text, a file that is a symlink out of
the pool or a FIFO, data/paths.py) drops that problem, named; a program the suite loader
would refuse once written is dropped too (`common.check_loadable`).

With `mutator=True` every program also gets an input generator learnt from its test
inputs where its builds accept the drawn inputs (`common.learn_inputs`, data/mutator.py).
"""

from __future__ import annotations

from pathlib import Path

from asmopt.programs.model import Program, ProgramError, Suite, TestCase
from asmopt.typed_config import renamed_keywords

from .common import (
    RENAMED_KEYWORDS,
    DataError,
    ImportRun,
    ItemError,
    assign_splits,
    check_loadable,
    decode_text,
    learn_inputs,
    safe_id,
)
from .paths import Tree
from .report import DataReport
from .testfiles import pair_test_files


def _problem_dirs(root: Path) -> list[Path]:
    if any(root.glob("*.c")):
        return [root]
    return sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))


@renamed_keywords(RENAMED_KEYWORDS)
def import_plain_dir(
    root: str | Path,
    *,
    val_frac: float = 0.0,
    test_frac: float = 1.0,
    split_seed: str = "asmopt",
    name: str | None = None,
    run: ImportRun | None = None,
) -> tuple[Suite, DataReport]:
    """Read the plain layout (see module docstring); by default every program is `test`.
    `run.mutator` learns fresh inputs from the tests (`common.learn_inputs`)."""
    run = run or ImportRun()
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"{root}: directory not found")
    report = DataReport("import dir")
    tree = Tree(root, "the pool")
    programs: dict[str, Program] = {}
    missing_outputs: list[str] = []
    for problem_dir in _problem_dirs(root):
        _import_problem(problem_dir, tree, programs, missing_outputs, report)
    if missing_outputs:
        report.note(
            f"{len(missing_outputs)} problem(s) have no expected outputs "
            f"({', '.join(missing_outputs[:5])}); run `asmopt data build` to generate them"
        )
    report.kept = sorted(programs)
    report.stats["problems"] = len({p.meta["problem"] for p in programs.values()})
    suite = Suite(
        name=name or root.resolve().name,
        programs=programs,
        splits=assign_splits(programs.values(), val_frac, test_frac, split_seed),
        description=f"programs imported from the plain layout ({root.name})",
    )
    if run.mutator and programs:
        suite = learn_inputs(suite, report, run)
    return suite, report


def _import_problem(
    problem_dir: Path,
    tree: Tree,
    programs: dict[str, Program],
    missing_outputs: list[str],
    report: DataReport,
) -> None:
    """Add each solution of one problem directory to `programs` (problems without expected
    outputs to `missing_outputs`); what cannot be imported is reported as dropped."""
    problem = safe_id(problem_dir.name)
    sources = sorted(problem_dir.glob("*.c"))
    if not sources:
        report.drop(problem, "missing_file", f"{problem_dir}: no .c source")
        return
    try:
        tests, outputs_missing = _problem_tests(problem_dir, tree)
        if outputs_missing:
            missing_outputs.append(problem)
        headers = tuple(
            (h.name, decode_text(tree.read(h, "header"), str(h), "header"))
            for h in sorted(problem_dir.glob("*.h"))
        )
    except ItemError as exc:
        report.drop(problem, exc.reason, exc.detail)
        return
    for src in sources:
        pid = problem if len(sources) == 1 else safe_id(problem_dir.name, src.stem)
        try:
            if pid in programs:
                raise ItemError("duplicate_id", f"{src}: id {pid!r} already used")
            text = decode_text(tree.read(src, "C source"), str(src))
            program = Program(
                id=pid,
                source=text,
                tests=tests,
                headers=headers,
                metadata=(
                    ("origin", f"{problem_dir.name}/{src.name}"),
                    ("problem", problem),
                    ("source", "dir"),
                ),
            )
            check_loadable(program)
            programs[pid] = program
        except ItemError as exc:
            report.drop(pid, exc.reason, exc.detail)
        except ProgramError as exc:
            report.drop(pid, "invalid_program", f"{src}: {exc}")


def _problem_tests(problem_dir: Path, tree: Tree) -> tuple[tuple[TestCase, ...], bool]:
    """A problem's tests (one with empty stdin where it has no tests/ directory), and
    whether it has no expected output at all (to be generated by `asmopt data build`)."""
    tests_dir = problem_dir / "tests"
    if tests_dir.is_dir():
        tests = pair_test_files(tests_dir, tree, outputs_required=False)
    else:
        tests = [TestCase(name="t0", stdin=b"", expected_stdout=b"")]
    missing = all(not t.expected_stdout for t in tests) and not (
        tests_dir.is_dir() and any(tests_dir.glob("*.out"))
    )
    return tuple(tests), missing
