"""Import llvm-test-suite SingleSource directories as a suite.

A SingleSource directory holds `NAME.c` programs (plus headers included with quotes),
`NAME.reference_output` files and a CMakeLists.txt. How each piece maps:

* Expected output: llvm's `timeit --append-exitstatus` writes the program's output and
  then appends `exit N\\n` with no separator of its own. So the expected stdout is every
  byte before the final `exit N` line (the newline before it, when present, is the
  program's) and N is the expected exit code.
* Problem size: llvm's SMALL_PROBLEM_SIZE mode compiles with `-DSMALL_PROBLEM_SIZE` and
  compares with `NAME.reference_output.small` when that file exists, else with
  `NAME.reference_output`. `size="small"` (the default) does the same; the programs then
  run in well under a second, which suits repeated timing. `size="large"` uses the full
  sizes and `.reference_output`.
* Comparison: `FP_TOLERANCE` (relative) and `FP_ABSTOLERANCE` (absolute) select the
  fpcmp-style numeric comparison; without them outputs must match exactly.
* `RUN_OPTIONS` become argv, `STDIN_FILENAME` the stdin (else stdin is empty);
  `CPPFLAGS`/`CFLAGS` and a target's `C_STANDARD` become cflags, `LDFLAGS` ldflags (always
  with -lm).
* llvm redirects stderr into the same output file; we compare stdout only, which is the
  same for programs that write nothing to stderr (verification catches the others).

Every imported program is then verified like `asmopt suite verify` (compiled at -O0 and
-O3 in the sandbox, every test run), under a CPU limit below the default one so the
result passes `suite verify` with a margin; programs that fail are dropped with the
verdict as the reason (timing-dependent output, UB that differs between -O0 and -O3, a
harness difference).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from asmopt.programs.model import Comparison, Program, ProgramError, Suite, TestCase

from .cmake import CMakeError, CMakeResult, evaluate_cmake
from .common import DataError, ItemError, decode_text, read_bytes, safe_id
from .report import DataReport

if TYPE_CHECKING:
    from asmopt.sandbox.runner import Sandbox
    from asmopt.toolchain import Toolchain

_EXIT_LINE = re.compile(rb"exit (-?\d+)\n?\Z")
_QUOTE_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
SIZES = ("small", "large")
VERIFY_CPU_SECONDS = 5


def split_reference_output(data: bytes) -> tuple[bytes, int]:
    """(expected stdout, exit code) from a `.reference_output` file's bytes."""
    m = _EXIT_LINE.search(data)
    if m is None:
        raise ItemError("invalid_program", "reference output does not end with an 'exit N' line")
    code = int(m.group(1))
    if not 0 <= code <= 255:
        raise ItemError("invalid_program", f"reference exit code {code} is outside 0..255")
    return data[: m.start()], code


def find_leaf_directories(root: Path) -> list[Path]:
    """Directories (root included) that hold at least one `*.reference_output*` file."""
    leaves = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if any(".reference_output" in f for f in filenames):
            leaves.append(Path(dirpath))
    return leaves


def _local_headers(directory: Path, source: str, origin: str) -> list[tuple[str, str]]:
    """Same-directory headers the source includes with quotes, transitively."""
    found: dict[str, str] = {}
    pending = [source]
    while pending:
        text = pending.pop()
        for name in _QUOTE_INCLUDE.findall(text):
            if name in found:
                continue
            path = directory / name
            if "/" in name or name.startswith("."):
                if path.is_file():
                    raise ItemError(
                        "unsupported", f"{origin}: includes {name!r} from another directory"
                    )
                continue
            if not path.is_file():
                continue  # a system header written with quotes, or guarded out
            found[name] = decode_text(read_bytes(path, "header"), str(path), "header")
            pending.append(found[name])
    return sorted(found.items())


def _comparison(cm: CMakeResult) -> Comparison:
    rel = cm.get("FP_TOLERANCE")
    abs_ = cm.get("FP_ABSTOLERANCE")
    if not rel and not abs_:
        return Comparison()
    try:
        return Comparison(
            mode="numeric",
            rel_tol=float(rel[0]) if rel else 0.0,
            abs_tol=float(abs_[0]) if abs_ else 0.0,
        )
    except (ValueError, ProgramError) as exc:
        raise ItemError("invalid_program", f"bad FP tolerance in CMakeLists.txt: {exc}") from None


def _c_standard(cm: CMakeResult, target: str) -> list[str]:
    value = cm.target_properties.get(target, {}).get("C_STANDARD") or cm.get("CMAKE_C_STANDARD")
    if not value:
        return []
    return [f"-std=gnu{value[0]}"]


