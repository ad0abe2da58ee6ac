"""PPO for a causal language model on one machine (CPU or one GPU).

One step (`ppo_step`), as in CleanRL's ppo.py but for text, one function per phase:

1. rollout   sample answers to a batch of prompts from the current policy (`rollout`);
2. score     call the reward function; a None excludes that sample from the update;
3. evaluate  old log-probs, values and (with a KL penalty) reference log-probs, no grad
             (`evaluate_rollout`);
4. GAE       reward on the last token (minus the KL penalty per token), token-level GAE,
             advantage whitening (`compute_advantages`);
5. update    `update_epochs` passes over shuffled mini-batches, gradients accumulated over
             micro-batches: clipped policy loss, clipped value loss, entropy bonus
             (`ppo_update` -> `minibatch_update` -> `micro_batch_backward`);
6. log       approx KL, clip fractions, explained variance, entropy, rewards, outcomes
             (`update_metrics`, `reward_summary`, `generation_summary`).

Prefixes: `b_` (and the `Rollout` named `b`) the whole rollout batch (B sequences x T
response tokens), `mb_` a mini-batch, `micro` a micro-batch, `new_` recomputed under the
current weights.
The actor is any local causal LM (the looped PLT model included); the critic is a value
head on its own backbone or on the actor's (`critic_mode`).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from asmopt.errors import InputError
from asmopt.policies.prompts import render_prompt
from asmopt.train import ppo_core as core
from asmopt.train.checkpoint import (
    load_trainable_state,
    restoring,
    rng_state,
    set_rng_state,
    staged_dir,
    trainable_state,
)
from asmopt.train.config import PPOConfig, config_to_yaml
from asmopt.train.data import Row, RowSampler, load_rows
from asmopt.train.modeling import (
    Batch,
    Generated,
    HeadInputTap,
    ValueHead,
    autocast,
    base_model,
    collate,
    count_parameters,
    decode_response,
    eval_mode,
    generate,
    hidden_size_of,
    load_causal_lm,
    load_tokenizer,
    prepare_trainable,
    response_forward,
)
from asmopt.train.optim import make_optimizer, make_scheduler
from asmopt.train.reward_registry import RewardFn, make_reward, score
from asmopt.train.run import (
    begin_run,
    is_due,
    open_run_dir,
    restore_position,
    save_trainer_checkpoint,
)
from asmopt.train.tiny import resolve_model

if TYPE_CHECKING:  # transformers is imported where a model is loaded
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from asmopt.train.modeling import CausalLM

Echo = Callable[[str], None]


def echo_log(text: str) -> None:
    """The trainers' default: an INFO record of this module's logger. A library prints
    nothing; `asmopt train` passes an echo that writes to stderr, a caller may pass its own."""
    logging.getLogger(__name__).info("%s", text)


# --------------------------------------------------------------------------- setup pieces


@dataclass
class Models:
    tokenizer: PreTrainedTokenizerBase
    actor: CausalLM
    value_head: ValueHead
    # a separate critic backbone, or None when the value head sits on the actor
    critic: CausalLM | None
    # a frozen reference model, or None (no KL, or LoRA: adapters switched off)
    ref: PreTrainedModel | None
    actor_tap: HeadInputTap | None
    critic_tap: HeadInputTap | None

    def critic_params(self) -> list[torch.nn.Parameter]:
        params = list(self.value_head.parameters())
        if self.critic is not None:
            params += [p for p in self.critic.parameters() if p.requires_grad]
        return params

    def actor_params(self) -> list[torch.nn.Parameter]:
        return [p for p in self.actor.parameters() if p.requires_grad]


def build_models(cfg: PPOConfig, device: torch.device, echo: Echo) -> Models:
    out = Path(cfg.output_dir)

    def path_of(spec: str | None) -> Path:
        return resolve_model(
            spec or cfg.model,
            out,
            overrides=cfg.model_overrides,
            tokenizer_dir=cfg.tokenizer,
            train_seed=cfg.train_seed,
        )

    model_path = path_of(cfg.model)
    tokenizer = load_tokenizer(model_path)
    actor = prepare_trainable(load_causal_lm(model_path, cfg.dtype, device), cfg)
    value_head = ValueHead(hidden_size_of(actor)).to(device)
    critic = None
    if cfg.critic_mode == "separate":
        critic = prepare_trainable(
            load_causal_lm(path_of(cfg.critic_model), cfg.dtype, device), cfg
        )
    ref = None
    if cfg.kl_coef > 0 and not cfg.lora_r:
        ref = load_causal_lm(path_of(cfg.ref_model), cfg.dtype, device)
        ref.requires_grad_(False)
        ref.eval()
    vocab = base_model(actor).config.vocab_size
    for what, other in (("critic_model", critic), ("ref_model", ref)):
        if other is not None and base_model(other).config.vocab_size != vocab:
            raise InputError(
                f"{what} has a vocabulary of {base_model(other).config.vocab_size} tokens, the "
                f"actor {vocab}: they must share the actor's tokenizer"
            )
    models = Models(
        tokenizer=tokenizer,
        actor=actor,
        value_head=value_head,
        critic=critic,
        ref=ref,
        actor_tap=HeadInputTap(actor) if critic is None else None,
        critic_tap=HeadInputTap(critic) if critic is not None else None,
    )
    n_actor, n_total = count_parameters(actor)
    n_critic = sum(p.numel() for p in models.critic_params())
    reference = "none" if cfg.kl_coef == 0 else "frozen copy" if ref is not None else "no adapters"
    echo(
        f"actor {type(actor).__name__} from {model_path}: {n_actor:,} trainable of "
        f"{n_total:,} parameters; critic ({cfg.critic_mode}): {n_critic:,} trainable; "
        f"reference: {reference}"
    )
    return models


def prepare_rows(
    rows: list[Row], tokenizer: PreTrainedTokenizerBase, cfg: PPOConfig, what: str, echo: Echo
) -> tuple[list[Row], list[str]]:
    """Rows whose rendered prompt fits `max_prompt_len`, with those rendered prompts."""
    kept: list[Row] = []
    texts: list[str] = []
    for i, row in enumerate(rows):
        text = render_prompt(tokenizer, row["prompt"])
        n = len(tokenizer(text)["input_ids"])
        if n > cfg.max_prompt_len:
            if cfg.long_prompts == "error":
                raise InputError(
                    f"{what} row {i}: prompt has {n} tokens > max_prompt_len {cfg.max_prompt_len}"
                )
            continue
        kept.append(row)
        texts.append(text)
    if len(kept) < len(rows):
        echo(
            f"{what}: skipped {len(rows) - len(kept)} of {len(rows)} rows with prompts longer "
            f"than {cfg.max_prompt_len} tokens"
        )
    if not kept:
        raise InputError(f"{what}: no row has a prompt of at most {cfg.max_prompt_len} tokens")
    return kept, texts


def check_edit_format(cfg: PPOConfig) -> None:
    """Suite prompts and the execution reward must agree on what an answer is: a `diff`
    template asks for diffs, which the reward must apply to the baseline (and the other
    way round), or every answer would be an extraction error. Both name the form the same
    way (`assembly` | `diff`), so the message's fix is the value to set."""
    if cfg.reward != "execution":
        return
    from asmopt.policies import prompts

    read = prompts.check_edit_format(
        cfg.reward_options.get("edit_format", "assembly"), "reward_options.edit_format"
    )
    if not any(spec.startswith("suite:") for spec in (cfg.train_data, cfg.val_data or "")):
        return
    why = prompts.answer_form_mismatch(
        prompts.load_template(cfg.prompt_template), read, "reward_options.edit_format",
        who="the execution reward",
    )  # fmt: skip
    if why is not None:
        raise InputError(why)


