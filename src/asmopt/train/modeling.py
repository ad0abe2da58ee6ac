"""Models for the trainers: loading, LoRA, the value head, and the response forward pass.

The actor is any `AutoModelForCausalLM` in a local directory (the looped PLT model included,
registered on import of `asmopt.models.plt`). Values need the final hidden state; instead of
re-implementing each architecture's head, a forward hook on the output embedding layer reads
the hidden states the model itself feeds to its LM head. That works for Llama, PLT, peft
wrappers and anything else that ends in `lm_head(hidden_states)`.

Sequences are laid out as `[left-padded prompt | right-padded response]`, the layout of
batched generation, with position ids counted from the first real token, as `generate()`
does, so that training sees the positions sampling saw.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import torch
from torch import nn

from asmopt.errors import InputError
from asmopt.typed_config import one_line

if TYPE_CHECKING:  # transformers and peft are imported where they are used
    from peft import PeftModel
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from asmopt.train.config import ModelFields

    # What the trainers train and sample from: a transformers model, or the peft wrapper
    # that `prepare_trainable` puts around one for LoRA.
    CausalLM: TypeAlias = PreTrainedModel | PeftModel

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_tokenizer(path: str | Path) -> PreTrainedTokenizerBase:
    """Tokenizer with left padding (batched generation) and a pad token (eos if none)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token or tok.unk_token
    if tok.pad_token_id is None:
        raise InputError(f"{path}: the tokenizer has no pad, eos or unk token to pad with")
    return tok


def load_causal_lm(path: str | Path, dtype: str, device: torch.device) -> PreTrainedModel:
    """The model of a local directory; its weight files are checked first, so a damaged
    one is named (transformers reports it as a deserialisation error of no file)."""
    import transformers
    from safetensors import SafetensorError

    import asmopt.models.plt  # noqa: F401  (registers the looped model with the Auto classes)

    check_weight_files(Path(path))
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            path, local_files_only=True, dtype=DTYPES[dtype]
        )
    except (OSError, ValueError, RuntimeError, EOFError, SafetensorError) as exc:
        raise InputError(f"{path}: cannot load the model: {one_line(str(exc))[:300]}") from None
    return model.to(device)


