"""`asmopt suite list | show | verify`: what a suite holds, and whether it can be trusted."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from asmopt.cli.common import (
    UsageError,
    _jobs_default,
    _short,
    emit_json,
    open_suite,
    print_table,
)
from asmopt.cli.options import add_bounded, add_jobs_option
from asmopt.programs.suite_io import builtin_suite_path


def register(sub: Any, common: argparse.ArgumentParser) -> None:
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
        "verify",
        parents=[common],
        help="rebuild at -O0 and -O3 and check both pass every test, then check that the "
        "tests are adequate (docs/adequacy.md)",
    )
    p.add_argument("--split", default="all")
    p.add_argument("--only", nargs="+", metavar="PROGRAM", help="only these programs")
    add_jobs_option(p, _jobs_default())
    p.add_argument(
        "--no-adequacy",
        action="store_true",
        help="skip the test-adequacy check (trivial programs and mutants must fail)",
    )
    p.add_argument(
        "--write-marks",
        action="store_true",
        help="store each adequacy report and entropy measurement in the suite's "
        "program.json (metadata.adequacy, metadata.entropy)",
    )
    add_bounded(
        p,
        "--mutants",
        low=1,
        high=1_000,
        type=int,
        default=6,
        help="mutants of the -O3 baseline per program (default 6)",
    )
    add_bounded(
        p,
        "--entropy-draws",
        low=0,
        high=4_096,
        type=int,
        default=256,
        help="draws per timed class whose baseline outputs must all differ, the "
        "no-precomputed-answer check (docs/suite_format.md, 'Entropy'; default 256; 0 "
        "skips the measurement, the declared entropy is still checked)",
    )
    p.set_defaults(func=cmd_suite_verify)


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
        if key == "adequacy":
            from asmopt.adequacy import is_reward_fit

            value = is_reward_fit(program)[1]
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


def _writable_suite_root(args: argparse.Namespace) -> Path:
    """The suite directory `--write-marks` may write into; never the shipped suite."""
    root = Path(args.suite or builtin_suite_path()).resolve()
    if root == builtin_suite_path().resolve():
        raise UsageError(
            f"--write-marks: refusing to write into the built-in suite shipped with asmopt "
            f"({root}); copy it (cp -r {root} my-suite) and pass --suite my-suite"
        )
    return root



def cmd_suite_verify(args: argparse.Namespace) -> int:
    from asmopt.run import verify_programs
    from asmopt.sandbox.runner import default_sandbox
    from asmopt.toolchain import default_toolchain

    if args.write_marks and args.no_adequacy:
        raise UsageError("--write-marks stores the adequacy check: drop --no-adequacy")
    root = _writable_suite_root(args) if args.write_marks else None
    suite = open_suite(args)
    programs = suite.select(split=args.split, ids=args.only)
    sandbox = default_sandbox()
    sandbox.check()
    toolchain = default_toolchain()
    results = verify_programs(
        programs, toolchain, sandbox, jobs=args.jobs, progress=not args.json,
        entropy_draws=args.entropy_draws,
    )
    reports: list[Any] = []
    if not args.no_adequacy:
        reports = _adequacy_reports(args, programs, results, toolchain, sandbox, root)
    if root is not None:
        _write_entropy_marks(results, root)
    if args.json:
        emit_json(_verify_json(args, results, reports, root))
    else:
        _print_verify(args, results, reports, root)
    bad = [r for r in results if not r.ok]
    unfit_or_unchecked = [r for r in reports if not (r.checked and r.fit)]
    tabulable = [r for r in results if r.tabulable]
    fixed = [p for p in programs if p.inputs is None]
    return 0 if not (bad or unfit_or_unchecked or tabulable or fixed) else 1


def _write_entropy_marks(results: list[Any], root: Path) -> None:
    """Store each program's entropy measurement as its mark (metadata.entropy), which
    `is_reward_fit` reads while the program stays as it was measured."""
    from asmopt.entropy import MARK_KEY
    from asmopt.programs.suite_io import set_program_metadata

    for r in results:
        if r.entropy is not None:
            set_program_metadata(root, r.program_id, MARK_KEY, r.entropy.to_dict())


def _adequacy_reports(
    args: argparse.Namespace,
    programs: list[Any],
    results: list[Any],
    toolchain: Any,
    sandbox: Any,
    root: Path | None,
) -> list[Any]:
    """The adequacy check of every verified program, each report stored as the program's
    mark when `--write-marks` asked for it."""
    from asmopt.adequacy.check import check_programs
    from asmopt.adequacy.fitness import MARK_KEY

    verified = [p for p, r in zip(programs, results, strict=True) if r.ok]
    reports = check_programs(
        verified, toolchain, sandbox, jobs=args.jobs, progress=not args.json, mutants=args.mutants
    )
    if root is not None:
        from asmopt.programs.suite_io import set_program_metadata

        identity = toolchain.identity()
        for report in reports:
            if report.checked:
                set_program_metadata(root, report.program_id, MARK_KEY, report.to_mark(identity))
    return reports


def _verify_json(
    args: argparse.Namespace, results: list[Any], reports: list[Any], root: Path | None
) -> dict[str, Any]:
    bad = [r for r in results if not r.ok]
    out: dict[str, Any] = {
        "programs": len(results),
        "ok": len(results) - len(bad),
        "failures": [
            {
                "program": r.program_id,
                "O0": r.o0.to_dict(),
                "O3": r.o3.to_dict(),
                "drawn": r.drawn.to_dict() if r.drawn is not None else None,
                "refused": r.refused,
            }
            for r in bad
        ],
        "tabulable": [
            {"program": r.program_id, "problems": r.tabulable} for r in results if r.tabulable
        ],
        "entropy": [r.entropy.to_dict() for r in results if r.entropy is not None],
    }
    if not args.no_adequacy:
        from asmopt.adequacy.summary import summarize_reports

        out["adequacy"] = {
            **summarize_reports(reports),
            "marks_written": root is not None,
            "reports": [r.to_dict() for r in reports],
        }
    return out


def _adequacy_cell(report: Any) -> str:
    if report is None:
        return "-"
    if not report.checked:
        return "not checked"
    rate = report.kill_rate
    kills = (
        f" {report.mutants_killed}/{report.mutants_total}"
        + (f" equiv {report.mutants_equivalent}" if report.mutants_equivalent else "")
        + (f" ({100 * rate:.0f}% killed)" if rate is not None else "")
        if report.mutants_total
        else ""
    )
    return ("fit" if report.fit else "UNFIT") + kills


def _verify_row(r: Any, adequacy: list[str]) -> tuple[Any, ...]:
    drawn = (
        "fixed only"
        if r.drawn is None
        else f"{'agree' if r.drawn.correct and not r.refused else 'DIFFER'} "
        f"{r.drawn.passed}/{r.drawn.total + r.refused}"
    )
    if not r.o3.correct:
        problem = r.o3.message
    elif not r.o0.correct:
        problem = r.o0.message
    elif r.drawn is not None and not r.ok:
        problem = r.drawn.message
    else:
        problem = ""
    return (
        r.program_id,
        f"{r.o0.verdict} {r.o0.passed}/{r.o0.total}",
        f"{r.o3.verdict} {r.o3.passed}/{r.o3.total}",
        drawn,
        *adequacy,
        _short(problem),
    )


def _print_verify(
    args: argparse.Namespace, results: list[Any], reports: list[Any], root: Path | None
) -> None:
    by_id = {r.program_id: r for r in reports}
    rows = [
        _verify_row(r, [] if args.no_adequacy else [_adequacy_cell(by_id.get(r.program_id))])
        for r in results
    ]
    headers = ["program", "-O0", "-O3", "drawn -O0 vs -O3"]
    print_table(rows, [*headers, *([] if args.no_adequacy else ["adequacy"]), "problem"])
    bad = sum(not r.ok for r in results)
    print(f"\n{len(results) - bad}/{len(results)} programs pass every test at -O0 and -O3")
    measured = [r.entropy for r in results if r.entropy is not None]
    if measured:
        print(_entropy_summary(measured))
    for r in results:
        if r.drawn is None and r.o3.correct:
            print(
                f"unfit: {r.program_id}: fixed inputs only (no input generator): a memorised "
                "answer would be paid, so no reward path scores it"
            )
        if r.tabulable:
            print(
                f"tabulable: {r.program_id}: {'; '.join(r.tabulable)}: an answer table could "
                "pass its gradings, so it is unfit for reward"
            )
    if not args.no_adequacy:
        _print_adequacy(reports, root)


def _entropy_summary(reports: list[Any]) -> str:
    """One line: the timed classes measured, the least declared entropy, the distinct
    outputs and the least share of draws in which changing a field changed the output."""
    classes = [c for r in reports for c in r.classes]
    if not classes:
        return "entropy: no timed class measured"
    bits = min(c.declared_bits for c in classes)
    distinct = sum(c.distinct for c in classes)
    draws = sum(c.draws for c in classes)
    shares = [v for c in classes for v in c.fields.values()]
    least = f", changing any field changed the output in >= {min(shares):.0%} of draws" if (
        shares) else ""
    worst = max(r.default_pass_bound() for r in reports)
    return (
        f"entropy of {len(classes)} timed classes: >= {bits:.0f} declared bits, "
        f"{distinct}/{draws} distinct baseline outputs{least}; a constant answer per class "
        f"passes one grading with probability <= {worst:.1e} (95% bound)"
    )


def _print_adequacy(reports: list[Any], root: Path | None) -> None:
    from asmopt.adequacy.summary import kill_rate_lines

    fit = sum(r.checked and r.fit for r in reports)
    print(
        f"{fit}/{len(reports)} verified programs have adequate tests "
        "(no trivial program passes, most mutants are killed)"
    )
    lines = kill_rate_lines(reports)
    if lines and lines[-1].startswith("total:"):  # each program's rate is above
        print(f"mutation kill rate (fixed and drawn inputs), {lines[-1]}")
    for r in reports:
        if r.checked and not r.fit:
            print(f"unfit: {r.program_id}: {'; '.join(r.reasons)}")
    for r in reports:
        if r.checked and r.fit:
            for warning in r.warnings:
                print(f"warning: {r.program_id}: {warning}")
    for r in reports:
        if not r.checked:
            print(f"not checked: {r.program_id}: {r.error}")
    if root is not None:
        written = sum(r.checked for r in reports)
        print(f"wrote {written} adequacy mark(s) into {root}/programs/*/program.json")
