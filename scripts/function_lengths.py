"""Report functions in src/ longer than the limit whose docstring does not say why.

A function over MAX_LINES lines (from `def` to its last line) must either be split or
state, in a docstring sentence starting "Long because", what splitting it would cost.
`make lint` runs this; `tests/test_architecture.py` runs it in `make test`.

Usage: python scripts/function_lengths.py [ROOT ...]   (default: src)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_LINES = 80
REASON = "Long because"


def long_functions(root: Path, limit: int = MAX_LINES) -> list[tuple[str, str, int]]:
    """(file, function, lines) for every function over `limit` lines without a reason."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > limit and REASON not in (ast.get_docstring(node) or ""):
                found.append((str(path), node.name, lines))
    return found


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path("src")]
    found = [row for root in roots for row in long_functions(root)]
    for path, name, lines in sorted(found, key=lambda r: -r[2]):
        print(f"{path}: {name} is {lines} lines (limit {MAX_LINES}; split it, or say why "
              f"in its docstring: '{REASON} ...')")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
