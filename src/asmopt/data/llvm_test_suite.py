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
  `HASH_PROGRAM_OUTPUT` makes the suite replace the recorded output (program output plus
  the `exit N` line) by its MD5 digest (`HashProgramOutput.sh`: `md5sum | cut -d' ' -f1`);
  the reference then holds only that digest, and the test uses the `md5` comparison,
  which hashes the same bytes. The exit status is part of the digest; the expected exit
  code is 0 (the digest cannot say otherwise, and verification catches a program that
  means to exit non-zero).
* stderr: llvm's timeit sends stdout and stderr to one file (`--redirect-output`), so a
  reference holds both, in the order the C library wrote them (stderr unbuffered, stdout
  block-buffered). A program whose source or headers use `stderr` or `perror` is built
  with `-include` of a small header (`STDERR_HEADER`) whose constructor makes fd 2 a copy of
  fd 1: stderr then reaches the compared output in the very order llvm records it, and
  nothing else about the program changes. Programs that never name stderr are unchanged.
* `RUN_OPTIONS` become argv, `STDIN_FILENAME` the stdin (else stdin is empty);
  `CPPFLAGS`/`CFLAGS`, `add_definitions()` and a target's `C_STANDARD` become cflags,
  `LDFLAGS` ldflags (always with -lm).
* Headers: every header the source includes (quotes: beside the source, then the `-I`
  directories; angle brackets: the `-I` directories) that exists in the checkout is
  bundled with the program, transitively; `-I` directories are resolved against the
  checkout root (`CMAKE_SOURCE_DIR`, the parent of `SingleSource/`) and replaced by `-I.`
  (the build directory, where bundled headers are written).
* Sources are kept byte for byte: a Latin-1 byte in a comment does not stop gcc, so it
  does not drop the program (the import notes it). C++ sources are counted as skipped.
* Reading: every file (CMakeLists.txt, sources, headers, references, `STDIN_FILENAME`)
  must stay inside the checkout the directory sits in (else inside the directory given)
  and be a regular file (data/paths.py); a `Source`, `STDIN_FILENAME` or `-I` path that
  is absolute or climbs out with `..`, a symlink out, or a FIFO drops the program, named.
  A program the suite loader would refuse once written is dropped too
  (`common.check_loadable`).

Every imported program is then verified like `asmopt suite verify` (compiled at -O0 and
-O3 in the sandbox, every test run), under a CPU limit below the default one so the
result passes `suite verify` with a margin; programs that fail are dropped with the
verdict as the reason (timing-dependent output, UB that differs between -O0 and -O3, a
harness difference).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from asmopt.judge import Verdict
from asmopt.programs.model import (
    Comparison,
    Program,
    ProgramError,
    Suite,
    TestCase,
    decode_source,
)

from .cmake import CMakeError, CMakeResult, evaluate_cmake_text
from .common import DataError, ImportRun, ItemError, check_loadable, learn_inputs, safe_id
from .paths import Tree
from .report import DataReport

_EXIT_LINE = re.compile(rb"exit (-?\d+)\n?\Z")
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.MULTILINE)
_HASH_LINE = re.compile(rb"\A\s*([0-9a-fA-F]{32})\s*\Z")
_USES_STDERR = re.compile(r"\b(?:stderr|perror)\b")
_C_SUFFIXES = (".c",)
_CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".C", ".c++")
STDERR_HEADER = "llvm_stderr_to_stdout.h"
STDERR_HEADER_TEXT = """/* Added by asmopt's llvm-test-suite importer. The suite runs each program
   with stdout and stderr on one file and compares that file with the reference; making
   fd 2 a copy of fd 1 before main() gives the compared output the same bytes in the
   same order. */
extern int dup2(int, int);
__attribute__((constructor)) static void asmopt_llvm_stderr_to_stdout(void) { dup2(1, 2); }
"""
SIZES = ("small", "large")
VERIFY_CPU_SECONDS = 5


