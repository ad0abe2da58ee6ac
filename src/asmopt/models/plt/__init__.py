"""Parallel Loop Transformer (PLT / LoopCoder-v2), native transformers code.

Importing this package registers two model types with transformers' Auto classes:

- `asmopt_plt` (our checkpoints): `PLTConfig` / `PLTForCausalLM`;
- `iquestpltcoder` (published LoopCoder-v2 directories): `IQuestPLTCoderConfig` /
  `IQuestPLTCoderForCausalLM`, including the rename of older `loop_gate_proj` gate tensors to
  `plt_gate` (re-saving such a model writes the names it was loaded with);
- `iquestloopcoder` (first-generation loop directories, IQuest-Coder-V1-Loop):
  `IQuestLoopCoderConfig` / `IQuestLoopCoderForCausalLM` (no shift; `gate_projections` renamed).

After `import asmopt.models.plt`, `AutoModelForCausalLM.from_pretrained(path)` loads either kind
of directory; `load_plt_pretrained(path)` does the same in one call. See docs/plt.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM
from transformers.conversion_mapping import (
    get_checkpoint_conversion_mapping,
    register_checkpoint_conversion_mapping,
)
from transformers.core_model_loading import WeightRenaming

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


def _register() -> None:
    """Registers configs, models and the v1 gate renaming (idempotent)."""
    AutoConfig.register(PLTConfig.model_type, PLTConfig, exist_ok=True)
    AutoConfig.register(IQuestPLTCoderConfig.model_type, IQuestPLTCoderConfig, exist_ok=True)
    AutoModel.register(PLTConfig, PLTModel, exist_ok=True)
    AutoModelForCausalLM.register(PLTConfig, PLTForCausalLM, exist_ok=True)
    AutoModelForCausalLM.register(IQuestPLTCoderConfig, IQuestPLTCoderForCausalLM, exist_ok=True)
    AutoConfig.register(IQuestLoopCoderConfig.model_type, IQuestLoopCoderConfig, exist_ok=True)
    AutoModelForCausalLM.register(IQuestLoopCoderConfig, IQuestLoopCoderForCausalLM, exist_ok=True)
    if get_checkpoint_conversion_mapping(IQuestPLTCoderConfig.model_type) is None:
        register_checkpoint_conversion_mapping(
            IQuestPLTCoderConfig.model_type,
            [WeightRenaming(r"\.self_attn\.loop_gate_proj\.", ".self_attn.plt_gate.")],
        )
    if get_checkpoint_conversion_mapping(IQuestLoopCoderConfig.model_type) is None:
        # First-generation files keep the gates in a model-level list, one per layer.
        register_checkpoint_conversion_mapping(
            IQuestLoopCoderConfig.model_type,
            [WeightRenaming(r"gate_projections\.(\d+)\.", r"layers.\1.self_attn.plt_gate.")],
        )


_register()


def load_plt_pretrained(path: str | Path, **kwargs: Any) -> PLTForCausalLM:
    """Loads a PLT or LoopCoder (`iquestpltcoder`) directory without remote code.

    Keyword arguments go to `from_pretrained` (e.g. `dtype=torch.bfloat16`). Raises if the
    directory holds another architecture, naming its model type.
    """
    config = AutoConfig.from_pretrained(path)
    if not isinstance(config, PLTConfig):
        known = (PLTConfig, IQuestPLTCoderConfig, IQuestLoopCoderConfig)
        raise ValueError(
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
