"""Trainer configurations: one dataclass per trainer, every detail a named field.

Configs are read from YAML. Unknown keys are errors that name the key (and the nearest known
one), because a misspelt `clip_coef` silently training with the default is worse than a crash.
Values are checked against the field types; YAML 1.1 reads `1e-6` as a string, so numbers
written that way are accepted for float fields. The final config is printed at start-up and
saved in every checkpoint, so a run can always be traced back to what it was told to do.

Defaults of `PPOConfig` follow the reference recipe (verl PPO on Qwen2.5-Coder-7B) where it
says something: gamma = lambda = 1, clip 0.2, value clip 0.5, no entropy bonus, no KL penalty,
actor lr 1e-6, critic lr 1e-5, 16 prompts per step in one mini-batch, one PPO epoch,
temperature 0.5, 2,000 prompt and 2,000 response tokens.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from asmopt import typed_config
from asmopt.errors import InputError
from asmopt.typed_config import coerce, show

# --------------------------------------------------------------------------- shared fields


@dataclass
class ModelFields:
    """How the trained model is found, stored and run; shared by every trainer."""

    # A local Hugging Face model directory, or `tiny:llama` / `tiny:plt`: a fresh random model
    # of a CPU-friendly size built into `<output_dir>/init-model` (byte-level tokenizer).
    model: str = "tiny:llama"
    # Architecture fields for `tiny:*` models (e.g. hidden_size, num_hidden_layers); ignored
    # for a model directory.
    model_overrides: dict[str, Any] = field(default_factory=dict)
    # For `tiny:*` models: copy this local tokenizer instead of the byte-level one.
    tokenizer: str | None = None
    # `auto` is cuda when available, else cpu.
    device: str = "auto"
    # Storage dtype of trained weights and optimiser state. Keep float32 and use `amp` for
    # bfloat16 compute: pure bfloat16 weights lose updates smaller than ~1/256 of a weight.
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    # Autocast compute dtype for forward passes (`none` = the weights' dtype).
    amp: Literal["none", "bfloat16"] = "none"
    # Recompute activations in the backward pass (long sequences on one GPU).
    gradient_checkpointing: bool = False
    # torch intra-op threads; 0 keeps torch's default. Fix it for bitwise reproducibility.
    num_threads: int = 0
    # The trainer's seed: python, numpy and torch, the row order and `tiny:*` weights. It is
    # not the secret seed that draws graded inputs, which is new for every grading
    # (`reward_options.fresh_inputs`, docs/training.md).
    train_seed: int = 0

    # LoRA through peft; lora_r = 0 trains all weights.
    lora_r: int = 0
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    # `all-linear` (every linear layer but the output head) or a list of module names.
    lora_target_modules: str | list[str] = "all-linear"


@dataclass
class DataFields:
    """Where rows come from. A source is `suite:SPLIT`, `text-task:SPLIT` or a JSONL path."""

    train_data: str = "suite:train"
    # Held-out rows for validation; null disables validation.
    val_data: str | None = "suite:validation"
    # Suite directory for `suite:` sources (null = the built-in suite).
    suite: str | None = None
    # Prompt template for `suite:` rows (a built-in name or a file).
    prompt_template: str = "reference"
    # Validate on at most this many held-out rows (0 = all), in file order.
    val_max_rows: int = 0
    # `suite:` rows of programs marked unfit (tests that accept a trivial or mutated
    # program, docs/adequacy.md) are refused unless this is true; with the execution reward
    # it also lets the reward score them.
    allow_unfit: bool = False


@dataclass
class RunFields:
    """Output, logging, checkpoints and resumption."""

    output_dir: str = "runs/train"
    # Optimiser steps (0 = derived from `total_epochs` and the rows per step).
    total_steps: int = 0
    total_epochs: int = 1
    # Validate every K steps (0 = only at the start and the end).
    eval_every: int = 0
    eval_at_start: bool = True
    # Checkpoint every K steps (0 = only at the end); keep the newest `keep_checkpoints`.
    save_every: int = 10
    keep_checkpoints: int = 2
    tensorboard: bool = True
    # `auto`: continue from the newest checkpoint in output_dir if there is one; `never`:
    # refuse to start over an existing run; or a checkpoint directory.
    resume: str = "auto"
    # Write the trained model as a Hugging Face directory in `<output_dir>/final`.
    save_final_model: bool = True


# --------------------------------------------------------------------------- PPO


@dataclass
class PPOConfig(RunFields, DataFields, ModelFields):
    """Every PPO detail, named. See docs/training.md for what each one does and why."""

    output_dir: str = "runs/ppo"

    # ---- critic and reference
    # `separate`: a value head on its own backbone (the reference recipe); `shared`: a value
    # head on the actor's backbone (half the memory, the two losses share features).
    critic_mode: Literal["separate", "shared"] = "separate"
    # Backbone of a separate critic (null = the actor's initial model).
    critic_model: str | None = None
    # Frozen reference for the KL penalty (null = the actor's initial model; with LoRA the
    # reference is the base model with adapters switched off). Loaded only when kl_coef > 0.
    ref_model: str | None = None

    # ---- reward
    # A registered reward name (see asmopt.train.reward_registry) or `module:attribute`.
    reward: str = "text-task"
    reward_options: dict[str, Any] = field(default_factory=dict)

    # ---- rollout
    prompts_per_step: int = 16
    samples_per_prompt: int = 1
    max_prompt_len: int = 2000
    # Prompts longer than max_prompt_len: `skip` them at load time (counted), or `error`.
    long_prompts: Literal["skip", "error"] = "skip"
    max_response_len: int = 2000
    temperature: float = 0.5
    # Nucleus sampling makes the behaviour policy differ from the trained softmax; keep 1.0.
    top_p: float = 1.0
    # Sequences per generate() call.
    rollout_batch_size: int = 16

    # ---- advantages
    gamma: float = 1.0
    gae_lambda: float = 1.0
    # Whiten advantages over the valid tokens of the whole rollout batch.
    norm_adv: bool = True

    # ---- KL penalty to the reference, subtracted from the per-token reward
    kl_coef: float = 0.0
    kl_estimator: Literal["k1", "k2", "k3", "abs"] = "k1"

    # ---- PPO update
    update_epochs: int = 1
    # Sequences per optimiser step; the rollout batch is split into mini-batches.
    mini_batch_size: int = 16
    # Sequences per forward/backward; gradients accumulate over a mini-batch.
    micro_batch_size: int = 4
    shuffle_minibatches: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    vf_clip: float = 0.5
    vf_coef: float = 1.0
    ent_coef: float = 0.0
    # `token-mean`: every valid token of the mini-batch weighs the same (verl default);
    # `seq-mean-token-mean`: every sequence weighs the same.
    loss_agg: Literal["token-mean", "seq-mean-token-mean"] = "token-mean"
    # Stop the epochs of a step early once the mean approx KL of an epoch exceeds this.
    target_kl: float | None = None
    max_grad_norm: float = 1.0
    # Steps at the start during which only the critic is updated.
    critic_warmup_steps: int = 0

    # ---- optimisers (AdamW, one per trained backbone)
    actor_lr: float = 1e-6
    critic_lr: float = 1e-5
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    lr_schedule: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = 0

    # ---- validation decoding (temperature 0 = greedy, as in the reference evaluation)
    val_temperature: float = 0.0
    # null = max_response_len
    val_max_response_len: int | None = None
    # Answers per held-out prompt (> 1 needs val_temperature > 0): finer-grained build and
    # pass rates on a small held-out split.
    val_samples_per_prompt: int = 1

    @property
    def rollout_size(self) -> int:
        """Sequences generated per step."""
        return self.prompts_per_step * self.samples_per_prompt

    def validate(self) -> None:
        _validate_common(self)
        _positive(
            self,
            "prompts_per_step",
            "samples_per_prompt",
            "max_prompt_len",
            "max_response_len",
            "rollout_batch_size",
            "update_epochs",
            "mini_batch_size",
            "micro_batch_size",
        )
        _non_negative(
            self,
            "kl_coef",
            "ent_coef",
            "vf_coef",
            "clip_coef",
            "vf_clip",
            "actor_lr",
            "critic_lr",
            "max_grad_norm",
            "critic_warmup_steps",
        )
        if self.rollout_size % self.mini_batch_size:
            raise InputError(
                f"mini_batch_size ({self.mini_batch_size}) must divide prompts_per_step x "
                f"samples_per_prompt ({self.prompts_per_step} x {self.samples_per_prompt} = "
                f"{self.rollout_size})"
            )
        if self.mini_batch_size % self.micro_batch_size:
            raise InputError(
                f"micro_batch_size ({self.micro_batch_size}) must divide mini_batch_size "
                f"({self.mini_batch_size})"
            )
        if not 0.0 <= self.gamma <= 1.0 or not 0.0 <= self.gae_lambda <= 1.0:
            raise InputError(
                f"gamma ({self.gamma}) and gae_lambda ({self.gae_lambda}) must lie in [0, 1]"
            )
        if self.temperature <= 0:
            raise InputError(
                f"temperature must be > 0 for sampled rollouts, got {self.temperature}"
            )
        if not 0.0 < self.top_p <= 1.0:
            raise InputError(f"top_p must lie in (0, 1], got {self.top_p}")
        if self.val_temperature < 0:
            raise InputError(f"val_temperature must be >= 0, got {self.val_temperature}")
        _positive(self, "val_samples_per_prompt")
        if self.val_samples_per_prompt > 1 and self.val_temperature == 0:
            raise InputError(
                f"val_samples_per_prompt={self.val_samples_per_prompt} with greedy decoding "
                "(val_temperature 0) repeats one answer; set val_temperature > 0"
            )
        if self.target_kl is not None and self.target_kl <= 0:
            raise InputError(f"target_kl must be > 0 or null, got {self.target_kl}")


# --------------------------------------------------------------------------- SFT


@dataclass
class SFTConfig(RunFields, DataFields, ModelFields):
    """Supervised warm start on (prompt, completion) rows; the loss is on completion tokens."""

    output_dir: str = "runs/sft"
    # For `suite:` rows: the target completion is the baseline assembly made with these gcc
    # flags, in the fenced form the answer extractor reads.
    target_flags: list[str] = field(default_factory=lambda: ["-O3"])
    # With a `diff` prompt template the target is a unified diff from -O3 to that assembly,
    # with this many context lines (0 = only the changed lines: the shortest answers).
    target_diff_context: int = 3
    # Prompt + completion tokens; longer rows are skipped (counted) or are an error.
    max_seq_len: int = 4096
    long_examples: Literal["skip", "error"] = "skip"
    # Append the tokenizer's end-of-sequence token to every completion, so the model learns
    # to stop (PPO rewards the last token; a model that never stops is always truncated).
    append_eos: bool = True
    batch_size: int = 8
    micro_batch_size: int = 8
    lr: float = 1e-4
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    lr_schedule: Literal["constant", "linear", "cosine"] = "cosine"
    warmup_steps: int = 0
    max_grad_norm: float = 1.0

    def validate(self) -> None:
        _validate_common(self)
        _positive(self, "max_seq_len", "batch_size", "micro_batch_size")
        _non_negative(self, "lr", "max_grad_norm")
        if self.batch_size % self.micro_batch_size:
            raise InputError(
                f"micro_batch_size ({self.micro_batch_size}) must divide batch_size "
                f"({self.batch_size})"
            )
        if not self.target_flags:
            raise InputError("target_flags must name at least one gcc flag (e.g. [-O3])")
        _non_negative(self, "target_diff_context")


# --------------------------------------------------------------------------- checks


def _positive(cfg: TrainerConfig, *names: str) -> None:
    for name in names:
        if getattr(cfg, name) < 1:
            raise InputError(f"{name} must be at least 1, got {show(getattr(cfg, name))}")


def _non_negative(cfg: TrainerConfig, *names: str) -> None:
    for name in names:
        if getattr(cfg, name) < 0:
            raise InputError(f"{name} must be >= 0, got {show(getattr(cfg, name))}")


def _validate_common(cfg: TrainerConfig) -> None:
    typed_config.check_device(cfg.device)
    _non_negative(
        cfg,
        "total_steps",
        "total_epochs",
        "eval_every",
        "save_every",
        "num_threads",
        "lora_r",
        "warmup_steps",
        "val_max_rows",
    )
    if cfg.total_steps == 0 and cfg.total_epochs == 0:
        raise InputError("give total_steps or total_epochs (both are 0)")
    if cfg.keep_checkpoints < 1:
        raise InputError(f"keep_checkpoints must be at least 1, got {cfg.keep_checkpoints}")
    if cfg.lora_r and cfg.lora_alpha < 1:
        raise InputError(f"lora_alpha must be at least 1, got {cfg.lora_alpha}")
    if cfg.model_overrides and not cfg.model.startswith("tiny:"):
        raise InputError(f"model_overrides apply to tiny:* models only, but model is {cfg.model!r}")
    if cfg.amp != "none" and cfg.dtype != "float32":
        raise InputError(f"amp={cfg.amp} needs dtype float32 weights, got dtype={cfg.dtype}")


# --------------------------------------------------------------------------- YAML

C = TypeVar("C", PPOConfig, SFTConfig)
# Either trainer's config, where both are read the same way.
TrainerConfig = PPOConfig | SFTConfig


def field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def config_from_dict(cls: type[C], data: dict[str, Any], *, source: str = "config") -> C:
    """A validated config; unknown keys and mistyped values are errors naming the key."""
    try:
        return _build(cls, data)
    except ValueError as exc:
        raise InputError(f"{source}: {exc}") from None


# Keys that were renamed, with their new spelling: refused by name, never read as the old
# meaning (a `seed` could be taken for the secret input seed).
# old key -> (new key, what it is).
RENAMED_KEYS: typed_config.Renamed = {
    "seed": (
        "train_seed",
        "the trainer's seed; the secret input seed is reward_options.fresh_inputs.seed, "
        "new per grading when left out",
    ),
}


def _renamed(key: Any) -> None:
    typed_config.refuse_renamed(key, RENAMED_KEYS)


def _build(cls: type[C], data: object) -> C:
    """`cls` from `data`, checked key by key and then as a whole; errors name the key but
    not the source, which the caller knows."""
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of settings, got {type(data).__name__}")
    for key in data:
        _renamed(key)
    types_ = field_types(cls)
    unknown = [k for k in data if k not in types_]
    if unknown:
        raise InputError(_unknown_key(cls, unknown[0], types_))
    values = {key: coerce(key, value, types_[key]) for key, value in data.items()}
    cfg = cls(**values)
    cfg.validate()
    return cfg


def _unknown_key(cls: type, key: object, types_: dict[str, Any]) -> str:
    see = f"docs/training.md lists the fields of {cls.__name__}"
    return str(typed_config.unknown_key(key, types_, "key", see=see))


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` from the command line; the value is read as YAML (numbers, lists, null)."""
    if "=" not in text:
        raise InputError(f"--set expects KEY=VALUE, got {show(text)}")
    key, raw = text.split("=", 1)
    key = key.strip()
    return key, typed_config.parse_override(raw, f"--set {key}")


