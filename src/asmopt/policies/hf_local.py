"""Local Hugging Face transformers back-end: any causal LM in a local directory.

Loads with `local_files_only=True` (weights are never fetched at run time). The project's
own looped model is registered with the Auto classes on import, so a PLT directory loads
like any other. Generation is batched with left padding; the tokenizer's chat template is
used when it has one.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from asmopt.policies.llm import Completion, PolicyError, SamplingParams

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")


def check_model_dir(path: str | Path) -> Path:
    """Name exactly what is missing from a model directory, before loading anything."""
    root = Path(path)
    if not root.is_dir():
        raise PolicyError(f"{root}: model directory not found")
    if not (root / "config.json").is_file():
        raise PolicyError(f"{root}: no config.json (not a Hugging Face model directory)")
    if not any((root / f).exists() for f in WEIGHT_FILES):
        raise PolicyError(f"{root}: no weights ({' or '.join(WEIGHT_FILES[::2])})")
    if not any((root / f).exists() for f in TOKENIZER_FILES):
        raise PolicyError(f"{root}: no tokenizer files ({', '.join(TOKENIZER_FILES)})")
    return root


class HFBackend:
    """Batched `generate()` on a local model; thread-safe (one generation at a time)."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        batch_size: int = 8,
    ) -> None:
        root = check_model_dir(model_dir)
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise PolicyError(
                f"the hf back-end needs torch and transformers (pip install 'asmopt[ml]'): {exc}"
            ) from None
        import asmopt.models.plt  # noqa: F401  (registers the looped model with Auto classes)

        self.torch = torch
        self.model_dir = root
        self.name = root.name
        self.device = device
        self.batch_size = batch_size
        self._lock = threading.Lock()
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(root, local_files_only=True)
        except Exception as exc:
            raise PolicyError(f"{root}: cannot load the tokenizer: {exc}") from None
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        torch_dtype: Any = "auto" if dtype == "auto" else getattr(torch, dtype)
        try:
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                root, local_files_only=True, dtype=torch_dtype
            )
        except Exception as exc:
            raise PolicyError(f"{root}: cannot load the model: {exc}") from None
        self.model.to(device)
        self.model.eval()

    def render(self, messages: list[dict[str, str]]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        return "\n\n".join(m["content"] for m in messages)

    def generate_prompts(self, prompts: list[str], params: SamplingParams) -> list[Completion]:
        """One completion per prompt string, in batches of `batch_size`."""
        torch = self.torch
        out: list[Completion] = []
        with self._lock:
            if params.seed is not None:
                torch.manual_seed(params.seed)
            for i in range(0, len(prompts), self.batch_size):
                chunk = prompts[i : i + self.batch_size]
                enc = self.tokenizer(chunk, return_tensors="pt", padding=True).to(self.device)
                start = time.monotonic()
                kwargs: dict[str, Any] = {
                    "max_new_tokens": params.max_new_tokens,
                    "pad_token_id": self.tokenizer.pad_token_id,
                }
                if params.temperature > 0:
                    kwargs.update(
                        do_sample=True, temperature=params.temperature, top_p=params.top_p
                    )
                else:
                    kwargs.update(do_sample=False)
                with torch.no_grad():
                    gen = self.model.generate(**enc, **kwargs)
                elapsed = time.monotonic() - start
                new = gen[:, enc["input_ids"].shape[1] :]
                eos = self.tokenizer.eos_token_id
                for row, mask in zip(new, enc["attention_mask"], strict=True):
                    ids = row.tolist()
                    pad = self.tokenizer.pad_token_id
                    n_tokens = len(ids)
                    finish = "length"
                    if eos is not None and eos in ids:
                        n_tokens = ids.index(eos) + 1
                        finish = "stop"
                    elif pad is not None and pad != eos and pad in ids:
                        n_tokens = ids.index(pad)
                        finish = "stop"
                    text = self.tokenizer.decode(ids[:n_tokens], skip_special_tokens=True)
                    out.append(
                        Completion(
                            text=text,
                            prompt_tokens=int(mask.sum()),
                            completion_tokens=n_tokens,
                            finish_reason=finish,
                            latency_s=elapsed / len(chunk),
                        )
                    )
        return out

    def generate(
        self, messages: list[dict[str, str]], n: int, params: SamplingParams
    ) -> list[Completion]:
        return self.generate_prompts([self.render(messages)] * n, params)
