"""`asmopt data ...`: import, build and export benchmark suites from the command line.

```
asmopt data import codenet|supercoder|llvm-test-suite|dir PATH... -o SUITE
asmopt data build [POOL] -o SUITE [--speedup 3 --top-n 10000 --max-tests 10 ...]
asmopt data export [SUITE] --format verl-parquet|jsonl|hf -o OUT [--max-prompt-tokens N
                   --tokenizer MODEL_DIR]
```

Each shows progress on stderr and ends with a summary of what was kept and dropped (with
reasons); `--json` prints the full report instead. The report is also saved as
SUITE/data_report.json next to the suite it describes.
"""

from __future__ import annotations

import argparse
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from asmopt.cli.common import UsageError, emit_json
from asmopt.cli.interrupt import stopped_by_signals
from asmopt.cli.options import add_bounded, add_jobs_option
from asmopt.data.common import (
    REPORT_FILE,
    DataError,
    ImportRun,
    check_output,
    mark_adequacy,
    write_suite,
)
from asmopt.data.report import DataReport
from asmopt.programs.model import SPLITS, Suite
from asmopt.programs.suite_io import builtin_suite_path, load_suite


def _stoppable(
    command: Callable[[argparse.Namespace], int], what: str
) -> Callable[[argparse.Namespace], int]:
    """`command` run with Ctrl-C and SIGTERM stopping it at once, cleanly (nothing written,
    no temporary directory left; exit status 130 or 143): `cli.interrupt.stopped_by_signals`."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        with stopped_by_signals(what):
            return command(args)

    return run


def _print_report(report: DataReport, args: argparse.Namespace) -> None:
    for line in report.summary_lines(max_items=10_000 if args.verbose else 20):
        print(line)
    _print_inputs(report, args)


def _print_inputs(report: DataReport, args: argparse.Namespace) -> None:
    """What each imported program could draw: accepted/tried per learnt input class."""
    inputs = report.stats.get("inputs")
    if not inputs:
        return
    print(
        f"fresh inputs: {inputs['generator']} program(s) with a learnt generator, "
        f"{inputs['fixed_inputs']} with fixed inputs only"
        + (f", {inputs['carried']} carried" if inputs.get("carried") else "")
        + f"; {inputs['accepted']}/{inputs['tried']} drawn inputs accepted "
        f"({inputs['seconds_per_program']:.2f} s per program)"
    )
    limit = 10_000 if args.verbose else 20
    lines = list(inputs.get("programs", {}).items())
    for pid, line in lines[:limit]:
        print(f"  {pid}: {line}")
    if len(lines) > limit:
        print(f"  ... and {len(lines) - limit} more (see --json or metadata.inputs_report)")


def _split_counts(suite: Suite) -> str:
    counts = {s: 0 for s in SPLITS}
    for split in suite.splits.values():
        counts[split] += 1
    return ", ".join(f"{s} {n}" for s, n in counts.items() if n)


def _finish(suite: Suite, report: DataReport, args: argparse.Namespace) -> int:
    """Mark test adequacy (unless --no-adequacy), write the suite (refusing an empty one)
    and print the summary."""
    if not suite.programs:
        if not args.json:
            _print_report(report, args)
        reasons = ", ".join(f"{r}={n}" for r, n in report.reason_counts().items())
        raise DataError(f"no programs kept, nothing written ({reasons or 'nothing found'})")
    if getattr(args, "no_adequacy", False):
        report.note("test adequacy not checked (--no-adequacy): run `asmopt suite verify`")
    else:
        suite = mark_adequacy(suite, report, _run(args))
    out = write_suite(suite, args.output, report, force=args.force)
    if args.json:
        emit_json({"output": str(out), "programs": len(suite), "report": report.to_dict()})
        return 0
    _print_report(report, args)
    print(
        f"\nwrote suite {suite.name!r} to {args.output}: {len(suite)} programs "
        f"({_split_counts(suite)}); report in {REPORT_FILE}"
    )
    return 0


def _fractions(args: argparse.Namespace) -> dict[str, Any]:
    return {"val_frac": args.val_frac, "test_frac": args.test_frac, "split_seed": args.split_seed}


def _run(args: argparse.Namespace) -> ImportRun:
    """How the import runs: fresh inputs learnt unless --no-mutator, progress unless
    --json."""
    return ImportRun(
        mutator=not getattr(args, "no_mutator", True),
        jobs=getattr(args, "jobs", 2),
        progress=not args.json,
    )


# ---------------------------------------------------------------------------- import
Imported = tuple[Suite, DataReport]


def _import_command(
    read: Callable[[argparse.Namespace], Imported],
) -> Callable[[argparse.Namespace], int]:
    """An `asmopt data import` command: the output is checked before any work (an import can
    run for hours and should not end by refusing to write), then `read` imports and the suite
    is finished (`_finish`), all of it stoppable by Ctrl-C and SIGTERM (`_stoppable`)."""

    @functools.wraps(read)
    def command(args: argparse.Namespace) -> int:
        check_output(Path(args.output), args.force)
        suite, report = read(args)
        return _finish(suite, report, args)

    return _stoppable(command, "the import")


def _import_codenet(args: argparse.Namespace) -> Imported:
    from asmopt.data.codenet import import_codenet

    return import_codenet(
        args.path,
        per_problem=args.per_problem,
        io_dir=args.io_dir,
        problems=args.problems,
        name=args.name or "codenet",
        run=_run(args),
        **_fractions(args),
    )


def _import_supercoder(args: argparse.Namespace) -> Imported:
    from asmopt.data.supercoder import import_supercoder

    return import_supercoder(
        args.paths,
        prefix=args.prefix,
        name=args.name or "supercoder",
        run=_run(args),
    )


def _import_llvm(args: argparse.Namespace) -> Imported:
    from asmopt.data.llvm_test_suite import import_llvm_test_suite, suite_name_for

    return import_llvm_test_suite(
        args.paths,
        size=args.size,
        verify=not args.no_verify,
        cpu_seconds=args.cpu_seconds,
        name=args.name or suite_name_for(args.paths),
        run=_run(args),
    )


def _import_dir(args: argparse.Namespace) -> Imported:
    from asmopt.data.plain_dir import import_plain_dir

    return import_plain_dir(args.path, name=args.name, run=_run(args), **_fractions(args))


# ---------------------------------------------------------------------------- build
def _input_suite(args: argparse.Namespace, positional: str | None) -> Suite:
    path = positional or args.suite
    return load_suite(path or builtin_suite_path())


def cmd_build(args: argparse.Namespace) -> int:
    from asmopt.data.builder import BuildConfig, build_suite

    pool = _input_suite(args, args.pool)
    try:
        config = BuildConfig(
            speedup_threshold=args.speedup,
            top_n=args.top_n or None,
            max_tests=args.max_tests,
            max_tokens=args.max_tokens or None,
            tokenizer=args.tokenizer,
            chars_per_token=args.chars_per_token,
            run_seconds=args.timeout,
            timing_runs=args.timing_runs,
            dedup=not args.no_dedup,
            jobs=args.jobs,
            **_fractions(args),
        )
    except DataError as exc:
        raise UsageError(str(exc)) from None
    suite, report = build_suite(pool, config, progress=not args.json, name=args.name)
    pool_report = Path(args.pool or args.suite or "") / REPORT_FILE
    if (args.pool or args.suite) and pool_report.is_file():
        try:
            earlier = json.loads(pool_report.read_text())
            report.stats["pool_report"] = {
                k: earlier.get(k) for k in ("step", "kept", "dropped", "reasons", "filtered")
            }
        except (OSError, json.JSONDecodeError):
            report.note(f"{pool_report}: unreadable, not carried into this report")
    return _finish(suite, report, args)


# ---------------------------------------------------------------------------- export
def cmd_export(args: argparse.Namespace) -> int:
    from asmopt.data.export import canonical_format, export_suite
    from asmopt.toolchain import default_toolchain

    args.format = canonical_format(args.format)
    out = Path(args.output)
    one_file = args.format != "hf" and out.suffix in (".parquet", ".jsonl")
    if one_file and out.is_dir():
        raise UsageError(f"-o {out}: is a directory; name a file, or a new path for a directory")
    if not one_file and out.exists() and not out.is_dir():
        raise UsageError(
            f"-o {out}: is an existing file; format {args.format} writes a directory there "
            "(or name a FILE.jsonl / FILE.parquet for one file)"
        )
    suite = _input_suite(args, args.suite_path)
    splits = SPLITS if args.split == "all" else (args.split,)
    toolchain = default_toolchain()

    def baseline(program: Any) -> str:
        return toolchain.baseline_assembly(program)

    try:
        written, report = export_suite(
            suite,
            out,
            args.format,
            splits=splits,
            data_source=args.data_source,
            allow_lossy=args.allow_lossy,
            allow_unfit=args.allow_unfit,
            baseline_fn=baseline,
            progress=not args.json,
            max_prompt_tokens=args.max_prompt_tokens,
            tokenizer=args.tokenizer,
        )
    except DataError:
        # Baselines are compiled in the sandbox: when none could be, a missing sandbox is
        # the cause to report (its message says how to fix it), not "compile_failed=N".
        toolchain.sandbox.check()
        raise
    if report.reason_counts().get("compile_failed"):
        toolchain.sandbox.check()
    if args.json:
        emit_json({"written": [str(p) for p in written], "report": report.to_dict()})
        return 0
    _print_report(report, args)
    rows = report.stats.get("rows", {})
    print(
        f"\nwrote {sum(rows.values())} rows ("
        + ", ".join(f"{s} {n}" for s, n in rows.items())
        + f") as {args.format}: "
        + ", ".join(str(p) for p in written)
    )
    return 0


# ---------------------------------------------------------------------------- parser
def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return value


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="suite directory to write")
    p.add_argument("--force", action="store_true", help="replace an existing suite there")
    p.add_argument("--name", default=None, help="suite name (default: from the source)")
    p.add_argument(
        "--no-adequacy",
        action="store_true",
        help="do not check test adequacy (trivial programs and mutants must fail) nor "
        "store its mark in program.json",
    )


def _add_mutator(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-mutator",
        action="store_true",
        help="do not learn input generators from the tests (programs keep fixed inputs "
        "only, which a candidate could memorise)",
    )


def _add_split(p: argparse.ArgumentParser, val: float, test: float) -> None:
    p.add_argument("--val-frac", type=_fraction, default=val, help=f"default {val}")
    p.add_argument("--test-frac", type=_fraction, default=test, help=f"default {test}")
    p.add_argument(
        "--split-seed",
        default="asmopt",
        metavar="TEXT",
        help="hashed with each problem id to pick its split (default asmopt)",
    )


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the `data` command group to the `asmopt` parser."""

    data = subparsers.add_parser("data", help="import, build and export benchmark suites")
    data_sub = data.add_subparsers(dest="data_command", metavar="ACTION")
    data_sub.required = True

    imp = data_sub.add_parser("import", help="import programs from outside data into a suite")
    imp_sub = imp.add_subparsers(dest="import_format", metavar="FORMAT")
    imp_sub.required = True
    _register_imports(imp_sub, common)
    _register_build(data_sub, common)
    _register_export(data_sub, common)