def row_columns(rows: list[Row]) -> dict[str, list[Any]]:
    """Every column but the prompt, one list each (None where a row lacks it)."""
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k != "prompt" and k not in keys]
    return {k: [row.get(k) for row in rows] for k in keys}


def outcome_metrics(verdicts: list[Any]) -> dict[str, float | None]:
    """Share of each outcome; build and pass rates when the outcomes are sandbox verdicts
    (a reward may log outcomes of its own, which have no build or pass). The numbers come
    from asmopt.metrics, as in `asmopt eval`."""
    from asmopt.judge import ALL_VERDICTS
    from asmopt.metrics import outcome_shares, verdict_rates

    shares = outcome_shares(verdicts)
    out: dict[str, float | None] = {f"outcome/{k}": v for k, v in shares.items()}
    if shares and set(shares) <= ALL_VERDICTS:
        out.update(verdict_rates(verdicts))
    return out


def reward_summary(
    scores: list[float | None], extras: dict[str, list[Any]], logged: dict[str, list[float]]
) -> dict[str, Any]:
    valid = [s for s in scores if s is not None]
    t = torch.tensor(valid, dtype=torch.float64) if valid else None
    out: dict[str, Any] = {
        "reward/mean": float(t.mean()) if t is not None else None,
        "reward/std": float(t.std(unbiased=False)) if t is not None else None,
        "reward/min": float(t.min()) if t is not None else None,
        "reward/max": float(t.max()) if t is not None else None,
        "reward/excluded": len(scores) - len(valid),
    }
    for name, values in sorted(logged.items()):
        out[f"reward/{name}"] = sum(values) / len(values)
    if "verdict" in extras:
        out.update(outcome_metrics(extras["verdict"]))
    return out


