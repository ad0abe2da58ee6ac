"""`asmopt serve MODEL_DIR`: an OpenAI-compatible HTTP server around the local back-end.

It exists so models that vLLM cannot serve (our looped model among them) are evaluated
through the same HTTP path as any served model, and so tests exercise that path for real on
loopback. Endpoints: GET /v1/models (the model's context as `max_model_len`, as vLLM lists
it), POST /v1/chat/completions, POST /v1/completions, GET /health (also how many requests
generate and wait). Generation is serialised (one batch
at a time); `n` > 1 is generated as one batch.

Every parameter is either honoured or refused with a 400 naming it, never silently ignored:
`n`, `temperature`, `top_p`, `max_tokens` / `max_completion_tokens`, `seed`, `stop` (a
string or up to 4; the text ends before the earliest, finish_reason "stop") and `logprobs`
(chat: `logprobs` + `top_logprobs`; completions: `logprobs` 0..5) are honoured; parameters
that only change nothing at one value (`presence_penalty` 0, `tools` [], `stream` false,
...) are accepted at that value; anything else is refused. Streaming is not supported.
A first model to try: `asmopt.train.tiny.build_tiny_model` (README, "Language models").

This module is the OpenAI side (requests, limits, admission, answers); `serve_asgi.py` is
the HTTP side: a Starlette application served by uvicorn (its h11 protocol, on one event
loop in one thread); `server.py` is the server a user starts (`ModelServer`: the socket
and the thread around the application). `import asmopt.policies.serve` needs neither
Starlette nor uvicorn. On top of uvicorn come these guarantees, so
that no client, however many or however malformed, kills the server or is dropped without
an answer:

- The listen backlog is LISTEN_BACKLOG (the kernel may cap it at net.core.somaxconn), so a
  burst of connections waits to be accepted instead of being reset.
- A request that arrives while more than `max_connections` connections are open is answered
  503 with Retry-After, and its connection closed, before a byte of its body is read.
- A request line and headers must arrive whole within `read_timeout_s` of their first byte
  (or of the connection opening), or they are answered 408 and the connection closed, and
  a head still unfinished past MAX_HEAD_BYTES is a 400 (h11's bound on what it buffers):
  a client trickling a head holds one connection slot for that long at most, and never a
  generation slot. A body must arrive whole within `read_timeout_s` too (408), a client
  that stops reading its answer for that long is dropped, and an idle keep-alive
  connection is closed after it. A client that half-closes after its request still gets
  its answer.
- A connection ends with a lingering close (half-close, then drop what the client still
  sends for up to LINGER_S), so an answer written before the body was read (a 413) reaches
  the client instead of being destroyed by a reset. "100 Continue" is said only to a body
  that will be read: uvicorn says it when the application first reads the body, and every
  refusal is answered before that.
- Limits per request derive from the model's context C: the body may be at most
  BODY_BASE + BODY_BYTES_PER_TOKEN * C bytes (never over MAX_BODY), checked from
  Content-Length before a byte of it is read; the prompt is counted in tokens (in pieces,
  stopping once over C) before anything is generated, and prompt tokens + max_tokens over
  C is a 400 naming both numbers (a missing max_tokens is DEFAULT_MAX_TOKENS or what fits,
  whichever is less); log-probabilities that would hold more than LOGPROB_BUDGET bytes of
  logits are refused. So one request's memory follows C, not what the client sends.
- At most `max_concurrent` requests generate at once and `max_queue` more wait, at most
  `queue_timeout_s`; any other valid request is answered 429 with Retry-After in the OpenAI
  error shape (a wait that times out: 503), never queued without bound. Generation, and
  the work before it (parsing, rendering and counting the prompt), runs on threads, never
  on the event loop, so /health and every refusal are answered while a batch generates.
- Every malformed request (bad JSON, a wrong type, an integer out of range such as a seed
  outside 64 bits, an unknown parameter, an unknown method: 405 with Allow) is a 4xx in
  the OpenAI error shape; only a failure of our own is a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from asmopt.policies.hf_local import HFBackend, LocalCompletion, TokenCount, TokenLogprob
from asmopt.policies.llm import SamplingParams

log = logging.getLogger(__name__)
MAX_BODY = 32 << 20  # whatever the context: no body is larger
# A body may hold this many bytes per token of the context, plus a fixed allowance for the
# JSON around the text: generous, since one token can be a long word, or a character that
# JSON escapes to 6 or 12 bytes (\ud83d\ude00).
BODY_BASE = 64 << 10
BODY_BYTES_PER_TOKEN = 64
MAX_HEAD_BYTES = 64 << 10  # an unfinished request head: the standard library's line limit
MAX_STOP = 4  # as in the OpenAI API
DEFAULT_MAX_TOKENS = 256
LISTEN_BACKLOG = 1024
LINGER_S = 5.0
STOP_GRACE_S = 5  # stop(): how long requests still being answered may take to finish
START_TIMEOUT_S = 30.0
LOGPROB_BUDGET = 4 << 30
SEED_RANGE = (-(1 << 63), (1 << 64) - 1)  # what torch.manual_seed takes: 64 bits either way
ROUTES = {
    "/v1/models": "GET",
    "/models": "GET",
    "/health": "GET",
    "/v1/chat/completions": "POST",
    "/v1/completions": "POST",
}
ANY_ROUTE = "GET, POST"  # what Allow names on a path that is no route


@dataclass(frozen=True)
class ServeLimits:
    """How much the server takes on at once (see the module docstring for what each bounds).

    One request generating at a time is the default because the back-end generates one batch
    at a time anyway; a second would only wait on it, so it is counted as waiting."""

    max_concurrent: int = 1
    max_queue: int = 64
    max_connections: int = 128
    read_timeout_s: float = 30.0
    queue_timeout_s: float = 600.0


def body_cap(context: int) -> int:
    """The largest request body a model of `context` tokens is sent (bytes)."""
    return min(MAX_BODY, BODY_BASE + BODY_BYTES_PER_TOKEN * context)


class ApiError(Exception):
    """A request answered with an error in the OpenAI shape instead of a completion: a 4xx
    the client caused, or a 5xx (busy, a failure of ours). `close` ends the connection after
    the answer, for an answer given before the body was read (its end is unknown)."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        kind: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.param = param
        self.status = status
        self.code = code
        self.kind = kind
        self.headers = headers or {}
        self.close = close

    def payload(self) -> dict[str, Any]:
        return error_payload(str(self), self.kind, self.param, self.code)