def _register_imports(imp_sub: Any, common: argparse.ArgumentParser) -> None:
    from asmopt.data.llvm_test_suite import SIZES, VERIFY_CPU_SECONDS

    p = imp_sub.add_parser(
        "codenet", parents=[common], help="a Project CodeNet checkout (accepted C submissions)"
    )
    p.add_argument("path", help="CodeNet root (holds metadata/, data/, derived/)")
    add_bounded(p, "--per-problem", low=1, high=1_000_000, type=int, default=10)
    p.add_argument(
        "--io-dir",
        default=None,
        help="per-problem test folders (default: derived/input_output/data under the root)",
    )
    p.add_argument("--problems", nargs="+", metavar="PID", help="only these problems")
    _add_split(p, 0.025, 0.0)
    _add_output(p)
    _add_mutator(p)
    p.set_defaults(func=_import_command(_import_codenet))

    p = imp_sub.add_parser(
        "supercoder", parents=[common], help="SuperCoder / verl rows (parquet or JSONL)"
    )
    p.add_argument("paths", nargs="+", help="files, or directories of .parquet / .jsonl")
    p.add_argument("--prefix", default="supercoder", help="program id prefix")
    _add_output(p)
    _add_mutator(p)
    p.set_defaults(func=_import_command(_import_supercoder))

    p = imp_sub.add_parser(
        "llvm-test-suite", parents=[common], help="llvm-test-suite SingleSource directories"
    )
    p.add_argument("paths", nargs="+", help="SingleSource directories or trees holding them")
    p.add_argument(
        "--size",
        choices=SIZES,
        default="small",
        help="problem size: small uses -DSMALL_PROBLEM_SIZE and "
        ".reference_output.small where present (default)",
    )
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="skip compiling and running each program at -O0 and -O3",
    )
    add_bounded(
        p,
        "--cpu-seconds",
        low=1,
        high=86_400,
        type=int,
        default=VERIFY_CPU_SECONDS,
        help="CPU limit per run while verifying (default %(default)s)",
    )
    add_jobs_option(p, 2)
    _add_output(p)
    _add_mutator(p)
    p.set_defaults(func=_import_command(_import_llvm))

    p = imp_sub.add_parser(
        "dir", parents=[common], help="the plain layout: NAME/NAME.c + NAME/tests/*.in, *.out"
    )
    p.add_argument("path")
    _add_split(p, 0.0, 1.0)
    _add_output(p)
    _add_mutator(p)
    p.set_defaults(func=_import_command(_import_dir))