def split_reference_output(data: bytes) -> tuple[bytes, int]:
    """(expected stdout, exit code) from a `.reference_output` file's bytes."""
    m = _EXIT_LINE.search(data)
    if m is None:
        hint = ""
        if _HASH_LINE.match(data):
            hint = (
                " (it holds only an MD5 digest, as HASH_PROGRAM_OUTPUT references do, but the "
                "directory's CMakeLists.txt does not set HASH_PROGRAM_OUTPUT)"
            )
        raise ItemError(
            "invalid_program",
            "reference output does not end with an 'exit N' line, so the expected exit "
            f"status is unknown{hint}",
        )
    code = int(m.group(1))
    if not 0 <= code <= 255:
        raise ItemError("invalid_program", f"reference exit code {code} is outside 0..255")
    return data[: m.start()], code


def hash_reference(data: bytes) -> bytes:
    """The digest line of a HASH_PROGRAM_OUTPUT reference (32 hex digits and a newline)."""
    m = _HASH_LINE.match(data)
    if m is None:
        raise ItemError(
            "invalid_program",
            "HASH_PROGRAM_OUTPUT is set but the reference output is not a single MD5 digest "
            f"(starts {data[:40]!r})",
        )
    return m.group(1).lower() + b"\n"


def checkout_root(directory: Path) -> Path | None:
    """The llvm-test-suite checkout holding `directory` (CMAKE_SOURCE_DIR): the parent of
    its `SingleSource` or `MultiSource` ancestor, or None for a directory copied out."""
    for parent in [directory, *directory.parents]:
        if parent.name in ("SingleSource", "MultiSource"):
            return parent.parent
    return None


def find_leaf_directories(root: Path) -> list[Path]:
    """Directories (root included) that hold at least one `*.reference_output*` file."""
    leaves = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if any(".reference_output" in f for f in filenames):
            leaves.append(Path(dirpath))
    return leaves


def _resolve_include_dir(raw: str, directory: Path, root: Path | None) -> Path | None:
    """Where an `-I` directory of a CMakeLists.txt is in this checkout, or None.

    Paths are written against CMAKE_SOURCE_DIR; when the checkout root is unknown (a
    directory copied out of the suite) the path's trailing parts are tried against each
    ancestor, so `Polybench/utilities` is still found beside a copied `Polybench/`."""
    path = Path(raw)
    if path.is_absolute() and path.is_dir():
        return path
    parts = [p for p in path.parts if p not in ("/", "")]
    if not parts:
        return None
    if root is not None and (root / Path(*parts)).is_dir():
        return root / Path(*parts)
    for start in range(len(parts)):
        tail = Path(*parts[start:])
        for base in [directory, *directory.parents]:
            if (base / tail).is_dir():
                return base / tail
    return None


def _include_dirs(
    flags: list[str], directory: Path, root: Path | None, origin: str, tree: Tree
) -> tuple[list[str], list[Path]]:
    """(flags without their -I directories, the resolved directories in order). A
    directory outside the tree is refused: its headers would be bundled with the program."""
    kept: list[str] = []
    dirs: list[Path] = []
    i = 0
    while i < len(flags):
        flag = flags[i]
        raw = None
        if flag == "-I" and i + 1 < len(flags):
            raw, i = flags[i + 1], i + 2
        elif flag.startswith("-I") and len(flag) > 2:
            raw, i = flag[2:], i + 1
        else:
            kept.append(flag)
            i += 1
            continue
        found = _resolve_include_dir(raw, directory, root)
        if found is None:
            raise ItemError(
                "missing_file",
                f"{origin}: include directory {raw!r} (from CMakeLists.txt) is not in this "
                "checkout; import from a full llvm-test-suite checkout so CMAKE_SOURCE_DIR "
                "resolves, or copy that directory beside the program's",
            )
        dirs.append(tree.inside(found, f"include directory {raw!r} (from CMakeLists.txt)"))
    return kept, dirs


