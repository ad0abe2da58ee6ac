"""`asmopt train lm`: pre-training (and SFT) of looped decoders with matched settings across R.

One function, `train_lm(cfg, loops)`, trains the model with R = `loops` of a study config.
Everything but R is shared by the models of a study:

- the same initial weights for every shared parameter (`train.init_seed`; the PLT gates start at
  zero and draw no random numbers, so R does not shift the random stream);
- the same tokens in the same order: the windows of step s are drawn from a generator seeded
  with (`train.data_seed`, s), independent of R and of any earlier step, which also makes a
  resumed run see exactly what an uninterrupted one would have seen;
- the same steps, batch, learning-rate schedule (linear warm-up, cosine decay) and clipping.

So a compute difference remains (R times the layer FLOPs), and it is reported.

Output directory `<output_dir>/models/R<loops>` (`-sft` appended for SFT):
    metrics.jsonl        one line per logged step and per evaluation (asmopt.train.metrics_log)
    checkpoints/         resumable state (asmopt.train.checkpoint), written atomically
    final/               the model in the Hugging Face format, its tokenizer, summary.json
A finished model (final/summary.json with the same config) is not trained again.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from asmopt.errors import InputError
from asmopt.provenance import stamp
from asmopt.study.config import (
    ModelSpec,
    StudyConfig,
    TrainSpec,
    renamed_in_saved,
    to_dict,
    to_yaml,
)
from asmopt.study.data import Prepared, TokenSplit, prepare
from asmopt.study.tokenizer import EOT, PAD

SUMMARY_FILE = "summary.json"
IGNORE = -100
# Fields that may differ between a checkpoint and the config resuming it: they do not change
# what any step computes.
RESUMABLE = {"log_every", "eval_every", "save_every", "device", "num_threads"}
# Held-out windows evaluated during training (the full set is evaluated at the end).
PERIODIC_EVAL_WINDOWS = 16

log = logging.getLogger(__name__)  # progress notices, INFO (see study.data)


def model_dir(cfg: StudyConfig, loops: int, seed: int | None = None) -> Path:
    """`<output_dir>/models/R<loops>[-sft][-seed<seed>]`.

    `seed` is None for the config's own run (the directory every single-seed study has
    used, so those models are reused by a multi-seed study of the same config) and the
    seed for the extra runs of a multi-seed study, so that each (R, seed) resumes and is
    reused on its own."""
    suffix = "-sft" if cfg.train.objective == "sft" else ""
    tag = "" if seed is None else f"-seed{seed}"
    return Path(cfg.output_dir) / "models" / f"R{loops}{suffix}{tag}"


def seed_config(cfg: StudyConfig, seed: int) -> StudyConfig:
    """The config of training run `seed`: its own initial weights and its own token order.

    `train.init_seed` becomes `seed` and `train.data_seed` moves by the same offset from the
    config's, so the config's own seed gives the config unchanged (and its finished models),
    while another seed changes both sources of run-to-run variation. Within one seed,
    every R still shares weights and token order: only R differs."""
    seeded = copy.deepcopy(cfg)
    seeded.train.init_seed = seed
    seeded.train.data_seed = cfg.train.data_seed + (seed - cfg.train.init_seed)
    return seeded


# --------------------------------------------------------------------------- model


def plt_config(spec: ModelSpec, loops: int, vocab_size: int, seq_len: int, tokenizer: Any) -> Any:
    """The `PLTConfig` of a study model: the shared shape plus R."""
    from asmopt.models.plt import PLTConfig

    return PLTConfig(
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=max(seq_len, 64),
        tie_word_embeddings=spec.tie_word_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": spec.rope_theta},
        plt_num_loops=loops,
        plt_window_size=[spec.window, 0],
        plt_loop_mode=spec.loop_mode,
        plt_normalize_per_loop=spec.normalize_per_loop,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids(EOT),
        pad_token_id=tokenizer.convert_tokens_to_ids(PAD),
    )


def build_model(cfg: StudyConfig, loops: int, tokenizer: Any) -> Any:
    """A fresh model; the seed is fixed around construction so every R starts the same."""
    from asmopt.models.plt import PLTForCausalLM

    config = plt_config(cfg.model, loops, len(tokenizer), cfg.train.seq_len, tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.train.init_seed)
        return PLTForCausalLM(config)


def count_parameters(model: torch.nn.Module) -> dict[str, int]:
    """Total (tied weights once) and without the token embedding / output head."""
    total = sum(p.numel() for p in model.parameters())
    embed = model.get_input_embeddings().weight.numel()
    head = model.get_output_embeddings().weight
    untied = head is not model.get_input_embeddings().weight
    return {"total": total, "non_embedding": total - embed - (head.numel() if untied else 0)}


# --------------------------------------------------------------------------- data


def lr_at(step: int, spec: TrainSpec) -> float:
    """Learning rate of optimiser step `step` (0-based): linear warm-up, then cosine decay."""
    if spec.warmup_steps and step < spec.warmup_steps:
        return spec.lr * (step + 1) / spec.warmup_steps
    span = max(1, spec.max_steps - spec.warmup_steps)
    progress = min(1.0, (step - spec.warmup_steps) / span)
    floor = spec.lr * spec.min_lr_ratio
    return floor + 0.5 * (spec.lr - floor) * (1.0 + math.cos(math.pi * progress))


def step_generator(data_seed: int, step: int) -> torch.Generator:
    """The random stream of one step's batch; depends on nothing but the seed and the step."""
    return torch.Generator().manual_seed(data_seed * 1_000_003 + step)


