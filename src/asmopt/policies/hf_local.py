"""Local Hugging Face transformers back-end: any causal LM in a local directory.

Loads with `local_files_only=True` (weights are never fetched at run time). The project's
own looped model is registered with the Auto classes on import, so a PLT directory loads
like any other. Generation is batched with left padding; the tokenizer's chat template is
used when it has one.

Stop strings end generation inside `generate()` (transformers' `stop_strings`, so no tokens
are spent past them) and the text is cut before the earliest one, as the OpenAI API does.
Log-probabilities, when asked, come from the model's raw logits (before temperature and
top-p), so they describe the model itself and are finite for every sampled token.

The model's context (`context_length`) and a bounded token count (`count_tokens`) are what
`asmopt serve` derives its per-request limits from: a prompt is counted before it is
generated from, in pieces, so a huge prompt costs memory in proportion to the context, not
to its own size.
"""

from __future__ import annotations

import copy
import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from asmopt.policies.llm import Completion, PolicyError, SamplingParams

if TYPE_CHECKING:  # torch and transformers are imported when a back-end is built
    import torch
    from transformers import PreTrainedConfig, PreTrainedTokenizerBase

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")
BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")
# Where configs keep the number of positions a model was made for (Llama and most: the
# first; GPT-2: n_positions; others: the rest); a tokenizer's model_max_length is the next
# guess, unless it is the "no limit" sentinel (about 1e30) transformers writes.
CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
FALLBACK_CONTEXT = 2048
COUNT_CHUNK_CHARS = 1 << 18  # a prompt longer than this is counted a piece at a time
log = logging.getLogger(__name__)


def _byte_level_alphabet() -> dict[str, int]:
    """Byte-level BPE's alphabet (GPT-2's, used by most BPE tokenizers): the printable
    Latin-1 bytes stand for themselves and the other 68 bytes for code points 256, 257, ...
    in byte order. Inverting it gives a token's exact bytes, which decoding cannot when a
    token holds part of a UTF-8 character."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    others = [byte for byte in range(256) if byte not in printable]
    alphabet = {chr(byte): byte for byte in printable}
    alphabet.update({chr(256 + i): byte for i, byte in enumerate(others)})
    return alphabet


BYTE_LEVEL = _byte_level_alphabet()


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


@dataclass(frozen=True)
class TokenLogprob:
    """One token and its log-probability; `top` holds the most likely tokens at the
    position of a generated token (the OpenAI `logprobs.content[]` entry)."""

    token: str
    token_bytes: bytes
    logprob: float
    top: tuple[TokenLogprob, ...] = ()


@dataclass(frozen=True)
class LocalCompletion(Completion):
    """A completion with, when they were asked for, one `TokenLogprob` per counted token."""

    logprobs: tuple[TokenLogprob, ...] | None = None


class TokenCount(NamedTuple):
    """How many tokens a prompt is; `exact` False: a lower bound, already over the limit
    the count was asked against (counting stopped there)."""

    tokens: int
    exact: bool


def context_length(config: PreTrainedConfig, tokenizer: PreTrainedTokenizerBase) -> int:
    """The most tokens (prompt and completion together) the model is made for: its
    config's position count, else the tokenizer's declared maximum, else FALLBACK_CONTEXT
    (logged), so that every limit derived from it is finite."""
    for name in CONTEXT_FIELDS:
        value = getattr(_text_config(config), name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    declared = getattr(tokenizer, "model_max_length", None)
    if isinstance(declared, int) and 0 < declared < 1 << 24:
        return declared
    log.warning("the model declares no context length; assuming %d tokens", FALLBACK_CONTEXT)
    return FALLBACK_CONTEXT


def _text_config(config: PreTrainedConfig) -> PreTrainedConfig:
    """The language model's part of a config (itself for a text-only model)."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def first_stop(text: str, stop: Sequence[str]) -> int | None:
    """Where the earliest stop string starts in `text`, None when none occurs."""
    found = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return min(found) if found else None


