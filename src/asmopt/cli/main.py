"""The `asmopt` command's parser, its core commands, and the entry point.

Human-readable tables by default, `--json` for machines. Every known failure (bad input,
missing sandbox, broken toolchain) ends with one line `asmopt: error: ...` and exit code 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import logging
import signal
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from asmopt.cli.common import (
    UsageError,
    _interval,
    _jobs_default,
    _pct,
    _ratio,
    _short,
    common_parser,
    emit_json,
    open_suite,
    print_metrics,
    print_table,
)
from asmopt.fresh import DEFAULT_PER_CLASS
from asmopt.measure.speedup import INTERVAL_NAME
from asmopt.policies.llm import PolicyError
from asmopt.programs.model import ProgramError
from asmopt.programs.suite_io import builtin_suite_path, read_text_file
from asmopt.safe_io import STDOUT, check_output_file, check_output_path, write_output
from asmopt.sandbox.runner import SandboxUnavailable
from asmopt.store import StoreError as ResultsError
from asmopt.toolchain import ToolchainError

# Subcommand groups that live beside the modules they drive. Each exposes
# `register(subparsers, common)` where `common` is the parent parser with shared options.
COMMAND_MODULES: tuple[str, ...] = (
    "asmopt.cli.data",
    "asmopt.cli.doctor",
    "asmopt.cli.serve",
    "asmopt.cli.train",
    "asmopt.cli.study",
)


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
    results = verify_programs(programs, toolchain, sandbox, jobs=args.jobs, progress=not args.json)
    bad = [r for r in results if not r.ok]
    reports: list[Any] = []
    if not args.no_adequacy:
        from asmopt.adequacy import MARK_KEY, check_programs

        verified = [p for p, r in zip(programs, results, strict=True) if r.ok]
        reports = check_programs(
            verified,
            toolchain,
            sandbox,
            jobs=args.jobs,
            progress=not args.json,
            mutants=args.mutants,
        )
        if root is not None:
            from asmopt.programs.suite_io import set_program_metadata

            identity = toolchain.identity()
            for report in reports:
                if report.checked:
                    set_program_metadata(
                        root, report.program_id, MARK_KEY, report.to_mark(identity)
                    )
    unfit = [r for r in reports if r.checked and not r.fit]
    unchecked = [r for r in reports if not r.checked]
    if args.json:
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
                {"program": r.program_id, "classes": r.tabulable} for r in results if r.tabulable
            ],
        }
        if not args.no_adequacy:
            from asmopt.adequacy import summarize_reports

            out["adequacy"] = {
                **summarize_reports(reports),
                "marks_written": root is not None,
                "reports": [r.to_dict() for r in reports],
            }
        emit_json(out)
    else:
        by_id = {r.program_id: r for r in reports}
        rows = []
        for r in results:
            report = by_id.get(r.program_id)
            if args.no_adequacy:
                adequacy = []
            elif report is None:
                adequacy = ["-"]
            elif not report.checked:
                adequacy = ["not checked"]
            else:
                rate = report.kill_rate
                kills = (
                    f" {report.mutants_killed}/{report.mutants_total}"
                    + (f" equiv {report.mutants_equivalent}" if report.mutants_equivalent else "")
                    + (f" ({100 * rate:.0f}% killed)" if rate is not None else "")
                    if report.mutants_total
                    else ""
                )
                adequacy = [("fit" if report.fit else "UNFIT") + kills]
            drawn = (
                "fixed only"
                if r.drawn is None
                else f"{'agree' if r.drawn.correct and not r.refused else 'DIFFER'} "
                f"{r.drawn.passed}/{r.drawn.total + r.refused}"
            )
            rows.append(
                (
                    r.program_id,
                    f"{r.o0.verdict} {r.o0.passed}/{r.o0.total}",
                    f"{r.o3.verdict} {r.o3.passed}/{r.o3.total}",
                    drawn,
                    *adequacy,
                    _short(
                        r.o3.message
                        if not r.o3.correct
                        else r.o0.message
                        if not r.o0.correct
                        else r.drawn.message
                        if r.drawn is not None and not r.ok
                        else ""
                    ),
                )
            )
        headers = [
            "program",
            "-O0",
            "-O3",
            "drawn -O0 vs -O3",
            *([] if args.no_adequacy else ["adequacy"]),
            "problem",
        ]
        print_table(rows, headers)
        print(f"\n{len(results) - len(bad)}/{len(results)} programs pass every test at -O0 and -O3")
        for r in results:
            if r.tabulable:
                classes = ", ".join(f"{k} (~{v:.0f})" for k, v in r.tabulable.items())
                print(
                    f"warning: {r.program_id}: few distinct inputs in {classes}: a table of "
                    "every answer would fit in a binary, so its timings could be bought by "
                    "precomputation"
                )
        if not args.no_adequacy:
            fit = sum(r.checked and r.fit for r in reports)
            print(
                f"{fit}/{len(reports)} verified programs have adequate tests "
                "(no trivial program passes, most mutants are killed)"
            )
            from asmopt.adequacy import kill_rate_lines

            lines = kill_rate_lines(reports)
            if lines and lines[-1].startswith("total:"):  # each program's rate is above
                print(f"mutation kill rate (fixed and drawn inputs), {lines[-1]}")
            for r in unfit:
                print(f"unfit: {r.program_id}: {'; '.join(r.reasons)}")
            for r in reports:
                if r.checked and r.fit:
                    for warning in r.warnings:
                        print(f"warning: {r.program_id}: {warning}")
            for r in unchecked:
                print(f"not checked: {r.program_id}: {r.error}")
            if root is not None:
                written = sum(r.checked for r in reports)
                print(f"wrote {written} adequacy mark(s) into {root}/programs/*/program.json")
    return 0 if not (bad or unfit or unchecked) else 1


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
    if args.save_failing:  # a path it could never write is refused before any work
        check_output_path(args.save_failing, "--save-failing", stdout_ok=False)
    from asmopt.toolchain import MAX_ASM_BYTES

    assembly = read_text_file(path, "assembly file", MAX_ASM_BYTES)
    toolchain = default_toolchain()
    toolchain.sandbox.check()
    fresh = _fresh_inputs(args)
    result = check_candidate(program, assembly, toolchain, fresh=fresh, label=args.sample)
    if result.correct and args.measure != "none":
        _measure_checked(args, program, assembly, toolchain, result)
    saved = _save_failing(args, program, result)
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
        if program.fixed_inputs:
            print(
                "inputs: fixed only (the program has no input generator: a candidate could "
                "know every input in advance)"
            )
        elif fresh.enabled:
            print(
                f"inputs: fixed tests and {fresh.per_class} drawn per size class, seed "
                f"{fresh.seed} (replay: --input-seed {fresh.seed} --sample {args.sample})"
            )
        else:
            print(
                "inputs: fixed tests only (--fixed-inputs-only: every input was one a "
                "candidate could know in advance)"
            )
        if saved is not None:
            print(f"wrote the failing drawn input to {saved}")
        sp = result.speedup
        if sp is not None and result.correct:
            speed, interval, note = _speedup_cell(_Checked(result))
            what = "instructions" if args.measure == "instructions" else "CPU time"
            if speed == "-":
                print(f"speedup over -O3 ({what}): not measured: {sp.message or note}")
            else:
                print(
                    f"speedup over -O3 ({what}): {speed}, {INTERVAL_NAME} {interval}"
                    + (f" ({note})" if note else "")
                )
                for t in sp.tests:
                    print(f"  test {t.test}: {_ratio(t.ratio)} {_interval(t.low, t.high)}")
    return 0 if result.correct else 1


def _save_failing(args: argparse.Namespace, program: Any, result: Any) -> Path | None:
    """The first failing drawn test's input, drawn again from its recorded seed, written
    where the person asked (the input itself is never stored or shown to a policy)."""
    if not args.save_failing or program.inputs is None:
        return None
    failing = next((t for t in result.tests if t.drawn is not None and t.verdict != "pass"), None)
    if failing is None:
        return None
    data = program.inputs.draw(failing.drawn["class"], int(failing.drawn["seed"]))
    path = Path(args.save_failing)
    write_output(path, lambda fh: fh.write(data), option="--save-failing", stdout_ok=False)
    return path


class _Checked:
    """A single check shaped like a stored outcome, for the shared speedup cell."""

    def __init__(self, check: Any) -> None:
        self.check = check


def _measure_checked(
    args: argparse.Namespace, program: Any, assembly: str, toolchain: Any, result: Any
) -> None:
    """Measure a correct candidate against the -O3 baseline the way `asmopt eval` does."""
    from asmopt.evaluate import MeasureOptions, Measurer
    from asmopt.measure.canonical import canonical_statements
    from asmopt.measure.speedup import MeasureMode
    from asmopt.measure.timing import TimingConfig, default_core_lock, general_affinity

    mode = MeasureMode(args.measure)
    valgrind = None
    if mode == MeasureMode.INSTRUCTIONS:
        from asmopt.measure.valgrind import Valgrind, ValgrindUnavailable

        try:
            valgrind = Valgrind.locate()
        except ValgrindUnavailable as exc:
            raise UsageError(str(exc)) from None
    options = MeasureOptions(
        mode=mode,
        timing=TimingConfig(
            target_half_width=args.timing_target,
            max_pairs=args.timing_max_pairs,
            budget_s=args.timing_budget,
            precision=args.timing_precision,
        ),
        lock=default_core_lock() if mode == MeasureMode.TIME else None,
    )
    baseline = toolchain.baseline_assembly(program)
    is_copy = canonical_statements(assembly) == canonical_statements(baseline)
    measurer = Measurer(program, baseline, toolchain, toolchain.sandbox, options, None, valgrind)
    layout = options.lock.layout if options.lock is not None else None
    with general_affinity(layout) if layout is not None else contextlib.nullcontext():
        measurer.measure(result, is_copy)


def _speedup_cell(o: Any) -> tuple[str, str, str]:
    """(speedup, interval, note) columns for one outcome."""
    sp = o.check.speedup
    if sp is None:
        return "-", "-", ""
    status = str(sp.status)
    if status == "copy":
        return "1.000x", "-", "copy"
    if status != "measured":
        return "-", "-", status
    note = "faster" if sp.significantly_faster else "slower" if sp.significantly_slower else ""
    if not sp.reliable:
        note = (note + " unreliable").strip()
    return _ratio(sp.ratio), _interval(sp.low, sp.high), note


def cmd_eval(args: argparse.Namespace) -> int:
    """Parse, delegate to `run.run_eval`, print: the evaluation itself lives in run.py."""
    from asmopt.measure.speedup import MeasureMode
    from asmopt.measure.timing import TimingConfig
    from asmopt.policies.factory import make_policy
    from asmopt.run import EvalConfig, run_eval
    from asmopt.sandbox.runner import default_sandbox
    from asmopt.store import DB_NAME
    from asmopt.toolchain import default_toolchain

    suite = open_suite(args)
    mode = MeasureMode(args.measure)
    if mode == MeasureMode.INSTRUCTIONS:
        from asmopt.measure.valgrind import Valgrind, ValgrindUnavailable

        try:
            Valgrind.locate()
        except ValgrindUnavailable as exc:
            raise UsageError(str(exc)) from None
    sandbox = default_sandbox()
    sandbox.check()
    toolchain = default_toolchain()
    try:
        policy = make_policy(args, toolchain, sandbox)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    missing_answers = getattr(policy, "missing", None)
    if callable(missing_answers):  # answers from a file: all of them must be there up front
        selected = [p.id for p in suite.select(split=args.split, ids=args.only)]
        missing = missing_answers(selected, args.samples)
        if missing:
            shown = ", ".join(f"{p} sample {i}" for p, i in missing[:5])
            raise UsageError(
                f"{args.answers} has no answer for {len(missing)} of the "
                f"{len(selected) * args.samples} samples asked for ({shown}"
                f"{', ...' if len(missing) > 5 else ''}); add them, or lower --samples, or "
                "narrow --only/--split"
            )
    config = EvalConfig(
        policy=policy,
        suite=suite,
        split=args.split,
        only=args.only,
        samples=args.samples,
        jobs=args.jobs,
        measure=mode,
        timing=TimingConfig(
            target_half_width=args.timing_target,
            max_pairs=args.timing_max_pairs,
            budget_s=args.timing_budget,
            precision=args.timing_precision,
        ),
        time_copies=args.time_copies,
        run_dir=Path(args.run_dir) if args.run_dir else None,
        fresh=args.fresh,
        wait=args.wait,
        progress=not args.json,
        fresh_inputs=_fresh_inputs(args),
    )
    try:
        done = run_eval(config, toolchain=toolchain, sandbox=sandbox)
    except ValueError as exc:
        if str(exc).startswith("no programs selected"):
            raise UsageError(str(exc)) from None
        raise
    for note in done.notes:
        print(f"asmopt: warning: {note}", file=sys.stderr)
    for pid, why in done.unfit.items():
        print(
            f"asmopt: warning: {pid} is marked unfit (its tests accept a trivial or "
            f"mutated program: {why}); its verdicts and speedups may reward wrong answers",
            file=sys.stderr,
        )
    outcomes, summary, run_dir = done.outcomes, done.summary, done.run_dir
    if args.samples > 1:
        from asmopt.report.best_of_n import best_of_n_metrics

        programs = suite.select(split=args.split, ids=args.only)
        summary["best_of_n"] = best_of_n_metrics(outcomes, {p.id: p for p in programs})
    summary["interrupted"] = done.interrupted
    if args.json:
        emit_json({"summary": summary, "results": [o.to_dict() for o in outcomes]})
        return _interrupted_exit(done.signal) if done.interrupted else 0
    rows = []
    for o in outcomes:
        speed, interval, note = _speedup_cell(o)
        rows.append(
            (
                o.program_id,
                o.sample,
                o.check.verdict,
                f"{o.check.passed}/{o.check.total}",
                speed,
                interval,
                note,
                _timing_warnings(o),
                f"{_wall_s(o):.1f}",
                _short(o.check.message if not o.check.correct else "", 50),
            )
        )
    print_table(
        rows,
        [
            "program",
            "sample",
            "verdict",
            "tests",
            "speedup",
            INTERVAL_NAME,
            "note",
            "warnings",
            "wall s",
            "detail",
        ],
    )
    _print_searches(outcomes, variants=args.verbose)
    print()
    print(
        f"suite {suite.name!r}, split {args.split}, policy {policy.name}, measure {mode}: "
        f"{summary['programs']} programs, {summary['samples']} samples "
        f"({summary['resumed']} from earlier sessions)"
    )
    print_metrics(summary["metrics"])
    print(
        f"  infra errors  {summary['infra_errors']} verdicts, "
        f"{summary['measure_infra_errors']} measurements (not counted against the policy; "
        "rerun the command to retry them)"
    )
    print("  verdicts      " + ", ".join(f"{k}={v}" for k, v in summary["verdicts"].items()))
    fixed = summary.get("fixed_inputs") or []
    if fixed:
        shown = ", ".join(fixed[:5]) + (f" and {len(fixed) - 5} more" if len(fixed) > 5 else "")
        print(
            f"  fixed inputs  {len(fixed)} program(s) have no input generator ({shown}): "
            "their answers were judged and timed on inputs a candidate could know"
        )
    if "best_of_n" in summary:
        bon = summary["best_of_n"]
        for kind, what in (
            ("honest", "picked on the selection split, scored on all tests"),
            ("oracle", "picked on the tests it is scored on, as the reference"),
        ):
            ref = bon[kind]["reference"]
            print(
                f"  best-of-{bon['n']} {kind:6s} pass {_pct(ref['pass_rate'])}, speedup "
                f"{ref['speedup'] or 0:.3f}x, significantly faster "
                f"{_pct(bon[kind]['strict']['significantly_faster'])} ({what})"
            )
        scored = bon.get("selected_on_scored_input") or []
        if scored:
            print(
                f"  best-of-{bon['n']} honest: {len(scored)} of {summary['programs']} programs "
                "have one test, so their pick was selected on the scored input (as the oracle)"
            )
    print(f"\nresults stored in {run_dir}/{DB_NAME}; `asmopt report {run_dir}` writes a report")
    return _interrupted_exit(done.signal) if done.interrupted else 0


def _interrupted_exit(signum: int | None = None) -> int:
    """After a Ctrl-C or SIGTERM the summary of what is stored has been printed; say how to
    go on, and exit as a shell reports that signal (130 for SIGINT, 143 for SIGTERM)."""
    print("asmopt: interrupted; rerun the same command to resume", file=sys.stderr)
    return 128 + (signum or signal.SIGINT)


# ---------------------------------------------------------------------------- results / report
def _open_store(path: str) -> Any:
    from asmopt.store import ResultStore

    return ResultStore(path, create=False)


def _timing_warnings(o: Any) -> str:
    """The timing warnings the answer's stored measurement carries (e.g. high_load)."""
    sp = o.check.speedup
    return ", ".join(sorted({w for t in (sp.tests if sp else []) for w in t.warnings}))


