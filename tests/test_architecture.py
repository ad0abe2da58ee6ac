"""The one-way house is checked, not hoped for: the import contract in pyproject.toml holds,
and it does fail when a module imports against the documented order."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        capture_output=True,
        text=True,
        cwd=src,
        env={**os.environ, "PYTHONPATH": str(src)},
        timeout=300,
    )


def test_the_import_contract_holds() -> None:
    proc = _lint(REPO / "src", REPO / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " kept, 0 broken" in proc.stdout


def test_no_function_in_src_is_too_long_or_too_wide_without_a_reason() -> None:
    """`scripts/function_lengths.py` (also run by `make lint`): a function over 80 lines is
    split, or its docstring says why ("Long because ..."); one with more than 8 parameters
    is narrowed, or its docstring says why ("Wide because ...")."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "function_lengths.py"), str(REPO / "src")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout


def _function_check(root: Path) -> subprocess.CompletedProcess[str]:
    """scripts/function_lengths.py run on `root`, as `make lint` runs it."""
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / "function_lengths.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_function_length_check_catches_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(90))
    (tmp_path / "m.py").write_text(f"def long_one():\n{body}\n\n\ndef short():\n    pass\n")
    (tmp_path / "ok.py").write_text(f'def long_ok():\n    """Long because a table."""\n{body}\n')
    proc = _function_check(tmp_path)
    assert proc.returncode == 1
    assert "long_one is 91 lines" in proc.stdout and "long_ok" not in proc.stdout


def test_the_function_width_check_catches_a_wide_function(tmp_path: Path) -> None:
    """Nine parameters (self, *args and **kwargs not counted) need a reason; eight do not."""
    nine = "a, b, c, /, d, e, f, *args, g, h, i, **kwargs"
    (tmp_path / "m.py").write_text(
        f"def wide_one({nine}):\n    pass\n\n\n"
        "class K:\n    def method(self, a, b, c, d, e, f, g, h, *args, **kwargs):\n        pass\n"
    )
    (tmp_path / "ok.py").write_text(
        f'def wide_ok({nine}):\n    """Sums. Wide because a table."""\n'
        f'\n\ndef wide_mentioned({nine}):\n    """Not Wide because of this."""\n'
    )
    proc = _function_check(tmp_path)
    assert proc.returncode == 1
    assert "wide_one takes 9 parameters" in proc.stdout
    assert "wide_mentioned takes 9 parameters" in proc.stdout
    assert "wide_ok" not in proc.stdout and "method" not in proc.stdout

def test_a_wrong_way_import_breaks_the_contract(tmp_path: Path) -> None:
    """A low layer (the program model) importing the CLI must be caught, even when the
    import hides inside a function."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "asmopt", src / "asmopt", ignore=shutil.ignore_patterns("*.pyc"))
    model = src / "asmopt" / "programs" / "model.py"
    model.write_text(
        model.read_text() + "\n\ndef _wrong_way() -> None:\n    import asmopt.cli.main  # noqa\n"
    )
    proc = _lint(src, REPO / "pyproject.toml")
    assert proc.returncode != 0
    assert "asmopt.programs is not allowed to import asmopt.cli" in proc.stdout


def _cycles(graph) -> list[list[str]]:  # type: ignore[no-untyped-def]
    """The strongly connected groups of two or more modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_round_a_circle() -> None:
    """No circle in any room either, counting the imports inside functions (grimp reads
    every import statement; the layers contracts see only what crosses their layers);
    imports for type checking alone run nothing and are left out."""
    import grimp

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    graph = grimp.build_graph("asmopt", exclude_type_checking_imports=True, cache_dir=None)
    assert _cycles(graph) == []
    # It sees a circle closed by an import inside a function.
    graph.add_import(
        importer="asmopt.measure.timing.spread", imported="asmopt.measure.timing.judging"
    )
    assert _cycles(graph)
