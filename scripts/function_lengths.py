"""Report functions that are too long or too wide and whose docstring does not say why.

A function over MAX_LINES lines (from `def` to its last line) must either be split or
state, in a docstring sentence starting "Long because", what splitting it would cost.
A function with more than MAX_PARAMS parameters (positional-only, positional and
keyword-only ones; not `self` or `cls`, not *args or **kwargs) must either be narrowed
or state, in a docstring sentence starting "Wide because", why it takes them all.
`make lint` runs this on src, bench and scripts; `tests/test_architecture.py` runs it on
src in `make test`.

Usage: python scripts/function_lengths.py [ROOT ...]   (default: src)
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

MAX_LINES = 80
REASON = "Long because"
MAX_PARAMS = 8
WIDE_REASON = "Wide because"

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(root: Path) -> Iterator[tuple[Path, Function]]:
    """Every function and method under `root`, with its file."""
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, Function):
                yield path, node


def gives_reason(node: Function, reason: str) -> bool:
    """Whether the function's docstring has a sentence starting with `reason`."""
    doc = ast.get_docstring(node) or ""
    return re.search(rf"(?:^|[.!?:]\s+|\n\s*){re.escape(reason)}\b", doc) is not None


def parameter_count(node: Function) -> int:
    """Positional-only, positional and keyword-only parameters, less a leading self/cls."""
    args = node.args
    named = [a.arg for a in (*args.posonlyargs, *args.args)]
    if named and named[0] in ("self", "cls"):
        named = named[1:]
    return len(named) + len(args.kwonlyargs)


def long_functions(root: Path, limit: int = MAX_LINES) -> list[tuple[str, str, int]]:
    """(file, function, lines) for every function over `limit` lines without a reason."""
    found = []
    for path, node in _functions(root):
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        if lines > limit and not gives_reason(node, REASON):
            found.append((str(path), node.name, lines))
    return found


def wide_functions(root: Path, limit: int = MAX_PARAMS) -> list[tuple[str, str, int]]:
    """(file, function, parameters) for every function over `limit` parameters without a
    reason."""
    found = []
    for path, node in _functions(root):
        count = parameter_count(node)
        if count > limit and not gives_reason(node, WIDE_REASON):
            found.append((str(path), node.name, count))
    return found


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path("src")]
    long = [row for root in roots for row in long_functions(root)]
    wide = [row for root in roots for row in wide_functions(root)]
    for path, name, lines in sorted(long, key=lambda r: -r[2]):
        print(f"{path}: {name} is {lines} lines (limit {MAX_LINES}; split it, or say why "
              f"in its docstring: '{REASON} ...')")
    for path, name, count in sorted(wide, key=lambda r: -r[2]):
        print(f"{path}: {name} takes {count} parameters (limit {MAX_PARAMS}; narrow it, or "
              f"say why in its docstring: '{WIDE_REASON} ...')")
    return 1 if long or wide else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
