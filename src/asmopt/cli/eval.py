"""`asmopt eval`: parse the options into an `EvalConfig`, call `run_eval`, print.

Everything the evaluation does (building the policy, checking an answers file covers the
selection, probing valgrind, best-of-N) lives in `asmopt.run`; this module only turns flags
into typed configs and results into tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from asmopt.cli.common import (
    _jobs_default,
    _short,
    emit_json,
    open_suite,
    print_metrics,
    print_table,
)
from asmopt.cli.display import (
    print_best_of_n,
    print_searches,
    speedup_cells,
    timing_warnings,
    wall_s,
)
from asmopt.cli.interrupt import interrupted_by_signals, interrupted_exit
from asmopt.cli.options import (
    add_bounded,
    add_input_options,
    add_jobs_option,
    add_timing_options,
    fresh_inputs,
    timing_config,
)
from asmopt.measure.speedup import INTERVAL_NAME
from asmopt.policies.factory import PolicySpec, SpecError
from asmopt.policies.llm import ANSWER_TOKENS, PolicyError


def register(sub: Any, common: argparse.ArgumentParser) -> None:
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
    add_bounded(
        p,
        "--samples",
        "--n",
        low=1,
        high=10_000,
        type=int,
        default=1,
        dest="samples",
        help="candidates per program (best-of-N reports honest and oracle picks)",
    )
    add_jobs_option(p, _jobs_default())
    _add_run_options(p)
    add_timing_options(p)
    add_input_options(p)
    p.add_argument(
        "--time-copies",
        action="store_true",
        help="also time answers that are copies of the baseline (an A/A check of the timer)",
    )
    add_policy_arguments(p)
    p.set_defaults(func=cmd_eval)


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--run-dir",
        default=None,
        help="where results are stored (default: runs/SUITE-HASH-POLICY-SPLIT-MEASURE, HASH from "
        "the suite's program ids)",
    )
    p.add_argument(
        "--restart",
        "--fresh",
        dest="restart",
        action="store_true",
        help="discard results already in --run-dir (--fresh: its old name)",
    )
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


def add_policy_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `PolicySpec`, one flag each; defaults are the spec's."""
    spec = PolicySpec()
    g = p.add_argument_group("language-model policies (--policy openai | hf)")
    g.add_argument("--model", help="model name (openai) or local model directory (hf)")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--api", choices=("chat", "completions"), default=spec.api)
    g.add_argument(
        "--api-key-env", default=spec.api_key_env, help="environment variable holding the API key"
    )
    g.add_argument(
        "--template",
        default=spec.template,
        help="reference | c_only | few_shot | diff | PATH to your own template",
    )
    add_bounded(g, "--temperature", low=0, high=2, type=float, default=spec.temperature)
    add_bounded(g, "--top-p", low=0, high=1, low_ok=False, type=float, default=spec.top_p)
    add_bounded(
        g,
        "--max-tokens",
        low=1,
        high=1_000_000,
        type=int,
        default=spec.max_tokens,
        help=f"max new tokens per answer (default {ANSWER_TOKENS}: a whole assembly file; "
        "answers on the built-in suite run to about 6,300 tokens)",
    )
    add_bounded(
        g,
        "--sampling-seed",
        low=0,
        high=2**63 - 1,
        type=int,
        default=spec.sampling_seed,
        help="the language model's sampling seed (an OpenAI request's seed); the inputs' "
        "seed is --input-seed",
    )
    add_bounded(
        g,
        "--concurrency",
        low=1,
        high=1_024,
        type=int,
        default=spec.concurrency,
        help="parallel HTTP requests",
    )
    g.add_argument("--device", default=spec.device, help="hf: torch device")
    g.add_argument("--dtype", default=spec.dtype, help="hf: auto | float32 | bfloat16")
    _add_other_policy_arguments(g, spec)


