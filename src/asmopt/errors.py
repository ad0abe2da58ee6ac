"""The errors a user can cause, under one base, so a caller can tell them from bugs.

`AsmoptError` is every failure that bad input or a missing piece of the machine explains:
a malformed suite or config, a flag out of range, no sandbox, no compiler, a results store
that is not one. The command line prints such an error as one line and exits 2; anything
else that escapes is a bug of ours, shown as an internal error (with a traceback under
`-v`) and a request to report it. Library callers catch `AsmoptError` the same way.

Input errors are also `ValueError`s and environment errors also `RuntimeError`s, so code
that caught the built-in classes before keeps working.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AsmoptError(Exception):
    """A failure the user can fix: the message names the problem and, where known, the fix."""


class InputError(AsmoptError, ValueError):
    """Bad input: an option, a config value, a file's contents, a selection of nothing."""


class EnvironmentProblem(AsmoptError, RuntimeError):
    """The machine lacks something a job needs (a sandbox, a compiler, valgrind, a library)."""


def did_you_mean(name: str, known: Iterable[str], *, most: int = 1, prefix: str = "") -> str:
    """"; did you mean 'x'?" for the known names nearest to a misspelt `name` (at most
    `most`, each under `prefix`), or "" when none is near: the one way every lookup of a
    name (a config key, a policy, a reward, a program) suggests what was meant."""
    close = difflib.get_close_matches(name, list(known), n=most)
    if not close:
        return ""
    return f"; did you mean {', '.join(repr(prefix + c) for c in close)}?"
