"""Run a registration right after an optional third-party module has loaded, without
importing that module ourselves.

`import asmopt` has to make our plug-ins known to Gymnasium (`asmopt/AsmOpt-v0`) and to
transformers' Auto classes (the PLT model types), but importing either library from
`import asmopt` would cost every user (the CLI, reward workers, verl's environment) seconds
of start-up, and torch with it, for extras they may not use. An `AfterImport` hook does the
registration at the one moment it becomes possible:

* if the module is already loaded, at once;
* otherwise right after the module's own code has finished executing, whenever (and if
  ever) the program imports it; the hook then removes itself and puts the module's own
  loader back, so nothing of it stays behind.

This module imports nothing of ours, and callers name what they register by string, so
installing a hook loads no upper layer (the import-linter contract in pyproject.toml).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


class _CallingLoader(importlib.abc.Loader):
    """The module's own loader, plus the hook's callback once the module has executed."""

    def __init__(self, loader: Any, hook: AfterImport) -> None:
        self._loader = loader
        self._hook = hook

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            # Tools that look at `__loader__` (source readers, resource lookups, type
            # checks) see the real loader, as if we had never been there.
            module.__loader__ = self._loader
            if module.__spec__ is not None:
                module.__spec__.loader = self._loader
        self._hook.uninstall()
        # A package may replace its own entry in sys.modules (transformers installs a lazy
        # module object); the callback gets what an `import` statement would return.
        self._hook.callback(sys.modules.get(module.__name__, module))

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls `callback(module)` once the module `name` is loaded (see the module docstring).

    It finds nothing itself: asked for `name`, it lets the other finders locate the module
    and wraps the loader they return. It stays installed until the module is actually
    loaded, since libraries probe for optional packages with `importlib.util.find_spec` (a
    spec that is never loaded) long before anyone imports them. `ready` is an attribute the
    module has once it has finished loading: `install` calls back at once only then."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None], ready: str) -> None:
        self.name = name
        self.callback = callback
        self.ready = ready
        self._busy = False

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self._busy:
            return None
        self._busy = True  # the lookup below walks sys.meta_path again, through us
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _CallingLoader(spec.loader, self)
        return spec

    def install(self) -> None:
        """Call back now if the module is loaded, else once it is (idempotent)."""
        module = sys.modules.get(self.name)
        if module is not None and hasattr(module, self.ready):
            self.callback(module)
        elif self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
