"""`asmopt results show | compare | export` and `asmopt report`: what a stored run holds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from asmopt.cli.common import UsageError, _pct, _ratio, emit_json, print_metrics, print_table
from asmopt.cli.display import OUTCOME_HEADERS, outcome_rows, print_searches, speedup_cells
from asmopt.safe_io import STDOUT, check_output_file


def register(sub: Any, common: argparse.ArgumentParser) -> None:
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


def _open_store(path: str) -> Any:
    from asmopt.store import ResultStore

    return ResultStore(path, create=False)


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
        outcome_rows(outcomes),
        [*OUTCOME_HEADERS, "wall s"],
    )
    print_searches(outcomes, variants=args.verbose)
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
    from asmopt.store import environment_differences

    with _open_store(args.run_a) as a, _open_store(args.run_b) as b:
        out_a, out_b = a.load_outcomes(), b.load_outcomes()
        meta_a, meta_b = a.meta(), b.meta()
    sum_a, sum_b = summarize(out_a), summarize(out_b)
    by_a = {(o.program_id, o.sample): o for o in out_a}
    by_b = {(o.program_id, o.sample): o for o in out_b}
    common = sorted(set(by_a) & set(by_b))
    env_diff = environment_differences(
        meta_a.get("fingerprint", {}), meta_b.get("fingerprint", {})
    )
    rows = []
    for key in common:
        oa, ob = by_a[key], by_b[key]
        sa, _, na = speedup_cells(oa.check.speedup)
        sb, _, nb = speedup_cells(ob.check.speedup)
        changed = oa.check.verdict != ob.check.verdict or na != nb
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
    _print_compare(args, rows, sum_a, sum_b, by_a, by_b, env_diff)
    return 0


def _print_compare(
    args: argparse.Namespace,
    rows: list[tuple[Any, ...]],
    sum_a: dict[str, Any],
    sum_b: dict[str, Any],
    by_a: dict[Any, Any],
    by_b: dict[Any, Any],
    env_diff: dict[str, tuple[Any, Any]],
) -> None:
    common = [r[:2] for r in rows]
    print_table(
        rows,
        ["program", "sample", "A verdict", "A speedup", "A note"]
        + ["B verdict", "B speedup", "B note", "changed"],
    )
    print()
    print_table(_metric_rows(sum_a["metrics"], sum_b["metrics"]), ["metric", "A", "B"])
    print(
        f"\nA = {args.run_a}\nB = {args.run_b}\n{len(common)} samples in both; "
        f"{len(set(by_a) - set(by_b))} only in A, {len(set(by_b) - set(by_a))} only in B"
    )
    for k, (x, y) in env_diff.items():
        print(f"environment differs: {k}: {x!r} vs {y!r}")


# (label, metric group, key, format) of each line of `results compare`.
_COMPARED_METRICS = (
    ("compile", "reference", "compile_rate", _pct),
    ("test pass", "reference", "pass_rate", _pct),
    ("avg speedup (ref)", "reference", "speedup", _ratio),
    ("sig. faster", "strict", "significantly_faster", _pct),
    ("%Opt (point)", "reference", "pie_opt_point", _pct),
    ("%Opt (strict)", "strict", "pie_opt", _pct),
    ("geomean correct", "strict", "geomean_correct", _ratio),
    ("sig. slower", "strict", "significantly_slower", _pct),
    ("copies", "strict", "copy_rate", _pct),
)


def _metric_rows(ma: dict[str, Any], mb: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (label, fmt(ma[group].get(key)), fmt(mb[group].get(key)))
        for label, group, key, fmt in _COMPARED_METRICS
    ]


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


