"""Where an import may read: inside the tree it was given, and only regular files.

An importer copies what it reads into a suite, where it becomes a program's source, a
header compiled with it, a test's stdin or its expected output (printed by reports and
diffs). A symlink in the imported tree (`output.txt -> /etc/hostname`), or an absolute
or `..` path written in the data the importer reads (a CodeNet CSV row's fields, a
CMakeLists.txt's `Source`, `STDIN_FILENAME` or `-I`), would copy a file from anywhere on
the machine into that suite. A FIFO blocks its reader forever, and a device can be
endless or act when opened. So every file an importer reads goes through one `Tree`: the
file's real path (links and `..` resolved) must lie inside the tree's real root, and the
file must be a regular one, checked with stat before it is opened. Links that stay inside
the tree are followed as usual.

A refusal is an `ItemError`, so the importer drops that one program (or problem) and
names the file in its report: `outside_pool` with where the path leads, or
`not_regular_file` with what the file is.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from asmopt.programs.rows import ItemError
from asmopt.safe_io import MAX_INPUT_FILE_BYTES, InputFileError, file_kind, read_regular_file

OUTSIDE = "outside_pool"
NOT_REGULAR = "not_regular_file"


def check_regular(path: Path, what: str) -> None:
    """ItemError unless `path` is (or links to) a regular file; never opens it, since
    opening a FIFO blocks and opening a device may act on it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ItemError("missing_file", f"{path}: {what} not found") from None
    except OSError as exc:
        raise ItemError("unreadable", f"{path}: cannot read {what} ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise ItemError(
            NOT_REGULAR,
            f"{path}: {what} is a {file_kind(mode)}, not a regular file; it was not opened",
        )


@dataclass(frozen=True)
class Tree:
    """The directory an import reads; `name` says what it is in messages ("the pool")."""

    root: Path
    name: str
    real: Path = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "real", Path(os.path.realpath(self.root)))

    def escape(self, path: Path) -> Path | None:
        """Where `path` really leads when that is outside the tree, else None."""
        target = Path(os.path.realpath(path))
        if target == self.real or self.real in target.parents:
            return None
        return target

    def inside(self, path: Path, what: str) -> Path:
        """`path` unchanged, or ItemError('outside_pool') naming it and where it leads."""
        target = self.escape(path)
        if target is not None:
            raise ItemError(
                OUTSIDE,
                f"{path}: {what} points outside {self.name} {self.root} (to {target}); "
                "copy the file into it instead",
            )
        return path

    def check_file(self, path: Path, what: str) -> Path:
        """`path` if it stays in the tree and is a regular file (not opened here)."""
        self.inside(path, what)
        check_regular(path, what)
        return path

    def read(self, path: Path, what: str, max_bytes: int = MAX_INPUT_FILE_BYTES) -> bytes:
        """The bytes of a file of the tree: inside it, regular, at most `max_bytes` (the
        suite loader's cap on one file, so nothing is imported that could not be loaded)."""
        self.check_file(path, what)
        try:
            return read_regular_file(path, what, max_bytes)
        except InputFileError as exc:
            raise ItemError("unreadable", str(exc)) from None
        except FileNotFoundError:
            raise ItemError("missing_file", f"{path}: {what} not found") from None
        except OSError as exc:
            raise ItemError("unreadable", f"{path}: cannot read {what} ({exc.strerror})") from None
