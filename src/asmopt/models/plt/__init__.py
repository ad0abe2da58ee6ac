"""Parallel Loop Transformer (PLT / LoopCoder-v2), native transformers code.

Three model types, each known to transformers' Auto classes once `asmopt` is imported (see
`asmopt.transformers_registration`):

- `asmopt_plt` (our checkpoints): `PLTConfig` / `PLTForCausalLM` (and `PLTModel` for
  `AutoModel`);
- `iquestpltcoder` (published LoopCoder-v2 directories): `IQuestPLTCoderConfig` /
  `IQuestPLTCoderForCausalLM`, including the rename of older `loop_gate_proj` gate tensors to
  `plt_gate` (re-saving such a model writes the names it was loaded with);
- `iquestloopcoder` (first-generation loop directories, IQuest-Coder-V1-Loop):
  `IQuestLoopCoderConfig` / `IQuestLoopCoderForCausalLM` (no shift; `gate_projections` renamed).

So `AutoModelForCausalLM.from_pretrained(path)` loads any of these directories;
`load_plt_pretrained(path)` does the same in one call and refuses other architectures. See
docs/plt.md.

The names below are imported on first use: transformers registers our config classes while
its own modeling modules are still loading, and the configs must be importable then without
pulling in the model code (which imports those very modules).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cache_plt import PLTCache, PLTWindowLayer, ring_sequence_indices
    from .configuration_plt import (
        PLT_LOOP_MODES,
        IQuestLoopCoderConfig,
        IQuestPLTCoderConfig,
        PLTConfig,
    )
    from .kernels import kernel_report, set_linear_kernel
    from .modeling_plt import (
        IQuestLoopCoderForCausalLM,
        IQuestPLTCoderForCausalLM,
        PLTCausalLMOutputWithPast,
        PLTForCausalLM,
        PLTLinear,
        PLTModel,
        PLTModelOutputWithPast,
        PLTPreTrainedModel,
    )

# Supported transformers range; keep in step with the `ml` extra in pyproject.toml.
SUPPORTED_TRANSFORMERS = (">=5.0", "<5.24")

_LAZY = {
    "PLTCache": "cache_plt",
    "PLTWindowLayer": "cache_plt",
    "ring_sequence_indices": "cache_plt",
    "PLT_LOOP_MODES": "configuration_plt",
    "IQuestLoopCoderConfig": "configuration_plt",
    "IQuestPLTCoderConfig": "configuration_plt",
    "PLTConfig": "configuration_plt",
    "kernel_report": "kernels",
    "set_linear_kernel": "kernels",
    "IQuestLoopCoderForCausalLM": "modeling_plt",
    "IQuestPLTCoderForCausalLM": "modeling_plt",
    "PLTCausalLMOutputWithPast": "modeling_plt",
    "PLTForCausalLM": "modeling_plt",
    "PLTLinear": "modeling_plt",
    "PLTModel": "modeling_plt",
    "PLTModelOutputWithPast": "modeling_plt",
    "PLTPreTrainedModel": "modeling_plt",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def load_plt_pretrained(path: str | Path, **kwargs: Any) -> PLTForCausalLM:
    """Loads a PLT or LoopCoder (`iquestpltcoder`) directory without remote code.

    Keyword arguments go to `from_pretrained` (e.g. `dtype=torch.bfloat16`). Raises if the
    directory holds another architecture, naming its model type.
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    from asmopt.errors import InputError

    from .configuration_plt import IQuestLoopCoderConfig, IQuestPLTCoderConfig, PLTConfig
    from .modeling_plt import PLTForCausalLM

    config = AutoConfig.from_pretrained(path)
    if not isinstance(config, PLTConfig):
        known = (PLTConfig, IQuestPLTCoderConfig, IQuestLoopCoderConfig)
        raise InputError(  # a ValueError too: the user's to fix, named in one line
            f"{path} holds model_type {config.model_type!r}, not one of "
            f"{', '.join(repr(c.model_type) for c in known)}."
        )
    model = AutoModelForCausalLM.from_pretrained(path, config=config, **kwargs)
    assert isinstance(model, PLTForCausalLM)
    return model


__all__ = [
    "PLT_LOOP_MODES",
    "SUPPORTED_TRANSFORMERS",
    "IQuestLoopCoderConfig",
    "IQuestLoopCoderForCausalLM",
    "IQuestPLTCoderConfig",
    "IQuestPLTCoderForCausalLM",
    "PLTCache",
    "PLTCausalLMOutputWithPast",
    "PLTConfig",
    "PLTForCausalLM",
    "PLTLinear",
    "PLTModel",
    "PLTModelOutputWithPast",
    "PLTPreTrainedModel",
    "PLTWindowLayer",
    "kernel_report",
    "load_plt_pretrained",
    "ring_sequence_indices",
    "set_linear_kernel",
]
