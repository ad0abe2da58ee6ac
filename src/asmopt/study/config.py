"""The loop-count study's configuration: one YAML file, five strict sections.

    output_dir: runs/study/cpu_small
    corpus:    which C sources, which -O levels (`CorpusConfig`)
    tokenizer: BPE vocabulary size
    model:     the looped decoder's shape (everything except the loop count R)
    train:     optimiser, schedule, steps, data order, seeds
    eval:      held-out windows, diagnostics batch, task metric

Every model of a study shares all of it; only R differs. That is the whole point: a
difference between R = 2 and R = 3 must come from the loops, not from a different learning
rate, data order or initial weights.

Unknown keys are errors that name the nearest known key; values are checked against the
field types. `--set train.max_steps=10` style overrides use the same checks.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from asmopt import typed_config
from asmopt.errors import InputError
from asmopt.study.corpus import CorpusConfig

CONFIG_DIR = Path(__file__).resolve().parent / "configs"


@dataclass
class TokenizerConfig:
    """Byte-level BPE trained on the training documents."""

    vocab_size: int = 2048
    min_frequency: int = 2

    def validate(self) -> None:
        if self.vocab_size < 300:
            raise InputError(f"tokenizer vocab_size must be at least 300, got {self.vocab_size}")


@dataclass
class ModelSpec:
    """The shared decoder (Llama-style, see asmopt.models.plt); R comes from the command."""

    hidden_size: int = 256
    # SwiGLU width; about 8/3 of hidden_size keeps the MLP at Llama's parameter share.
    intermediate_size: int = 688
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 4
    # PLT local window w (the token itself plus w previous ones), as published: 64.
    window: int = 64
    # `plt`: the parallel loop transformer; `plain`: h(r) = f(h(r-1)) (the baseline).
    loop_mode: Literal["plt", "plain"] = "plt"
    normalize_per_loop: bool = False
    tie_word_embeddings: bool = True
    rope_theta: float = 10000.0

    def validate(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise InputError(
                f"hidden_size ({self.hidden_size}) is not a multiple of num_attention_heads "
                f"({self.num_attention_heads})"
            )
        if self.window < 0:
            raise InputError(f"window must be >= 0, got {self.window}")


@dataclass
class TrainSpec:
    """One optimiser recipe for every R: AdamW, linear warm-up, cosine decay, clipping."""

    # `pretrain`: next-token loss on every token of a random window of the token stream.
    # `sft`: documents from their start, loss on the assembly only (start from init_from).
    objective: Literal["pretrain", "sft"] = "pretrain"
    # A trained model directory (a `final/`) to start from; null = random weights.
    init_from: str | None = None
    seq_len: int = 512
    batch_size: int = 4
    grad_accum: int = 1
    max_steps: int = 150
    lr: float = 2e-3
    # The cosine schedule ends at lr * min_lr_ratio.
    min_lr_ratio: float = 0.1
    warmup_steps: int = 15
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    # The seed of the initial weights (the same for every R: gates start at zero and draw no
    # random numbers).
    init_seed: int = 0
    # Window positions of step s come from a generator seeded with (data_seed, s): every R
    # sees the same tokens in the same order, and a resumed run sees what it would have seen.
    data_seed: int = 1234
    log_every: int = 5
    # Held-out loss every K steps (0 = only at the end).
    eval_every: int = 50
    save_every: int = 25
    device: str = "auto"
    # bfloat16 autocast on a GPU; weights stay float32.
    amp: Literal["none", "bfloat16"] = "none"
    # torch threads (0 = torch's default).
    num_threads: int = 2

    def validate(self) -> None:
        typed_config.check_device(self.device, "train.device")
        for name in ("seq_len", "batch_size", "grad_accum", "max_steps", "log_every"):
            if getattr(self, name) < 1:
                raise InputError(f"train.{name} must be at least 1, got {getattr(self, name)}")
        for name in ("warmup_steps", "eval_every", "save_every", "num_threads"):
            if getattr(self, name) < 0:
                raise InputError(f"train.{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise InputError(f"train.min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if self.lr <= 0:
            raise InputError(f"train.lr must be positive, got {self.lr}")


@dataclass
class EvalSpec:
    """What every trained model is measured on (all from held-out programs)."""

    # Held-out windows of train.seq_len tokens for loss and accuracy (evenly spaced).
    heldout_windows: int = 64
    # Windows for the diagnostics (attention maps of every loop are kept, so keep it small).
    diag_windows: int = 8
    diag_batch: int = 2
    # Task metric: held-out programs whose prompt fits, greedy-decoded and built.
    task_programs: int = 8
    task_level: str = "-O2"
    task_max_new_tokens: int = 320
    # Keep only programs whose prompt plus gcc's answer fit train.seq_len (false: take the
    # first programs as they come; for toy configs whose context fits nothing).
    task_fit_context: bool = True

    def validate(self) -> None:
        for name in ("heldout_windows", "diag_windows", "diag_batch"):
            if getattr(self, name) < 1:
                raise InputError(f"eval.{name} must be at least 1, got {getattr(self, name)}")
        if self.task_programs < 0 or self.task_max_new_tokens < 1:
            raise InputError("eval.task_programs must be >= 0 and task_max_new_tokens >= 1")


@dataclass
class StudyConfig:
    """The whole study; see the module docstring."""

    output_dir: str = "runs/study/default"
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelSpec = field(default_factory=ModelSpec)
    train: TrainSpec = field(default_factory=TrainSpec)
    eval: EvalSpec = field(default_factory=EvalSpec)

    def validate(self) -> None:
        for section in (self.corpus, self.tokenizer, self.model, self.train, self.eval):
            section.validate()
        if self.eval.task_level not in self.corpus.levels:
            raise InputError(
                f"eval.task_level {self.eval.task_level!r} is not among corpus.levels "
                f"{self.corpus.levels}"
            )


# --------------------------------------------------------------------------- loading


def builtin_configs() -> list[str]:
    return typed_config.builtin_configs(CONFIG_DIR)


def config_path(name: str) -> Path:
    """A YAML file, or a built-in config by name (`cpu_seeds`, `cpu_small`, `gpu`, `toy`)."""
    return typed_config.config_path(name, CONFIG_DIR, "study config")


# Keys that were renamed, per section: refused by name, never read with the old meaning.
RENAMED_KEYS: dict[type, typed_config.Renamed] = {
    TrainSpec: {
        "seed": (
            "init_seed",
            "the seed of the initial weights; train.data_seed orders the data, and --seeds "
            "sets both",
        ),
    },
}


def renamed_in_saved(section: type, saved: dict[str, Any]) -> dict[str, Any]:
    """A saved section (a finished model's or a checkpoint's config) under today's names:
    a run saved before a rename is compared as it was meant."""
    renamed = RENAMED_KEYS.get(section, {})
    return {renamed[k][0] if k in renamed else k: v for k, v in saved.items()}


def from_dict(cls: type, data: Any, where: str = "") -> Any:
    """`cls(**data)` with every key and value checked; nested sections are dataclasses."""
    if not isinstance(data, dict):
        raise InputError(f"{where or 'config'}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    values = {}
    for key, value in data.items():
        typed_config.refuse_renamed(key, RENAMED_KEYS.get(cls, {}), where=where)
        full = f"{where}.{key}" if where else str(key)
        if key not in names:
            see = "docs/study.md lists the fields"
            raise typed_config.unknown_key(key, names, "key", where, see)
        values[key] = typed_config.coerce(full, value, hints[key], from_dict)
    return cls(**values)


def _set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise InputError(f"--set {dotted}: {part} is not a section")
    node[parts[-1]] = value


def _parse_overrides(overrides: list[str]) -> list[tuple[str, Any]]:
    """(dotted key, value) of each `--set section.key=value`, the value read as YAML."""
    parsed = []
    for item in overrides:
        if "=" not in item:
            raise InputError(f"--set expects SECTION.KEY=VALUE, got {typed_config.show(item)}")
        key, raw = item.split("=", 1)
        key = key.strip()
        parsed.append((key, typed_config.parse_override(raw, f"--set {key}")))
    return parsed


def _build(data: dict[str, Any], overrides: list[tuple[str, Any]]) -> StudyConfig:
    """The checked config of the file's `data` with `overrides` applied (on a copy: the
    same data is built again without one override to find which one an error comes from)."""
    merged = copy.deepcopy(data)
    for key, value in overrides:
        _set_path(merged, key, value)
    cfg = from_dict(StudyConfig, merged)
    cfg.validate()
    return cfg


def load_study_config(
    name: str | Path | None = None, overrides: list[str] | None = None
) -> StudyConfig:
    """Defaults, then the YAML file, then `--set section.key=value` overrides (YAML values).
    An error is reported against what caused it: the file, or the `--set` options."""
    data: dict[str, Any] = {}
    source = "config"
    if name is not None:
        path = config_path(str(name))
        source = str(path)
        loaded = typed_config.read_yaml(path, "study config") or {}
        if not isinstance(loaded, dict):
            raise InputError(f"{path}: expected a mapping of sections at the top level")
        data = loaded
    parsed = _parse_overrides(overrides or [])
    try:
        return _build(data, parsed)
    except ValueError as exc:
        if str(exc).startswith("--set "):  # already names its option
            raise
        blamed = typed_config.culprits(
            str(exc), lambda i: _build(data, parsed[:i] + parsed[i + 1 :]), len(parsed)
        )
        where = ", ".join(f"--set {parsed[i][0]}" for i in blamed) or source
        raise InputError(f"{where}: {exc}") from None


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def to_yaml(cfg: Any) -> str:
    import yaml

    return yaml.safe_dump(to_dict(cfg), sort_keys=False, default_flow_style=None)