def _add_other_policy_arguments(g: Any, spec: PolicySpec) -> None:
    g.add_argument(
        "--search-budget",
        type=float,
        default=spec.search_budget,
        metavar="SECONDS",
        help="compiler-search: wall seconds per program for building, checking and timing "
        "its variants (default 180); variants left when it is spent are skipped and listed",
    )
    g.add_argument(
        "--answers",
        metavar="FILE.jsonl",
        help="--policy answers: answers produced elsewhere, one JSON object per line "
        '({"program": ID, "sample": N, "text": ANSWER}); extracted with --template\'s format',
    )
    add_bounded(
        g,
        "--rounds",
        low=1,
        high=100,
        type=int,
        default=spec.rounds,
        help="refinement rounds with feedback on the selection split",
    )


def policy_spec(args: argparse.Namespace) -> PolicySpec:
    """The spec the flags describe; a refusal names the flags, not the spec's fields."""
    try:
        return _policy_spec(args)
    except SpecError as exc:
        raise PolicyError(exc.for_cli()) from None


def _policy_spec(args: argparse.Namespace) -> PolicySpec:
    return PolicySpec(
        name=args.policy,
        model=args.model,
        base_url=args.base_url,
        api=args.api,
        api_key_env=args.api_key_env,
        template=args.template,
        temperature=args.temperature,
        top_p=args.top_p,
        max_tokens=args.max_tokens,
        sampling_seed=args.sampling_seed,
        concurrency=args.concurrency,
        device=args.device,
        dtype=args.dtype,
        search_budget=args.search_budget,
        answers=Path(args.answers) if args.answers else None,
        rounds=args.rounds,
    )


def eval_config(args: argparse.Namespace) -> Any:
    """The `EvalConfig` these options describe."""
    from asmopt.run import EvalConfig

    return EvalConfig(
        policy=policy_spec(args),
        suite=open_suite(args),
        split=args.split,
        only=args.only,
        samples=args.samples,
        jobs=args.jobs,
        measure=args.measure,
        timing=timing_config(args),
        time_copies=args.time_copies,
        fresh_inputs=fresh_inputs(args),
        run_dir=Path(args.run_dir) if args.run_dir else None,
        restart=args.restart,
        wait=args.wait,
        progress=not args.json,
        notify=lambda message: print(f"asmopt: {message}", file=sys.stderr, flush=True),
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from asmopt.run import Interrupt, run_eval

    config = eval_config(args)
    interrupt, received = Interrupt(), []
    with interrupted_by_signals(interrupt, received):
        done = run_eval(config, interrupt=interrupt)
    for note in done.notes:
        print(f"asmopt: warning: {note}", file=sys.stderr)
    for pid, why in done.unfit.items():
        print(
            f"asmopt: warning: {pid} is unfit for reward ({why}); its verdicts and "
            "speedups may reward wrong or precomputed answers",
            file=sys.stderr,
        )
    if args.json:
        emit_json({"summary": done.summary, "results": [o.to_dict() for o in done.outcomes]})
    else:
        _print_eval(args, config, done)
    return interrupted_exit(received[0] if received else None) if done.interrupted else 0


def _print_eval(args: argparse.Namespace, config: Any, done: Any) -> None:
    from asmopt.store import DB_NAME

    rows = [_eval_row(o) for o in done.outcomes]
    headers = ["program", "sample", "verdict", "tests", "speedup", INTERVAL_NAME]
    print_table(rows, [*headers, "note", "warnings", "wall s", "detail"])
    print_searches(done.outcomes, variants=args.verbose)
    summary = done.summary
    print()
    print(
        f"suite {summary['suite']!r}, split {args.split}, policy {summary['policy']}, measure "
        f"{summary['measure']}: {summary['programs']} programs, {summary['samples']} samples "
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
        print_best_of_n(summary)
    print(
        f"\nresults stored in {done.run_dir}/{DB_NAME}; `asmopt report {done.run_dir}` "
        "writes a report"
    )


def _eval_row(o: Any) -> tuple[Any, ...]:
    speed, interval, note = speedup_cells(o.check.speedup)
    return (
        o.program_id,
        o.sample,
        o.check.verdict,
        f"{o.check.passed}/{o.check.total}",
        speed,
        interval,
        note,
        timing_warnings(o),
        f"{wall_s(o):.1f}",
        _short(o.check.message if not o.check.correct else "", 50),
    )
