"""`asmopt baseline` and `asmopt check`: one program's -O3 assembly, one candidate judged."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from asmopt.cli.common import (
    UsageError,
    _interval,
    _ratio,
    _short,
    emit_json,
    open_suite,
    print_table,
)
from asmopt.cli.display import speedup_cells
from asmopt.cli.options import add_bounded, add_input_options, add_timing_options, timing_config
from asmopt.cli.options import fresh_inputs as _fresh_inputs
from asmopt.judge import Verdict
from asmopt.measure.speedup import INTERVAL_NAME
from asmopt.programs.suite_io import read_text_file
from asmopt.safe_io import check_output_path, write_output


def register(sub: Any, common: argparse.ArgumentParser) -> None:
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
    add_timing_options(p)
    add_input_options(p)
    add_bounded(
        p,
        "--sample",
        low=0,
        high=10_000_000,
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
    from asmopt.evaluate import check
    from asmopt.toolchain import MAX_ASM_BYTES, default_toolchain

    suite = open_suite(args)
    program = suite.get(args.program)
    path = Path(args.file)
    if path.is_dir():
        raise UsageError(f"{path}: is a directory, expected an assembly file")
    if args.save_failing:  # a path it could never write is refused before any work
        check_output_path(args.save_failing, "--save-failing", stdout_ok=False)
    assembly = read_text_file(path, "assembly file", MAX_ASM_BYTES)
    toolchain = default_toolchain()
    toolchain.sandbox.check()
    fresh = _fresh_inputs(args)
    result = check(
        program,
        assembly,
        measure=args.measure,
        timing=timing_config(args),
        fresh=fresh,
        label=args.sample,
        toolchain=toolchain,
    )
    saved = _save_failing(args, program, result)
    if args.json:
        emit_json(result.to_dict())
    else:
        _print_check(args, program, result, fresh, saved)
    return 0 if result.correct else 1


def _print_check(
    args: argparse.Namespace, program: Any, result: Any, fresh: Any, saved: Path | None
) -> None:
    if result.tests:
        print_table(
            [
                (t.test, t.verdict, f"{t.wall_time_s * 1000:.1f}", t.peak_rss_kb, _short(t.message))
                for t in result.tests
            ],
            ["test", "verdict", "wall ms", "rss KiB", "detail"],
        )
        print()
    print(f"{program.id}: {result.verdict} ({result.passed}/{result.total} tests passed)")
    if result.message and not result.correct:
        print(result.message)
    print(_inputs_line(args, program, fresh))
    if saved is not None:
        print(f"wrote the failing drawn input to {saved}")
    if result.speedup is not None and result.correct:
        _print_speedup(args, result.speedup)
    _print_fitness(program)


def _print_fitness(program: Any) -> None:
    """A person's check still runs an unfit program; it says why a reward would not."""
    from asmopt.adequacy import is_reward_fit

    fit, why = is_reward_fit(program)
    if not fit:
        print(f"unfit for reward: {why}; no reward path scores this program")


def _inputs_line(args: argparse.Namespace, program: Any, fresh: Any) -> str:
    if program.fixed_inputs:
        return (
            "inputs: fixed only (the program has no input generator: a candidate could "
            "know every input in advance)"
        )
    if fresh.enabled:
        return (
            f"inputs: fixed tests and {fresh.per_class} drawn per size class, seed "
            f"{fresh.seed} (replay: --input-seed {fresh.seed} --sample {args.sample})"
        )
    return (
        "inputs: fixed tests only (--fixed-inputs-only: every input was one a "
        "candidate could know in advance)"
    )


def _print_speedup(args: argparse.Namespace, sp: Any) -> None:
    speed, interval, note = speedup_cells(sp)
    what = "instructions" if args.measure == "instructions" else "CPU time"
    if speed == "-":
        print(f"speedup over -O3 ({what}): not measured: {sp.message or note}")
        return
    print(
        f"speedup over -O3 ({what}): {speed}, {INTERVAL_NAME} {interval}"
        + (f" ({note})" if note else "")
    )
    for t in sp.tests:
        print(f"  test {t.test}: {_ratio(t.ratio)} {_interval(t.low, t.high)}")


def _save_failing(args: argparse.Namespace, program: Any, result: Any) -> Path | None:
    """The first failing drawn test's input, drawn again from its recorded seed, written
    where the person asked (the input itself is never stored or shown to a policy)."""
    if not args.save_failing or program.inputs is None:
        return None
    failing = next(
        (t for t in result.tests if t.drawn is not None and t.verdict != Verdict.PASS), None
    )
    if failing is None:
        return None
    data = program.inputs.draw(failing.drawn["class"], int(failing.drawn["seed"]))
    path = Path(args.save_failing)
    write_output(path, lambda fh: fh.write(data), option="--save-failing", stdout_ok=False)
    return path