def _bundled_headers(
    directory: Path, include_dirs: list[Path], source: str, origin: str, tree: Tree
) -> tuple[list[tuple[str, str]], bool]:
    """(headers the source includes that live in the checkout, transitively; whether any
    came from an -I directory). Quotes look beside the source, then in the -I
    directories; angle brackets only in the -I directories, as gcc does."""
    found: dict[str, str] = {}
    where: dict[str, Path] = {}
    from_dirs = False
    pending = [source]
    while pending:
        text = pending.pop()
        for kind, name in _INCLUDE.findall(text):
            if name in found:
                continue
            bases = ([directory] if kind == '"' else []) + include_dirs
            path = next((b / name for b in bases if (b / name).is_file()), None)
            if path is None:
                continue  # a system header, or one guarded out
            if "/" in name or name.startswith("."):
                raise ItemError(
                    "unsupported",
                    f"{origin}: includes {name!r} from a subdirectory; bundled headers sit "
                    "beside the source",
                )
            if path.parent != directory:
                from_dirs = True
            where[name] = path
            data = tree.read(path, "header")
            if b"\x00" in data:
                raise ItemError("unreadable", f"{path}: header is binary (contains NUL bytes)")
            found[name] = decode_source(data)
            pending.append(found[name])
    return sorted(found.items()), from_dirs


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


def _non_utf8_note(data: bytes, origin: str) -> str | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"{origin}: not UTF-8 (first bad byte at offset {exc.start}); kept byte for byte, "
            "as gcc compiles it"
        )
    return None


def _tree(checkout: Path | None, root: Path) -> Tree:
    """What a directory's programs may read: the llvm-test-suite checkout it sits in
    (CMAKE_SOURCE_DIR, whose -I directories and data files its CMakeLists.txt names), or,
    for a directory copied out of a checkout, the directory tree that was given."""
    if checkout is not None:
        return Tree(checkout, "the llvm-test-suite checkout")
    return Tree(root, "the imported directory")


def _read_cmake(
    directory: Path, tree: Tree, defines: dict[str, str], report: DataReport
) -> CMakeResult:
    """The evaluated CMakeLists.txt (empty without one, noted); ItemError when it is a
    link out of the tree or not a regular file, which drops the directory's programs."""
    cmake_path = directory / "CMakeLists.txt"
    if not os.path.lexists(cmake_path):
        report.note(f"{directory}: no CMakeLists.txt; compiling with no extra flags")
        return CMakeResult()
    data = tree.read(cmake_path, "CMakeLists.txt")
    try:
        cm = evaluate_cmake_text(data, directory, defines)
    except CMakeError as exc:
        report.note(f"{cmake_path}: cannot evaluate ({exc}); using no extra flags")
        return CMakeResult()
    for name in sorted(set(cm.ignored)):
        report.note(f"{cmake_path}: ignored CMake command {name}()")
    return cm


def _reference_file(directory: Path, stem: str, small: bool, origin: str) -> Path:
    """`NAME.reference_output.small` in small mode when it exists (a link or a FIFO
    included: reading it is what refuses those), else `NAME.reference_output`."""
    ref = directory / f"{stem}.reference_output"
    ref_small = directory / f"{stem}.reference_output.small"
    chosen = ref_small if small and os.path.lexists(ref_small) else ref
    if not os.path.lexists(chosen):
        raise ItemError(
            "missing_file",
            f"{origin}: no {chosen.name} beside it (llvm-test-suite runs it without a "
            "reference, so there is nothing to check its output against)",
        )
    return chosen


@dataclass(frozen=True)
class _Directory:
    """One leaf directory of llvm-test-suite and what its CMakeLists.txt says of every
    program in it."""

    path: Path
    rel_dir: Path  # as reported: relative to the imported root's parent
    checkout: Path | None
    tree: Tree
    cm: CMakeResult
    size: str
    cflags: list[str]
    ldflags: list[str]
    argv: tuple[str, ...]
    stdin_name: list[str] | None
    hashed: bool  # HASH_PROGRAM_OUTPUT: the reference is an md5 of the output

    @property
    def small(self) -> bool:
        return self.size == "small"