def _register_build(data_sub: Any, common: argparse.ArgumentParser) -> None:
    p = data_sub.add_parser(
        "build", parents=[common], help="select a benchmark from a pool (reference pipeline)"
    )
    p.add_argument("pool", nargs="?", help="pool suite directory (default: --suite)")
    add_bounded(
        p, "--speedup", low=0, high=1_000, type=float, default=3.0, help="min -O0/-O3 speedup (3.0)"
    )
    add_bounded(
        p, "--top-n", low=0, high=100_000_000, type=int, default=10_000,
        help="keep the N best (0: all)",
    )  # fmt: skip
    add_bounded(p, "--max-tests", low=1, high=100_000, type=int, default=10)
    add_bounded(
        p, "--max-tokens", low=0, high=1_000_000, type=int, default=4_000,
        help="prompt+answer (0: no limit)",
    )  # fmt: skip
    p.add_argument("--tokenizer", default=None, help="local tokenizer.json or its directory")
    add_bounded(
        p,
        "--chars-per-token",
        low=0,
        high=100,
        low_ok=False,
        type=float,
        default=3.5,
        help="estimate used without --tokenizer (default 3.5)",
    )
    add_bounded(
        p, "--timeout", low=0, high=86_400, low_ok=False, type=float, default=60.0,
        help="seconds per reference run",
    )  # fmt: skip
    add_bounded(p, "--timing-runs", low=1, high=1_000, type=int, default=3)
    p.add_argument("--no-dedup", action="store_true")
    add_jobs_option(p, 2)
    _add_split(p, 0.025, 0.0)
    _add_output(p)
    p.set_defaults(func=_stoppable(cmd_build, "the build"))