# Parameters of the OpenAI API this server cannot act on, accepted only at the values that
# change nothing (null always means the default too), so a client that spells out the
# defaults still works and one that asks for more hears so.
NEUTRAL: dict[str, tuple[Any, ...]] = {
    "presence_penalty": (0,),
    "frequency_penalty": (0,),
    "logit_bias": ({},),
}
CHAT_NEUTRAL: dict[str, tuple[Any, ...]] = {
    **NEUTRAL,
    "tools": ([],),
    "functions": ([],),
    "tool_choice": ("none", "auto"),
    "function_call": ("none", "auto"),
    "parallel_tool_calls": (True, False),  # means nothing without tools
    "response_format": ({"type": "text"},),
    "modalities": (["text"],),
    "store": (False,),
}
COMPLETION_NEUTRAL: dict[str, tuple[Any, ...]] = {
    **NEUTRAL,
    "echo": (False,),
    "best_of": (1,),
    "suffix": ("",),
}


# Request bodies, validated field by field; unknown fields are refused before these models
# see the body (`_parse`). Null means "the default", as in the OpenAI API; a wrong type is a
# 400 naming the field.
def _text_only(text: str) -> str:
    """`text` when it is text: JSON can spell a lone UTF-16 surrogate ("\\ud800"), which no
    tokenizer encodes, so it is refused here as the client's error, not found later as ours."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"holds a lone surrogate at character {exc.start}, which is not text"
        ) from None
    return text


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "developer", "user", "assistant"]
    content: str

    @field_validator("content", mode="before")
    @classmethod
    def _text(cls, value: object) -> str:
        """A string, or a list of text parts (joined); images and audio cannot be read."""
        if isinstance(value, str):
            return _text_only(value)
        if isinstance(value, list) and all(
            isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            for p in value
        ):
            return _text_only("".join(p["text"] for p in value))
        raise ValueError("must be a string or a list of text parts")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: StrictStr | None = None
    n: Annotated[StrictInt, Field(ge=1, le=64)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2, strict=True)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1, strict=True)] | None = None
    max_tokens: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    seed: Annotated[StrictInt, Field(ge=SEED_RANGE[0], le=SEED_RANGE[1])] | None = None
    stream: StrictBool | None = None
    stop: tuple[str, ...] = ()
    user: StrictStr | None = None  # an end-user id: nothing to act on

    @field_validator("stop", mode="before")
    @classmethod
    def _stop(cls, value: object) -> tuple[str, ...]:
        """A string or a list of up to 4 non-empty strings, as in the OpenAI API."""
        if value is None:
            return ()
        stops = [value] if isinstance(value, str) else value
        if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
            raise ValueError("must be a non-empty string or a list of non-empty strings")
        if len(stops) > MAX_STOP:
            raise ValueError(f"at most {MAX_STOP} stop sequences, got {len(stops)}")
        return tuple(_text_only(s) for s in stops)

    def sampling(self, max_new_tokens: int) -> SamplingParams:
        return SamplingParams(
            temperature=1.0 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            max_new_tokens=max_new_tokens,
            sampling_seed=self.seed,  # the API's `seed` is the sampling seed
        )

    def asked_tokens(self) -> tuple[str, int | None]:
        """The completion-length parameter the client set (its name and value), or
        ("max_tokens", None) when it set none."""
        return "max_tokens", self.max_tokens

    def top_logprobs_asked(self) -> int | None:
        """None: no log-probabilities; k >= 0: the sampled tokens' and k alternatives."""
        return None