def load_config(
    cls: type[C], path: str | Path | None = None, overrides: dict[str, Any] | None = None
) -> C:
    """Defaults, then the YAML file, then `overrides` (later wins). An error is reported
    against what caused it: the file, or the `--set` options it would not have without."""
    data: dict[str, Any] = {}
    source = "config"
    if path is not None:
        source = str(path)
        loaded = typed_config.read_yaml(Path(path))
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise InputError(f"{path}: expected a mapping of settings at the top level")
        data.update(loaded)
    overrides = overrides or {}
    _check_overrides(cls, overrides)
    try:
        return _build(cls, {**data, **overrides})
    except ValueError as exc:
        keys = list(overrides)
        blamed = typed_config.culprits(
            str(exc),
            lambda i: _build(cls, {**data, **{k: overrides[k] for k in keys if k != keys[i]}}),
            len(keys),
        )
        where = ", ".join(f"--set {keys[i]}" for i in blamed) or source
        raise InputError(f"{where}: {exc}") from None


def _check_overrides(cls: type, overrides: dict[str, Any]) -> None:
    """Each override's key and type on its own, reported as the command line's."""
    types_ = field_types(cls)
    for key, value in overrides.items():
        try:
            _renamed(key)
        except InputError as exc:
            raise InputError(f"--set {key}: {exc}") from None
        if key not in types_:
            raise InputError(f"--set {key}: {_unknown_key(cls, key, types_)}")
        try:
            coerce(key, value, types_[key])
        except ValueError as exc:
            raise InputError(f"--set {key}: {exc}") from None


def config_to_dict(cfg: TrainerConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def config_to_yaml(cfg: TrainerConfig) -> str:
    import yaml

    return yaml.safe_dump(config_to_dict(cfg), sort_keys=False, default_flow_style=None)


# Fields that may change when a run is resumed: they do not change what a step computes.
RESUMABLE_CHANGES = frozenset(
    {
        "total_steps",
        "total_epochs",
        "eval_every",
        "eval_at_start",
        "save_every",
        "keep_checkpoints",
        "tensorboard",
        "resume",
        "save_final_model",
        "output_dir",
        "val_max_rows",
        "device",
        "num_threads",
        # Only decides whether unfit programs may load; a changed row set is caught by
        # the data sampler's own row-count check.
        "allow_unfit",
    }
)


def changed_fields(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Fields whose change would make a resumed run differ from an uninterrupted one."""
    # a run saved before a rename
    saved = {RENAMED_KEYS[k][0] if k in RENAMED_KEYS else k: v for k, v in saved.items()}
    keys = (set(saved) | set(current)) - RESUMABLE_CHANGES
    return sorted(k for k in keys if saved.get(k) != current.get(k))
