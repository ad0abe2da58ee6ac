"""`gymnasium.make("asmopt/AsmOpt-v0")` after a plain `import asmopt`, without importing
Gymnasium.

Gymnasium 1.x no longer loads plugins from the `gymnasium.envs` entry-point group, so an
environment exists only once something has called `gymnasium.register`. Importing Gymnasium
from `import asmopt` would cost every user (CLI, reward workers, verl's environment) a
second of start-up for an optional extra, so instead:

* if Gymnasium is already imported, the environment is registered at once;
* otherwise an import hook registers it right after Gymnasium's own module has finished
  loading, whenever (and if ever) the program imports it, and then removes itself.

The registration is by entry-point string, so `asmopt.reward.env` (and the toolchain and
sandbox behind it) is imported only when an environment is made.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

ENV_ID = "asmopt/AsmOpt-v0"
ENTRY_POINT = "asmopt.reward.env:AsmOptEnv"


def register(gym: ModuleType) -> None:
    """Register the environment with this Gymnasium module (idempotent)."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=ENTRY_POINT)


class _RegisteringLoader(importlib.abc.Loader):
    """Gymnasium's own loader, plus a `register` once its module has executed."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        register(module)
        uninstall()

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class _GymnasiumHook(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asked for `gymnasium`, it lets the other finders locate it and
    wraps the loader they return. It stays installed until Gymnasium is actually loaded,
    since libraries probe for optional packages with `importlib.util.find_spec` (a spec
    that is never loaded) long before anyone imports them."""

    def __init__(self) -> None:
        self._busy = False

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "gymnasium" or self._busy:
            return None
        self._busy = True  # the lookup below walks sys.meta_path again, through us
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _RegisteringLoader(spec.loader)
        return spec


_HOOK = _GymnasiumHook()


def install() -> None:
    """Register now if Gymnasium is loaded, else once it is (called by `import asmopt`)."""
    gym = sys.modules.get("gymnasium")
    if gym is not None and hasattr(gym, "register"):
        register(gym)
    elif _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)


def uninstall() -> None:
    if _HOOK in sys.meta_path:
        sys.meta_path.remove(_HOOK)
