"""Programs, tests, suites and the on-disk suite format."""

from asmopt.programs.model import (
    SPLITS,
    Comparison,
    Program,
    ProgramError,
    Suite,
    TestCase,
)
from asmopt.programs.suite_io import (
    SuiteFormatError,
    builtin_suite_path,
    load_builtin_suite,
    load_program_dir,
    load_suite,
    save_suite,
)

__all__ = [
    "SPLITS",
    "Comparison",
    "Program",
    "ProgramError",
    "Suite",
    "SuiteFormatError",
    "TestCase",
    "builtin_suite_path",
    "load_builtin_suite",
    "load_program_dir",
    "load_suite",
    "save_suite",
]
