"""Datasets: import program pools, build benchmark suites, export them for training.

* Importers turn outside data into a `Suite` plus a `DataReport` of what was skipped:
  `import_codenet` (CodeNet checkouts), `import_supercoder` (the SuperCoder parquet or
  JSONL rows), `import_llvm_test_suite` (SingleSource directories), `import_plain_dir`
  (our own layout for bringing your own programs). How any of them runs (fresh inputs
  learnt or not, jobs, progress, the toolchain and sandbox) is one `ImportRun`.
* `build_suite` runs the reference selection pipeline on any pool.
* `export_suite` writes verl parquet in the exact SuperCoder row schema, JSONL, or a
  Hugging Face dataset.

Heavy dependencies (pyarrow, datasets, tokenizers) are imported only by the functions
that need them. docs/datasets.md describes every format and rule.
"""

from __future__ import annotations

from .builder import BuildConfig, build_suite
from .codenet import import_codenet
from .common import DataError, ImportRun, mark_adequacy, split_for, write_suite
from .export import FORMATS, export_suite, flatten_program, verl_schema
from .llvm_test_suite import import_llvm_test_suite
from .plain_dir import import_plain_dir
from .report import REASONS, DataReport, Drop
from .supercoder import import_supercoder

__all__ = [
    "FORMATS",
    "REASONS",
    "BuildConfig",
    "DataError",
    "DataReport",
    "Drop",
    "ImportRun",
    "build_suite",
    "export_suite",
    "flatten_program",
    "import_codenet",
    "import_llvm_test_suite",
    "import_plain_dir",
    "import_supercoder",
    "mark_adequacy",
    "split_for",
    "verl_schema",
    "write_suite",
]