def generation_summary(gens: list[Generated]) -> dict[str, float]:
    return {
        "response/length_mean": sum(len(g.response) for g in gens) / len(gens),
        "response/truncated_frac": sum(not g.finished for g in gens) / len(gens),
        "prompt/length_mean": sum(len(g.query) for g in gens) / len(gens),
    }


# --------------------------------------------------------------------------- validation


def validate(
    models: Models,
    rows: list[Row],
    texts: list[str],
    reward_fn: RewardFn,
    cfg: PPOConfig,
    device: torch.device,
) -> dict[str, Any]:
    """Held-out rows decoded at `val_temperature` (`val_samples_per_prompt` answers each) and
    scored; the training RNG is untouched."""
    k = cfg.val_samples_per_prompt
    rows = [row for row in rows for _ in range(k)]
    texts = [text for text in texts for _ in range(k)]
    saved = rng_state()
    try:
        with eval_mode(models.actor):
            gens = generate(
                models.actor,
                models.tokenizer,
                texts,
                max_new_tokens=cfg.val_max_response_len or cfg.max_response_len,
                temperature=cfg.val_temperature,
                top_p=1.0,
                batch_size=cfg.rollout_batch_size,
                device=device,
                amp=cfg.amp,
            )
        completions = [decode_response(models.tokenizer, g) for g in gens]
        scores, extras, logged = score(reward_fn, texts, completions, row_columns(rows))
    finally:
        set_rng_state(saved)
    return {**reward_summary(scores, extras, logged), **generation_summary(gens), "rows": len(rows)}


# --------------------------------------------------------------------------- training


@dataclass
class Data:
    """Training rows and held-out rows with their rendered prompts."""

    train_rows: list[Row]
    train_texts: list[str]
    val_rows: list[Row]
    val_texts: list[str]


def load_data(cfg: PPOConfig, tokenizer: PreTrainedTokenizerBase, echo: Echo) -> Data:
    """Rows whose prompts fit, from `train_data` and (if set) the first `val_max_rows` of
    `val_data`, rendered with the actor's tokenizer exactly as rollouts will see them."""
    suite_args: dict[str, Any] = {
        "suite": cfg.suite,
        "template": cfg.prompt_template,
        "allow_unfit": cfg.allow_unfit,
    }
    train_rows, train_texts = prepare_rows(
        load_rows(cfg.train_data, **suite_args), tokenizer, cfg, "train_data", echo
    )
    val_rows: list[Row] = []
    val_texts: list[str] = []
    if cfg.val_data:
        val_rows, val_texts = prepare_rows(
            load_rows(cfg.val_data, **suite_args), tokenizer, cfg, "val_data", echo
        )
        if cfg.val_max_rows:
            val_rows, val_texts = val_rows[: cfg.val_max_rows], val_texts[: cfg.val_max_rows]
    return Data(train_rows, train_texts, val_rows, val_texts)


def build_reward(cfg: PPOConfig, reward_fn: RewardFn | None) -> RewardFn:
    """The caller's reward object, else the configured one. The execution reward looks
    `suite:` rows' programs up in the config's `suite` (an imported suite's rows name its
    programs, not the built-in ones); rows of unfit programs that the config lets in must
    be scored too, so it is told to allow them."""
    if reward_fn is not None:
        return reward_fn
    reward_options = dict(cfg.reward_options)
    if cfg.reward == "execution":
        if cfg.suite:
            reward_options.setdefault("suite", cfg.suite)
        if cfg.allow_unfit:
            reward_options.setdefault("allow_unfit", True)
    return make_reward(cfg.reward, reward_options)


@dataclass
class Optimisers:
    """Actor and critic each have their own optimiser and learning-rate schedule (their
    learning rates differ, and the actor may wait for `critic_warmup_steps`)."""

    actor_opt: torch.optim.Optimizer
    critic_opt: torch.optim.Optimizer
    actor_sched: torch.optim.lr_scheduler.LRScheduler
    critic_sched: torch.optim.lr_scheduler.LRScheduler


