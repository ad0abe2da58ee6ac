"""Inside the study and report packages imports run one way, too: the study loop writes the
report, so the report (and what it reads a study.json with) never imports the loop, and
neither package has an import circle. Read from the sources' syntax trees, so an import
hidden inside a function or under `if TYPE_CHECKING:` counts like any other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGES = ("asmopt.study", "asmopt.report")


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module `source` (the text of `module`) imports anywhere: each `import X`,
    `from X import y` (as X and as X.y, since y may be a submodule), relative imports
    resolved, and `importlib.import_module` / `__import__` of a constant name."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Call) and _dynamic_import(node):
            found.add(node.args[0].value)  # type: ignore[attr-defined]
    return found


def _dynamic_import(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return (
        name in ("import_module", "__import__")
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports."""
    folder = SRC.joinpath(*package.split("."))
    sources = {module_name(p): p for p in sorted(folder.rglob("*.py"))}
    graph = {}
    for name, path in sources.items():
        imports = imported_modules(path.read_text(encoding="utf-8"), name, path.stem == "__init__")
        graph[name] = {m for m in imports if m in sources and m != name}
    return graph


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph.get(name, ())
    return seen


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Modules that import themselves through others (empty when imports run one way)."""
    return sorted(m for m in graph if m in reachable(graph, m))


def test_the_study_loop_writes_the_report_and_the_report_never_imports_it() -> None:
    graph = import_graph("asmopt.study")
    assert "asmopt.study.report" in graph["asmopt.study.loops"]
    for lower in ("asmopt.study.report", "asmopt.study.findings", "asmopt.study.intervals"):
        assert "asmopt.study.loops" not in reachable(graph, lower), lower
    assert "asmopt.study.report" not in reachable(graph, "asmopt.study.findings")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle_inside_the_package(package: str) -> None:
    assert circles(import_graph(package)) == []


@pytest.mark.parametrize(
    "wrong_way",
    [
        "def _draw() -> None:\n    from asmopt.study.loops import findings\n",
        "def _draw() -> None:\n    from asmopt.study import loops\n",
        "def _draw() -> None:\n    from . import loops\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import asmopt.study.loops\n",
        "def _draw() -> None:\n    importlib.import_module('asmopt.study.loops')\n",
    ],
)
def test_a_hidden_wrong_way_import_is_seen(wrong_way: str) -> None:
    """The check is not blind to the ways a circle can hide: a function-local import, a
    relative one, a `TYPE_CHECKING` one, an import by name."""
    report = SRC / "asmopt" / "study" / "report.py"
    source = report.read_text(encoding="utf-8") + "\n\n" + wrong_way
    assert "asmopt.study.loops" in imported_modules(source, "asmopt.study.report")
    graph = import_graph("asmopt.study")
    graph["asmopt.study.report"].add("asmopt.study.loops")
    assert "asmopt.study.loops" in circles(graph)