def _wall_s(o: Any) -> float:
    """Wall seconds of an answer: judging and measuring it, plus the policy's time for its
    program (counted on sample 0, as the policy answers all samples at once)."""
    policy_s = float((o.policy_info or {}).get("policy_s") or 0.0) if o.sample == 0 else 0.0
    return float(o.seconds) + policy_s


def _print_searches(outcomes: Sequence[Any], variants: bool) -> None:
    """What a compiler search chose per program (and with `variants`, every variant)."""
    from asmopt.report.search import budget_hits, program_searches, search_heading, variant_rows

    searches = program_searches(outcomes)
    if not searches:
        return
    print()
    for search in searches:
        print(search_heading(search))
        if variants:
            print_table(
                variant_rows(search), ["  variant", "outcome", "speedup", INTERVAL_NAME, "detail"]
            )
    scored = sum(s.selected_on_scored_input for s in searches)
    if scored:
        print(
            f"{scored} of {len(searches)} programs: variant selected on the scored input "
            "(one test, no held-out input); their speedups are optimistic"
        )
    hits = budget_hits(searches)
    if hits:
        print(f"hit the search budget: {', '.join(hits)}")


def _program_summary(outcomes: Sequence[Any]) -> list[tuple[Any, ...]]:
    rows = []
    for o in outcomes:
        speed, interval, note = _speedup_cell(o)
        rows.append(
            (
                o.program_id,
                o.sample,
                o.check.verdict,
                speed,
                interval,
                note,
                _timing_warnings(o),
                f"{_wall_s(o):.1f}",
            )
        )
    return rows


