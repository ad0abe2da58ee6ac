"""Supervised warm start: next-token cross-entropy on the completion of (prompt, completion)
rows, so that a small model first learns to emit well-formed assembly before PPO asks it to
emit fast assembly (PPO cannot learn from a policy whose every answer fails to build).

The prompt is rendered and tokenized exactly as in PPO rollouts and in the local back-end,
and the completion is tokenized on its own and followed by end-of-sequence: the model is
trained on the token boundary it will see when it generates. The loss is the mean over all
completion tokens of a batch (prompt tokens are context only), independent of the
micro-batch size used to accumulate it.
"""

from __future__ import annotations

import math
import time
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
from asmopt.train.config import SFTConfig, config_to_dict, config_to_yaml
from asmopt.train.data import Row, RowSampler, load_rows, render_prompt
from asmopt.train.metrics_log import MetricsLog
from asmopt.train.modeling import (
    autocast,
    base_model,
    collate,
    count_parameters,
    eval_mode,
    load_causal_lm,
    load_tokenizer,
    prepare_trainable,
    response_forward,
)
from asmopt.train.optim import make_optimizer, make_scheduler
from asmopt.train.ppo import Echo, echo_stderr
from asmopt.train.run import begin_run
from asmopt.train.tiny import resolve_model

Example = tuple[list[int], list[int]]  # (prompt ids, completion ids)


def tokenize_rows(
    rows: list[Row], tokenizer: Any, cfg: SFTConfig, what: str, echo: Echo
) -> list[Example]:
    """(prompt ids, completion ids [+ eos]) for rows that fit `max_seq_len`."""
    out: list[Example] = []
    for i, row in enumerate(rows):
        prompt = tokenizer(render_prompt(tokenizer, row["prompt"]))["input_ids"]
        completion = tokenizer(row["completion"], add_special_tokens=False)["input_ids"]
        if cfg.append_eos:
            completion = [*completion, tokenizer.eos_token_id]
        n = len(prompt) + len(completion)
        if n > cfg.max_seq_len:
            if cfg.long_examples == "error":
                raise ValueError(f"{what} row {i}: {n} tokens > max_seq_len {cfg.max_seq_len}")
            continue
        out.append((prompt, completion))
    if len(out) < len(rows):
        echo(
            f"{what}: skipped {len(rows) - len(out)} of {len(rows)} rows longer than "
            f"{cfg.max_seq_len} tokens"
        )
    if not out:
        raise ValueError(f"{what}: no row fits in max_seq_len {cfg.max_seq_len}")
    return out


def batch_loss(
    model: Any,
    examples: list[Example],
    pad_id: int,
    device: torch.device,
    amp: str,
    total_tokens: float,
) -> tuple[torch.Tensor, float, float]:
    """(summed cross-entropy / total_tokens, summed token loss, correct next-token guesses)."""
    batch = collate([e[0] for e in examples], [e[1] for e in examples], pad_id, device)
    with autocast(amp, device):
        logits, _ = response_forward(model, batch)
    logp = core.logprobs_from_logits(logits, batch.response_ids)
    mask = batch.response_mask
    loss_sum = -core.masked_sum(logp, mask)
    correct = core.masked_sum((logits.argmax(-1) == batch.response_ids).float(), mask)
    return loss_sum / total_tokens, loss_sum.item(), correct.item()


@torch.no_grad()
def evaluate_loss(
    model: Any, examples: list[Example], cfg: SFTConfig, pad_id: int, device: torch.device
) -> dict[str, float]:
    total = float(sum(len(e[1]) for e in examples))
    loss_sum = correct = 0.0
    with eval_mode(model):
        for start in range(0, len(examples), cfg.micro_batch_size):
            chunk = examples[start : start + cfg.micro_batch_size]
            _, part, right = batch_loss(model, chunk, pad_id, device, cfg.amp, total)
            loss_sum += part
            correct += right
    return {"loss": loss_sum / total, "token_accuracy": correct / total, "rows": len(examples)}


