"""Imports a script of `bench/` as a module, for tests of its harness (not its timings)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def import_bench(name: str) -> ModuleType:
    """`bench/<name>.py` as a module; the bench directory is on `sys.path` only meanwhile."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))