def cmd_results_show(args: argparse.Namespace) -> int:
    from asmopt.run import summarize

    with _open_store(args.run) as store:
        meta = store.meta()
        outcomes = store.load_outcomes()
    summary = summarize(outcomes)
    if args.json:
        emit_json({"meta": meta, "summary": summary})
        return 0
    run = meta.get("run", {})
    fp = meta.get("fingerprint", {})
    print(
        f"run {args.run}: suite {run.get('suite')!r}, policy {run.get('policy')}, "
        f"split {run.get('split')}, measure {run.get('measure')}, created {meta.get('created')}"
    )
    print(f"  cpu {fp.get('cpu_model')} x{fp.get('cpus')}, kernel {fp.get('kernel')}")
    print(f"  compiler {fp.get('compiler')}")
    print(f"  sandbox {fp.get('sandbox')}")
    print()
    print_table(
        _program_summary(outcomes),
        ["program", "sample", "verdict", "speedup", INTERVAL_NAME, "note", "warnings", "wall s"],
    )
    _print_searches(outcomes, variants=args.verbose)
    print()
    print(f"{summary['programs']} programs, {summary['samples']} samples")
    print_metrics(summary["metrics"])
    print(
        f"  infra errors  {summary['infra_errors']} verdicts, "
        f"{summary['measure_infra_errors']} measurements"
    )
    return 0


