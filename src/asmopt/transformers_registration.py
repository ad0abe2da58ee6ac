"""transformers' Auto classes know our model types after a plain `import asmopt`, without
importing transformers or torch.

A saved PLT or LoopCoder directory names its `model_type` (`asmopt_plt`, `iquestpltcoder`,
`iquestloopcoder`) in `config.json`; `AutoConfig` / `AutoModelForCausalLM.from_pretrained`
load it only if something has registered that type, and otherwise fail with transformers'
"does not recognize this architecture". Importing transformers from `import asmopt` would
cost every user seconds (torch comes with its configuration module), so two
`asmopt.import_hooks.AfterImport` hooks do it when transformers' own Auto modules load,
whichever way the program reaches them (`from transformers import AutoConfig`, a pipeline,
a trainer, before or after `import asmopt`):

* when `transformers.models.auto.configuration_auto` has loaded, the config classes are
  registered with `AutoConfig`. They import only transformers' configuration code, which
  that module has just finished loading itself, so this is safe at that moment;
* when `transformers.models.auto.modeling_auto` has loaded, each model class is registered
  as a stand-in that imports the real class on first use and then takes its place in the
  mapping. The real classes cannot be imported at that moment: transformers loads its Auto
  modules from inside its own half-initialised modeling modules (`modeling_utils`,
  `modeling_layers`), which our model code imports in turn. transformers' auto API has no
  lazy registration by name for classes outside its own package (its name-based mappings
  resolve only `transformers.models.<type>` modules), hence the stand-in.

Everything is named by string here, so installing the hooks imports no module of ours
(the import-linter contract in pyproject.toml). A registration that fails (a transformers
release outside the supported range, say) is a warning, not an error in the program's
unrelated `import transformers...` line.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from asmopt.import_hooks import AfterImport

CONFIG_MODULE = "transformers.models.auto.configuration_auto"
MODEL_MODULE = "transformers.models.auto.modeling_auto"
_PLT = "asmopt.models.plt"


@dataclass(frozen=True)
class ModelType:
    """One model type: its config class and, per Auto class name, its model class, each
    as "module:attribute"."""

    config: str
    models: Mapping[str, str]


MODEL_TYPES: dict[str, ModelType] = {
    "asmopt_plt": ModelType(
        f"{_PLT}.configuration_plt:PLTConfig",
        {
            "AutoModel": f"{_PLT}.modeling_plt:PLTModel",
            "AutoModelForCausalLM": f"{_PLT}.modeling_plt:PLTForCausalLM",
        },
    ),
    "iquestpltcoder": ModelType(
        f"{_PLT}.configuration_plt:IQuestPLTCoderConfig",
        {"AutoModelForCausalLM": f"{_PLT}.modeling_plt:IQuestPLTCoderForCausalLM"},
    ),
    "iquestloopcoder": ModelType(
        f"{_PLT}.configuration_plt:IQuestLoopCoderConfig",
        {"AutoModelForCausalLM": f"{_PLT}.modeling_plt:IQuestLoopCoderForCausalLM"},
    ),
}


def load(target: str) -> Any:
    """The object a "module:attribute" string names, importing the module."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


class _StandIn(type):
    """The metaclass of a model class's stand-in in an Auto mapping.

    The stand-in carries what transformers reads before it uses a class (`__name__`,
    `__module__`, `config_class`); any other attribute (`from_pretrained`, `_from_config`,
    ...) imports the real class, registers it in the stand-in's place and comes from it, so
    `AutoModelForCausalLM.from_pretrained` returns an instance of the real class. Dunder
    names are not forwarded: introspection (copying, pickling, typing) must not import a
    model by accident."""

    _target: str
    _auto: Any
    config_class: type

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(cls.resolve(), name)

    def resolve(cls) -> type:
        """The real class, registered with the Auto class instead of the stand-in."""
        real: type = load(cls._target)
        cls._auto.register(cls.config_class, real, exist_ok=True)
        return real

    def __repr__(cls) -> str:
        return f"<stand-in for {cls._target.replace(':', '.')}, imported on first use>"


def stand_in(auto: Any, config: type, target: str) -> type:
    """A stand-in for the model class `target` of `config` in the Auto class `auto`."""
    module, _, name = target.partition(":")
    namespace = {
        "__module__": module,
        "__qualname__": name,
        "__doc__": f"Imports {module}.{name} on first use.",
        "config_class": config,
        "_target": target,
        "_auto": auto,
    }
    return _StandIn(name, (), namespace)


def register_configs(configuration_auto: ModuleType) -> None:
    """Register every config class with `AutoConfig` (idempotent)."""
    for model_type, entry in MODEL_TYPES.items():
        configuration_auto.AutoConfig.register(model_type, load(entry.config), exist_ok=True)


def register_models(modeling_auto: ModuleType) -> None:
    """Register every model class with its Auto classes (idempotent): the real class when
    it already exists (its module loaded, not merely loading), else a stand-in for it."""
    for entry in MODEL_TYPES.values():
        config = load(entry.config)
        for auto_name, target in entry.models.items():
            auto = getattr(modeling_auto, auto_name)
            module, _, name = target.partition(":")
            model = getattr(sys.modules.get(module), name, None)
            if not isinstance(model, type):
                model = stand_in(auto, config, target)
            auto.register(config, model, exist_ok=True)


def _warning(register: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
    """`register`, with a failure turned into a warning (see the module docstring)."""

    def call(module: ModuleType) -> None:
        try:
            register(module)
        except Exception as exc:
            warnings.warn(
                f"asmopt could not register its model types with transformers "
                f"({type(exc).__name__}: {exc}); loading them with the Auto classes will fail",
                RuntimeWarning,
                stacklevel=2,
            )

    return call


class _TransformersHook(AfterImport):
    """A hook waiting for one of transformers' Auto modules, named for `sys.meta_path`."""


_HOOKS = (
    _TransformersHook(CONFIG_MODULE, _warning(register_configs), ready="AutoConfig"),
    _TransformersHook(MODEL_MODULE, _warning(register_models), ready="AutoModelForCausalLM"),
)


def install() -> None:
    """Register now what transformers has loaded, the rest once it is loaded (called by
    `import asmopt`)."""
    for hook in _HOOKS:
        hook.install()


def uninstall() -> None:
    for hook in _HOOKS:
        hook.uninstall()
