"""PPO for a causal language model on one machine (CPU or one GPU).

One step, as in CleanRL's ppo.py but for text:

1. rollout   sample answers to a batch of prompts from the current policy;
2. score     call the reward function; a None excludes that sample from the update;
3. evaluate  old log-probs, values and (with a KL penalty) reference log-probs, no grad;
4. GAE       reward on the last token (minus the KL penalty per token), token-level GAE,
             advantage whitening;
5. update    `update_epochs` passes over shuffled mini-batches, gradients accumulated over
             micro-batches: clipped policy loss, clipped value loss, entropy bonus;
6. log       approx KL, clip fractions, explained variance, entropy, rewards, outcomes.

Prefixes: `b_` the whole rollout batch (B sequences x T response tokens), `mb_` a
mini-batch, `micro` a micro-batch, `new_` recomputed under the current weights.
The actor is any local causal LM (the looped PLT model included); the critic is a value
head on its own backbone or on the actor's (`critic_mode`).
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from asmopt.train import ppo_core as core
from asmopt.train.checkpoint import (
    load_trainable_state,
    rng_state,
    save_checkpoint,
    set_rng_state,
    trainable_state,
)
from asmopt.train.config import PPOConfig, config_to_dict, config_to_yaml
from asmopt.train.data import Row, RowSampler, load_rows, render_prompt
from asmopt.train.metrics_log import MetricsLog
from asmopt.train.modeling import (
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
from asmopt.train.run import begin_run
from asmopt.train.tiny import resolve_model

Echo = Callable[[str], None]


def echo_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- setup pieces


@dataclass
class Models:
    tokenizer: Any
    actor: Any
    value_head: ValueHead
    critic: Any  # a separate critic backbone, or None when the value head sits on the actor
    ref: Any  # a frozen reference model, or None (no KL, or LoRA: adapters switched off)
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
            seed=cfg.seed,
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
            raise ValueError(
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
    rows: list[Row], tokenizer: Any, cfg: PPOConfig, what: str, echo: Echo
) -> tuple[list[Row], list[str]]:
    """Rows whose rendered prompt fits `max_prompt_len`, with those rendered prompts."""
    kept: list[Row] = []
    texts: list[str] = []
    for i, row in enumerate(rows):
        text = render_prompt(tokenizer, row["prompt"])
        n = len(tokenizer(text)["input_ids"])
        if n > cfg.max_prompt_len:
            if cfg.long_prompts == "error":
                raise ValueError(
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
        raise ValueError(f"{what}: no row has a prompt of at most {cfg.max_prompt_len} tokens")
    return kept, texts


def check_edit_format(cfg: PPOConfig) -> None:
    """Suite prompts and the execution reward must agree on what an answer is: a `diff`
    template asks for diffs, which the reward must apply to the baseline (and the other
    way round), or every answer would be an extraction error."""
    if cfg.reward != "execution" or not cfg.train_data.startswith("suite:"):
        return
    from asmopt.policies.prompts import load_template

    asked = load_template(cfg.prompt_template).edit_format
    read = cfg.reward_options.get("edit_format", "assembly")
    if asked != read:
        raise ValueError(
            f"prompt_template {cfg.prompt_template!r} asks for {asked} answers but the "
            f"execution reward reads {read} answers; set reward_options.edit_format: {asked}"
        )


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


def generation_summary(gens: list[Any]) -> dict[str, float]:
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


def train_ppo(
    cfg: PPOConfig,
    reward_fn: RewardFn | None = None,
    *,
    progress: bool = True,
    echo: Echo = echo_stderr,
) -> dict[str, Any]:
    """Runs (or resumes) PPO as `cfg` says; returns a summary. `reward_fn` overrides
    `cfg.reward` (for rewards that are objects built by the caller)."""
    cfg.validate()
    check_edit_format(cfg)
    start = begin_run(cfg)
    device, out, resume_from, ckpt = start.device, start.out, start.resume_from, start.ckpt
    echo(f"PPO config:\n{config_to_yaml(cfg).rstrip()}")

    # ---- models, data, reward
    models = build_models(cfg, device, echo)
    tokenizer = models.tokenizer
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
    reward_options = dict(cfg.reward_options)
    if cfg.allow_unfit and cfg.reward == "execution":
        # Rows of unfit programs were allowed in: the reward must score them too.
        reward_options.setdefault("allow_unfit", True)
    reward_fn = reward_fn if reward_fn is not None else make_reward(cfg.reward, reward_options)
    sampler = RowSampler(len(train_rows), cfg.seed)
    total_steps = cfg.total_steps or math.ceil(
        cfg.total_epochs * len(train_rows) / cfg.prompts_per_step
    )
    B = cfg.rollout_size
    echo(
        f"{len(train_rows)} training rows, {len(val_rows)} validation rows; {total_steps} steps "
        f"of {cfg.prompts_per_step} prompts x {cfg.samples_per_prompt} samples = {B} sequences, "
        f"{B // cfg.mini_batch_size} mini-batches x {cfg.update_epochs} epochs, "
        f"{cfg.mini_batch_size // cfg.micro_batch_size} micro-batches each; device {device}"
    )

    # ---- optimisers
    actor_params = models.actor_params()
    critic_params = models.critic_params()
    actor_opt = make_optimizer(actor_params, cfg.actor_lr, cfg)
    critic_opt = make_optimizer(critic_params, cfg.critic_lr, cfg)
    actor_sched = make_scheduler(actor_opt, cfg.lr_schedule, cfg.warmup_steps, total_steps)
    critic_sched = make_scheduler(critic_opt, cfg.lr_schedule, cfg.warmup_steps, total_steps)

    # ---- resume
    step = 0
    if ckpt is not None:
        weights = ckpt["weights"]
        load_trainable_state(models.actor, weights["actor"], "actor")
        models.value_head.load_state_dict(weights["value_head"])
        if models.critic is not None:
            load_trainable_state(models.critic, weights["critic"], "critic")
        actor_opt.load_state_dict(ckpt["optimizers"]["actor"])
        critic_opt.load_state_dict(ckpt["optimizers"]["critic"])
        actor_sched.load_state_dict(ckpt["schedulers"]["actor"])
        critic_sched.load_state_dict(ckpt["schedulers"]["critic"])
        sampler.load_state_dict(ckpt["data"])
        set_rng_state(ckpt["rng"])
        step = int(ckpt["step"])
        echo(f"resumed from {resume_from} at step {step}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(config_to_yaml(cfg), encoding="utf-8")
    log = MetricsLog(
        out, resume_step=step if ckpt is not None else None, tensorboard=cfg.tensorboard
    )

    def checkpoint(at: int) -> None:
        weights = {
            "actor": trainable_state(models.actor),
            "value_head": models.value_head.state_dict(),
        }
        if models.critic is not None:
            weights["critic"] = trainable_state(models.critic)
        state = {
            "kind": "ppo",
            "step": at,
            "config": config_to_dict(cfg),
            "weights": weights,
            "optimizers": {"actor": actor_opt.state_dict(), "critic": critic_opt.state_dict()},
            "schedulers": {"actor": actor_sched.state_dict(), "critic": critic_sched.state_dict()},
            "data": sampler.state_dict(),
            "rng": rng_state(),
        }
        save_checkpoint(out, at, state, config_yaml=config_to_yaml(cfg), keep=cfg.keep_checkpoints)

    summary: dict[str, Any] = {"output_dir": str(out), "total_steps": total_steps}
    if ckpt is None and cfg.eval_at_start and val_rows:
        val = validate(models, val_rows, val_texts, reward_fn, cfg, device)
        log.write(0, "val", val)
        summary["val_start"] = val
        echo(f"step 0 validation: reward {val['reward/mean']}")

    from tqdm.auto import tqdm

    bar = tqdm(total=total_steps, initial=step, disable=not progress, desc="ppo", unit="step")
    try:
        while step < total_steps:
            step += 1
            metrics = ppo_step(
                step,
                cfg,
                models,
                train_rows,
                train_texts,
                sampler,
                reward_fn,
                actor_opt,
                critic_opt,
                device,
            )
            step_schedulers(actor_sched, critic_sched)
            log.write(step, "train", metrics)
            summary.setdefault("first_train", metrics)
            summary["last_train"] = metrics
            bar.update(1)
            bar.set_postfix(reward=f"{metrics['reward/mean'] or 0:.3f}")
            last = step == total_steps
            if val_rows and ((cfg.eval_every and step % cfg.eval_every == 0) or last):
                val = validate(models, val_rows, val_texts, reward_fn, cfg, device)
                log.write(step, "val", val)
                summary["val_end"] = val
            if (cfg.save_every and step % cfg.save_every == 0) or last:
                checkpoint(step)
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
    actor.save_pretrained(path)
    models.tokenizer.save_pretrained(path)
    return path


# --------------------------------------------------------------------------- one PPO step


def ppo_step(
    step: int,
    cfg: PPOConfig,
    models: Models,
    rows: list[Row],
    texts: list[str],
    sampler: RowSampler,
    reward_fn: RewardFn,
    actor_opt: torch.optim.Optimizer,
    critic_opt: torch.optim.Optimizer,
    device: torch.device,
) -> dict[str, Any]:
    actor, critic, value_head, tokenizer = (
        models.actor,
        models.critic,
        models.value_head,
        models.tokenizer,
    )
    temperature = cfg.temperature
    t0 = time.monotonic()

    # ---- 1. rollout
    picked = [i for i in sampler.next(cfg.prompts_per_step) for _ in range(cfg.samples_per_prompt)]
    b_rows = [rows[i] for i in picked]
    b_texts = [texts[i] for i in picked]
    with eval_mode(actor):
        gens = generate(
            actor,
            tokenizer,
            b_texts,
            max_new_tokens=cfg.max_response_len,
            temperature=temperature,
            top_p=cfg.top_p,
            batch_size=cfg.rollout_batch_size,
            device=device,
            amp=cfg.amp,
        )
    completions = [decode_response(tokenizer, g) for g in gens]
    t_rollout = time.monotonic() - t0

    # ---- 2. score (None = excluded from the update, never a 0)
    t1 = time.monotonic()
    scores, extras, logged = score(reward_fn, b_texts, completions, row_columns(b_rows))
    t_reward = time.monotonic() - t1
    B = len(gens)
    T = max(len(g.response) for g in gens)
    b_valid = torch.tensor([s is not None for s in scores], dtype=torch.float32, device=device)
    b_scores = torch.tensor([s or 0.0 for s in scores], dtype=torch.float32, device=device)
    b_mask = torch.zeros(B, T, device=device)
    for i, g in enumerate(gens):
        b_mask[i, : len(g.response)] = 1.0
    b_mask = b_mask * b_valid[:, None]

    def micro_batch(idx: list[int]) -> Any:
        return collate(
            [gens[i].query for i in idx],
            [gens[i].response for i in idx],
            tokenizer.pad_token_id,
            device,
        )

    def values_of(batch: Any, hidden: torch.Tensor | None) -> torch.Tensor:
        if critic is None:  # shared: the value head reads the actor's hidden states
            assert hidden is not None
            return value_head(hidden)
        _, critic_hidden = response_forward(critic, batch, tap=models.critic_tap)
        assert critic_hidden is not None
        return value_head(critic_hidden)

    # ---- 3. old log-probs, values, reference log-probs
    t2 = time.monotonic()
    b_old_logp = torch.zeros(B, T, device=device)
    b_values = torch.zeros(B, T, device=device)
    b_ref_logp = torch.zeros(B, T, device=device)
    with torch.no_grad(), eval_mode(actor, critic, value_head), autocast(cfg.amp, device):
        for start in range(0, B, cfg.micro_batch_size):
            idx = list(range(start, min(B, start + cfg.micro_batch_size)))
            batch = micro_batch(idx)
            r = batch.response_len
            logits, hidden = response_forward(actor, batch, tap=models.actor_tap)
            b_old_logp[idx, :r] = core.logprobs_from_logits(
                logits.float() / temperature, batch.response_ids
            )
            b_values[idx, :r] = values_of(batch, hidden).float()
            if cfg.kl_coef > 0:
                if models.ref is not None:
                    ref_logits, _ = response_forward(models.ref, batch)
                else:  # LoRA: the base model is the actor with its adapters switched off
                    with actor.disable_adapter():
                        ref_logits, _ = response_forward(actor, batch, tap=models.actor_tap)
                b_ref_logp[idx, :r] = core.logprobs_from_logits(
                    ref_logits.float() / temperature, batch.response_ids
                )

    # ---- 4. rewards per token, GAE, whitening
    b_kl = core.kl_estimate(b_old_logp, b_ref_logp, cfg.kl_estimator) if cfg.kl_coef > 0 else None
    b_rewards = core.token_rewards(b_scores, b_mask, b_kl, cfg.kl_coef)
    b_advantages, b_returns = core.compute_gae(
        b_rewards, b_values, b_mask, cfg.gamma, cfg.gae_lambda
    )
    raw_adv_mean = core.masked_mean(b_advantages, b_mask).item()
    if cfg.norm_adv:
        b_advantages = core.masked_whiten(b_advantages, b_mask)

    # ---- 5. PPO update: epochs x mini-batches, gradients accumulated over micro-batches
    update_actor = step > cfg.critic_warmup_steps
    sums: Counter[str] = Counter()  # token-weighted sums of diagnostics
    tokens_seen = 0.0
    grad_norms: dict[str, list[float]] = {"actor": [], "critic": []}
    epochs_run = 0
    minibatches = 0
    actor.train()
    value_head.train()
    if critic is not None:
        critic.train()
    for _epoch in range(cfg.update_epochs):
        epoch_kl, epoch_tokens = 0.0, 0.0
        order = torch.randperm(B) if cfg.shuffle_minibatches else torch.arange(B)
        for mb in order.split(cfg.mini_batch_size):
            mb_tokens = b_mask[mb].sum().item()
            mb_seqs = (b_mask[mb].sum(1) > 0).sum().item()
            if mb_tokens == 0:
                continue  # every sample of this mini-batch was excluded
            minibatches += 1
            actor_opt.zero_grad(set_to_none=True)
            critic_opt.zero_grad(set_to_none=True)
            for micro in mb.split(cfg.micro_batch_size):
                idx = micro.tolist()
                mask_rows = b_mask[idx]
                if mask_rows.sum() == 0:
                    continue
                batch = micro_batch(idx)
                r = batch.response_len
                mask = mask_rows[:, :r]
                with autocast(cfg.amp, device):
                    logits, hidden = response_forward(actor, batch, tap=models.actor_tap)
                    new_values = values_of(batch, hidden).float()
                logits = logits.float() / temperature
                new_logp = core.logprobs_from_logits(logits, batch.response_ids)
                entropy = core.entropy_from_logits(logits)
                agg = {"total_tokens": mb_tokens, "total_seqs": mb_seqs}
                pg_loss, pg_stats = core.policy_loss(
                    new_logp,
                    b_old_logp[idx, :r],
                    b_advantages[idx, :r],
                    mask,
                    cfg.clip_coef,
                    cfg.loss_agg,
                    **agg,
                )
                ent_loss = core.aggregate(entropy, mask, cfg.loss_agg, **agg)
                v_loss, v_stats = core.value_loss(
                    new_values,
                    b_values[idx, :r],
                    b_returns[idx, :r],
                    mask,
                    cfg.vf_clip,
                    cfg.clip_vloss,
                    cfg.loss_agg,
                    **agg,
                )
                loss = cfg.vf_coef * v_loss
                if update_actor:
                    loss = loss + pg_loss - cfg.ent_coef * ent_loss
                loss.backward()

                n = mask.sum().item()
                tokens_seen += n
                epoch_tokens += n
                epoch_kl += pg_stats["approx_kl"].item() * n
                sums["policy/approx_kl"] += pg_stats["approx_kl"].item() * n
                sums["policy/clipfrac"] += pg_stats["clipfrac"].item() * n
                sums["policy/entropy"] += core.masked_mean(entropy.detach(), mask).item() * n
                sums["value/clipfrac"] += v_stats["clipfrac"].item() * n
                # Micro-batch losses are already divided by the mini-batch's size: they add up.
                sums["policy/loss"] += pg_loss.item()
                sums["value/loss"] += v_loss.item()
            if update_actor:
                grad_norms["actor"].append(
                    float(torch.nn.utils.clip_grad_norm_(models.actor_params(), cfg.max_grad_norm))
                )
                actor_opt.step()
            grad_norms["critic"].append(
                float(torch.nn.utils.clip_grad_norm_(models.critic_params(), cfg.max_grad_norm))
            )
            critic_opt.step()
        epochs_run += 1
        if cfg.target_kl is not None and epoch_tokens and epoch_kl / epoch_tokens > cfg.target_kl:
            break
    actor.eval()
    value_head.eval()
    if critic is not None:
        critic.eval()
    t_update = time.monotonic() - t2

    # ---- 6. diagnostics
    n_minibatches = max(1, minibatches)
    metrics: dict[str, Any] = reward_summary(scores, extras, logged)
    metrics.update(generation_summary(gens))
    metrics.update(
        {
            "policy/approx_kl": sums["policy/approx_kl"] / max(tokens_seen, 1.0),
            "policy/clipfrac": sums["policy/clipfrac"] / max(tokens_seen, 1.0),
            "policy/entropy": sums["policy/entropy"] / max(tokens_seen, 1.0),
            "policy/loss": sums["policy/loss"] / n_minibatches,
            "value/loss": sums["value/loss"] / n_minibatches,
            "value/clipfrac": sums["value/clipfrac"] / max(tokens_seen, 1.0),
            "value/explained_variance": core.explained_variance(b_values, b_returns, b_mask),
            "value/mean": core.masked_mean(b_values, b_mask).item(),
            "returns/mean": core.masked_mean(b_returns, b_mask).item(),
            "advantages/mean_raw": raw_adv_mean,
            "optim/actor_lr": actor_opt.param_groups[0]["lr"],
            "optim/critic_lr": critic_opt.param_groups[0]["lr"],
            "optim/actor_grad_norm": _mean(grad_norms["actor"]),
            "optim/critic_grad_norm": _mean(grad_norms["critic"]),
            "optim/epochs": epochs_run,
            "optim/actor_updated": update_actor,
            "data/epoch": sampler.epoch,
            "time/rollout_s": t_rollout,
            "time/reward_s": t_reward,
            "time/update_s": t_update,
            "time/step_s": time.monotonic() - t0,
            "perf/tokens_per_s": sum(len(g.response) for g in gens) / max(t_rollout, 1e-9),
        }
    )
    if b_kl is not None:
        seq_kl = core.masked_sum(b_kl, b_mask, dim=1)
        metrics["kl/ref"] = core.masked_mean(seq_kl, (b_mask.sum(1) > 0).float()).item()
        metrics["kl/coef"] = cfg.kl_coef
    return metrics


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