def cmd_results_compare(args: argparse.Namespace) -> int:
    from asmopt.run import summarize

    with _open_store(args.run_a) as a, _open_store(args.run_b) as b:
        out_a, out_b = a.load_outcomes(), b.load_outcomes()
        meta_a, meta_b = a.meta(), b.meta()
    sum_a, sum_b = summarize(out_a), summarize(out_b)
    by_a = {(o.program_id, o.sample): o for o in out_a}
    by_b = {(o.program_id, o.sample): o for o in out_b}
    common = sorted(set(by_a) & set(by_b))
    fp_a, fp_b = meta_a.get("fingerprint", {}), meta_b.get("fingerprint", {})
    env_diff = {
        k: (fp_a.get(k), fp_b.get(k))
        for k in ("cpu_model", "kernel", "compiler", "sandbox", "measure")
        if fp_a.get(k) != fp_b.get(k)
    }
    rows = []
    for key in common:
        oa, ob = by_a[key], by_b[key]
        sa, _, na = _speedup_cell(oa)
        sb, _, nb = _speedup_cell(ob)
        changed = str(oa.check.verdict) != str(ob.check.verdict) or na != nb
        rows.append(
            (*key, oa.check.verdict, sa, na, ob.check.verdict, sb, nb, "*" if changed else "")
        )
    if args.json:
        emit_json(
            {
                "a": {"run": args.run_a, "summary": sum_a},
                "b": {"run": args.run_b, "summary": sum_b},
                "environment_differences": env_diff,
                "programs": [
                    {
                        "program": r[0],
                        "sample": r[1],
                        "a": by_a[(r[0], r[1])].answer().__dict__,
                        "b": by_b[(r[0], r[1])].answer().__dict__,
                    }
                    for r in rows
                ],
            }
        )
        return 0
    print_table(
        rows,
        [
            "program",
            "sample",
            "A verdict",
            "A speedup",
            "A note",
            "B verdict",
            "B speedup",
            "B note",
            "changed",
        ],
    )
    print()
    ma, mb = sum_a["metrics"], sum_b["metrics"]
    lines = [
        ("compile", ma["reference"]["compile_rate"], mb["reference"]["compile_rate"], _pct),
        ("test pass", ma["reference"]["pass_rate"], mb["reference"]["pass_rate"], _pct),
        ("avg speedup (ref)", ma["reference"]["speedup"], mb["reference"]["speedup"], _ratio),
        (
            "sig. faster",
            ma["strict"]["significantly_faster"],
            mb["strict"]["significantly_faster"],
            _pct,
        ),
        (
            "%Opt (point)",
            ma["reference"].get("pie_opt_point"),
            mb["reference"].get("pie_opt_point"),
            _pct,
        ),
        ("%Opt (strict)", ma["strict"]["pie_opt"], mb["strict"]["pie_opt"], _pct),
        (
            "geomean correct",
            ma["strict"]["geomean_correct"],
            mb["strict"]["geomean_correct"],
            _ratio,
        ),
        (
            "sig. slower",
            ma["strict"]["significantly_slower"],
            mb["strict"]["significantly_slower"],
            _pct,
        ),
        ("copies", ma["strict"]["copy_rate"], mb["strict"]["copy_rate"], _pct),
    ]
    print_table([(name, f(x), f(y)) for name, x, y, f in lines], ["metric", "A", "B"])
    print(
        f"\nA = {args.run_a}\nB = {args.run_b}\n{len(common)} samples in both; "
        f"{len(set(by_a) - set(by_b))} only in A, {len(set(by_b) - set(by_a))} only in B"
    )
    for k, (x, y) in env_diff.items():
        print(f"environment differs: {k}: {x!r} vs {y!r}")
    return 0