class _ChatRequest(_Request):
    messages: Annotated[list[_Message], Field(min_length=1)]
    max_completion_tokens: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    logprobs: StrictBool | None = None
    top_logprobs: Annotated[StrictInt, Field(ge=0, le=20)] | None = None

    def asked_tokens(self) -> tuple[str, int | None]:
        if self.max_completion_tokens is not None:
            return "max_completion_tokens", self.max_completion_tokens
        return super().asked_tokens()

    def top_logprobs_asked(self) -> int | None:
        if not self.logprobs:
            if self.top_logprobs is not None:
                raise ApiError(
                    "top_logprobs needs logprobs: true", "top_logprobs", code="invalid_value"
                )
            return None
        return self.top_logprobs or 0


class _CompletionRequest(_Request):
    prompt: Annotated[StrictStr, Field(min_length=1)]
    logprobs: Annotated[StrictInt, Field(ge=0, le=5)] | None = None

    def top_logprobs_asked(self) -> int | None:
        return self.logprobs


def _refuse_unsupported(body: dict[str, Any], model: type[_Request]) -> dict[str, Any]:
    """The body without the parameters at their do-nothing values; a 400 naming the first
    parameter this server does not know or cannot act on at the value asked."""
    neutral = CHAT_NEUTRAL if model is _ChatRequest else COMPLETION_NEUTRAL
    kept = {}
    for key, value in body.items():
        if key in model.model_fields:
            kept[key] = value
        elif key in neutral:
            if value is not None and value not in neutral[key]:
                allowed = " or ".join(json.dumps(v) for v in neutral[key])
                raise ApiError(
                    f"{key}={json.dumps(value)[:100]} is not supported by asmopt serve "
                    f"(only {allowed} or null)",
                    key,
                    code="unsupported_value",
                )
        else:
            raise ApiError(
                f"unsupported parameter: {key!r} is not supported by asmopt serve",
                str(key),
                code="unsupported_parameter",
            )
    return kept


def _parse(model: type[_Request], body: dict[str, Any]) -> _Request:
    try:
        request = model.model_validate(_refuse_unsupported(body, model))
    except ValidationError as exc:
        err = exc.errors()[0]
        param = ".".join(str(p) for p in err["loc"]) or None
        message = err["msg"].removeprefix("Value error, ")
        raise ApiError(f"{param}: {message} (got {err.get('input')!r})"[:300], param) from None
    if request.stream:
        raise ApiError(
            "streaming is not supported by asmopt serve; send stream: false",
            "stream",
            code="unsupported_value",
        )
    return request


def fit_tokens(request: _Request, prompt: TokenCount, context: int, prompt_param: str) -> int:
    """How many tokens to generate: what the client asked for, or when it asked for none,
    DEFAULT_MAX_TOKENS or what fits, whichever is less. A prompt that leaves no room, or a
    prompt and max_tokens over the context, is a 400 naming both numbers, before any
    generation (a model run past its context answers garbage after a long time)."""
    name, asked = request.asked_tokens()
    has = f"{prompt.tokens}" if prompt.exact else f"at least {prompt.tokens}"
    if prompt.tokens >= context:
        raise ApiError(
            f"this model's context is {context} tokens, and the prompt alone has {has} "
            "tokens; shorten the prompt",
            prompt_param,
            code="context_length_exceeded",
        )
    room = context - prompt.tokens
    if asked is None:
        return min(DEFAULT_MAX_TOKENS, room)
    if asked > room:
        raise ApiError(
            f"this model's context is {context} tokens, but the prompt has {has} tokens and "
            f"{name} asks for {asked} more ({prompt.tokens + asked} in all); ask for at most "
            f"{room}",
            name,
            code="context_length_exceeded",
        )
    return asked