def _import_directory(
    directory: Path, root: Path, size: str, report: DataReport, seen: set[str]
) -> list[Program]:
    """Every C program of one leaf directory that reads and loads (the others reported)."""
    leaf = _read_directory(directory, root, size, report)
    if leaf is None:
        return []
    programs = []
    for src in _directory_sources(directory, leaf.cm, report):
        pid = safe_id(directory.name, src.stem)
        origin = f"{leaf.rel_dir}/{src.name}"
        try:
            if pid in seen:
                raise ItemError("duplicate_id", f"{origin}: id {pid!r} already imported")
            program = _import_source(leaf, src, pid, origin, report)
        except ItemError as exc:
            report.drop(pid, exc.reason, exc.detail)
            continue
        except ProgramError as exc:
            report.drop(pid, "invalid_program", f"{origin}: {exc}")
            continue
        seen.add(pid)
        programs.append(program)
    return programs


def _read_directory(
    directory: Path, root: Path, size: str, report: DataReport
) -> _Directory | None:
    """The directory's CMakeLists.txt evaluated, with the flags, arguments, input and
    output form it gives its programs (None, reported, when it cannot be read)."""
    small = size == "small"
    rel_dir = directory.relative_to(root.parent)
    checkout = checkout_root(directory)
    tree = _tree(checkout, root)
    defines = {"SMALL_PROBLEM_SIZE": "ON" if small else "OFF"}
    if checkout is not None:
        defines["CMAKE_SOURCE_DIR"] = str(checkout)
        defines["PROJECT_SOURCE_DIR"] = str(checkout)
    try:
        cm = _read_cmake(directory, tree, defines, report)
    except ItemError as exc:
        report.drop(str(rel_dir), exc.reason, exc.detail)
        return None
    cflags = [*(cm.get("CPPFLAGS") or []), *(cm.get("ADD_DEFINITIONS") or [])]
    cflags += cm.get("CFLAGS") or []
    if small:
        cflags.append("-DSMALL_PROBLEM_SIZE")
    ldflags = list(cm.get("LDFLAGS") or [])
    if "-lm" not in ldflags:
        ldflags.append("-lm")
    hashed = bool(cm.get("HASH_PROGRAM_OUTPUT")) and (
        (cm.get("HASH_PROGRAM_OUTPUT") or [""])[0].upper() not in ("", "0", "OFF", "NO", "FALSE")
    )
    return _Directory(
        path=directory,
        rel_dir=rel_dir,
        checkout=checkout,
        tree=tree,
        cm=cm,
        size=size,
        cflags=cflags,
        ldflags=ldflags,
        argv=tuple(shlex.split(" ".join(cm.get("RUN_OPTIONS") or []))),
        stdin_name=cm.get("STDIN_FILENAME"),
        hashed=hashed,
    )


def _directory_sources(directory: Path, cm: CMakeResult, report: DataReport) -> list[Path]:
    """The C sources to import: those the CMakeLists.txt lists (else every source file
    here), less PROGRAMS_TO_SKIP; C++ and other files are counted as filtered."""
    listed = cm.get("Source")
    if listed is not None:
        sources = [directory / s for s in listed]
    else:
        sources = sorted(p for p in directory.iterdir() if p.suffix in _C_SUFFIXES + _CXX_SUFFIXES)
    skip = set(cm.get("PROGRAMS_TO_SKIP") or [])
    if skip:
        skipped = [s for s in sources if s.stem in skip]
        if skipped:
            report.filter("listed in PROGRAMS_TO_SKIP by its CMakeLists.txt", len(skipped))
        sources = [s for s in sources if s.stem not in skip]
    cxx = [s for s in sources if s.suffix in _CXX_SUFFIXES]
    others = [s for s in sources if s.suffix not in _C_SUFFIXES + _CXX_SUFFIXES]
    if cxx:
        report.filter("C++ source (asmopt imports C programs only)", len(cxx))
    if others:
        report.filter("not a C source", len(others))
    return [s for s in sources if s.suffix in _C_SUFFIXES]