def pretrain_batch(
    split: TokenSplit, step: int, spec: TrainSpec, rows: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`rows` random windows of the token stream: inputs and next-token targets `[rows, S]`."""
    seq = spec.seq_len
    high = split.size - seq - 1
    if high <= 0:
        raise InputError(f"the training split has {split.size} tokens, fewer than seq_len + 1")
    starts = torch.randint(0, high + 1, (rows,), generator=step_generator(spec.data_seed, step))
    tokens = torch.from_numpy(split.tokens)
    index = starts[:, None] + torch.arange(seq + 1)[None, :]  # [rows, S + 1]
    window = tokens[index]
    return window[:, :-1], window[:, 1:]


def document_rows(
    split: TokenSplit, doc_index: np.ndarray, seq_len: int, pad_id: int, assembly_only: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Documents cut to seq_len + 1 tokens, right-padded.

    A prompt longer than half the context is cut from the left (its end, next to the
    assembly, is kept), so every row has assembly targets. Targets are IGNORE on padding and,
    with `assembly_only`, on prompt tokens (SFT)."""
    rows = len(doc_index)
    inputs = torch.full((rows, seq_len), pad_id, dtype=torch.long)
    targets = torch.full((rows, seq_len), IGNORE, dtype=torch.long)
    for r, d in enumerate(doc_index):
        start, prompt_len, length = (int(v) for v in split.docs[d])
        skip = max(0, prompt_len - seq_len // 2)
        begin = start + skip
        take = min(length - skip, seq_len + 1)
        ids = torch.from_numpy(split.tokens[begin : begin + take])
        keep = torch.from_numpy(split.mask[begin + 1 : begin + take].astype(bool))
        inputs[r, : take - 1] = ids[:-1]
        tgt = ids[1:].clone()
        if assembly_only:
            tgt[~keep] = IGNORE
        targets[r, : take - 1] = tgt
    return inputs, targets


def sft_batch(
    split: TokenSplit, step: int, spec: TrainSpec, rows: int, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    gen = step_generator(spec.data_seed, step)
    docs = torch.randint(0, split.docs.shape[0], (rows,), generator=gen).numpy()
    return document_rows(split, docs, spec.seq_len, pad_id, assembly_only=True)


def heldout_windows(split: TokenSplit, seq_len: int, count: int) -> np.ndarray:
    """Evenly spaced window starts over the held-out stream: fixed, so every R sees the same."""
    high = split.size - seq_len - 1
    if high < 0:
        raise InputError(f"the held-out split has {split.size} tokens, fewer than seq_len + 1")
    return np.unique(np.linspace(0, high, num=count).round().astype(np.int64))


# --------------------------------------------------------------------------- evaluation


@torch.no_grad()
def evaluate_windows(
    model: Any, split: TokenSplit, starts: np.ndarray, seq_len: int, batch: int, device: Any
) -> dict[str, Any]:
    """Loss and next-token accuracy on fixed windows, over all tokens and over assembly only.

    `window_loss` / `window_asm_loss` keep one value per window so that two models evaluated
    on the same windows can be compared pairwise (see asmopt.study.loops)."""
    was_training = model.training
    model.eval()
    tokens = torch.from_numpy(split.tokens)
    mask = torch.from_numpy(split.mask.astype(bool))
    sums = {"loss": 0.0, "asm_loss": 0.0, "correct": 0, "asm_correct": 0, "n": 0, "asm_n": 0}
    window_loss: list[float] = []
    window_asm_loss: list[float | None] = []
    for i in range(0, len(starts), batch):
        chunk = torch.from_numpy(starts[i : i + batch])
        index = chunk[:, None] + torch.arange(seq_len + 1)[None, :]
        window = tokens[index].to(device)
        is_asm = mask[index][:, 1:].to(device)  # [B, S]: target is an assembly token
        logits = model(input_ids=window[:, :-1], use_cache=False).logits.float()
        target = window[:, 1:]
        nll = F.cross_entropy(logits.transpose(1, 2), target, reduction="none")  # [B, S]
        hit = logits.argmax(-1) == target
        sums["loss"] += float(nll.sum())
        sums["correct"] += int(hit.sum())
        sums["n"] += nll.numel()
        sums["asm_loss"] += float((nll * is_asm).sum())
        sums["asm_correct"] += int((hit & is_asm).sum())
        sums["asm_n"] += int(is_asm.sum())
        window_loss += nll.mean(1).tolist()
        counts = is_asm.sum(1)
        per = ((nll * is_asm).sum(1) / counts.clamp(min=1)).tolist()
        window_asm_loss += [p if c > 0 else None for p, c in zip(per, counts.tolist(), strict=True)]
    model.train(was_training)
    asm_n = max(1, sums["asm_n"])
    return {
        "loss": sums["loss"] / sums["n"],
        "accuracy": sums["correct"] / sums["n"],
        "asm_loss": sums["asm_loss"] / asm_n,
        "asm_accuracy": sums["asm_correct"] / asm_n,
        "tokens": sums["n"],
        "asm_tokens": sums["asm_n"],
        "window_loss": window_loss,
        "window_asm_loss": window_asm_loss,
    }


# --------------------------------------------------------------------------- training


@dataclass
class RunState:
    step: int = 0
    tokens: int = 0
    seconds: float = 0.0


def _optimizer(model: torch.nn.Module, spec: TrainSpec) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (norm weights and biases are not decayed)."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    rest = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": spec.weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ],
        lr=spec.lr,
        betas=(spec.beta1, spec.beta2),
    )


def resume_problems(saved: dict[str, Any], cfg: StudyConfig, loops: int) -> list[str]:
    """Why a checkpoint may not be resumed by this run (empty: it may): another R, or a
    setting outside RESUMABLE that differs. One model trained under two recipes would make
    the comparison across R meaningless."""
    problems = same_settings(saved["config"], cfg, RESUMABLE)
    if saved.get("loops") != loops:
        problems.insert(0, f"loops {saved.get('loops')} -> {loops}")
    return problems


def same_settings(saved: dict[str, Any], current: StudyConfig, skip: set[str]) -> list[str]:
    """Settings that differ between a saved config dict and `current` (dotted names).

    A field missing from `saved` (added to the config after the run) counts as unchanged when
    `current` holds its default, so adding an option does not invalidate finished models,
    and a key saved under its old name (config.RENAMED_KEYS) is read under its new one."""
    defaults = to_dict(StudyConfig())
    now = to_dict(current)
    changed = []
    for section in ("corpus", "tokenizer", "model", "train"):
        kind = type(getattr(current, section))
        old = renamed_in_saved(kind, saved.get(section, {}))
        for key, value in now[section].items():
            if key in skip:
                continue
            before = old[key] if key in old else defaults[section].get(key)
            if before != value:
                changed.append(f"{section}.{key}")
    return changed


def finished_summary(
    cfg: StudyConfig, loops: int, seed: int | None = None
) -> dict[str, Any] | None:
    """The summary of a finished model trained with this config, else None."""
    path = model_dir(cfg, loops, seed) / "final" / SUMMARY_FILE
    if not path.is_file():
        return None
    summary = json.loads(path.read_text(encoding="utf-8"))
    if summary.get("loops") != loops or same_settings(summary.get("config", {}), cfg, RESUMABLE):
        return None
    return summary


def _log(message: str) -> None:
    """A progress notice: an INFO record (see study.data); the library prints nothing."""
    log.info("%s", message)


@dataclass
class _Training:
    """One model's training in progress: what a step, a log line, a held-out evaluation and
    a checkpoint read or advance (one bundle, so each of them is a short named function)."""

    cfg: StudyConfig
    loops: int
    out: Path
    prepared: Prepared
    device: torch.device
    model: Any
    optimizer: torch.optim.Optimizer
    metrics: Any  # asmopt.train.metrics_log.MetricsLog
    state: RunState
    progress: bool

    @property
    def rows(self) -> int:
        """Rows per optimiser step: micro-batches of `batch_size` times `grad_accum`."""
        return self.cfg.train.batch_size * self.cfg.train.grad_accum


def train_lm(
    cfg: StudyConfig,
    loops: int,
    *,
    prepared: Prepared | None = None,
    progress: bool = True,
    toolchain: Any = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """Trains (or resumes, or reuses) the R = `loops` model of a study; returns its summary.

    `seed` names the run directory of one seed of a multi-seed study (`model_dir`); `cfg`
    must then be that seed's config (`seed_config`), so a directory never holds a model of
    another seed. The run starts as the trainers' runs do (`asmopt.train.run.start_run`:
    threads, device, the checkpoint to resume and its recipe check), and before the corpus
    is prepared, so an unusable device or a mismatched checkpoint is refused before any
    data work."""
    if loops < 1:
        raise InputError(f"loops must be at least 1, got {loops}")
    if seed is not None and cfg.train.init_seed != seed:
        raise InputError(
            f"seed {seed} given with a config of train.init_seed {cfg.train.init_seed}"
        )
    done = finished_summary(cfg, loops, seed)
    if done is not None:
        if progress:
            where = model_dir(cfg, loops, seed)
            _log(f"R={loops}: finished model found in {where}; not retraining")
        return done
    run = _start_training(cfg, loops, prepared, toolchain, progress, seed)
    spec = cfg.train
    starts = heldout_windows(run.prepared.heldout, spec.seq_len, cfg.eval.heldout_windows)
    periodic = starts[np.linspace(0, len(starts) - 1, PERIODIC_EVAL_WINDOWS).astype(int)]
    autocast = (
        torch.autocast(run.device.type, dtype=torch.bfloat16)
        if spec.amp == "bfloat16"
        else torch.autocast(run.device.type, enabled=False)
    )
    started = stamp()
    tick = time.monotonic()
    while run.state.step < spec.max_steps:
        lr, loss, grad_norm = _train_step(run, autocast)
        run.state.seconds += time.monotonic() - tick
        _after_step(run, lr, loss, grad_norm, periodic)
        tick = time.monotonic()
    _save_checkpoint(run)
    return _finish(run, starts, started)


def _start_training(
    cfg: StudyConfig,
    loops: int,
    prepared: Prepared | None,
    toolchain: Any,
    progress: bool,
    seed: int | None = None,
) -> _Training:
    """Process settings and the checkpoint first (shared with PPO and SFT), then the data,
    the model and the optimiser, restored from the checkpoint when there is one."""
    from asmopt.train.checkpoint import set_rng_state
    from asmopt.train.metrics_log import MetricsLog
    from asmopt.train.run import start_run

    spec = cfg.train
    out = model_dir(cfg, loops, seed)
    start = start_run(
        device=spec.device,
        num_threads=spec.num_threads,
        train_seed=None,  # build_model seeds around construction; batches have their own streams
        out=out,
        resume="auto",
        changed=lambda saved: resume_problems(saved, cfg, loops),
    )
    prepared = prepared or prepare(cfg, toolchain=toolchain, progress=progress)
    out.mkdir(parents=True, exist_ok=True)
    model = _model_for_run(cfg, loops, prepared.tokenizer, start.device)
    optimizer = _optimizer(model, spec)
    state = RunState()
    if start.ckpt is not None:
        model.load_state_dict(start.ckpt["model"])
        optimizer.load_state_dict(start.ckpt["optimizer"])
        set_rng_state(start.ckpt["rng"])
        state = RunState(start.ckpt["step"], start.ckpt["tokens"], start.ckpt["seconds"])
    metrics = MetricsLog(
        out, resume_step=state.step if start.ckpt is not None else None, tensorboard=False
    )
    run = _Training(
        cfg, loops, out, prepared, start.device, model, optimizer, metrics, state, progress
    )
    if progress:
        _log(_run_description(run, start.resume_from))
    return run


def _model_for_run(cfg: StudyConfig, loops: int, tokenizer: Any, device: torch.device) -> Any:
    """The model to train, on `device` and in training mode: a fresh one, or `init_from`
    (SFT after pre-training), which must have the same R: a model with another loop count
    would stand for the wrong R in the study."""
    from asmopt.models.plt import load_plt_pretrained

    spec = cfg.train
    if spec.init_from:
        model = load_plt_pretrained(spec.init_from)
        if model.config.plt_num_loops != loops:
            raise InputError(
                f"init_from {spec.init_from} has R = {model.config.plt_num_loops}, not {loops}"
            )
    else:
        model = build_model(cfg, loops, tokenizer)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    model.to(device)
    model.train()
    return model


def _run_description(run: _Training, resume_from: Path | None) -> str:
    """The start-up lines: the model's shape, the token budget, where the run resumes."""
    cfg, spec, device = run.cfg, run.cfg.train, run.device
    params = count_parameters(run.model)
    return (
        f"train lm: R={run.loops} ({cfg.model.loop_mode}), {params['total'] / 1e6:.2f}M "
        f"parameters ({params['non_embedding'] / 1e6:.2f}M without embeddings), "
        f"d={cfg.model.hidden_size} L={cfg.model.num_hidden_layers} "
        f"H={cfg.model.num_attention_heads} w={cfg.model.window}, "
        f"vocab {len(run.prepared.tokenizer)}\n"
        f"  {spec.objective}: {spec.max_steps} steps x {run.rows} x {spec.seq_len} tokens = "
        f"{spec.max_steps * run.rows * spec.seq_len / 1e6:.2f}M tokens (train split "
        f"{run.prepared.train.size / 1e6:.2f}M), lr {spec.lr} warm-up {spec.warmup_steps}, "
        f"device {device}{' (TF32)' if device.type == 'cuda' else ''}, amp {spec.amp}, "
        f"threads {torch.get_num_threads()}"
        + (f"\n  resuming at step {run.state.step} from {resume_from}" if resume_from else "")
    )


def _train_step(run: _Training, autocast: Any) -> tuple[float, float, float]:
    """One optimiser step over `grad_accum` micro-batches of the step's own batch; returns
    (learning rate, mean micro-batch loss, gradient norm before clipping) and advances the
    step and token counts."""
    spec, model, optimizer = run.cfg.train, run.model, run.optimizer
    step = run.state.step
    lr = lr_at(step, spec)
    for group in optimizer.param_groups:
        group["lr"] = lr
    if spec.objective == "sft":
        pad_id = run.prepared.tokenizer.convert_tokens_to_ids(PAD)
        inputs, targets = sft_batch(run.prepared.train, step, spec, run.rows, pad_id)
    else:
        inputs, targets = pretrain_batch(run.prepared.train, step, spec, run.rows)
    loss_sum = 0.0
    for micro in range(spec.grad_accum):
        part = slice(micro * spec.batch_size, (micro + 1) * spec.batch_size)
        x, y = inputs[part].to(run.device), targets[part].to(run.device)
        with autocast:
            logits = model(input_ids=x, use_cache=False).logits
        if (y != IGNORE).any():  # mean over this micro-batch's targets
            loss = F.cross_entropy(logits.float().transpose(1, 2), y, ignore_index=IGNORE)
        else:  # no target at all (cannot happen with document_rows; keeps NaN out)
            loss = logits.sum() * 0.0
        (loss / spec.grad_accum).backward()
        loss_sum += float(loss.detach())
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), spec.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    run.state.step += 1
    run.state.tokens += int((targets != IGNORE).sum())
    return lr, loss_sum / spec.grad_accum, float(grad_norm)


def _after_step(
    run: _Training, lr: float, loss: float, grad_norm: float, periodic: np.ndarray
) -> None:
    """The step's log line, the periodic held-out evaluation (on a few fixed windows, to
    stay cheap; the final one uses them all) and the periodic checkpoint."""
    spec, state = run.cfg.train, run.state
    if state.step % spec.log_every == 0 or state.step == spec.max_steps:
        record = {
            "loss": loss,
            "lr": lr,
            "grad_norm": grad_norm,
            "tokens": state.tokens,
            "seconds": round(state.seconds, 2),
        }
        run.metrics.write(state.step, "train", record)
        if run.progress:
            eta = state.seconds / state.step * (spec.max_steps - state.step)
            _log(
                f"  R={run.loops} step {state.step}/{spec.max_steps} loss {loss:.4f} "
                f"lr {lr:.2e} |g| {grad_norm:.2f} "
                f"{state.tokens / max(state.seconds, 1e-9):.0f} tok/s, eta {eta / 60:.1f} min"
            )
    if spec.eval_every and state.step % spec.eval_every == 0 and state.step < spec.max_steps:
        result = evaluate_windows(
            run.model,
            run.prepared.heldout,
            periodic,
            spec.seq_len,
            run.cfg.eval.diag_batch * 2,
            run.device,
        )
        run.metrics.write(state.step, "heldout", _scalars(result))
        if run.progress:
            _log(
                f"  R={run.loops} step {state.step}: held-out loss {result['loss']:.4f}, "
                f"assembly loss {result['asm_loss']:.4f}"
            )
    if spec.save_every and state.step % spec.save_every == 0 and state.step < spec.max_steps:
        _save_checkpoint(run)


def _save_checkpoint(run: _Training) -> None:
    """Everything an exact resume needs; one checkpoint is kept (the study's runs are
    small, and the finished model is saved apart in final/)."""
    from asmopt.train.checkpoint import rng_state, save_checkpoint

    state = run.state
    save_checkpoint(
        run.out,
        state.step,
        {
            "model": {k: v.detach().cpu() for k, v in run.model.state_dict().items()},
            "optimizer": run.optimizer.state_dict(),
            "rng": rng_state(),
            "step": state.step,
            "tokens": state.tokens,
            "seconds": state.seconds,
            "loops": run.loops,
            "config": to_dict(run.cfg),
        },
        config_yaml=to_yaml(run.cfg),
        keep=1,
    )


def _finish(run: _Training, starts: np.ndarray, started: dict[str, Any]) -> dict[str, Any]:
    """The final held-out evaluation on every window, then the model, its tokenizer and
    the summary in final/ (whose presence marks the model finished for later runs)."""
    cfg, state, device = run.cfg, run.state, run.device
    final_eval = evaluate_windows(
        run.model, run.prepared.heldout, starts, cfg.train.seq_len, cfg.eval.diag_batch * 2, device
    )
    run.metrics.write(state.step, "heldout_final", _scalars(final_eval))
    run.metrics.close()
    summary = {
        "loops": run.loops,
        "loop_mode": cfg.model.loop_mode,
        "parameters": count_parameters(run.model),
        "steps": state.step,
        "tokens_seen": state.tokens,
        "train_seconds": round(state.seconds, 1),
        "tokens_per_second": round(state.tokens / max(state.seconds, 1e-9), 1),
        "device": str(device),
        "threads": torch.get_num_threads(),
        "heldout": final_eval,
        "config": to_dict(cfg),
        "output_dir": str(run.out),
        "trained": {**stamp(), "started_commit": started["git_commit"]},
    }
    final = run.out / "final"
    run.model.save_pretrained(final)
    run.prepared.tokenizer.save_pretrained(final)
    (final / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if run.progress:
        _log(
            f"R={run.loops}: done in {state.seconds / 60:.1f} min; held-out loss "
            f"{final_eval['loss']:.4f}, assembly loss {final_eval['asm_loss']:.4f}, "
            f"assembly accuracy {final_eval['asm_accuracy']:.3f} -> {final}"
        )
    return summary


def _scalars(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if not isinstance(v, list)}