def check_logits_memory(backend: HFBackend, n: int, max_new_tokens: int) -> None:
    """Log-probabilities keep every step's logits of a batch until it ends: refuse a request
    whose logits alone would take more than LOGPROB_BUDGET, naming the numbers to lower."""
    need = backend.logits_bytes(n, max_new_tokens)
    if need > LOGPROB_BUDGET:
        raise ApiError(
            f"log-probabilities for {max_new_tokens} tokens x {min(n, backend.batch_size)} "
            f"choices at once over a {backend.vocab_size}-token vocabulary would hold "
            f"{need >> 20} MiB of logits (at most {LOGPROB_BUDGET >> 20} MiB); ask for fewer "
            "tokens or choices",
            "logprobs",
            code="invalid_value",
        )


def declared_length(headers: Mapping[str, str], context: int) -> int:
    """The body's declared length, refused before a byte of the body is read when it is
    missing, not a number, empty or over the cap this model's context sets. `headers` is
    looked up case-insensitively (Starlette's `Headers`)."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        raise ApiError("chunked request bodies are not supported", status=411, close=True)
    raw_length = headers.get("content-length")
    if raw_length is None:
        raise ApiError("a Content-Length header is required", status=411, close=True)
    try:
        length = int(raw_length.strip())
    except ValueError:  # the body's end is unknown: end the connection
        raise ApiError(f"Content-Length is not a number: {raw_length[:40]!r}", close=True) from None
    if length <= 0:
        raise ApiError("the request body is empty; send a JSON object")
    cap = body_cap(context)
    if length > cap:
        raise ApiError(
            f"the request body of {length} bytes is over this server's cap of {cap} "
            f"bytes ({BODY_BYTES_PER_TOKEN} bytes per token of the model's "
            f"{context}-token context, at most {MAX_BODY})",
            status=413,
            code="request_too_large",
            close=True,
        )
    return length


def _json_object(data: bytes) -> dict[str, Any]:
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):  # ValueError: also an int over 4300 digits
        raise ApiError("request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError("request body must be a JSON object")
    return body


@dataclass(frozen=True)
class Job:
    """A request checked against every limit and ready to generate."""

    prompts: list[str]
    request: _Request
    max_new_tokens: int
    top_logprobs: int | None
    chat: bool


def plan(backend: HFBackend, model_name: str, data: bytes, chat: bool) -> Job:
    """The body of a completion request, parsed and checked (the model asked for, every
    field, the prompt's tokens against the context, the logits' memory): a Job, or an
    ApiError naming what to change. CPU work (a long prompt is tokenised): run off the
    event loop."""
    body = _json_object(data)
    asked = body.get("model")
    if isinstance(asked, str) and asked != model_name:  # before the other fields
        raise ApiError(
            f"model {asked!r} not found; this server serves {model_name!r}",
            "model",
            status=404,
            kind="model_not_found",
        )
    request = _parse(_ChatRequest if chat else _CompletionRequest, body)
    top_logprobs = request.top_logprobs_asked()
    if isinstance(request, _ChatRequest):
        prompt = backend.render([m.model_dump() for m in request.messages])
    else:
        assert isinstance(request, _CompletionRequest)
        prompt = request.prompt
    context = backend.context_length
    counted = backend.count_tokens(prompt, context)
    max_new = fit_tokens(request, counted, context, "messages" if chat else "prompt")
    if top_logprobs is not None:
        check_logits_memory(backend, request.n or 1, max_new)
    return Job([prompt] * (request.n or 1), request, max_new, top_logprobs, chat)


def generate(backend: HFBackend, job: Job) -> list[LocalCompletion]:
    """The job's completions (blocking: run off the event loop); a failure of the back-end
    is a 500 naming it, and logged."""
    try:
        return backend.generate_prompts(
            job.prompts,
            job.request.sampling(job.max_new_tokens),
            stop=job.request.stop,
            top_logprobs=job.top_logprobs,
        )
    except Exception as exc:  # reported to the client as a server error, logged here
        log.exception("generation failed")
        raise ApiError(
            f"generation failed: {type(exc).__name__}: {exc}", status=500, kind="server_error"
        ) from exc


class Admission:
    """Who may generate: `max_concurrent` requests at once and `max_queue` more waiting;
    any other is answered 429 at once, so a burst gets answers (and a Retry-After) instead
    of a pile of waiting requests each holding a parsed prompt. Retry-After is the recent
    mean generation time times the requests ahead, per generating slot.

    It lives on the server's event loop (every method is called there), so its counts need
    no lock and a waiting request holds no thread."""

    def __init__(self, limits: ServeLimits) -> None:
        self.limits = limits
        self._running = asyncio.Semaphore(limits.max_concurrent)
        self.generating = 0
        self.waiting = 0
        self._mean_s = 1.0

    def state(self) -> dict[str, int]:
        """What /health reports."""
        return {"generating": self.generating, "waiting": self.waiting}

    def retry_after(self) -> str:
        ahead = self.generating + self.waiting
        return str(max(1, math.ceil(self._mean_s * ahead / self.limits.max_concurrent)))

    def busy(self, status: int, why: str, close: bool = False) -> ApiError:
        """A 429 (the queue is full) or a 503 (no room), in the OpenAI shape."""
        return ApiError(
            f"asmopt serve is busy ({why}); retry after the Retry-After seconds",
            status=status,
            code="rate_limit_exceeded" if status == 429 else "server_busy",
            kind="rate_limit_error" if status == 429 else "server_error",
            headers={"Retry-After": self.retry_after()},
            close=close,
        )

    async def _wait_for_slot(self) -> None:
        self.waiting += 1
        try:
            async with asyncio.timeout(self.limits.queue_timeout_s):
                await self._running.acquire()
        except TimeoutError:
            raise self.busy(503, f"waited {self.limits.queue_timeout_s:g} s for a slot") from None
        finally:
            self.waiting -= 1

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a generating slot for the `async with` body; a 429 when none is free and the
        queue is full, a 503 when the wait outlasts `queue_timeout_s`."""
        limits = self.limits
        if self.generating + self.waiting >= limits.max_concurrent + limits.max_queue:
            raise self.busy(
                429, f"{limits.max_concurrent} generating and {limits.max_queue} waiting"
            )
        await self._wait_for_slot()
        self.generating += 1
        start = time.monotonic()
        try:
            yield
        finally:
            self.generating -= 1
            self._running.release()
            self._mean_s = 0.8 * self._mean_s + 0.2 * (time.monotonic() - start)


