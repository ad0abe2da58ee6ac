"""OpenAI-compatible HTTP back-end (vLLM, SGLang, llama.cpp server, hosted APIs, `asmopt serve`).

Only the standard library is used. Requests share a concurrency limit, retry with
exponential backoff on 429, 5xx and connection resets, and time out. Configuration errors
(unreachable server, 401/403, unknown model) are raised as PolicyError at start-up by
`preflight()`, so a run stops before it begins instead of scoring every program as failed.
A request the server refuses for the request's own reasons (400, 413, 422: a parameter it
cannot honour, a prompt over the model's context) is a `RequestRefused` (a PolicyError: the
user's to fix, so an evaluation stops with one line instead of recording an infra_error a
rerun would repeat), naming the parameter from the OpenAI error body. `stop` strings, when
set, are sent with every request; the OpenAI API allows at most 4.

An answer's budget fits the model: `max_tokens` is never more than the model's context C
leaves after the prompt. C comes from `/v1/models` where the server says it (vLLM's and
`asmopt serve`'s `max_model_len`; `context_length`, `context_window`), the prompt's tokens
from the server's own refusal when a request does not fit (its "context is C ... the prompt
has N tokens" numbers, as vLLM, OpenAI and `asmopt serve` word them). Such a request is sent
again at once with `max_tokens` = C - N, and C - N is remembered for that prompt, so its
other samples are sent at that size. A prompt that alone fills the context is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from asmopt.policies.llm import Completion, PolicyError, SamplingParams

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MAX_STOP = 4
# Where servers say a model's context in their /v1/models entries: vLLM and `asmopt serve`
# (`max_model_len`), OpenRouter and LM Studio style listings.
CONTEXT_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
# How servers word a request over the context: the context C, and the prompt's tokens N.
_CONTEXT_RE = re.compile(r"(?:maximum )?context(?: length)? is (\d+)", re.I)
_PROMPT_RES = (
    re.compile(r"prompt (?:alone )?has (?:at least )?(\d+) tokens", re.I),  # asmopt serve
    re.compile(r"(\d+) in the messages", re.I),  # vLLM (older), OpenAI
    re.compile(r"(\d+) (?:input|prompt) tokens", re.I),  # vLLM (newer)
)

log = logging.getLogger(__name__)


class TransientError(RuntimeError):
    """Retries were exhausted on a temporary failure: the sample is an infra_error."""


class RequestRefused(PolicyError):
    """The server refused a request for the request's own reasons (HTTP 400, 413 or 422):
    sent again it is refused again, so it is the user's to fix (`--max-tokens`, the
    template, a model with a longer context), never an infra_error."""

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail  # what the server said, in a line

    def context_numbers(self) -> tuple[int | None, int | None]:
        """(the model's context, the prompt's tokens) as the refusal states them, or None
        for a number it does not state."""
        context = _CONTEXT_RE.search(self.detail)
        prompt = next((m for r in _PROMPT_RES if (m := r.search(self.detail))), None)
        return (
            int(context.group(1)) if context else None,
            int(prompt.group(1)) if prompt else None,
        )


@dataclass
class OpenAIBackend:
    base_url: str
    model: str
    api: str = "chat"  # "chat" -> /chat/completions, "completions" -> /completions
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 600.0
    max_retries: int = 5
    backoff_s: float = 1.0
    concurrency: int = 8
    stop: tuple[str, ...] = ()
    _sem: threading.Semaphore = field(init=False, repr=False)
    usage: dict[str, int] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
    )
    _usage_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # The model's context in tokens: from /v1/models (`preflight`), else from a refusal.
    context: int | None = None
    # Tokens an answer may have after each prompt seen refused (a hash of it -> C - N).
    _room: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise PolicyError(
                f"--base-url must start with http:// or https://, got {self.base_url!r}"
            )
        if self.api not in ("chat", "completions"):
            raise PolicyError(f"api must be 'chat' or 'completions', got {self.api!r}")
        if self.concurrency < 1:
            raise PolicyError("concurrency must be at least 1")
        self.stop = tuple(self.stop)
        if len(self.stop) > MAX_STOP or not all(self.stop):
            raise PolicyError(f"stop: at most {MAX_STOP} non-empty strings, got {self.stop!r}")
        self.base_url = self.base_url.rstrip("/")
        self._sem = threading.Semaphore(self.concurrency)

    # ------------------------------------------------------------------ HTTP
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None, retries: int | None = None
    ) -> Any:
        url = f"{self.base_url}{path}"
        data = json.dumps(body).encode() if body is not None else None
        last = ""
        retries = self.max_retries if retries is None else retries
        for attempt in range(retries + 1):
            req = urllib.request.Request(url, data=data, method=method, headers=self._headers())
            try:
                with self._sem, urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                    raw = resp.read()
            except urllib.error.HTTPError as exc:
                detail = server_said(exc.read()[:2000])
                if exc.code in (401, 403):
                    raise PolicyError(
                        f"{url}: authentication failed ({exc.code}); set the API key in "
                        f"${self.api_key_env}. Server said: {detail}"
                    ) from None
                if exc.code == 404:
                    raise PolicyError(
                        f"{url}: not found (404); check --base-url (it usually "
                        f"ends in /v1) and --model. Server said: {detail}"
                    ) from None
                if exc.code not in RETRY_STATUS:
                    raise RequestRefused(
                        f"{url}: the server refused the request (HTTP {exc.code}): {detail}",
                        exc.code,
                        detail,
                    ) from None
                last = f"HTTP {exc.code}: {detail[:200]}"
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                delay = float(retry_after) if retry_after and retry_after.isdigit() else None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                last = f"{type(exc).__name__}: {reason}"
                delay = None
            else:
                try:
                    return json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    last = f"server returned invalid JSON: {raw[:200]!r}"
                    delay = None
            if attempt < retries:
                wait = delay if delay is not None else self.backoff_s * (2**attempt)
                time.sleep(wait * (0.5 + random.random()))  # jitter spreads retries apart
        raise TransientError(f"{url}: gave up after {retries + 1} attempts: {last}")

    def preflight(self) -> None:
        """Fail fast on an unreachable server, a bad key or an unknown model."""
        try:
            listing = self._request("GET", "/models", retries=min(self.max_retries, 2))
        except TransientError as exc:
            raise PolicyError(f"cannot reach the model server: {exc}") from None
        models = (
            [m.get("id") for m in listing.get("data", []) if isinstance(m, dict)]
            if isinstance(listing, dict)
            else []
        )
        if models and self.model not in models:
            raise PolicyError(
                f"model {self.model!r} is not served at {self.base_url}; "
                f"available: {', '.join(map(str, models[:10]))}"
            )
        if self.context is None and isinstance(listing, dict):
            self.context = listed_context(listing, self.model)

    # ------------------------------------------------------------------ generation
    def _one(
        self, messages: list[dict[str, str]], params: SamplingParams, sampling_seed: int | None
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": params.temperature,
            "top_p": params.top_p,
        }
        if sampling_seed is not None:
            body["seed"] = sampling_seed  # the API's name for the sampling seed
        if self.stop:
            body["stop"] = list(self.stop)
        if self.api == "chat":
            body["messages"] = messages
            path = "/chat/completions"
        else:
            body["prompt"] = "\n\n".join(m["content"] for m in messages)
            path = "/completions"
        key = hashlib.sha256(json.dumps([path, messages]).encode()).hexdigest()
        body["max_tokens"] = self._budget(key, params.max_new_tokens)
        start = time.monotonic()
        try:
            resp = self._request("POST", path, body)
        except RequestRefused as exc:
            room = self._room_after(exc, key, body["max_tokens"])
            if room is None:
                raise
            body["max_tokens"] = room
            resp = self._request("POST", path, body)
        latency = time.monotonic() - start
        return self._completion(resp, latency)

    def _budget(self, key: str, asked: int) -> int:
        """`max_tokens` for a prompt: what was asked, cut to what the context leaves after
        it where that is known (a refusal of this prompt), else to the context itself."""
        with self._usage_lock:
            room = self._room.get(key)
        if room is not None:
            return min(asked, room)
        if self.context is not None:
            return max(1, min(asked, self.context - 1))
        return asked

    def _room_after(self, exc: RequestRefused, key: str, sent: int) -> int | None:
        """The `max_tokens` that fits where `exc` says the request was over the model's
        context, remembered for this prompt; None when the refusal was for something else
        (or gives no numbers). A prompt that fills the context alone is refused here."""
        context, prompt = exc.context_numbers()
        if context is None or prompt is None:
            return None
        self.context = context
        room = context - prompt
        if room < 1:
            raise RequestRefused(
                f"the prompt has {prompt} tokens, and model {self.model!r} at "
                f"{self.base_url} has a context of {context}: no room for an answer; use a "
                "model with a longer context, or leave this program out",
                exc.status,
                exc.detail,
            ) from None
        if room >= sent:
            return None
        with self._usage_lock:
            self._room[key] = room
        log.info("max_tokens %d cut to %d: the prompt has %d of the context's %d tokens",
                 sent, room, prompt, context)  # fmt: skip
        return room

    def _completion(self, resp: Any, latency: float) -> Completion:
        try:
            choice = resp["choices"][0]
            text = choice["message"]["content"] if self.api == "chat" else choice["text"]
            if text is None:
                text = ""
            if not isinstance(text, str):
                raise TypeError("content is not a string")
        except (KeyError, IndexError, TypeError) as exc:
            raise TransientError(
                f"malformed response from the server ({exc}): {json.dumps(resp)[:300]}"
            ) from None
        usage = resp.get("usage") or {}
        pt, ct = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        with self._usage_lock:
            self.usage["prompt_tokens"] += pt
            self.usage["completion_tokens"] += ct
            self.usage["requests"] += 1
        return Completion(
            text=text,
            prompt_tokens=pt,
            completion_tokens=ct,
            finish_reason=choice.get("finish_reason"),
            latency_s=latency,
        )

    def generate(
        self, messages: list[dict[str, str]], n: int, params: SamplingParams
    ) -> list[Completion]:
        """n independent requests (not every server supports `n`), with the sampling seeds
        sampling_seed, sampling_seed + 1, ..."""
        results: list[Completion | None] = [None] * n
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                start = params.sampling_seed
                results[i] = self._one(messages, params, None if start is None else start + i)
            except BaseException as exc:  # re-raised below in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return [r for r in results if r is not None]


def listed_context(listing: dict[str, Any], model: str) -> int | None:
    """The context `/v1/models` gives for `model` (CONTEXT_KEYS), or None where it gives
    none."""
    for entry in listing.get("data", []):
        if not isinstance(entry, dict) or entry.get("id") != model:
            continue
        for key in CONTEXT_KEYS:
            value = entry.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def server_said(raw: bytes) -> str:
    """An error body in a line: the OpenAI shape's message and the parameter it names, or
    the start of whatever else the server sent."""
    text = raw.decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
    except (json.JSONDecodeError, AttributeError):
        error = None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return text[:500]
    param = error.get("param")
    return error["message"][:500] + (f" (parameter {param!r})" if param else "")
