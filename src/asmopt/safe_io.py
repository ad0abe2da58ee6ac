"""Reading input files and writing output files without being surprised by what a path is.

Three rules that every layer needs, so they live in one leaf module:

- An input file (a test's stdin or expected output, a C source, a suite's JSON) is opened
  only when it is a regular file no larger than a cap. A FIFO would block the reader
  forever, a device can be endless (`/dev/zero`) or have side effects on open, and a 1 GB
  expected output is read several times over by the checks; all are refused with a line
  naming the file, before a byte is read.
- JSON is parsed with a bound on its nesting: Python's parser recurses, so a deeply nested
  document raises `RecursionError` (a traceback) instead of a message naming the file.
- An output written with `-o PATH` replaces a regular file atomically (a temporary file
  beside it, then a rename) and refuses anything else that already sits at PATH (a
  directory, a device, a FIFO, a socket): swapping a new regular file over `/dev/full` or
  over a pipe's name reports success while the reader gets nothing. `-` is standard
  output, written through on purpose.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from asmopt.errors import InputError

# A test file, a C source or a suite's JSON larger than this is not a benchmark input:
# the largest shipped test is well under 1 MiB, the largest imported ones a few MiB.
MAX_INPUT_FILE_BYTES = 256 << 20

# JSON nested deeper than this is refused. The shipped suite nests 10 levels at most;
# Python's own parser gives up (RecursionError) somewhere near 1000.
MAX_JSON_DEPTH = 100

# The output path that means standard output.
STDOUT = "-"

_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


class InputFileError(InputError):
    """An input file is not a regular file, or is larger than its cap; names the file."""


class OutputPathError(InputError):
    """An output path holds something other than a regular file; names the path."""


class JsonNestingError(json.JSONDecodeError, InputError):
    """JSON nested deeper than `MAX_JSON_DEPTH`. A subclass of `json.JSONDecodeError`, so a
    reader that already reports invalid JSON reports this the same way, with the line."""


def file_kind(mode: int) -> str:
    """The name of a file type, for messages ("FIFO (named pipe)", "character device")."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "regular file" if stat.S_ISREG(mode) else "special file"


def format_size(n: int) -> str:
    """Bytes as MiB or GiB with one decimal, for messages about caps."""
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB"


# ---------------------------------------------------------------------------- inputs
def _check_regular(path: Path, st: os.stat_result, what: str, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InputFileError(
            f"{path}: {what} is a {file_kind(st.st_mode)}, not a regular file; refusing to open it"
        )
    if st.st_size > max_bytes:
        raise InputFileError(
            f"{path}: {what} is {format_size(st.st_size)} ({st.st_size} bytes), over the "
            f"{format_size(max_bytes)} cap on one input file; refusing to read it"
        )


def read_regular_file(path: Path, what: str, max_bytes: int = MAX_INPUT_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes`.

    The type and size are checked with stat before the file is opened (opening a FIFO
    blocks, opening a device may act on it); the open is non-blocking anyway and the type
    checked again on the open file, in case the name was swapped in between. OSError
    (missing file, no permission) is left to the caller, which knows how to name it."""
    _check_regular(path, os.stat(path), what, max_bytes)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags), "rb") as fh:
        _check_regular(path, os.fstat(fh.fileno()), what, max_bytes)
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew after the check
        raise InputFileError(
            f"{path}: {what} is larger than the {format_size(max_bytes)} cap on one input file"
        )
    return data


# ---------------------------------------------------------------------------- JSON
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|([\[{])|[\]}]', re.DOTALL)


def check_json_depth(text: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise JsonNestingError where `text` opens more than `max_depth` arrays or objects.

    Strings are skipped whole (brackets inside them do not count); a text with fewer
    brackets than the bound is passed without a scan."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        if m.group(1):
            depth += 1
            if depth > max_depth:
                raise JsonNestingError(
                    f"nested deeper than {max_depth} levels", text, m.start()
                )
        elif m.group() in ("]", "}"):
            depth -= 1


def loads_json(data: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` with a bound on nesting; bytes must be UTF-8 (UnicodeDecodeError).

    Errors are `json.JSONDecodeError` (JsonNestingError for too deep a document), so
    callers keep a single way of reporting them."""
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    check_json_depth(text, max_depth)
    return json.loads(text)


# ---------------------------------------------------------------------------- outputs
def check_output_file(path: Path, option: str = "-o", *, stdout_ok: bool = True) -> Path:
    """The file to write for output path `path`: itself, or where a symbolic link leads
    (the link stays a link). Refuses a path that exists and is not a regular file; the
    message starts with `option PATH:` so it reads like the command line, and mentions
    `-` only where standard output is an option."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Path(os.path.realpath(path))
    if stat.S_ISDIR(st.st_mode):
        raise OutputPathError(f"{option} {path}: is a directory; give a file name")
    if not stat.S_ISREG(st.st_mode):
        hint = f", or '{STDOUT}' for standard output" if stdout_ok else ""
        raise OutputPathError(
            f"{option} {path}: is a {file_kind(st.st_mode)}, not a regular file; refusing "
            f"to replace it (name a regular file{hint})"
        )
    return Path(os.path.realpath(path))


def write_atomic(target: Path, write: Callable[[BinaryIO], int]) -> int:
    """Run `write` on a temporary file beside `target`, then rename it over `target`.

    A failure (a full disk, an interrupt) leaves the old file and no temporary one. A
    replaced file keeps its permission bits. Returns what `write` returns (a count)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        with open(tmp, "xb") as fh:
            count = write(fh)
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return count


def write_stdout(write: Callable[[BinaryIO], int]) -> int:
    """Run `write` on standard output (a duplicate of descriptor 1, so a failed write
    leaves nothing buffered in `sys.stdout` to fail again at exit)."""
    import sys

    sys.stdout.flush()
    try:
        with os.fdopen(os.dup(1), "wb") as fh:
            return write(fh)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputPathError(
            f"cannot write to standard output ({exc.strerror or exc})"
        ) from None


def write_output(
    path: str | Path,
    write: Callable[[BinaryIO], int],
    *,
    option: str = "-o",
    stdout_ok: bool = True,
) -> int:
    """Write an output file the one way every command does: `-` is standard output
    (when `stdout_ok`), an existing non-regular file is refused, anything else is
    replaced atomically. Returns what `write` returns, so a summary counts what was
    actually written."""
    target = check_output_path(path, option, stdout_ok=stdout_ok)
    return write_stdout(write) if target is None else write_atomic(target, write)


def check_output_path(
    path: str | Path, option: str = "-o", *, stdout_ok: bool = True
) -> Path | None:
    """What `write_output` would write to: None for standard output, else the file
    (`check_output_file`). Commands call it before their work, so a path they could never
    write is refused before anything is computed."""
    if str(path) == STDOUT:
        if not stdout_ok:
            raise OutputPathError(
                f"{option} {STDOUT}: standard output carries this command's report; name a file"
            )
        return None
    return check_output_file(Path(path), option, stdout_ok=stdout_ok)
