"""The `asmopt` command: the parser of every command group, and the entry point.

Each group lives in a module of its own that adds its commands (`register(sub, common)`,
listed in COMMAND_MODULES) with each numeric option's bounds beside its `add_argument`.
Human-readable tables by default, `--json` for machines. Every error the user can cause
(an `AsmoptError`: bad input, no sandbox, a broken toolchain) ends with one line
`asmopt: error: ...` and exit code 2; anything else is a bug of ours, reported as an
internal error (exit 70) with a traceback under `-v`.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import sqlite3
import sys
import traceback
from collections.abc import Callable, Sequence

from asmopt.cli.common import common_parser
from asmopt.cli.options import attach_bounds, check_bounds
from asmopt.errors import AsmoptError

# Command groups, in the order `asmopt --help` lists them. Each exposes
# `register(subparsers, common)` where `common` is the parent parser with shared options.
COMMAND_MODULES: tuple[str, ...] = (
    "asmopt.cli.suite",
    "asmopt.cli.check",
    "asmopt.cli.eval",
    "asmopt.cli.results",
    "asmopt.cli.data",
    "asmopt.cli.doctor",
    "asmopt.cli.serve",
    "asmopt.cli.train",
    "asmopt.cli.study",
)

# Loggers whose INFO records are notices a person waits through, and how each is shown on
# stderr: the PLT model's native kernel build (minutes, once per machine) and the study's
# progress lines (`--no-progress` turns those off at their source). Named by string, so
# that nothing heavy is imported here.
NOTICE_LOGGERS: dict[str, str] = {
    "asmopt.models.plt.native": "asmopt: %(message)s",
    "asmopt.study": "%(message)s",
}

# A bug of ours, as BSD's sysexits.h names it (EX_SOFTWARE): not the user's input (2).
EXIT_INTERNAL_ERROR = 70


def build_parser() -> argparse.ArgumentParser:
    from asmopt import __version__

    common = common_parser()
    parser = argparse.ArgumentParser(
        prog="asmopt",
        description="Make x86-64 assembly faster than gcc -O3 with language models, "
        "judged in a sandbox.",
    )
    parser.add_argument("--version", action="version", version=f"asmopt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        register: Callable[..., None] = importlib.import_module(name).register
        register(sub, common)
    attach_bounds(parser)
    return parser


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
    verbose = bool(getattr(args, "verbose", False))
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    show_notices()
    try:
        check_bounds(args)
        return int(args.func(args) or 0)
    except AsmoptError as exc:
        print(f"asmopt: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file asmopt was told to read or write; never a traceback
        return _file_error(exc)
    except sqlite3.Error as exc:  # the store wraps its own; this is the last resort
        print(f"asmopt: error: results database: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        if "Symlink loop" not in str(exc):  # pathlib's resolve() before Python 3.13
            return _internal_error(exc, verbose)
        print(f"asmopt: error: {exc}: a symbolic link that leads to itself", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", None)  # cli.interrupt.Stopped: its line is out
        if signum is not None:
            return 128 + signum
        print("asmopt: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours: say so, never dress it up as bad input
        return _internal_error(exc, verbose)


def show_notices() -> None:
    """The library logs its notices and never prints them; a command shows the ones a
    person waits through, on stderr, so `--json` output on stdout stays JSON. Once per
    logger, however often `main` runs in one process (tests call it many times)."""
    for name, fmt in NOTICE_LOGGERS.items():
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        if not any(getattr(h, "asmopt_notice", False) for h in logger.handlers):
            handler = _StderrHandler()
            handler.setFormatter(logging.Formatter(fmt))
            handler.asmopt_notice = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
        logger.propagate = False


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record comes (pytest swaps it per test)."""

    def __init__(self) -> None:
        super().__init__()

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def _file_error(exc: OSError) -> int:
    where = f"{exc.filename}: " if exc.filename else ""
    fix = "; free disk space and rerun" if exc.errno == errno.ENOSPC else ""
    print(f"asmopt: error: {where}{exc.strerror or exc}{fix}", file=sys.stderr)
    return 2


def _internal_error(exc: Exception, verbose: bool) -> int:
    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    what = "the traceback above" if verbose else "the output of the same command run with -v"
    print(
        f"asmopt: internal error: {type(exc).__name__}: {exc}\n"
        "asmopt: this is a bug in asmopt, not a problem with your input; please report it "
        f"with {what}",
        file=sys.stderr,
    )
    return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