def _import_source(
    leaf: _Directory, src: Path, pid: str, origin: str, report: DataReport
) -> Program:
    """One C source as a program with its headers, flags and reference test, read back by
    the suite loader (ItemError or ProgramError where it cannot be)."""
    source = _read_c_source(leaf.tree, src, origin, report)
    flags, include_dirs = _include_dirs(
        list(leaf.cflags), leaf.path, leaf.checkout, origin, leaf.tree
    )
    headers, from_dirs = _bundled_headers(leaf.path, include_dirs, source, origin, leaf.tree)
    if from_dirs:
        flags = ["-I.", *flags]
    merged = any(_USES_STDERR.search(t) for t in [source, *(h for _, h in headers)])
    if merged:
        if STDERR_HEADER in dict(headers):
            raise ItemError("unsupported", f"{origin}: has a header named {STDERR_HEADER}")
        headers = sorted([*headers, (STDERR_HEADER, STDERR_HEADER_TEXT)])
        flags = ["-include", STDERR_HEADER, *flags]
    chosen = _reference_file(leaf.path, src.stem, leaf.small, origin)
    test = _reference_test(leaf, chosen)
    meta = {
        "source": "llvm-test-suite",
        "problem": pid,
        "origin": origin,
        "reference_output": chosen.name,
        "size": leaf.size,
    }
    if leaf.hashed:
        meta["hash_program_output"] = True
    if merged:
        meta["stderr_in_output"] = True
    program = Program(
        id=pid,
        source=source,
        tests=(test,),
        headers=tuple(headers),
        cflags=tuple(flags + _c_standard(leaf.cm, f"{leaf.cm.prefix}{src.stem}")),
        ldflags=tuple(leaf.ldflags),
        metadata=tuple(sorted(meta.items())),
    )
    check_loadable(program)
    return program


def _read_c_source(tree: Tree, src: Path, origin: str, report: DataReport) -> str:
    """The text of a C source (a binary file refused; a non-UTF-8 one noted)."""
    raw = tree.read(src, "C source")
    if b"\x00" in raw:
        raise ItemError("unreadable", f"{origin}: C source is binary (contains NUL bytes)")
    note = _non_utf8_note(raw, origin)
    if note:
        report.note(note)
    return decode_source(raw)


def _reference_test(leaf: _Directory, chosen: Path) -> TestCase:
    """The one test of a program: its stdin file, arguments and reference output."""
    reference = leaf.tree.read(chosen, "reference output")
    if leaf.hashed:
        expected, code = hash_reference(reference), 0
        compare = Comparison(mode="md5")
    else:
        expected, code = split_reference_output(reference)
        compare = _comparison(leaf.cm)
    stdin = b""
    if leaf.stdin_name:
        stdin = leaf.tree.read(leaf.path / leaf.stdin_name[0], "STDIN_FILENAME input")
    return TestCase(
        name="reference",
        stdin=stdin,
        expected_stdout=expected,
        argv=leaf.argv,
        expected_exit=code,
        compare=compare,
    )


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


def _verify_hint(level: str, verdict: Verdict, cpu_seconds: int) -> str:
    """What a failed verification most likely means and what to do about it."""
    if verdict == Verdict.TIMEOUT:
        return (
            f" (over the {cpu_seconds}s import CPU limit: raise --cpu-seconds or use --size small)"
        )
    if verdict == Verdict.WRONG_OUTPUT and level == "-O0":
        return (
            " (even the -O0 build disagrees with the reference: output that depends on time, "
            "the host or the compiler; see the program's reference_output)"
        )
    if verdict == Verdict.WRONG_OUTPUT:
        return " (-O0 passes, -O3 does not: undefined behaviour or floating-point differences)"
    if verdict in (Verdict.ASSEMBLE_ERROR, Verdict.LINK_ERROR, Verdict.EXTRACTION_ERROR):
        return " (gcc cannot build it with the directory's flags)"
    return ""