def _import_directory(
    directory: Path, root: Path, size: str, report: DataReport, seen: set[str]
) -> list[Program]:
    small = size == "small"
    cmake_path = directory / "CMakeLists.txt"
    cm = CMakeResult()
    rel_dir = directory.relative_to(root.parent)
    if cmake_path.is_file():
        try:
            cm = evaluate_cmake(cmake_path, {"SMALL_PROBLEM_SIZE": "ON" if small else "OFF"})
        except (CMakeError, OSError) as exc:
            report.note(f"{cmake_path}: cannot evaluate ({exc}); using no extra flags")
        for name in sorted(set(cm.ignored)):
            report.note(f"{cmake_path}: ignored CMake command {name}()")
    else:
        report.note(f"{directory}: no CMakeLists.txt; compiling with no extra flags")

    listed = cm.get("Source")
    if listed is not None:
        sources = [directory / s for s in listed]
    else:
        sources = sorted(directory.glob("*.c"))
    others = [s for s in sources if s.suffix != ".c"]
    if others:
        report.filter("not a C source (C++ or other)", len(others))
    sources = [s for s in sources if s.suffix == ".c"]

    cflags = [*(cm.get("CPPFLAGS") or []), *(cm.get("CFLAGS") or [])]
    if small:
        cflags.append("-DSMALL_PROBLEM_SIZE")
    ldflags = list(cm.get("LDFLAGS") or [])
    if "-lm" not in ldflags:
        ldflags.append("-lm")
    argv = tuple(shlex.split(" ".join(cm.get("RUN_OPTIONS") or [])))
    stdin_name = cm.get("STDIN_FILENAME")

    programs = []
    for src in sources:
        pid = safe_id(directory.name, src.stem)
        origin = f"{rel_dir}/{src.name}"
        try:
            if pid in seen:
                raise ItemError("duplicate_id", f"{origin}: id {pid!r} already imported")
            source = decode_text(read_bytes(src, "C source"), origin)
            headers = _local_headers(directory, source, origin)
            ref = directory / f"{src.stem}.reference_output"
            ref_small = directory / f"{src.stem}.reference_output.small"
            chosen = ref_small if small and ref_small.is_file() else ref
            expected, code = split_reference_output(read_bytes(chosen, "reference output"))
            stdin = b""
            if stdin_name:
                stdin = read_bytes(Path(stdin_name[0]), "STDIN_FILENAME input")
            test = TestCase(
                name="reference",
                stdin=stdin,
                expected_stdout=expected,
                argv=argv,
                expected_exit=code,
                compare=_comparison(cm),
            )
            program = Program(
                id=pid,
                source=source,
                tests=(test,),
                headers=tuple(headers),
                cflags=tuple(cflags + _c_standard(cm, f"{cm.prefix}{src.stem}")),
                ldflags=tuple(ldflags),
                metadata=tuple(
                    sorted(
                        {
                            "source": "llvm-test-suite",
                            "problem": pid,
                            "origin": origin,
                            "reference_output": chosen.name,
                            "size": size,
                        }.items()
                    )
                ),
            )
        except ItemError as exc:
            report.drop(pid, exc.reason, exc.detail)
            continue
        except ProgramError as exc:
            report.drop(pid, "invalid_program", f"{origin}: {exc}")
            continue
        seen.add(pid)
        programs.append(program)
    return programs


def collect_llvm_programs(
    paths: Sequence[str | Path], size: str = "small", report: DataReport | None = None
) -> tuple[list[Program], DataReport]:
    """Parse the directories (no compiling): every program found, every problem reported."""
    if size not in SIZES:
        raise DataError(f"unknown size {size!r}; expected one of {', '.join(SIZES)}")
    report = report or DataReport("import llvm-test-suite")
    programs: list[Program] = []
    seen: set[str] = set()
    for raw in paths:
        root = Path(raw).resolve()
        if not root.is_dir():
            report.drop(str(raw), "missing_file", f"{raw}: directory not found")
            continue
        leaves = find_leaf_directories(root)
        if not leaves:
            report.drop(
                str(raw), "no_tests", f"{raw}: no *.reference_output files in this directory tree"
            )
        for leaf in leaves:
            programs.extend(_import_directory(leaf, root, size, report, seen))
    return programs, report


def verify_and_filter(
    programs: Iterable[Program],
    report: DataReport,
    *,
    jobs: int = 2,
    cpu_seconds: int = VERIFY_CPU_SECONDS,
    progress: bool = True,
    toolchain: Toolchain | None = None,
    sandbox: Sandbox | None = None,
) -> list[Program]:
    """Keep the programs whose -O0 and -O3 builds pass their tests in the sandbox."""
    from asmopt.run import verify_programs
    from asmopt.sandbox.runner import Limits, default_sandbox
    from asmopt.toolchain import default_toolchain

    box = sandbox or default_sandbox()
    box.check()
    limits = Limits(cpu_seconds=cpu_seconds, wall_seconds=2.0 * cpu_seconds + 5)
    programs = list(programs)
    outcomes = verify_programs(
        programs,
        toolchain or default_toolchain(),
        box,
        jobs=jobs,
        progress=progress,
        limits=limits,
    )
    kept = []
    for program, outcome in zip(programs, outcomes, strict=True):
        if outcome.ok:
            kept.append(program)
        else:
            level, check = ("-O0", outcome.o0) if not outcome.o0.correct else ("-O3", outcome.o3)
            reason = "infra_error" if str(check.verdict) == "infra_error" else "verify_failed"
            report.drop(program.id, reason, f"{level}: {check.verdict}: {check.message}")
    return kept


def import_llvm_test_suite(
    paths: Sequence[str | Path],
    *,
    size: str = "small",
    verify: bool = True,
    jobs: int = 2,
    cpu_seconds: int = VERIFY_CPU_SECONDS,
    progress: bool = True,
    name: str = "llvm-test-suite",
    toolchain: Toolchain | None = None,
    sandbox: Sandbox | None = None,
) -> tuple[Suite, DataReport]:
    """Import SingleSource directories (or trees holding them); see the module docstring."""
    programs, report = collect_llvm_programs(paths, size)
    report.stats["found"] = len(programs) + len(report.dropped)
    if verify and programs:
        programs = verify_and_filter(
            programs,
            report,
            jobs=jobs,
            cpu_seconds=cpu_seconds,
            progress=progress,
            toolchain=toolchain,
            sandbox=sandbox,
        )
        report.stats["verified_cpu_limit_s"] = cpu_seconds
    elif not verify:
        report.note("not verified (--no-verify): run `asmopt suite verify` on the result")
    report.kept = sorted(p.id for p in programs)
    report.stats["size"] = size
    suite = Suite(
        name=name,
        programs={p.id: p for p in programs},
        splits={p.id: "test" for p in programs},
        description=f"llvm-test-suite SingleSource programs ({size} problem size)",
    )
    return suite, report
