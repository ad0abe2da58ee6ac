"""`gymnasium.make("asmopt/AsmOpt-v0")` after a plain `import asmopt`, without importing
Gymnasium.

Gymnasium 1.x no longer loads plugins from the `gymnasium.envs` entry-point group, so an
environment exists only once something has called `gymnasium.register`. Importing Gymnasium
from `import asmopt` would cost every user (CLI, reward workers, verl's environment) a
second of start-up for an optional extra, so instead an `asmopt.import_hooks.AfterImport`
hook registers it:

* if Gymnasium is already imported, at once;
* otherwise right after Gymnasium's own module has finished loading, whenever (and if
  ever) the program imports it, and then removes itself.

The registration is by entry-point string, so `asmopt.reward.env` (and the toolchain and
sandbox behind it) is imported only when an environment is made.
"""

from __future__ import annotations

from types import ModuleType

from asmopt.import_hooks import AfterImport

ENV_ID = "asmopt/AsmOpt-v0"
ENTRY_POINT = "asmopt.reward.env:AsmOptEnv"


def register(gym: ModuleType) -> None:
    """Register the environment with this Gymnasium module (idempotent)."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=ENTRY_POINT)


class _GymnasiumHook(AfterImport):
    """The hook waiting for Gymnasium, named so that `sys.meta_path` says what it is for."""


_HOOK = _GymnasiumHook("gymnasium", register, ready="register")


def install() -> None:
    """Register now if Gymnasium is loaded, else once it is (called by `import asmopt`)."""
    _HOOK.install()


def uninstall() -> None:
    _HOOK.uninstall()