class HFBackend:
    """Batched `generate()` on a local model; thread-safe (one generation at a time)."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        batch_size: int = 8,
        stop: Sequence[str] = (),
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
        self.stop = tuple(stop)
        self._lock = threading.Lock()
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(root, local_files_only=True)
        except Exception as exc:
            raise PolicyError(f"{root}: cannot load the tokenizer: {exc}") from None
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self._byte_level = _is_byte_level(self.tokenizer)
        torch_dtype: str | torch.dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
        try:
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                root, local_files_only=True, dtype=torch_dtype
            )
        except Exception as exc:
            raise PolicyError(f"{root}: cannot load the model: {exc}") from None
        self.model.to(device)
        self.model.eval()
        self.context_length = context_length(self.model.config, self.tokenizer)
        vocab = getattr(_text_config(self.model.config), "vocab_size", None)
        self.vocab_size = int(vocab or len(self.tokenizer))
        # Counting runs in request threads while a generation may use the tokenizer; a
        # fast tokenizer is not safe to share between threads ("Already borrowed"), so
        # counting has its own copy and its own lock.
        self._counter = copy.deepcopy(self.tokenizer)
        self._count_lock = threading.Lock()
        self._longest_token = max((len(t) for t in self.tokenizer.get_vocab()), default=1)

    def count_tokens(self, text: str, limit: int) -> TokenCount:
        """The tokens `text` is as a prompt (special tokens included, as `generate_prompts`
        encodes it): exact when the text is short or the count stays within `limit`.

        A long text is counted a piece of COUNT_CHUNK_CHARS at a time, and counting stops
        as soon as the pieces are surely over `limit` (each cut may split at most one
        token into as many pieces as the longest token has characters), so tokenising a
        30 MB prompt never holds more than one piece's encoding."""
        with self._count_lock:
            if len(text) <= COUNT_CHUNK_CHARS:
                return TokenCount(self._count(text, special=True), exact=True)
            total = self._count("", special=True)
            for cut, start in enumerate(range(0, len(text), COUNT_CHUNK_CHARS)):
                total += self._count(text[start : start + COUNT_CHUNK_CHARS], special=False)
                surely = total - cut * self._longest_token
                if surely > limit:
                    return TokenCount(surely, exact=False)
            return TokenCount(self._count(text, special=True), exact=True)

    def _count(self, text: str, special: bool) -> int:
        return len(self._counter(text, add_special_tokens=special)["input_ids"])

    def logits_bytes(self, n: int, max_new_tokens: int) -> int:
        """The memory the raw logits of one batch take when log-probabilities are asked:
        float32 per vocabulary entry per step per row, held by `generate` and once more
        when stacked."""
        rows = min(n, self.batch_size)
        return 2 * 4 * rows * max_new_tokens * self.vocab_size

    def render(self, messages: list[dict[str, str]]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        return "\n\n".join(m["content"] for m in messages)

    def generate_prompts(
        self,
        prompts: list[str],
        params: SamplingParams,
        *,
        stop: Sequence[str] | None = None,
        top_logprobs: int | None = None,
    ) -> list[LocalCompletion]:
        """One completion per prompt string, in batches of `batch_size`.

        `stop` (default: the back-end's own) ends a completion at the earliest stop string,
        which is cut off. `top_logprobs` None asks for no log-probabilities; 0 or more asks
        for the sampled tokens' and that many alternatives at each position (the raw logits
        of every step are then kept until the batch ends, so ask only when needed)."""
        stops = self.stop if stop is None else tuple(stop)
        out: list[LocalCompletion] = []
        with self._lock:
            if params.sampling_seed is not None:
                self.torch.manual_seed(params.sampling_seed)
            for i in range(0, len(prompts), self.batch_size):
                chunk = prompts[i : i + self.batch_size]
                out.extend(self._generate_chunk(chunk, params, stops, top_logprobs))
        return out

    def _generate_kwargs(
        self, params: SamplingParams, stop: tuple[str, ...], logits: bool
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_new_tokens,
            "pad_token_id": self.tokenizer.pad_token_id,
            "return_dict_in_generate": True,
            "output_logits": logits,
        }
        if stop:
            kwargs.update(stop_strings=list(stop), tokenizer=self.tokenizer)
        if params.temperature > 0:
            kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p)
        else:
            kwargs.update(do_sample=False)
        return kwargs

    def _generate_chunk(
        self,
        chunk: list[str],
        params: SamplingParams,
        stop: tuple[str, ...],
        top_logprobs: int | None,
    ) -> list[LocalCompletion]:
        torch = self.torch
        enc = self.tokenizer(chunk, return_tensors="pt", padding=True).to(self.device)
        # No position past the model's context: a longer `max_new_tokens` (the eval default
        # is a whole answer's worth) is cut to what fits, and such a row ends "length". The
        # server refuses such requests before they get here.
        room = self.context_length - int(enc["input_ids"].shape[1])
        if room < 1:
            raise PolicyError(
                f"the prompt is {enc['input_ids'].shape[1]} tokens, the model's whole context "
                f"({self.context_length}); no room to answer"
            )
        params = replace(params, max_new_tokens=min(params.max_new_tokens, room))
        kwargs = self._generate_kwargs(params, stop, logits=top_logprobs is not None)
        start = time.monotonic()
        with torch.no_grad():
            gen = self.model.generate(**enc, **kwargs)
        latency = (time.monotonic() - start) / len(chunk)
        new = gen.sequences[:, enc["input_ids"].shape[1] :]
        steps = torch.stack(gen.logits, dim=1) if top_logprobs is not None else None
        out = []
        for row, (ids, mask) in enumerate(zip(new.tolist(), enc["attention_mask"], strict=True)):
            n_tokens, text, finish = self._finish(ids, stop)
            logprobs = None
            if steps is not None and top_logprobs is not None:
                logprobs = self._logprobs(steps[row, :n_tokens], ids[:n_tokens], top_logprobs)
            out.append(
                LocalCompletion(
                    text=text,
                    prompt_tokens=int(mask.sum()),
                    completion_tokens=n_tokens,
                    finish_reason=finish,
                    latency_s=latency,
                    logprobs=logprobs,
                )
            )
        return out

    def _finish(self, ids: list[int], stop: tuple[str, ...]) -> tuple[int, str, str]:
        """The tokens one generated row counts, its text and its finish reason: "stop" at
        the end-of-sequence token, at padding (the row ended while others went on) or at a
        stop string, which is cut off with what follows; "length" otherwise."""
        eos, pad = self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
        n_tokens, finish = len(ids), "length"
        if eos is not None and eos in ids:
            n_tokens, finish = ids.index(eos) + 1, "stop"
        elif pad is not None and pad != eos and pad in ids:
            n_tokens, finish = ids.index(pad), "stop"
        text = self._decode(ids[:n_tokens])
        cut = first_stop(text, stop)
        if cut is None:
            return n_tokens, text, finish
        return self._tokens_through_stop(ids[:n_tokens], stop), text[:cut], "stop"

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def _tokens_through_stop(self, ids: list[int], stop: tuple[str, ...]) -> int:
        """The fewest leading tokens whose text holds a stop string: the tokens generated up
        to and including the one that completed it (a binary search, a few decodes)."""
        low, high = 1, len(ids)
        while low < high:
            mid = (low + high) // 2
            if first_stop(self._decode(ids[:mid]), stop) is None:
                low = mid + 1
            else:
                high = mid
        return high

    def _logprobs(
        self, logits: torch.Tensor, ids: list[int], top: int
    ) -> tuple[TokenLogprob, ...]:
        """Each token's log-probability under the model and the `top` most likely tokens at
        its position, from the raw logits of the steps that produced them."""
        logp = logits.float().log_softmax(dim=-1)
        chosen = logp.gather(1, self.torch.tensor(ids, device=logp.device)[:, None])[:, 0]
        best = logp.topk(top, dim=-1) if top > 0 else None
        entries = []
        for pos, token_id in enumerate(ids):
            alternatives: tuple[TokenLogprob, ...] = ()
            if best is not None:
                pairs = zip(best.indices[pos].tolist(), best.values[pos].tolist(), strict=True)
                alternatives = tuple(self._token(i, lp) for i, lp in pairs)
            entries.append(self._token(token_id, float(chosen[pos]), alternatives))
        return tuple(entries)

    def _token(
        self, token_id: int, logprob: float, top: tuple[TokenLogprob, ...] = ()
    ) -> TokenLogprob:
        raw = token_bytes(self.tokenizer, token_id, self._byte_level)
        return TokenLogprob(token_text(raw), raw, logprob, top)

    def generate(
        self, messages: list[dict[str, str]], n: int, params: SamplingParams
    ) -> list[Completion]:
        return list(self.generate_prompts([self.render(messages)] * n, params))


def _is_byte_level(tokenizer: PreTrainedTokenizerBase) -> bool:
    """Whether the tokenizer's pieces are written in the byte-level alphabet."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return type(getattr(backend, "decoder", None)).__name__ == "ByteLevel"


def token_bytes(tokenizer: PreTrainedTokenizerBase, token_id: int, byte_level: bool) -> bytes:
    """A token's exact bytes: special tokens by name, byte-level and byte-fallback pieces
    byte for byte, anything else through the decoder."""
    piece = tokenizer.convert_ids_to_tokens(token_id)
    if token_id in tokenizer.all_special_ids:
        return str(piece).encode()
    if byte_level and piece and all(ch in BYTE_LEVEL for ch in piece):
        return bytes(BYTE_LEVEL[ch] for ch in piece)
    fallback = BYTE_FALLBACK.fullmatch(str(piece))
    if fallback:
        return bytes([int(fallback.group(1), 16)])
    return tokenizer.decode([token_id]).encode()


def token_text(raw: bytes) -> str:
    """A token as text: itself when its bytes are whole UTF-8, else `bytes:\\xe2\\x80` (the
    OpenAI spelling), so that two different partial tokens never read the same."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(f"\\x{b:02x}" for b in raw)
