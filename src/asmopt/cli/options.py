"""Options several commands share, and the bounds of every numeric option beside it.

A numeric option is added with `add_bounded`, which records its lowest and highest value on
the argparse action itself; `check_bounds` refuses a value outside them before any work
starts, in one line naming the flag. The upper bounds are far above any sensible use and
far below what exhausts the machine (`--samples 1000000000` once ate 3.6 GB before printing
anything).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Any

from asmopt.cli.common import UsageError
from asmopt.fresh import DEFAULT_PER_CLASS, FreshInputs, new_seed
from asmopt.measure.timing import TimingConfig


@dataclass(frozen=True)
class Bounds:
    """The values a numeric option takes: `low` (itself allowed when `low_ok`) to `high`."""

    low: float
    high: float
    low_ok: bool = True

    def check(self, flag: str, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return
        if math.isnan(value) or value < self.low or (value == self.low and not self.low_ok):
            least = f"at least {self.low:g}" if self.low_ok else f"greater than {self.low:g}"
            raise UsageError(f"{flag} must be {least}, got {value}")
        if value > self.high:
            raise UsageError(f"{flag} must be at most {self.high:g}, got {value}")


def add_bounded(
    target: Any, *flags: str, low: float, high: float, low_ok: bool = True, **kwargs: Any
) -> argparse.Action:
    """`target.add_argument(*flags, **kwargs)`, its bounds kept on the action for
    `check_bounds`. `target` is a parser or an argument group."""
    action = target.add_argument(*flags, **kwargs)
    action.bounds = Bounds(low, high, low_ok)  # type: ignore[attr-defined]
    return action


def attach_bounds(parser: argparse.ArgumentParser) -> None:
    """Give every command's parser the list of its bounded options (as the `_bounds`
    default), so that after parsing, the chosen command's own bounds are checked."""
    bounded = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                attach_bounds(sub)
        elif hasattr(action, "bounds"):
            flag = max(action.option_strings, key=len) if action.option_strings else action.dest
            bounded.append((action.dest, flag, action.bounds))
    if bounded:
        parser.set_defaults(_bounds=tuple(bounded))


def check_bounds(args: argparse.Namespace) -> None:
    """Refuse any numeric option of the chosen command outside its bounds."""
    for dest, flag, bounds in getattr(args, "_bounds", ()):
        value = getattr(args, dest, None)
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                bounds.check(flag, item)


# ---------------------------------------------------------------------------- timing
def add_timing_options(p: argparse.ArgumentParser) -> None:
    """The timing flags of `eval` and `check`; their defaults are `TimingConfig`'s."""
    default = TimingConfig()
    add_bounded(
        p,
        "--timing-target",
        low=0,
        high=1,
        low_ok=False,
        type=float,
        default=default.target_half_width,
        help="stop timing a test when the 98%% interval is within +-this "
        f"(default {default.target_half_width:g})",
    )
    add_bounded(
        p,
        "--timing-max-pairs",
        low=1,
        high=100_000,
        type=int,
        default=default.max_pairs,
        help=f"timed pairs per test (default {default.max_pairs})",
    )
    add_bounded(
        p,
        "--timing-budget",
        low=0,
        high=3_600,
        low_ok=False,
        type=float,
        default=default.budget_s,
        help=f"seconds of timing per test at most (default {default.budget_s:g})",
    )
    p.add_argument(
        "--timing-precision",
        choices=["target", "decision"],
        default=default.precision,
        help="target: every test to the +-target interval, a number for a person; "
        "decision: stop once faster / not / slower is settled (an answer within +-3%% of "
        f"the baseline needs no +-2%% interval), as the reward service does "
        f"(default {default.precision})",
    )


def timing_config(args: argparse.Namespace) -> TimingConfig:
    return TimingConfig(
        target_half_width=args.timing_target,
        max_pairs=args.timing_max_pairs,
        budget_s=args.timing_budget,
        precision=args.timing_precision,
    )


# ---------------------------------------------------------------------------- inputs
def add_input_options(p: argparse.ArgumentParser) -> None:
    """How a grading draws its inputs (asmopt.fresh): by default a new secret seed."""
    add_bounded(
        p,
        "--input-seed",
        low=0,
        high=2**63 - 1,
        type=int,
        default=None,
        help="draw the inputs from this seed, e.g. one a verdict records, to replay it "
        "exactly (default: a new secret seed; never reuse one for a reward)",
    )
    add_bounded(
        p,
        "--drawn-per-class",
        low=0,
        high=64,
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


def fresh_inputs(args: argparse.Namespace) -> FreshInputs:
    if args.fixed_inputs_only:
        return FreshInputs.off()
    seed = args.input_seed if args.input_seed is not None else new_seed()
    return FreshInputs(seed=seed, per_class=args.drawn_per_class)


def add_jobs_option(p: argparse.ArgumentParser, default: int) -> None:
    add_bounded(p, "-j", "--jobs", low=1, high=256, type=int, default=default)