def cmd_results_export(args: argparse.Namespace) -> int:
    from asmopt.report.export import export_records, write_jsonl, write_parquet

    default = Path(args.run) / f"results.{args.format}"
    to_stdout = args.output == STDOUT
    out = Path(args.output) if args.output else default
    if not to_stdout:  # refused before the store is read; the writer checks again
        if out.is_dir():
            raise UsageError(
                f"-o {out}: is a directory; give a file name (e.g. {out / default.name})"
            )
        check_output_file(out)
    with _open_store(args.run) as store:
        records = export_records(store, raw=args.raw)
    writer = write_jsonl if args.format == "jsonl" else write_parquet
    written = writer(records, STDOUT if to_stdout else out)
    # With `-o -` the records are the output: the summary goes to stderr.
    where = "standard output" if to_stdout else str(out)
    print(f"wrote {written} samples to {where}", file=sys.stderr if to_stdout else sys.stdout)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from asmopt.report import PlotsUnavailable, write_report
    from asmopt.report.build import MixedSuitesError

    output = Path(args.output) if args.output else None
    if output is not None and output.exists() and not output.is_dir():
        raise UsageError(f"-o {output}: is a file; -o takes a directory for the report")
    with _open_store(args.run) as store:
        try:
            html_path, md_path = write_report(store, output, plots=not args.no_plots)
        except (PlotsUnavailable, MixedSuitesError) as exc:
            raise UsageError(str(exc)) from None
        except OSError as exc:
            where = output or Path(args.run)
            raise UsageError(
                f"cannot write the report into {where} ({exc.strerror})"
                + ("" if output else "; write it elsewhere with -o DIR")
            ) from None
    print(f"wrote {html_path}\nwrote {md_path}")
    return 0