def build_optimisers(models: Models, cfg: PPOConfig, total_steps: int) -> Optimisers:
    """Optimisers over the trainable parameters only (LoRA: the adapters), schedules over
    the run's `total_steps` (one schedule step per PPO step)."""
    actor_opt = make_optimizer(models.actor_params(), cfg.actor_lr, cfg)
    critic_opt = make_optimizer(models.critic_params(), cfg.critic_lr, cfg)
    return Optimisers(
        actor_opt=actor_opt,
        critic_opt=critic_opt,
        actor_sched=make_scheduler(actor_opt, cfg.lr_schedule, cfg.warmup_steps, total_steps),
        critic_sched=make_scheduler(critic_opt, cfg.lr_schedule, cfg.warmup_steps, total_steps),
    )


def restore(ckpt: dict[str, Any], models: Models, opts: Optimisers, sampler: RowSampler) -> int:
    """Weights, optimiser and schedule states, data order and random generators of a
    checkpoint; returns the step it finished."""
    weights = ckpt["weights"]
    load_trainable_state(models.actor, weights["actor"], "actor")
    models.value_head.load_state_dict(weights["value_head"])
    if models.critic is not None:
        load_trainable_state(models.critic, weights["critic"], "critic")
    opts.actor_opt.load_state_dict(ckpt["optimizers"]["actor"])
    opts.critic_opt.load_state_dict(ckpt["optimizers"]["critic"])
    opts.actor_sched.load_state_dict(ckpt["schedulers"]["actor"])
    opts.critic_sched.load_state_dict(ckpt["schedulers"]["critic"])
    return restore_position(ckpt, sampler)


def save_ppo_checkpoint(
    cfg: PPOConfig, out: Path, step: int, models: Models, opts: Optimisers, sampler: RowSampler
) -> None:
    """Trainable weights only (LoRA: the adapters), the value head, and the critic when it
    has its own backbone."""
    weights = {
        "actor": trainable_state(models.actor),
        "value_head": models.value_head.state_dict(),
    }
    if models.critic is not None:
        weights["critic"] = trainable_state(models.critic)
    save_trainer_checkpoint(
        cfg,
        out,
        step,
        kind="ppo",
        weights=weights,
        optimizers={"actor": opts.actor_opt, "critic": opts.critic_opt},
        schedulers={"actor": opts.actor_sched, "critic": opts.critic_sched},
        sampler=sampler,
    )


def plan_summary(cfg: PPOConfig, data: Data, total_steps: int, device: torch.device) -> str:
    """The batch arithmetic of the run in one line, so a mis-sized config shows at once."""
    B = cfg.rollout_size
    return (
        f"{len(data.train_rows)} training rows, {len(data.val_rows)} validation rows; "
        f"{total_steps} steps of {cfg.prompts_per_step} prompts x {cfg.samples_per_prompt} "
        f"samples = {B} sequences, {B // cfg.mini_batch_size} mini-batches x "
        f"{cfg.update_epochs} epochs, {cfg.mini_batch_size // cfg.micro_batch_size} "
        f"micro-batches each; device {device}"
    )


def train_ppo(
    cfg: PPOConfig,
    reward_fn: RewardFn | None = None,
    *,
    progress: bool = True,
    echo: Echo = echo_log,
) -> dict[str, Any]:
    """Runs (or resumes) PPO as `cfg` says; returns a summary. `reward_fn` overrides
    `cfg.reward` (for rewards that are objects built by the caller); `echo` takes the run's
    notices (the resolved config, skipped rows, the plan), logged by default."""
    cfg.validate()
    check_edit_format(cfg)
    start = begin_run(cfg, "ppo")
    device, out = start.device, start.out
    echo(f"PPO config:\n{config_to_yaml(cfg).rstrip()}")

    models = build_models(cfg, device, echo)
    data = load_data(cfg, models.tokenizer, echo)
    reward_fn = build_reward(cfg, reward_fn)
    sampler = RowSampler(len(data.train_rows), cfg.train_seed)
    total_steps = cfg.total_steps or math.ceil(
        cfg.total_epochs * len(data.train_rows) / cfg.prompts_per_step
    )
    echo(plan_summary(cfg, data, total_steps, device))
    opts = build_optimisers(models, cfg, total_steps)
    step = 0
    if start.ckpt is not None and start.resume_from is not None:
        with restoring(start.resume_from, start.explicit):
            step = restore(start.ckpt, models, opts, sampler)
        echo(f"resumed from {start.resume_from} at step {step}")
    log = open_run_dir(cfg, start, step)

    summary: dict[str, Any] = {"output_dir": str(out), "total_steps": total_steps}
    if start.ckpt is None and cfg.eval_at_start and data.val_rows:
        val = validate(models, data.val_rows, data.val_texts, reward_fn, cfg, device)
        log.write(0, "val", val)
        summary["val_start"] = val
        echo(f"step 0 validation: reward {val['reward/mean']}")

    from tqdm.auto import tqdm

    bar = tqdm(total=total_steps, initial=step, disable=not progress, desc="ppo", unit="step")
    try:
        while step < total_steps:
            step += 1
            metrics = ppo_step(step, cfg, models, data, sampler, reward_fn, opts, device)
            step_schedulers(opts.actor_sched, opts.critic_sched)
            log.write(step, "train", metrics)
            summary.setdefault("first_train", metrics)
            summary["last_train"] = metrics
            bar.update(1)
            bar.set_postfix(reward=f"{metrics['reward/mean'] or 0:.3f}")
            if data.val_rows and is_due(cfg.eval_every, step, total_steps):
                val = validate(models, data.val_rows, data.val_texts, reward_fn, cfg, device)
                log.write(step, "val", val)
                summary["val_end"] = val
            if is_due(cfg.save_every, step, total_steps):
                save_ppo_checkpoint(cfg, out, step, models, opts, sampler)
    finally:
        bar.close()
        log.close()

    if cfg.save_final_model:
        summary["final_model"] = str(save_final_model(models, cfg, out / "final"))
    return summary


