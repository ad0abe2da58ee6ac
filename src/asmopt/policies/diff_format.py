"""The compact edit format: apply a model's unified diff to the baseline assembly.

Models often get hunk line counts wrong, so hunks are located by their context and removed
lines (the `@@` numbers are only a hint for where to start looking), and every context and
removed line must match the baseline exactly (modulo trailing whitespace). For the same
reason a line that starts with `@@` but whose numbers are garbled or missing (`@@ -12,2 +,0
@@`, `@@ @@`) still opens a hunk, searched for from where the previous one ended: no body
line can start with `@@`, so this reads nothing else differently, and what a hunk changes is
still fixed by its lines alone. Anything else is a DiffError naming the hunk, which becomes
an extraction_error with that message.

A hunk with no context and no removed lines (a pure insertion, as `diff -U0` writes one)
matches everywhere, so its place comes from its number alone, read as diff and patch read
it: `@@ -N,0 ...` inserts after old line N (N = 0: at the top), not before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from asmopt.errors import InputError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffError(InputError):
    """The diff cannot be applied to the baseline."""


@dataclass
class _Hunk:
    old_start: int
    lines: list[tuple[str, str]]  # (op, text) with op in " -+"


def _parse(diff: str) -> list[_Hunk]:
    hunks: list[_Hunk] = []
    current: _Hunk | None = None
    for raw in diff.splitlines():
        if raw.startswith(("--- ", "+++ ", "diff ", "index ")):
            continue
        m = _HUNK.match(raw)
        if m or raw.startswith("@@"):
            # Garbled numbers: no hint (0), the search starts where the last hunk ended.
            current = _Hunk(old_start=int(m.group(1)) if m else 0, lines=[])
            hunks.append(current)
            continue
        if current is None:
            if raw.strip():
                raise DiffError(f"text before the first @@ hunk header: {raw[:60]!r}")
            continue
        if raw.startswith("\\"):
            continue  # "\ No newline at end of file"
        op, text = (raw[0], raw[1:]) if raw else (" ", "")
        if op not in " -+":
            raise DiffError(
                f"hunk {len(hunks)}: line does not start with ' ', '-' or '+': {raw[:60]!r}"
            )
        current.lines.append((op, text))
    if not hunks:
        raise DiffError("no @@ hunks in the diff")
    return hunks


def _matches(base: list[str], at: int, old: list[str]) -> bool:
    if at < 0 or at + len(old) > len(base):
        return False
    return all(base[at + i].rstrip() == old[i].rstrip() for i in range(len(old)))


def apply_unified_diff(baseline: str, diff: str) -> str:
    """Apply `diff` to `baseline`; hunks must apply in order without overlapping."""
    base = baseline.splitlines()
    out: list[str] = []
    pos = 0
    for n, hunk in enumerate(_parse(diff), start=1):
        old = [t for op, t in hunk.lines if op in " -"]
        new = [t for op, t in hunk.lines if op in " +"]
        # Lines are 1-based; a pure insertion's number is the line it follows.
        hint = max(hunk.old_start if not old else hunk.old_start - 1, pos)
        candidates = sorted(range(pos, len(base) - len(old) + 1), key=lambda i: abs(i - hint))
        at = next((i for i in candidates if _matches(base, i, old)), None)
        if at is None:
            first = next((t for op, t in hunk.lines if op in " -"), "")
            raise DiffError(
                f"hunk {n}: its context/removed lines do not match the baseline "
                f"(first line {first[:60]!r})"
            )
        out.extend(base[pos:at])
        out.extend(new)
        pos = at + len(old)
    out.extend(base[pos:])
    return "\n".join(out) + "\n" if out else ""