def _register_export(data_sub: Any, common: argparse.ArgumentParser) -> None:
    from asmopt.data.export import FORMAT_ALIASES, FORMATS

    p = data_sub.add_parser(
        "export", parents=[common], help="write verl parquet, JSONL or a HF dataset"
    )
    p.add_argument("suite_path", nargs="?", metavar="SUITE", help="suite (default: --suite)")
    p.add_argument(
        "--format",
        required=True,
        choices=[*FORMATS, *FORMAT_ALIASES],
        help=f"{' | '.join(FORMATS)} ("
        + ", ".join(f"{a}: {f}" for a, f in FORMAT_ALIASES.items())
        + ")",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        help="FILE.parquet / FILE.jsonl, or a directory (one file per split)",
    )
    p.add_argument("--split", default="all", choices=("all", *SPLITS))
    p.add_argument("--data-source", default=None, help="data_source value (default: suite name)")
    p.add_argument(
        "--allow-lossy",
        action="store_true",
        help="also export programs whose argv / exit code / tolerance / flags the "
        "schema cannot express",
    )
    p.add_argument(
        "--allow-unfit",
        action="store_true",
        help="also export programs marked unfit (their tests accept a trivial or mutated "
        "program; docs/adequacy.md)",
    )
    add_bounded(
        p,
        "--max-prompt-tokens",
        low=1,
        high=1_000_000,
        type=int,
        default=None,
        help="drop (and report) rows whose prompt is longer: set it a little under the "
        "trainer's prompt length (verl: data.max_prompt_length)",
    )
    p.add_argument(
        "--tokenizer",
        default=None,
        help="the policy model's tokenizer (local tokenizer.json or model directory) for "
        "--max-prompt-tokens; default: estimate from characters",
    )
    p.set_defaults(func=_stoppable(cmd_export, "the export"))
