"""`import asmopt` makes transformers' Auto classes load our model types, in any import order,
without importing transformers or torch itself (`asmopt.transformers_registration`).

Each check runs in a fresh interpreter: in this one, the registration has long happened.
The directories are tiny models of each type, saved by the model code's own
`save_pretrained`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import lazy
from fresh_interpreter import run_fresh
from tiny_model import tiny_plt_config

if TYPE_CHECKING:
    import safetensors.torch as safetensors_torch
    import torch

    from asmopt.models import plt
else:
    torch = lazy("torch")
    safetensors_torch = lazy("safetensors.torch")
    plt = lazy("asmopt.models.plt")

TYPES = ("asmopt_plt", "iquestpltcoder", "iquestloopcoder")
CLASSES = {
    "asmopt_plt": "PLTForCausalLM",
    "iquestpltcoder": "IQuestPLTCoderForCausalLM",
    "iquestloopcoder": "IQuestLoopCoderForCausalLM",
}
# What a fresh process prints for one directory: its config class, model class, the model
# class's module, whether every tensor was read from the file, and a weight checksum.
LOAD = (
    "def load(path):\n"
    "    config = AutoConfig.from_pretrained(path)\n"
    "    model, info = AutoModelForCausalLM.from_pretrained(path, output_loading_info=True)\n"
    "    complete = not info['missing_keys'] and not info['unexpected_keys']\n"
    "    total = sum(float(p.detach().double().sum()) for p in model.parameters())\n"
    "    print(type(config).__name__, type(model).__name__, type(model).__module__,\n"
    "          complete, f'{total:.6f}')\n"
)


def fresh_python(code: str) -> str:
    """Run `code` in a new interpreter on this tree's sources; its stdout. A registration
    that failed would only warn, so a warning from us fails the test too."""
    proc = run_fresh(code)
    assert "could not register" not in proc.stderr, proc.stderr[-4000:]
    return proc.stdout


def checksum(model: torch.nn.Module) -> str:
    return f"{sum(float(p.detach().double().sum()) for p in model.parameters()):.6f}"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """model type -> (directory, the weight checksum a correct load reproduces)."""
    fields = tiny_plt_config().to_dict()
    for key in ("model_type", "architectures", "plt_loop_mode", "transformers_version"):
        fields.pop(key, None)
    configs = {
        "asmopt_plt": plt.PLTConfig(**fields),
        "iquestpltcoder": plt.IQuestPLTCoderConfig(**fields),
        "iquestloopcoder": plt.IQuestLoopCoderConfig(**fields),
    }
    out: dict[str, tuple[Path, str]] = {}
    for model_type, config in configs.items():
        torch.manual_seed(0)
        model = getattr(plt, CLASSES[model_type])(config)
        path = tmp_path_factory.mktemp(model_type)
        model.save_pretrained(path)
        assert json.loads((path / "config.json").read_text())["model_type"] == model_type
        out[model_type] = (path, checksum(model))
    return out


def expected(saved: dict[str, tuple[Path, str]], model_type: str) -> str:
    config_class = CLASSES[model_type].replace("ForCausalLM", "Config")
    module = "asmopt.models.plt.modeling_plt"
    return f"{config_class} {CLASSES[model_type]} {module} True {saved[model_type][1]}"


def loads(saved: dict[str, tuple[Path, str]]) -> str:
    return "".join(f"load({str(saved[t][0])!r})\n" for t in TYPES)


def test_import_asmopt_imports_neither_transformers_nor_torch() -> None:
    out = fresh_python(
        "import sys, asmopt\n"
        "print([m for m in ('torch', 'transformers', 'asmopt.models') if m in sys.modules])\n"
        "print([type(h).__name__ for h in sys.meta_path if 'Hook' in type(h).__name__])\n"
    )
    assert out.splitlines()[0] == "[]"
    assert out.count("_TransformersHook") == 2


@pytest.mark.ml
def test_the_config_module_loads_without_the_model_code() -> None:
    """transformers registers the configs while its modeling modules are half loaded, so
    the config classes must come without the model code (which imports those modules)."""
    out = fresh_python(
        "import sys\n"
        "from asmopt.models.plt import PLTConfig\n"
        "print(PLTConfig.model_type, 'asmopt.models.plt.modeling_plt' in sys.modules)\n"
    )
    assert out.strip() == "asmopt_plt False"


@pytest.mark.ml
def test_asmopt_first_then_the_auto_classes_load_every_type(
    saved: dict[str, tuple[Path, str]],
) -> None:
    out = fresh_python(
        "import sys, asmopt\n"
        "from transformers import AutoConfig, AutoModelForCausalLM\n"
        "print('model code before use:', 'asmopt.models.plt.modeling_plt' in sys.modules)\n"
        + LOAD
        + loads(saved)
    )
    lines = out.splitlines()
    assert lines[0] == "model code before use: False"
    assert lines[1:] == [expected(saved, t) for t in TYPES]


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: ~10 s each
@pytest.mark.ml
def test_transformers_first_then_asmopt_also_registers(
    saved: dict[str, tuple[Path, str]],
) -> None:
    out = fresh_python(
        "import transformers\n"
        "from transformers import AutoConfig, AutoModelForCausalLM\n"
        "import asmopt\n" + LOAD + loads(saved)
    )
    assert out.splitlines() == [expected(saved, t) for t in TYPES]


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: ~10 s each
@pytest.mark.ml
def test_half_imported_transformers_then_asmopt_registers(
    saved: dict[str, tuple[Path, str]],
) -> None:
    """transformers' top level imported (lazily, no Auto module yet) before asmopt."""
    out = fresh_python(
        "import transformers, asmopt\n"
        "from transformers import AutoConfig, AutoModelForCausalLM\n" + LOAD + loads(saved)
    )
    assert out.splitlines() == [expected(saved, t) for t in TYPES]


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: ~10 s each
@pytest.mark.ml
@pytest.mark.parametrize(
    "first",
    [
        "from transformers import LlamaForCausalLM",  # Auto modules load mid-modeling_utils
        "import asmopt.models.plt.modeling_plt",  # ... and mid our own model code
        "from transformers import pipeline",
    ],
)
def test_auto_modules_loaded_from_inside_other_imports_still_register(
    saved: dict[str, tuple[Path, str]], first: str
) -> None:
    out = fresh_python(
        f"import asmopt\n{first}\n"
        "from transformers import AutoConfig, AutoModelForCausalLM\n" + LOAD + loads(saved)
    )
    assert out.splitlines() == [expected(saved, t) for t in TYPES]


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: ~10 s each
@pytest.mark.ml
def test_auto_model_gives_the_base_model_and_the_real_class_replaces_its_stand_in(
    saved: dict[str, tuple[Path, str]],
) -> None:
    path = str(saved["asmopt_plt"][0])
    out = fresh_python(
        "import asmopt\n"
        "from transformers import AutoModel, AutoModelForCausalLM\n"
        "from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING\n"
        "from asmopt.models.plt.configuration_plt import PLTConfig\n"
        "print(repr(MODEL_FOR_CAUSAL_LM_MAPPING[PLTConfig]).startswith('<stand-in'))\n"
        f"print(type(AutoModel.from_pretrained({path!r})).__name__)\n"
        f"model = AutoModelForCausalLM.from_pretrained({path!r})\n"
        "print(MODEL_FOR_CAUSAL_LM_MAPPING[PLTConfig] is type(model))\n"
        "print(type(AutoModelForCausalLM.from_config(PLTConfig(**model.config.to_dict())))"
        ".__name__)\n"
    )
    assert out.splitlines() == ["True", "PLTModel", "True", "PLTForCausalLM"]


@pytest.mark.slow  # a fresh interpreter importing torch and transformers: ~10 s each
@pytest.mark.ml
def test_older_gate_names_are_renamed_when_loaded_through_the_auto_classes(
    saved: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    """The renames are registered with the model code, before the stand-in loads weights."""
    source, total = saved["iquestpltcoder"]
    state = safetensors_torch.load_file(str(source / "model.safetensors"))
    renamed = {k.replace(".plt_gate.", ".loop_gate_proj."): v for k, v in state.items()}
    assert renamed.keys() != state.keys()
    safetensors_torch.save_file(renamed, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text((source / "config.json").read_text())
    out = fresh_python(
        "import asmopt\n"
        "from transformers import AutoConfig, AutoModelForCausalLM\n"
        + LOAD
        + f"load({str(tmp_path)!r})\n"
    )
    assert out.strip() == expected(saved, "iquestpltcoder")
    assert out.split()[-1] == total
