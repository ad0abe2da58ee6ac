"""asmopt: language models that make x86-64 assembly faster than gcc -O3, judged safely.

The main jobs, from Python (imported on first use, so `import asmopt` stays light):

* `asmopt.run_eval(asmopt.EvalConfig(policy=...))`: judge a policy over a suite, measure,
  store and summarize (what `asmopt eval` does);
* `asmopt.check(program, assembly)`: build and run one candidate against a program's tests;
* `asmopt.score(program, completion)`: the reward of one model answer (build, tests, timing).

`import asmopt` also makes `gymnasium.make("asmopt/AsmOpt-v0")` work (with the `rl` extra)
and lets transformers' Auto classes load our model types (`asmopt_plt`, `iquestpltcoder`,
`iquestloopcoder`; the `ml` extra), without importing Gymnasium, transformers or torch
itself: each registration happens when, and if, the program imports that library (see
`asmopt.import_hooks`, `asmopt.gym_registration`, `asmopt.transformers_registration`).
"""

from __future__ import annotations

import importlib
from typing import Any

from asmopt import gym_registration as _gym_registration
from asmopt import transformers_registration as _transformers_registration

__version__ = "0.1.0"

_API = {
    "run_eval": "asmopt.run",
    "EvalConfig": "asmopt.run",
    "EvalRun": "asmopt.run",
    "Interrupt": "asmopt.run",
    "PolicySpec": "asmopt.policies.factory",
    "AsmoptError": "asmopt.errors",
    "check": "asmopt.evaluate",
    "score": "asmopt.reward.service",
    "load_suite": "asmopt.programs.suite_io",
    "load_builtin_suite": "asmopt.programs",
}

__all__ = ["__version__", *_API]


_gym_registration.install()
_transformers_registration.install()


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'asmopt' has no attribute {name!r}")