# ---------------------------------------------------------------------------- parser
def _add_timing_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timing-target",
        type=float,
        default=0.02,
        help="stop timing a test when the 98%% interval is within +-this (default 0.02)",
    )
    p.add_argument("--timing-max-pairs", type=int, default=200, help="timed pairs per test")
    p.add_argument(
        "--timing-budget", type=float, default=20.0, help="seconds of timing per test at most"
    )
    p.add_argument(
        "--timing-precision",
        choices=["target", "decision"],
        default="target",
        help="target (default): every test to the +-target interval, a number for a person; "
        "decision: stop once faster / not / slower is settled (an answer within +-3%% of "
        "the baseline needs no +-2%% interval), as the reward service does",
    )


def _add_input_options(p: argparse.ArgumentParser) -> None:
    """How a grading draws its inputs (asmopt.fresh): by default a new secret seed."""
    p.add_argument(
        "--input-seed",
        type=int,
        default=None,
        help="draw the inputs from this seed, e.g. one a verdict records, to replay it "
        "exactly (default: a new secret seed; never reuse one for a reward)",
    )
    p.add_argument(
        "--drawn-per-class",
        type=int,
        default=DEFAULT_PER_CLASS,
        help=f"drawn inputs per size class in the correctness check (default {DEFAULT_PER_CLASS})",
    )
    p.add_argument(
        "--fixed-inputs-only",
        action="store_true",
        help="judge and time on the fixed tests only (an A/A check of the instrument; a "
        "candidate can then know every input in advance)",
    )


