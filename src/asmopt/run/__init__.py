"""Run a policy over a suite: baseline -> candidates -> checks -> speedups, with progress.

Four rooms, each with one job, data flowing one way:

* `judging.py`: `evaluate_programs`, the loop that judges and measures every sample and
  stores it as it goes (never dropping one);
* `summary.py`: what a run's results say beside its samples (`summarize`,
  `record_unfit`);
* `verify.py`: `verify_programs`, a suite's own answers judged (`asmopt suite verify`);
* `job.py`: `run_eval(EvalConfig)`, the whole main job of `asmopt eval`.

The names below are the package's interface.
"""

from asmopt.run.job import (
    EvalConfig,
    EvalRun,
    Interrupt,
    NothingSelected,
    default_run_dir,
    run_eval,
    suite_identity,
)
from asmopt.run.judging import RunHooks, evaluate_programs, sample_inputs
from asmopt.run.summary import UNFIT_META_KEY, record_unfit, summarize
from asmopt.run.verify import VerifyOutcome, verify_programs

__all__ = [
    "UNFIT_META_KEY",
    "EvalConfig",
    "EvalRun",
    "Interrupt",
    "NothingSelected",
    "RunHooks",
    "VerifyOutcome",
    "default_run_dir",
    "evaluate_programs",
    "record_unfit",
    "run_eval",
    "sample_inputs",
    "suite_identity",
    "summarize",
    "verify_programs",
]
