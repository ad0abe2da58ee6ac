"""The `asmopt` command. Thin: it parses, validates, delegates, and prints.

Human-readable tables by default, `--json` for machines. Every known failure (bad input,
missing sandbox, broken toolchain) ends with one line `asmopt: error: ...` and exit code 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from asmopt.programs.model import ProgramError, Suite
from asmopt.programs.suite_io import builtin_suite_path, load_suite, read_text_file
from asmopt.sandbox.runner import SandboxUnavailable
from asmopt.toolchain import ToolchainError

# Subcommand groups that live beside the modules they drive. Each exposes
# `register(subparsers, common)` where `common` is the parent parser with shared options.
COMMAND_MODULES: list[str] = ["asmopt.data.cli", "asmopt.policies.cli"]


class UsageError(Exception):
    """Bad command-line input; the message says what to change."""


def _jobs_default() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def common_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")
    common.add_argument(
        "--suite", default=None, help="suite directory (default: the built-in suite)"
    )
    common.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    return common


def open_suite(args: argparse.Namespace) -> Suite:
    return load_suite(args.suite or builtin_suite_path())


def print_table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)
    ]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def _short(text: str, n: int = 70) -> str:
    line = text.replace("\n", " | ")
    return line if len(line) <= n else line[: n - 3] + "..."


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


# ---------------------------------------------------------------------------- suite
def cmd_suite_list(args: argparse.Namespace) -> int:
    suite = open_suite(args)
    programs = suite.select(split=args.split)
    if args.json:
        emit_json(
            [
                {"id": p.id, "split": suite.splits[p.id], "tests": len(p.tests), **p.meta}
                for p in programs
            ]
        )
        return 0
    rows = [
        (
            p.id,
            suite.splits[p.id],
            len(p.tests),
            p.meta.get("category", ""),
            _short(str(p.meta.get("description", "")), 50),
        )
        for p in programs
    ]
    print_table(rows, ["program", "split", "tests", "category", "description"])
    print(f"\n{len(programs)} programs in suite {suite.name!r}")
    return 0


def cmd_suite_show(args: argparse.Namespace) -> int:
    suite = open_suite(args)
    program = suite.get(args.program)
    if args.json:
        emit_json(
            {
                "id": program.id,
                "split": suite.splits[program.id],
                "source": program.source,
                "headers": program.header_files,
                "cflags": list(program.cflags),
                "ldflags": list(program.ldflags),
                "metadata": program.meta,
                "tests": [
                    {
                        "name": t.name,
                        "argv": list(t.argv),
                        "stdin_bytes": len(t.stdin),
                        "stdout_bytes": len(t.expected_stdout),
                        "exit_code": t.expected_exit,
                        "compare": t.compare.to_dict(),
                    }
                    for t in program.tests
                ],
            }
        )
        return 0
    print(f"# {program.id}  (split: {suite.splits[program.id]})")
    for key, value in program.meta.items():
        print(f"{key}: {value}")
    print(
        f"cflags: {' '.join(program.cflags) or '-'}   ldflags: {' '.join(program.ldflags) or '-'}"
    )
    print()
    print(program.source.rstrip())
    print()
    print_table(
        [
            (t.name, len(t.stdin), len(t.expected_stdout), t.expected_exit, t.compare.mode)
            for t in program.tests
        ],
        ["test", "stdin bytes", "stdout bytes", "exit", "compare"],
    )
    return 0


def cmd_suite_verify(args: argparse.Namespace) -> int:
    from asmopt.eval_suite import verify_programs
    from asmopt.sandbox.runner import default_sandbox
    from asmopt.toolchain import default_toolchain

    suite = open_suite(args)
    programs = suite.select(split=args.split, ids=args.only)
    sandbox = default_sandbox()
    sandbox.check()
    results = verify_programs(
        programs, default_toolchain(), sandbox, jobs=args.jobs, progress=not args.json
    )
    bad = [r for r in results if not r.ok]
    if args.json:
        emit_json(
            {
                "programs": len(results),
                "ok": len(results) - len(bad),
                "failures": [
                    {"program": r.program_id, "O0": r.o0.to_dict(), "O3": r.o3.to_dict()}
                    for r in bad
                ],
            }
        )
    else:
        rows = [
            (
                r.program_id,
                f"{r.o0.verdict} {r.o0.passed}/{r.o0.total}",
                f"{r.o3.verdict} {r.o3.passed}/{r.o3.total}",
                _short(
                    r.o3.message if not r.o3.correct else r.o0.message if not r.o0.correct else ""
                ),
            )
            for r in results
        ]
        print_table(rows, ["program", "-O0", "-O3", "problem"])
        print(f"\n{len(results) - len(bad)}/{len(results)} programs pass every test at -O0 and -O3")
    return 0 if not bad else 1


# ---------------------------------------------------------------------------- baseline / check
def cmd_baseline(args: argparse.Namespace) -> int:
    from asmopt.toolchain import default_toolchain

    suite = open_suite(args)
    program = suite.get(args.program)
    flags = tuple(args.flags.split()) if args.flags else ("-O3",)
    asm = default_toolchain().baseline_assembly(program, flags)
    if args.json:
        emit_json({"program": program.id, "flags": list(flags), "assembly": asm})
    else:
        sys.stdout.write(asm)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from asmopt.evaluate import check_candidate
    from asmopt.toolchain import default_toolchain

    suite = open_suite(args)
    program = suite.get(args.program)
    path = Path(args.file)
    if path.is_dir():
        raise UsageError(f"{path}: is a directory, expected an assembly file")
    assembly = read_text_file(path, "assembly file")
    toolchain = default_toolchain()
    toolchain.sandbox.check()
    result = check_candidate(program, assembly, toolchain)
    if args.json:
        emit_json(result.to_dict())
    else:
        if result.tests:
            print_table(
                [
                    (
                        t.test,
                        t.verdict,
                        f"{t.wall_time_s * 1000:.1f}",
                        t.peak_rss_kb,
                        _short(t.message),
                    )
                    for t in result.tests
                ],
                ["test", "verdict", "wall ms", "rss KiB", "detail"],
            )
            print()
        print(f"{program.id}: {result.verdict} ({result.passed}/{result.total} tests passed)")
        if result.message and not result.correct:
            print(result.message)
    return 0 if result.correct else 1


# ---------------------------------------------------------------------------- eval
def cmd_eval(args: argparse.Namespace) -> int:
    from asmopt.eval_suite import evaluate_programs, summarize
    from asmopt.policies import get_policy
    from asmopt.sandbox.runner import default_sandbox
    from asmopt.toolchain import default_toolchain

    suite = open_suite(args)
    programs = suite.select(split=args.split, ids=args.only)
    if not programs:
        raise UsageError(f"no programs selected (split {args.split!r})")
    try:
        policy = get_policy(args.policy)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    sandbox = default_sandbox()
    sandbox.check()
    outcomes = evaluate_programs(
        programs,
        policy,
        default_toolchain(),
        sandbox,
        samples=args.samples,
        jobs=args.jobs,
        progress=not args.json,
    )
    summary = summarize(outcomes)
    summary.update(suite=suite.name, policy=policy.name, split=args.split)
    if args.json:
        emit_json({"summary": summary, "results": [o.to_dict() for o in outcomes]})
        return 0
    rows = [
        (
            o.program_id,
            o.sample,
            o.check.verdict,
            f"{o.check.passed}/{o.check.total}",
            _short(o.check.message if not o.check.correct else ""),
        )
        for o in outcomes
    ]
    print_table(rows, ["program", "sample", "verdict", "tests", "detail"])
    print()
    print(
        f"suite {suite.name!r}, split {args.split}, policy {policy.name}: "
        f"{summary['programs']} programs, {summary['samples']} samples"
    )
    print(f"  build rate    {_pct(summary['build_rate'])}")
    print(f"  pass rate     {_pct(summary['pass_rate'])}")
    print(f"  infra errors  {summary['infra_errors']} (not counted against the policy)")
    print("  verdicts      " + ", ".join(f"{k}={v}" for k, v in summary["verdicts"].items()))
    return 0


# ---------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    common = common_parser()
    parser = argparse.ArgumentParser(
        prog="asmopt",
        description="Make x86-64 assembly faster than gcc -O3 with language models, "
        "judged in a sandbox.",
    )
    from asmopt import __version__

    parser.add_argument("--version", action="version", version=f"asmopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    suite = sub.add_parser("suite", help="list, show and verify benchmark suites")
    suite_sub = suite.add_subparsers(dest="suite_command", metavar="ACTION")
    suite_sub.required = True
    p = suite_sub.add_parser("list", parents=[common], help="list the programs of a suite")
    p.add_argument("--split", default="all", help="all | train | validation | test")
    p.set_defaults(func=cmd_suite_list)
    p = suite_sub.add_parser("show", parents=[common], help="show one program and its tests")
    p.add_argument("program")
    p.set_defaults(func=cmd_suite_show)
    p = suite_sub.add_parser(
        "verify", parents=[common], help="rebuild at -O0 and -O3 and check both pass every test"
    )
    p.add_argument("--split", default="all")
    p.add_argument("--only", nargs="+", metavar="PROGRAM", help="only these programs")
    p.add_argument("-j", "--jobs", type=int, default=_jobs_default())
    p.set_defaults(func=cmd_suite_verify)

    p = sub.add_parser("baseline", parents=[common], help="print a program's -O3 assembly")
    p.add_argument("program")
    p.add_argument("--flags", default=None, help="compiler flags (default: -O3)")
    p.set_defaults(func=cmd_baseline)

    p = sub.add_parser(
        "check", parents=[common], help="build a candidate .s and run it on a program's tests"
    )
    p.add_argument("program")
    p.add_argument("file", help="candidate assembly file")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("eval", parents=[common], help="evaluate a policy on a suite")
    p.add_argument("--policy", default="identity")
    p.add_argument("--split", default="all")
    p.add_argument("--only", nargs="+", metavar="PROGRAM")
    p.add_argument("--samples", type=int, default=1, help="candidates per program")
    p.add_argument("-j", "--jobs", type=int, default=_jobs_default())
    p.set_defaults(func=cmd_eval)

    for name in COMMAND_MODULES:
        register: Callable[..., None] = importlib.import_module(name).register
        register(sub, common)
    return parser


def _validate(args: argparse.Namespace) -> None:
    for name in ("jobs", "samples"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            raise UsageError(f"--{name} must be at least 1, got {value}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        _validate(args)
        return int(args.func(args) or 0)
    except (
        UsageError,
        ProgramError,
        ToolchainError,
        SandboxUnavailable,
        ValueError,
        FileNotFoundError,
    ) as exc:
        print(f"asmopt: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("asmopt: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