def _fresh_inputs(args: argparse.Namespace) -> Any:
    from asmopt.fresh import FreshInputs, new_seed

    if args.fixed_inputs_only:
        return FreshInputs.off()
    seed = args.input_seed if args.input_seed is not None else new_seed()
    return FreshInputs(seed=seed, per_class=args.drawn_per_class)


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
        "verify",
        parents=[common],
        help="rebuild at -O0 and -O3 and check both pass every test, then check that the "
        "tests are adequate (docs/adequacy.md)",
    )
    p.add_argument("--split", default="all")
    p.add_argument("--only", nargs="+", metavar="PROGRAM", help="only these programs")
    p.add_argument("-j", "--jobs", type=int, default=_jobs_default())
    p.add_argument(
        "--no-adequacy",
        action="store_true",
        help="skip the test-adequacy check (trivial programs and mutants must fail)",
    )
    p.add_argument(
        "--write-marks",
        action="store_true",
        help="store each adequacy report in the suite's program.json (metadata.adequacy)",
    )
    p.add_argument(
        "--mutants",
        type=int,
        default=6,
        help="mutants of the -O3 baseline per program (default 6)",
    )
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
    p.add_argument(
        "--measure",
        choices=["none", "time", "instructions"],
        default="none",
        help="also measure a correct candidate against the -O3 baseline and print the "
        "speedup with its 98%% interval (as `asmopt eval` does); default: correctness only",
    )
    _add_timing_options(p)
    _add_input_options(p)
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        help="the sample number whose draws to repeat (with --input-seed; default 0)",
    )
    p.add_argument(
        "--save-failing",
        metavar="PATH",
        default=None,
        help="write the input of the first failing drawn test to PATH",
    )
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "eval",
        parents=[common],
        help="evaluate a policy on a suite (stored; re-running resumes)",
        description="Judge a policy's answers, measure the correct ones against the -O3 "
        "baseline, store everything in RUN_DIR/results.db. Re-running the same command "
        "skips finished samples and retries infrastructure errors.",
    )
    p.add_argument("--policy", default="identity")
    p.add_argument("--split", default="all")
    p.add_argument("--only", nargs="+", metavar="PROGRAM")
    p.add_argument(
        "--samples",
        "--n",
        type=int,
        default=1,
        dest="samples",
        help="candidates per program (best-of-N reports honest and oracle picks)",
    )
    p.add_argument("-j", "--jobs", type=int, default=_jobs_default())
    p.add_argument(
        "--run-dir",
        default=None,
        help="where results are stored (default: runs/SUITE-HASH-POLICY-SPLIT-MEASURE, HASH from "
        "the suite's program ids)",
    )
    p.add_argument("--fresh", action="store_true", help="discard results already in --run-dir")
    p.add_argument(
        "--wait",
        action="store_true",
        help="if another evaluation is writing to --run-dir, wait for it instead of refusing",
    )
    p.add_argument(
        "--measure",
        choices=["time", "instructions", "none"],
        default="time",
        help="time: interleaved CPU-time runs with intervals (default); instructions: exact "
        "counts under valgrind (deterministic, biased); none: correctness only",
    )
    _add_timing_options(p)
    _add_input_options(p)
    p.add_argument(
        "--time-copies",
        action="store_true",
        help="also time answers that are copies of the baseline (an A/A check of the timer)",
    )
    from asmopt.policies.factory import add_policy_arguments

    add_policy_arguments(p)
    p.set_defaults(func=cmd_eval)

    results = sub.add_parser("results", help="show, compare and export stored results")
    results_sub = results.add_subparsers(dest="results_command", metavar="ACTION")
    results_sub.required = True
    p = results_sub.add_parser("show", parents=[common], help="metrics and per-program results")
    p.add_argument("run", help="run directory (or its results.db)")
    p.set_defaults(func=cmd_results_show)
    p = results_sub.add_parser("compare", parents=[common], help="two runs side by side")
    p.add_argument("run_a")
    p.add_argument("run_b")
    p.set_defaults(func=cmd_results_compare)
    p = results_sub.add_parser(
        "export", parents=[common], help="one record per sample, as JSON lines or Parquet"
    )
    p.add_argument("run")
    p.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="file, or - for standard output (default: RUN/results.FORMAT); an existing "
        "device, FIFO or socket is refused",
    )
    p.add_argument("--raw", action="store_true", help="include raw timing samples")
    p.set_defaults(func=cmd_results_export)

    p = sub.add_parser(
        "report", parents=[common], help="write an HTML page and a Markdown summary of a run"
    )
    p.add_argument("run", help="run directory")
    p.add_argument("-o", "--output", default=None, help="directory (default: the run directory)")
    p.add_argument("--no-plots", action="store_true", help="skip plots (no matplotlib needed)")
    p.set_defaults(func=cmd_report)

    for name in COMMAND_MODULES:
        register: Callable[..., None] = importlib.import_module(name).register
        register(sub, common)
    return parser


