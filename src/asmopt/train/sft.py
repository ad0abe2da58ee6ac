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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from asmopt.errors import InputError
from asmopt.policies.prompts import render_prompt
from asmopt.train import ppo_core as core
from asmopt.train.checkpoint import (
    load_trainable_state,
    restoring,
    staged_dir,
    trainable_state,
)
from asmopt.train.config import SFTConfig, config_to_yaml
from asmopt.train.data import Row, RowSampler, load_rows
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
from asmopt.train.ppo import Echo, echo_log
from asmopt.train.run import (
    begin_run,
    is_due,
    open_run_dir,
    restore_position,
    save_trainer_checkpoint,
)
from asmopt.train.tiny import resolve_model

if TYPE_CHECKING:  # transformers is imported where the model is loaded
    from transformers import PreTrainedTokenizerBase

    from asmopt.train.modeling import CausalLM

Example = tuple[list[int], list[int]]  # (prompt ids, completion ids)


def tokenize_rows(
    rows: list[Row], tokenizer: PreTrainedTokenizerBase, cfg: SFTConfig, what: str, echo: Echo
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
                raise InputError(f"{what} row {i}: {n} tokens > max_seq_len {cfg.max_seq_len}")
            continue
        out.append((prompt, completion))
    if len(out) < len(rows):
        echo(
            f"{what}: skipped {len(rows) - len(out)} of {len(rows)} rows longer than "
            f"{cfg.max_seq_len} tokens"
        )
    if not out:
        raise InputError(f"{what}: no row fits in max_seq_len {cfg.max_seq_len}")
    return out


def batch_loss(
    model: CausalLM,
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
    model: CausalLM, examples: list[Example], cfg: SFTConfig, pad_id: int, device: torch.device
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


def load_model(
    cfg: SFTConfig, out: Path, device: torch.device, echo: Echo
) -> tuple[PreTrainedTokenizerBase, CausalLM]:
    """(tokenizer, model prepared for training: gradient checkpointing, LoRA)."""
    model_path = resolve_model(
        cfg.model,
        out,
        overrides=cfg.model_overrides,
        tokenizer_dir=cfg.tokenizer,
        train_seed=cfg.train_seed,
    )
    tokenizer = load_tokenizer(model_path)
    model = prepare_trainable(load_causal_lm(model_path, cfg.dtype, device), cfg)
    n_train, n_total = count_parameters(model)
    echo(
        f"model {type(base_model(model)).__name__} from {model_path}: {n_train:,} trainable "
        f"of {n_total:,} parameters; device {device}"
    )
    return tokenizer, model


def load_examples(
    cfg: SFTConfig, tokenizer: PreTrainedTokenizerBase, echo: Echo
) -> tuple[list[Example], list[Example]]:
    """Training and (first `val_max_rows`) validation examples that fit `max_seq_len`; suite
    rows get their completion from the configured target (`target_flags`)."""
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
    return train, val


def sft_step(
    model: CausalLM,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    examples: list[Example],
    cfg: SFTConfig,
    pad_id: int,
    device: torch.device,
) -> dict[str, float]:
    """One optimiser step on `examples`, accumulated over micro-batches; every loss is
    divided by the batch's completion tokens, so the step does not depend on the
    micro-batch size. Returns the step's metrics (but `data/epoch` and the step time)."""
    tokens = float(sum(len(e[1]) for e in examples))
    optimizer.zero_grad(set_to_none=True)
    loss_sum = correct = 0.0
    for start in range(0, len(examples), cfg.micro_batch_size):
        chunk = examples[start : start + cfg.micro_batch_size]
        loss, part, right = batch_loss(model, chunk, pad_id, device, cfg.amp, tokens)
        loss.backward()
        loss_sum += part
        correct += right
    params = [p for p in model.parameters() if p.requires_grad]
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
    lr = optimizer.param_groups[0]["lr"]
    optimizer.step()
    scheduler.step()
    return {
        "loss": loss_sum / tokens,
        "token_accuracy": correct / tokens,
        "grad_norm": grad_norm,
        "lr": lr,
        "tokens": tokens,
    }


def save_final_model(
    model: CausalLM, tokenizer: PreTrainedTokenizerBase, cfg: SFTConfig, path: Path
) -> Path:
    """The model as a plain Hugging Face directory (LoRA merged) that PPO and `hf_local`
    load."""
    final = model.merge_and_unload() if cfg.lora_r else model
    with staged_dir(path) as tmp:  # a full disk leaves the previous final/, not half of one
        final.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return path


def train_sft(cfg: SFTConfig, *, progress: bool = True, echo: Echo = echo_log) -> dict[str, Any]:
    """Runs (or resumes) supervised fine-tuning as `cfg` says; returns a summary."""
    cfg.validate()
    start = begin_run(cfg, "sft")
    device, out = start.device, start.out
    echo(f"SFT config:\n{config_to_yaml(cfg).rstrip()}")

    tokenizer, model = load_model(cfg, out, device, echo)
    train, val = load_examples(cfg, tokenizer, echo)
    sampler = RowSampler(len(train), cfg.train_seed)
    total_steps = cfg.total_steps or math.ceil(cfg.total_epochs * len(train) / cfg.batch_size)
    echo(
        f"{len(train)} training rows, {len(val)} validation rows; {total_steps} steps of "
        f"{cfg.batch_size} rows ({cfg.batch_size // cfg.micro_batch_size} micro-batches)"
    )
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = make_optimizer(params, cfg.lr, cfg)
    scheduler = make_scheduler(optimizer, cfg.lr_schedule, cfg.warmup_steps, total_steps)

    step = 0
    if start.ckpt is not None and start.resume_from is not None:
        with restoring(start.resume_from, start.explicit):
            load_trainable_state(model, start.ckpt["weights"]["model"], "model")
            optimizer.load_state_dict(start.ckpt["optimizers"]["model"])
            scheduler.load_state_dict(start.ckpt["schedulers"]["model"])
            step = restore_position(start.ckpt, sampler)
        echo(f"resumed from {start.resume_from} at step {step}")
    log = open_run_dir(cfg, start, step)
    pad_id = tokenizer.pad_token_id

    summary: dict[str, Any] = {"output_dir": str(out), "total_steps": total_steps}
    if start.ckpt is None and cfg.eval_at_start and val:
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
            metrics = sft_step(model, optimizer, scheduler, examples, cfg, pad_id, device)
            metrics["data/epoch"] = sampler.epoch
            metrics["time/step_s"] = time.monotonic() - t0
            log.write(step, "train", metrics)
            summary.setdefault("first_train", metrics)
            summary["last_train"] = metrics
            bar.update(1)
            bar.set_postfix(loss=f"{metrics['loss']:.3f}")
            if val and is_due(cfg.eval_every, step, total_steps):
                summary["val_end"] = evaluate_loss(model, val, cfg, pad_id, device)
                log.write(step, "val", summary["val_end"])
                model.train()
            if is_due(cfg.save_every, step, total_steps):
                save_trainer_checkpoint(
                    cfg,
                    out,
                    step,
                    kind="sft",
                    weights={"model": trainable_state(model)},
                    optimizers={"model": optimizer},
                    schedulers={"model": scheduler},
                    sampler=sampler,
                )
    finally:
        bar.close()
        log.close()
    model.eval()
    if cfg.save_final_model:
        summary["final_model"] = str(save_final_model(model, tokenizer, cfg, out / "final"))
    return summary