# Response bodies in the OpenAI shape.
def _token_json(entry: TokenLogprob) -> dict[str, Any]:
    return {"token": entry.token, "logprob": entry.logprob, "bytes": list(entry.token_bytes)}


def _chat_logprobs(entries: tuple[TokenLogprob, ...]) -> dict[str, Any]:
    """`choices[i].logprobs` of a chat completion: one entry per token with its alternatives."""
    content = [{**_token_json(e), "top_logprobs": [_token_json(t) for t in e.top]} for e in entries]
    return {"content": content, "refusal": None}


def _text_logprobs(entries: tuple[TokenLogprob, ...]) -> dict[str, Any]:
    """`choices[i].logprobs` of a legacy completion: parallel lists; each position's top
    tokens include the sampled one, and text offsets count from the completion's start."""
    offsets, at = [], 0
    for e in entries:
        offsets.append(at)
        at += len(e.token)
    return {
        "tokens": [e.token for e in entries],
        "token_logprobs": [e.logprob for e in entries],
        "top_logprobs": [{t.token: t.logprob for t in (*e.top, e)} for e in entries],
        "text_offset": offsets,
    }


def _choice(index: int, out: LocalCompletion, chat: bool) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": index, "finish_reason": out.finish_reason}
    if chat:
        choice["message"] = {"role": "assistant", "content": out.text, "refusal": None}
        choice["logprobs"] = None if out.logprobs is None else _chat_logprobs(out.logprobs)
    else:
        choice["text"] = out.text
        choice["logprobs"] = None if out.logprobs is None else _text_logprobs(out.logprobs)
    return choice


def completion_payload(model_name: str, outs: list[LocalCompletion], chat: bool) -> dict[str, Any]:
    prompt_tokens = outs[0].prompt_tokens if outs else 0
    completion_tokens = sum(c.completion_tokens for c in outs)
    return {
        "id": f"asmopt-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": model_name,
        "choices": [_choice(i, c, chat) for i, c in enumerate(outs)],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error_payload(
    message: str,
    kind: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