# Every numeric option of every command: (lowest, highest, whether the lowest is allowed).
# The upper bounds are far above any sensible use and far below what exhausts the machine
# (`--samples 1000000000` once ate 3.6 GB before printing anything); data commands' options
# that mean "no limit" with 0 start at 0.
NUMERIC_BOUNDS: dict[str, tuple[float, float, bool]] = {
    "jobs": (1, 256, True),
    "samples": (1, 10_000, True),
    "mutants": (1, 1_000, True),
    "timing_target": (0, 1, False),
    "timing_max_pairs": (1, 100_000, True),
    "timing_budget": (0, 3_600, False),
    "rounds": (1, 100, True),
    "temperature": (0, 2, True),
    "top_p": (0, 1, False),
    "max_tokens": (1, 1_000_000, True),
    "seed": (0, 2**63 - 1, True),
    "concurrency": (1, 1_024, True),
    "port": (0, 65_535, True),
    "batch_size": (1, 4_096, True),
    "per_problem": (1, 1_000_000, True),
    "max_tests": (1, 100_000, True),
    "timing_runs": (1, 1_000, True),
    "timeout": (0, 86_400, False),
    "speedup": (0, 1_000, True),
    "top_n": (0, 100_000_000, True),
    "chars_per_token": (0, 100, False),
    "loops": (1, 64, True),
    "input_seed": (0, 2**63 - 1, True),
    "drawn_per_class": (0, 64, True),
    "sample": (0, 10_000_000, True),
}
# Options of the `data` commands whose 0 means "no limit".
_ZERO_MEANS_NO_LIMIT = {"max_tokens"}


def _validate(args: argparse.Namespace) -> None:
    """Check every numeric option against NUMERIC_BOUNDS before any work starts."""
    for name, (low, high, inclusive) in NUMERIC_BOUNDS.items():
        value = getattr(args, name, None)
        if value is None or isinstance(value, bool):
            continue
        if args.command == "data" and name in _ZERO_MEANS_NO_LIMIT:
            low = 0
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, int | float):
                continue
            flag = "--" + name.replace("_", "-")
            if item < low or (item == low and not inclusive) or item != item:
                least = f"at least {low:g}" if inclusive else f"greater than {low:g}"
                raise UsageError(f"{flag} must be {least}, got {item}")
            if item > high:
                raise UsageError(f"{flag} must be at most {high:g}, got {item}")


# Options whose value is itself compiler flags ("-O1 -march=native"): argparse would read a
# value that starts with '-' as an option, so `--flags -O1` is joined into `--flags=-O1`.
FLAG_VALUED_OPTIONS = ("--flags",)


def join_flag_values(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in FLAG_VALUED_OPTIONS and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(join_flag_values(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        _validate(args)
        return int(args.func(args) or 0)
    except (
        UsageError,
        ResultsError,
        ProgramError,
        ToolchainError,
        SandboxUnavailable,
        ValueError,
        PolicyError,
        FileNotFoundError,
    ) as exc:
        print(f"asmopt: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file asmopt was told to read or write; never a traceback
        where = f"{exc.filename}: " if exc.filename else ""
        fix = "; free disk space and rerun" if exc.errno == errno.ENOSPC else ""
        print(f"asmopt: error: {where}{exc.strerror or exc}{fix}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # the store wraps its own; this is the last resort
        print(f"asmopt: error: results database: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("asmopt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