def train_sft(cfg: SFTConfig, *, progress: bool = True, echo: Echo = echo_stderr) -> dict[str, Any]:
    """Runs (or resumes) supervised fine-tuning as `cfg` says; returns a summary."""
    cfg.validate()
    start = begin_run(cfg)
    device, out, resume_from, ckpt = start.device, start.out, start.resume_from, start.ckpt
    echo(f"SFT config:\n{config_to_yaml(cfg).rstrip()}")

    # ---- model and data
    model_path = resolve_model(
        cfg.model, out, overrides=cfg.model_overrides, tokenizer_dir=cfg.tokenizer, seed=cfg.seed
    )
    tokenizer = load_tokenizer(model_path)
    model = prepare_trainable(load_causal_lm(model_path, cfg.dtype, device), cfg)
    n_train, n_total = count_parameters(model)
    echo(
        f"model {type(base_model(model)).__name__} from {model_path}: {n_train:,} trainable "
        f"of {n_total:,} parameters; device {device}"
    )
    data_args: dict[str, Any] = {
        "suite": cfg.suite,
        "template": cfg.prompt_template,
        "target_flags": cfg.target_flags,
        "diff_context": cfg.target_diff_context,
        "need_completion": True,
        "allow_unfit": cfg.allow_unfit,
    }
    train = tokenize_rows(
        load_rows(cfg.train_data, **data_args), tokenizer, cfg, "train_data", echo
    )
    val: list[Example] = []
    if cfg.val_data:
        val = tokenize_rows(load_rows(cfg.val_data, **data_args), tokenizer, cfg, "val_data", echo)
        if cfg.val_max_rows:
            val = val[: cfg.val_max_rows]
    sampler = RowSampler(len(train), cfg.seed)
    total_steps = cfg.total_steps or math.ceil(cfg.total_epochs * len(train) / cfg.batch_size)
    echo(
        f"{len(train)} training rows, {len(val)} validation rows; {total_steps} steps of "
        f"{cfg.batch_size} rows ({cfg.batch_size // cfg.micro_batch_size} micro-batches)"
    )
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = make_optimizer(params, cfg.lr, cfg)
    scheduler = make_scheduler(optimizer, cfg.lr_schedule, cfg.warmup_steps, total_steps)

    step = 0
    if ckpt is not None:
        load_trainable_state(model, ckpt["weights"]["model"], "model")
        optimizer.load_state_dict(ckpt["optimizers"]["model"])
        scheduler.load_state_dict(ckpt["schedulers"]["model"])
        sampler.load_state_dict(ckpt["data"])
        set_rng_state(ckpt["rng"])
        step = int(ckpt["step"])
        echo(f"resumed from {resume_from} at step {step}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(config_to_yaml(cfg), encoding="utf-8")
    log = MetricsLog(
        out, resume_step=step if ckpt is not None else None, tensorboard=cfg.tensorboard
    )
    pad_id = tokenizer.pad_token_id

    def checkpoint(at: int) -> None:
        state = {
            "kind": "sft",
            "step": at,
            "config": config_to_dict(cfg),
            "weights": {"model": trainable_state(model)},
            "optimizers": {"model": optimizer.state_dict()},
            "schedulers": {"model": scheduler.state_dict()},
            "data": sampler.state_dict(),
            "rng": rng_state(),
        }
        save_checkpoint(out, at, state, config_yaml=config_to_yaml(cfg), keep=cfg.keep_checkpoints)

    summary: dict[str, Any] = {"output_dir": str(out), "total_steps": total_steps}
    if ckpt is None and cfg.eval_at_start and val:
        summary["val_start"] = evaluate_loss(model, val, cfg, pad_id, device)
        log.write(0, "val", summary["val_start"])

    from tqdm.auto import tqdm

    bar = tqdm(total=total_steps, initial=step, disable=not progress, desc="sft", unit="step")
    model.train()
    try:
        while step < total_steps:
            step += 1
            t0 = time.monotonic()
            examples = [train[i] for i in sampler.next(cfg.batch_size)]
            tokens = float(sum(len(e[1]) for e in examples))
            optimizer.zero_grad(set_to_none=True)
            loss_sum = correct = 0.0
            for start in range(0, len(examples), cfg.micro_batch_size):
                chunk = examples[start : start + cfg.micro_batch_size]
                loss, part, right = batch_loss(model, chunk, pad_id, device, cfg.amp, tokens)
                loss.backward()
                loss_sum += part
                correct += right
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            scheduler.step()
            metrics = {
                "loss": loss_sum / tokens,
                "token_accuracy": correct / tokens,
                "grad_norm": grad_norm,
                "lr": lr,
                "tokens": tokens,
                "data/epoch": sampler.epoch,
                "time/step_s": time.monotonic() - t0,
            }
            log.write(step, "train", metrics)
            summary.setdefault("first_train", metrics)
            summary["last_train"] = metrics
            bar.update(1)
            bar.set_postfix(loss=f"{metrics['loss']:.3f}")
            last = step == total_steps
            if val and ((cfg.eval_every and step % cfg.eval_every == 0) or last):
                summary["val_end"] = evaluate_loss(model, val, cfg, pad_id, device)
                log.write(step, "val", summary["val_end"])
                model.train()
            if (cfg.save_every and step % cfg.save_every == 0) or last:
                checkpoint(step)
    finally:
        bar.close()
        log.close()
    model.eval()
    if cfg.save_final_model:
        final = model.merge_and_unload() if cfg.lora_r else model
        final.save_pretrained(out / "final")
        tokenizer.save_pretrained(out / "final")
        summary["final_model"] = str(out / "final")
    return summary
