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


def test_no_function_in_src_is_over_80_lines_without_a_reason() -> None:
    """`scripts/function_lengths.py` (also run by `make lint`): a function over 80 lines is
    split, or its docstring says why ("Long because ...")."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "function_lengths.py"), str(REPO / "src")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout


def test_the_function_length_check_catches_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(90))
    (tmp_path / "m.py").write_text(f"def long_one():\n{body}\n\n\ndef short():\n    pass\n")
    (tmp_path / "ok.py").write_text(f'def long_ok():\n    """Long because a table."""\n{body}\n')
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "function_lengths.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "long_one is 91 lines" in proc.stdout and "long_ok" not in proc.stdout


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