def check_weight_files(model_dir: Path) -> None:
    """Every safetensors file of `model_dir` has a readable header that covers the file
    exactly (so a truncated or overwritten file is found before loading), or ValueError
    naming the file and the way out."""
    from safetensors import SafetensorError, safe_open

    for file in sorted(model_dir.glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt"):
                pass
        except (SafetensorError, OSError) as exc:
            raise InputError(
                f"{file}: damaged model weights ({one_line(str(exc))[:160]}); "
                f"{_weights_way_out(model_dir)}"
            ) from None


def _weights_way_out(model_dir: Path) -> str:
    from asmopt.train.tiny import MARKER

    if (model_dir / MARKER).is_file():
        return f"delete {model_dir} and rerun: a tiny:* model is built again from its seed"
    return "copy the model directory again from where it came from"


def prepare_trainable(model: PreTrainedModel, cfg: ModelFields) -> CausalLM:
    """Gradient checkpointing and LoRA as the config asks; returns the model to train."""
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if cfg.lora_r:
            model.enable_input_require_grads()
    if not cfg.lora_r:
        return model
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise InputError(f"lora_r > 0 needs peft (pip install 'asmopt[rl]'): {exc}") from None
    lora = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=cfg.lora_target_modules,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def base_model(model: CausalLM) -> PreTrainedModel:
    """The transformers model under a peft wrapper (or the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def count_parameters(model: nn.Module) -> tuple[int, int]:
    """(trainable, total) parameter counts."""
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable, total


class ValueHead(nn.Module):
    """V(s) = w . h + b on the final hidden state, in float32, initialised to 0.

    Zero initialisation makes the first values 0 rather than noise, so the first advantages
    are the returns themselves."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.summary = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.summary.weight)
        nn.init.zeros_(self.summary.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.summary(hidden.float()).squeeze(-1)


def hidden_size_of(model: CausalLM) -> int:
    config = base_model(model).config
    size = getattr(config, "hidden_size", None) or getattr(config, "d_model", None)
    if not size:
        raise InputError(f"cannot find the hidden size in the {type(config).__name__} config")
    return int(size)


class HeadInputTap:
    """Keeps the input of the model's output embedding layer: the final hidden states."""

    def __init__(self, model: CausalLM) -> None:
        head = base_model(model).get_output_embeddings()
        if head is None:
            raise InputError(f"{type(base_model(model)).__name__} has no output embedding layer")
        self.hidden: torch.Tensor | None = None
        self._handle = head.register_forward_hook(self._hook)

    def _hook(self, module: nn.Module, inputs: tuple[torch.Tensor, ...], output: object) -> None:
        self.hidden = inputs[0]

    def take(self) -> torch.Tensor:
        if self.hidden is None:
            raise RuntimeError("the forward pass did not run the output embedding layer")
        hidden, self.hidden = self.hidden, None
        return hidden

    def remove(self) -> None:
        self._handle.remove()


def takes_logits_to_keep(model: CausalLM) -> bool:
    params = inspect.signature(type(base_model(model)).forward).parameters
    return "logits_to_keep" in params


# --------------------------------------------------------------------------- batches


@dataclass
class Batch:
    """A padded micro-batch. input_ids/attention_mask/position_ids: [b, Q + R];
    response_ids/response_mask: [b, R] (R = longest response in the micro-batch)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    response_ids: torch.Tensor
    response_mask: torch.Tensor

    @property
    def response_len(self) -> int:
        return self.response_ids.shape[1]


def collate(
    queries: list[list[int]],
    responses: list[list[int]],
    pad_id: int,
    device: torch.device,
) -> Batch:
    """[left-padded prompt | right-padded response] with positions counted from token 1."""
    Q = max(len(q) for q in queries)
    R = max(max(len(r) for r in responses), 1)
    b = len(queries)
    input_ids = torch.full((b, Q + R), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((b, Q + R), dtype=torch.long)
    for i, (q, r) in enumerate(zip(queries, responses, strict=True)):
        input_ids[i, Q - len(q) : Q] = torch.tensor(q, dtype=torch.long)
        attention_mask[i, Q - len(q) : Q] = 1
        if r:
            input_ids[i, Q : Q + len(r)] = torch.tensor(r, dtype=torch.long)
            attention_mask[i, Q : Q + len(r)] = 1
    position_ids = (attention_mask.cumsum(1) - 1).clamp(min=0)
    return Batch(
        input_ids=input_ids.to(device),
        attention_mask=attention_mask.to(device),
        position_ids=position_ids.to(device),
        response_ids=input_ids[:, Q:].to(device),
        response_mask=attention_mask[:, Q:].float().to(device),
    )


def autocast(amp: str, device: torch.device) -> contextlib.AbstractContextManager[None]:
    if amp == "none":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=DTYPES[amp])


def response_forward(
    model: CausalLM, batch: Batch, *, tap: HeadInputTap | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logits predicting each response token, [b, R, V], and with a `tap` the final hidden
    states at the same positions, [b, R, H] (the state before the token is chosen)."""
    R = batch.response_len
    kwargs: dict[str, Any] = {
        "input_ids": batch.input_ids,
        "attention_mask": batch.attention_mask,
        "position_ids": batch.position_ids,
        "use_cache": False,
    }
    if takes_logits_to_keep(model):
        kwargs["logits_to_keep"] = R + 1
    out = model(**kwargs)
    # Position Q - 1 + t predicts response token t; the last position predicts nothing.
    logits = out.logits[:, -(R + 1) : -1]
    hidden = tap.take()[:, -(R + 1) : -1] if tap is not None else None
    return logits, hidden


@contextlib.contextmanager
def eval_mode(*modules: nn.Module | None) -> Iterator[None]:
    """Eval mode (no dropout) inside, the previous modes restored after."""
    present = [m for m in modules if m is not None]
    modes = [m.training for m in present]
    for m in present:
        m.eval()
    try:
        yield
    finally:
        for m, mode in zip(present, modes, strict=True):
            m.train(mode)


# --------------------------------------------------------------------------- generation


@dataclass
class Generated:
    """One sampled answer: prompt token ids (unpadded), response ids up to and including the
    first end-of-sequence token, and whether that token came (False: cut at the limit)."""

    query: list[int]
    response: list[int]
    finished: bool


def stop_ids(model: CausalLM, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """End-of-sequence ids of the model's generation config and of the tokenizer."""
    ids: set[int] = set()
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (gen_eos, tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, list | tuple):
            ids.update(int(v) for v in value)
    return sorted(ids)


@torch.no_grad()
def generate(
    model: CausalLM,
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    batch_size: int,
    device: torch.device,
    amp: str = "none",
) -> list[Generated]:
    """Batched sampling (temperature > 0) or greedy decoding, left-padded as the local
    back-end does. Every logits processor but temperature and top-p is switched off, so that
    the sampling distribution is the softmax the trainer differentiates.

    Wide because the PPO rollout, its validation and the learning benches take the sampling
    settings from different fields (or their own), so no one config object carries them."""
    from transformers import GenerationConfig

    eos = stop_ids(model, tokenizer)
    settings: dict[str, Any] = {
        "max_new_tokens": max_new_tokens,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": eos or None,
        "repetition_penalty": 1.0,
        "no_repeat_ngram_size": 0,
    }
    if temperature > 0:
        settings.update(do_sample=True, temperature=temperature, top_p=top_p, top_k=0)
    else:
        settings.update(do_sample=False)
    gen_config = GenerationConfig(**settings)
    stops = set(eos)
    out: list[Generated] = []
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        enc = tokenizer(chunk, return_tensors="pt", padding=True).to(device)
        with autocast(amp, device):
            seq = model.generate(**enc, generation_config=gen_config)
        Q = enc["input_ids"].shape[1]
        for row, ids, mask in zip(seq[:, Q:], enc["input_ids"], enc["attention_mask"], strict=True):
            tokens = row.tolist()
            cut = next((i for i, t in enumerate(tokens) if t in stops), None)
            response = tokens if cut is None else tokens[: cut + 1]
            out.append(
                Generated(
                    query=ids[mask.bool()].tolist(),
                    response=response,
                    finished=cut is not None,
                )
            )
    return out


def decode_response(tokenizer: PreTrainedTokenizerBase, gen: Generated) -> str:
    """The answer text (without the end-of-sequence token)."""
    ids = gen.response[:-1] if gen.finished else gen.response
    return tokenizer.decode(ids, skip_special_tokens=True)