def verify_and_filter(
    programs: Iterable[Program],
    report: DataReport,
    *,
    cpu_seconds: int = VERIFY_CPU_SECONDS,
    run: ImportRun | None = None,
) -> list[Program]:
    """Keep the programs whose -O0 and -O3 builds pass their tests in the sandbox."""
    from asmopt.run import verify_programs
    from asmopt.sandbox.records import Limits
    from asmopt.sandbox.runner import default_sandbox
    from asmopt.toolchain import default_toolchain

    run = run or ImportRun()
    box = run.sandbox or default_sandbox()
    box.check()
    limits = Limits(cpu_seconds=cpu_seconds, wall_seconds=2.0 * cpu_seconds + 5)
    programs = list(programs)
    outcomes = verify_programs(
        programs,
        run.toolchain or default_toolchain(),
        box,
        jobs=run.jobs,
        progress=run.progress,
        limits=limits,
    )
    kept = []
    for program, outcome in zip(programs, outcomes, strict=True):
        if outcome.ok:
            kept.append(program)
        else:
            level, check = ("-O0", outcome.o0) if not outcome.o0.correct else ("-O3", outcome.o3)
            reason = "infra_error" if check.verdict == Verdict.INFRA_ERROR else "verify_failed"
            hint = _verify_hint(level, check.verdict, cpu_seconds)
            report.drop(program.id, reason, f"{level}: {check.verdict}: {check.message}{hint}")
    return kept


def suite_name_for(paths: Sequence[str | Path]) -> str:
    """A suite name that says what was imported: `llvm-` and the imported directories' names
    (`llvm-Polybench`, `llvm-Shootout+Stanford`), so two imports of different directories
    get different names and run directories. `--name` overrides it."""
    names = sorted({Path(p).resolve().name or "root" for p in paths})
    name = "llvm-" + "+".join(re.sub(r"[^A-Za-z0-9_.\-]", "_", n) for n in names)
    if len(name) > 64:
        digest = hashlib.sha256("\0".join(names).encode()).hexdigest()[:8]
        name = f"{name[:55]}-{digest}"
    return name


def import_llvm_test_suite(
    paths: Sequence[str | Path],
    *,
    size: str = "small",
    verify: bool = True,
    cpu_seconds: int = VERIFY_CPU_SECONDS,
    name: str | None = None,
    run: ImportRun | None = None,
) -> tuple[Suite, DataReport]:
    """Import SingleSource directories (or trees holding them); see the module docstring.

    `run.mutator` tries to learn fresh inputs (`common.learn_inputs`) for the programs that
    read stdin (`STDIN_FILENAME`); the others, whose sizes are compiled in, keep their
    fixed input (`fixed_inputs`)."""
    run = run or ImportRun()
    programs, report = collect_llvm_programs(paths, size)
    report.stats["found"] = len(programs) + len(report.dropped)
    if verify and programs:
        programs = verify_and_filter(programs, report, cpu_seconds=cpu_seconds, run=run)
        report.stats["verified_cpu_limit_s"] = cpu_seconds
    elif not verify:
        report.note("not verified (--no-verify): run `asmopt suite verify` on the result")
    report.kept = sorted(p.id for p in programs)
    report.stats["size"] = size
    suite = Suite(
        name=name or suite_name_for(paths),
        programs={p.id: p for p in programs},
        splits={p.id: "test" for p in programs},
        description=f"llvm-test-suite SingleSource programs ({size} problem size)",
    )
    if run.mutator and programs:
        suite = learn_inputs(suite, report, run)
    return suite, report