def step_schedulers(*schedulers: torch.optim.lr_scheduler.LRScheduler) -> None:
    """One schedule step per PPO step, also when every sample was excluded and no optimiser
    stepped (torch warns then; the schedule must still follow the step count)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Detected call of `lr_scheduler.step", category=UserWarning
        )
        for scheduler in schedulers:
            scheduler.step()


def save_final_model(models: Models, cfg: PPOConfig, path: Path) -> Path:
    """The actor as a plain Hugging Face directory (LoRA merged) that `hf_local` loads."""
    actor = models.actor
    if cfg.lora_r:
        actor = actor.merge_and_unload()
    with staged_dir(path) as tmp:  # a full disk leaves the previous final/, not half of one
        actor.save_pretrained(tmp)
        models.tokenizer.save_pretrained(tmp)
    return path


# --------------------------------------------------------------------------- one PPO step


def ppo_step(
    step: int,
    cfg: PPOConfig,
    models: Models,
    data: Data,
    sampler: RowSampler,
    reward_fn: RewardFn,
    opts: Optimisers,
    device: torch.device,
) -> dict[str, Any]:
    """One PPO step on `data`'s training rows: the six phases of the module docstring, in
    order, one function each."""
    t0 = time.monotonic()
    rows, texts = data.train_rows, data.train_texts
    actor_opt, critic_opt = opts.actor_opt, opts.critic_opt

    # ---- 1. rollout
    picked = [i for i in sampler.next(cfg.prompts_per_step) for _ in range(cfg.samples_per_prompt)]
    b_rows = [rows[i] for i in picked]
    b_texts = [texts[i] for i in picked]
    gens = rollout(cfg, models, b_texts, device)
    completions = [decode_response(models.tokenizer, g) for g in gens]
    t_rollout = time.monotonic() - t0

    # ---- 2. score (None = excluded from the update, never a 0)
    t1 = time.monotonic()
    scores, extras, logged = score(reward_fn, b_texts, completions, row_columns(b_rows))
    t_reward = time.monotonic() - t1
    b = Rollout.from_scores(gens, scores, device)

    # ---- 3. old log-probs, values, reference log-probs
    t2 = time.monotonic()
    evaluate_rollout(cfg, models, b, device)

    # ---- 4. rewards per token, GAE, whitening
    raw_adv_mean = compute_advantages(cfg, b)

    # ---- 5. PPO update: epochs x mini-batches, gradients accumulated over micro-batches
    stats = ppo_update(step, cfg, models, b, actor_opt, critic_opt, device)
    t_update = time.monotonic() - t2

    # ---- 6. diagnostics
    metrics: dict[str, Any] = reward_summary(scores, extras, logged)
    metrics.update(generation_summary(gens))
    metrics.update(update_metrics(stats, b, raw_adv_mean, actor_opt, critic_opt))
    metrics.update(
        {
            "data/epoch": sampler.epoch,
            "time/rollout_s": t_rollout,
            "time/reward_s": t_reward,
            "time/update_s": t_update,
            "time/step_s": time.monotonic() - t0,
            "perf/tokens_per_s": sum(len(g.response) for g in gens) / max(t_rollout, 1e-9),
        }
    )
    if b.kl is not None:
        seq_kl = core.masked_sum(b.kl, b.mask, dim=1)
        metrics["kl/ref"] = core.masked_mean(seq_kl, (b.mask.sum(1) > 0).float()).item()
        metrics["kl/coef"] = cfg.kl_coef
    return metrics


def rollout(
    cfg: PPOConfig, models: Models, b_texts: list[str], device: torch.device
) -> list[Generated]:
    """Phase 1: one sampled answer per prompt text from the current policy (eval mode: no
    dropout while sampling)."""
    with eval_mode(models.actor):
        return generate(
            models.actor,
            models.tokenizer,
            b_texts,
            max_new_tokens=cfg.max_response_len,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            batch_size=cfg.rollout_batch_size,
            device=device,
            amp=cfg.amp,
        )


@dataclass
class Rollout:
    """The whole rollout batch (the `b_` tensors of CleanRL), B sequences x T response
    tokens: filled phase by phase, then read in mini-batches by the update."""

    gens: list[Generated]
    scores: torch.Tensor  # [B] the reward of each sequence (0.0 where excluded)
    mask: torch.Tensor  # [B, T] response tokens of sequences that have a reward
    old_logp: torch.Tensor  # [B, T] log-probs under the weights that sampled (phase 3)
    values: torch.Tensor  # [B, T] the critic's values before the update (phase 3)
    ref_logp: torch.Tensor  # [B, T] reference log-probs (phase 3; zeros without KL)
    kl: torch.Tensor | None = None  # [B, T] per-token KL estimate (phase 4; None: no KL)
    advantages: torch.Tensor | None = None  # [B, T] (phase 4)
    returns: torch.Tensor | None = None  # [B, T] (phase 4)

    @classmethod
    def from_scores(
        cls, gens: list[Generated], scores: list[float | None], device: torch.device
    ) -> Rollout:
        """Scores as a tensor; an excluded sample (None) gets a mask of zeros, so that it
        adds nothing to any loss, advantage statistic or diagnostic."""
        B = len(gens)
        T = max(len(g.response) for g in gens)
        b_valid = torch.tensor([s is not None for s in scores], dtype=torch.float32, device=device)
        b_scores = torch.tensor([s or 0.0 for s in scores], dtype=torch.float32, device=device)
        b_mask = torch.zeros(B, T, device=device)
        for i, g in enumerate(gens):
            b_mask[i, : len(g.response)] = 1.0
        b_mask = b_mask * b_valid[:, None]
        return cls(
            gens=gens,
            scores=b_scores,
            mask=b_mask,
            old_logp=torch.zeros(B, T, device=device),
            values=torch.zeros(B, T, device=device),
            ref_logp=torch.zeros(B, T, device=device),
        )

    @property
    def size(self) -> int:
        return len(self.gens)


def micro_batch(models: Models, b: Rollout, idx: list[int], device: torch.device) -> Batch:
    """Sequences `idx` of the rollout laid out for a forward pass (modeling.collate)."""
    return collate(
        [b.gens[i].query for i in idx],
        [b.gens[i].response for i in idx],
        models.tokenizer.pad_token_id,
        device,
    )


def values_of(models: Models, batch: Batch, hidden: torch.Tensor | None) -> torch.Tensor:
    """The value head on the critic's hidden states: the actor's own (shared critic, read
    from the actor's forward pass, so no second pass) or a separate backbone's."""
    if models.critic is None:  # shared: the value head reads the actor's hidden states
        assert hidden is not None
        return models.value_head(hidden)
    _, critic_hidden = response_forward(models.critic, batch, tap=models.critic_tap)
    assert critic_hidden is not None
    return models.value_head(critic_hidden)


def evaluate_rollout(cfg: PPOConfig, models: Models, b: Rollout, device: torch.device) -> None:
    """Phase 3, no grad and in eval mode: old log-probs and values under the weights that
    sampled, and reference log-probs for the KL penalty, all at the sampling temperature."""
    actor, temperature = models.actor, cfg.temperature
    critic, value_head = models.critic, models.value_head
    with torch.no_grad(), eval_mode(actor, critic, value_head), autocast(cfg.amp, device):
        for start in range(0, b.size, cfg.micro_batch_size):
            idx = list(range(start, min(b.size, start + cfg.micro_batch_size)))
            batch = micro_batch(models, b, idx, device)
            r = batch.response_len
            logits, hidden = response_forward(actor, batch, tap=models.actor_tap)
            b.old_logp[idx, :r] = core.logprobs_from_logits(
                logits.float() / temperature, batch.response_ids
            )
            b.values[idx, :r] = values_of(models, batch, hidden).float()
            if cfg.kl_coef > 0:
                if models.ref is not None:
                    ref_logits, _ = response_forward(models.ref, batch)
                else:  # LoRA: the base model is the actor with its adapters switched off
                    with actor.disable_adapter():
                        ref_logits, _ = response_forward(actor, batch, tap=models.actor_tap)
                b.ref_logp[idx, :r] = core.logprobs_from_logits(
                    ref_logits.float() / temperature, batch.response_ids
                )


def compute_advantages(cfg: PPOConfig, b: Rollout) -> float:
    """Phase 4: the reward on each sequence's last token minus the per-token KL penalty,
    token-level GAE, then (`norm_adv`) whitening. Returns the advantages' mean before
    whitening (whitening makes it 0, so it is logged from here)."""
    b.kl = core.kl_estimate(b.old_logp, b.ref_logp, cfg.kl_estimator) if cfg.kl_coef > 0 else None
    b_rewards = core.token_rewards(b.scores, b.mask, b.kl, cfg.kl_coef)
    b.advantages, b.returns = core.compute_gae(
        b_rewards, b.values, b.mask, cfg.gamma, cfg.gae_lambda
    )
    raw_adv_mean = core.masked_mean(b.advantages, b.mask).item()
    if cfg.norm_adv:
        b.advantages = core.masked_whiten(b.advantages, b.mask)
    return raw_adv_mean


@dataclass
class UpdateStats:
    """What the update did, for the step's diagnostics."""

    actor_updated: bool
    sums: Counter[str] = field(default_factory=Counter)  # token-weighted sums of diagnostics
    tokens_seen: float = 0.0
    grad_norms: dict[str, list[float]] = field(default_factory=lambda: {"actor": [], "critic": []})
    epochs_run: int = 0
    minibatches: int = 0
    # The current epoch's token-weighted approx KL sum and tokens (the early stop reads them).
    epoch_kl: float = 0.0
    epoch_tokens: float = 0.0


def ppo_update(
    step: int,
    cfg: PPOConfig,
    models: Models,
    b: Rollout,
    actor_opt: torch.optim.Optimizer,
    critic_opt: torch.optim.Optimizer,
    device: torch.device,
) -> UpdateStats:
    """Phase 5: `update_epochs` passes over shuffled mini-batches (one optimiser step each),
    stopped early when an epoch's mean approx KL exceeds `target_kl`. The actor is only
    updated after `critic_warmup_steps` (until then, only the critic learns)."""
    stats = UpdateStats(actor_updated=step > cfg.critic_warmup_steps)
    actor, critic, value_head = models.actor, models.critic, models.value_head
    actor.train()
    value_head.train()
    if critic is not None:
        critic.train()
    for _epoch in range(cfg.update_epochs):
        stats.epoch_kl, stats.epoch_tokens = 0.0, 0.0
        order = torch.randperm(b.size) if cfg.shuffle_minibatches else torch.arange(b.size)
        for mb in order.split(cfg.mini_batch_size):
            minibatch_update(cfg, models, b, mb, stats, actor_opt, critic_opt, device)
        stats.epochs_run += 1
        epoch_kl, epoch_tokens = stats.epoch_kl, stats.epoch_tokens
        if cfg.target_kl is not None and epoch_tokens and epoch_kl / epoch_tokens > cfg.target_kl:
            break
    actor.eval()
    value_head.eval()
    if critic is not None:
        critic.eval()
    return stats


def minibatch_update(
    cfg: PPOConfig,
    models: Models,
    b: Rollout,
    mb: torch.Tensor,
    stats: UpdateStats,
    actor_opt: torch.optim.Optimizer,
    critic_opt: torch.optim.Optimizer,
    device: torch.device,
) -> None:
    """One optimiser step on mini-batch `mb`: gradients accumulated over its micro-batches
    (losses are already normalised by the whole mini-batch, so they add up), clipped to
    `max_grad_norm`. A mini-batch whose every sample was excluded is skipped: no step."""
    b_mask = b.mask
    mb_tokens = b_mask[mb].sum().item()
    mb_seqs = (b_mask[mb].sum(1) > 0).sum().item()
    if mb_tokens == 0:
        return  # every sample of this mini-batch was excluded
    stats.minibatches += 1
    actor_opt.zero_grad(set_to_none=True)
    critic_opt.zero_grad(set_to_none=True)
    for micro in mb.split(cfg.micro_batch_size):
        idx = micro.tolist()
        if b_mask[idx].sum() == 0:
            continue
        micro_batch_backward(cfg, models, b, idx, mb_tokens, mb_seqs, stats, device)
    if stats.actor_updated:
        stats.grad_norms["actor"].append(
            float(torch.nn.utils.clip_grad_norm_(models.actor_params(), cfg.max_grad_norm))
        )
        actor_opt.step()
    stats.grad_norms["critic"].append(
        float(torch.nn.utils.clip_grad_norm_(models.critic_params(), cfg.max_grad_norm))
    )
    critic_opt.step()


def micro_batch_backward(
    cfg: PPOConfig,
    models: Models,
    b: Rollout,
    idx: list[int],
    mb_tokens: float,
    mb_seqs: float,
    stats: UpdateStats,
    device: torch.device,
) -> None:
    """Forward pass under the current weights, the three losses (clipped policy loss,
    clipped value loss, entropy bonus), backward, and the token-weighted diagnostics."""
    batch = micro_batch(models, b, idx, device)
    r = batch.response_len
    mask = b.mask[idx][:, :r]
    assert b.advantages is not None and b.returns is not None
    with autocast(cfg.amp, device):
        logits, hidden = response_forward(models.actor, batch, tap=models.actor_tap)
        new_values = values_of(models, batch, hidden).float()
    logits = logits.float() / cfg.temperature
    new_logp = core.logprobs_from_logits(logits, batch.response_ids)
    entropy = core.entropy_from_logits(logits)
    agg = {"total_tokens": mb_tokens, "total_seqs": mb_seqs}
    pg_loss, pg_stats = core.policy_loss(
        new_logp,
        b.old_logp[idx, :r],
        b.advantages[idx, :r],
        mask,
        cfg.clip_coef,
        cfg.loss_agg,
        **agg,
    )
    ent_loss = core.aggregate(entropy, mask, cfg.loss_agg, **agg)
    v_loss, v_stats = core.value_loss(
        new_values,
        b.values[idx, :r],
        b.returns[idx, :r],
        mask,
        cfg.vf_clip,
        cfg.clip_vloss,
        cfg.loss_agg,
        **agg,
    )
    loss = cfg.vf_coef * v_loss
    if stats.actor_updated:
        loss = loss + pg_loss - cfg.ent_coef * ent_loss
    loss.backward()

    n = mask.sum().item()
    stats.tokens_seen += n
    stats.epoch_tokens += n
    stats.epoch_kl += pg_stats["approx_kl"].item() * n
    sums = stats.sums
    sums["policy/approx_kl"] += pg_stats["approx_kl"].item() * n
    sums["policy/clipfrac"] += pg_stats["clipfrac"].item() * n
    sums["policy/entropy"] += core.masked_mean(entropy.detach(), mask).item() * n
    sums["value/clipfrac"] += v_stats["clipfrac"].item() * n
    # Micro-batch losses are already divided by the mini-batch's size: they add up.
    sums["policy/loss"] += pg_loss.item()
    sums["value/loss"] += v_loss.item()


def update_metrics(
    stats: UpdateStats,
    b: Rollout,
    raw_adv_mean: float,
    actor_opt: torch.optim.Optimizer,
    critic_opt: torch.optim.Optimizer,
) -> dict[str, Any]:
    """Phase 6 for the update: token-weighted means of the policy and value diagnostics,
    per-mini-batch means of the losses, explained variance, learning rates, grad norms."""
    assert b.returns is not None
    tokens = max(stats.tokens_seen, 1.0)
    n_minibatches = max(1, stats.minibatches)
    sums = stats.sums
    return {
        "policy/approx_kl": sums["policy/approx_kl"] / tokens,
        "policy/clipfrac": sums["policy/clipfrac"] / tokens,
        "policy/entropy": sums["policy/entropy"] / tokens,
        "policy/loss": sums["policy/loss"] / n_minibatches,
        "value/loss": sums["value/loss"] / n_minibatches,
        "value/clipfrac": sums["value/clipfrac"] / tokens,
        "value/explained_variance": core.explained_variance(b.values, b.returns, b.mask),
        "value/mean": core.masked_mean(b.values, b.mask).item(),
        "returns/mean": core.masked_mean(b.returns, b.mask).item(),
        "advantages/mean_raw": raw_adv_mean,
        "optim/actor_lr": actor_opt.param_groups[0]["lr"],
        "optim/critic_lr": critic_opt.param_groups[0]["lr"],
        "optim/actor_grad_norm": _mean(stats.grad_norms["actor"]),
        "optim/critic_grad_norm": _mean(stats.grad_norms["critic"]),
        "optim/epochs": stats.epochs_run,
        "optim/actor_updated": stats.actor_updated,
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
