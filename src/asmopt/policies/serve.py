"""`asmopt serve MODEL_DIR`: an OpenAI-compatible HTTP server around the local back-end.

It exists so models that vLLM cannot serve (our looped model among them) are evaluated
through the same HTTP path as any served model, and so tests exercise that path for real on
loopback. Endpoints: GET /v1/models, POST /v1/chat/completions, POST /v1/completions,
GET /health (also how many requests generate and wait). Generation is serialised (one batch
at a time); `n` > 1 is generated as one batch.

Every parameter is either honoured or refused with a 400 naming it, never silently ignored:
`n`, `temperature`, `top_p`, `max_tokens` / `max_completion_tokens`, `seed`, `stop` (a
string or up to 4; the text ends before the earliest, finish_reason "stop") and `logprobs`
(chat: `logprobs` + `top_logprobs`; completions: `logprobs` 0..5) are honoured; parameters
that only change nothing at one value (`presence_penalty` 0, `tools` [], `stream` false,
...) are accepted at that value; anything else is refused. Streaming is not supported.
A first model to try: `asmopt.train.tiny.build_tiny_model` (README, "Language models").

It is the standard library's threading HTTP server, with these guarantees added, so that
no client, however many or however malformed, kills it or is dropped without an answer:

- The listen backlog is LISTEN_BACKLOG (the kernel may cap it at net.core.somaxconn), so a
  burst of connections waits to be accepted instead of being reset.
- At most `max_connections` connections are served at once; one more is answered 503 with
  Retry-After at once (as many again at most; beyond that, in a flood, it is closed).
  Every socket read and write has a timeout (`read_timeout_s`), and a body must arrive
  whole within that time, so a slow or silent client cannot hold a thread for longer (the
  request line and headers are bounded per read only: a client trickling them ties up one
  connection slot, not a generation slot). A connection ends with a lingering close
  (half-close, then drop what the client still sends for up to LINGER_S), so an answer
  written before the body was read (a 413) reaches the client instead of being destroyed
  by a reset. "100 Continue" is said only to a body that will be read.
- Limits per request derive from the model's context C: the body may be at most
  BODY_BASE + BODY_BYTES_PER_TOKEN * C bytes (never over MAX_BODY), checked from
  Content-Length before a byte of it is read; the prompt is counted in tokens (in pieces,
  stopping once over C) before anything is generated, and prompt tokens + max_tokens over
  C is a 400 naming both numbers (a missing max_tokens is DEFAULT_MAX_TOKENS or what fits,
  whichever is less); log-probabilities that would hold more than LOGPROB_BUDGET bytes of
  logits are refused. So one request's memory follows C, not what the client sends.
- At most `max_concurrent` requests generate at once and `max_queue` more wait, at most
  `queue_timeout_s`; any other valid request is answered 429 with Retry-After in the OpenAI
  error shape (a wait that times out: 503), never queued without bound.
- Every malformed request (bad JSON, a wrong type, an integer out of range such as a seed
  outside 64 bits, an unknown parameter, an unknown method: 405 with Allow) is a 4xx in
  the OpenAI error shape; only a failure of our own is a 500.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
MAX_STOP = 4  # as in the OpenAI API
DEFAULT_MAX_TOKENS = 256
LISTEN_BACKLOG = 1024
LINGER_S = 5.0
LOGPROB_BUDGET = 4 << 30
SEED_RANGE = (-(1 << 63), (1 << 64) - 1)  # what torch.manual_seed takes: 64 bits either way
ROUTES = {
    "/v1/models": "GET",
    "/models": "GET",
    "/health": "GET",
    "/v1/chat/completions": "POST",
    "/v1/completions": "POST",
}


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


class _BadRequest(Exception):
    """A request this server refuses; becomes a 4xx JSON error in the OpenAI shape."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        kind: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.param = param
        self.status = status
        self.code = code
        self.kind = kind
        self.headers = headers or {}


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
    def _text(cls, value: Any) -> str:
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
    def _stop(cls, value: Any) -> tuple[str, ...]:
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
            seed=self.seed,
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
                raise _BadRequest(
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
                raise _BadRequest(
                    f"{key}={json.dumps(value)[:100]} is not supported by asmopt serve "
                    f"(only {allowed} or null)",
                    key,
                    code="unsupported_value",
                )
        else:
            raise _BadRequest(
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
        raise _BadRequest(f"{param}: {message} (got {err.get('input')!r})"[:300], param) from None
    if request.stream:
        raise _BadRequest(
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
        raise _BadRequest(
            f"this model's context is {context} tokens, and the prompt alone has {has} "
            "tokens; shorten the prompt",
            prompt_param,
            code="context_length_exceeded",
        )
    room = context - prompt.tokens
    if asked is None:
        return min(DEFAULT_MAX_TOKENS, room)
    if asked > room:
        raise _BadRequest(
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
        raise _BadRequest(
            f"log-probabilities for {max_new_tokens} tokens x {min(n, backend.batch_size)} "
            f"choices at once over a {backend.vocab_size}-token vocabulary would hold "
            f"{need >> 20} MiB of logits (at most {LOGPROB_BUDGET >> 20} MiB); ask for fewer "
            "tokens or choices",
            "logprobs",
            code="invalid_value",
        )


class Admission:
    """Who may generate: `max_concurrent` requests at once and `max_queue` more waiting;
    any other is answered 429 at once, so a burst gets answers (and a Retry-After) instead
    of a pile of threads each holding a parsed prompt. Retry-After is the recent mean
    generation time times the requests ahead, per generating slot."""

    def __init__(self, limits: ServeLimits) -> None:
        self.limits = limits
        self._admitted = threading.Semaphore(limits.max_concurrent + limits.max_queue)
        self._running = threading.Semaphore(limits.max_concurrent)
        self._lock = threading.Lock()
        self.generating = 0
        self.waiting = 0
        self._mean_s = 1.0

    def state(self) -> dict[str, int]:
        """What /health reports."""
        with self._lock:
            return {"generating": self.generating, "waiting": self.waiting}

    def retry_after(self) -> str:
        with self._lock:
            ahead = self.generating + self.waiting
            mean = self._mean_s
        return str(max(1, math.ceil(mean * ahead / self.limits.max_concurrent)))

    def _busy(self, status: int, why: str) -> _BadRequest:
        return _BadRequest(
            f"asmopt serve is busy ({why}); retry after the Retry-After seconds",
            status=status,
            code="rate_limit_exceeded" if status == 429 else "server_busy",
            kind="rate_limit_error" if status == 429 else "server_error",
            headers={"Retry-After": self.retry_after()},
        )

    def _count(self, generating: int = 0, waiting: int = 0) -> None:
        with self._lock:
            self.generating += generating
            self.waiting += waiting

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold a generating slot for the `with` body; a 429 when none is free and the
        queue is full, a 503 when the wait outlasts `queue_timeout_s`."""
        if not self._admitted.acquire(blocking=False):
            limits = self.limits
            raise self._busy(
                429, f"{limits.max_concurrent} generating and {limits.max_queue} waiting"
            )
        try:
            self._count(waiting=1)
            got = self._running.acquire(timeout=self.limits.queue_timeout_s)
            self._count(waiting=-1)
            if not got:
                raise self._busy(503, f"waited {self.limits.queue_timeout_s:g} s for a slot")
            self._count(generating=1)
            start = time.monotonic()
            try:
                yield
            finally:
                self._count(generating=-1)
                self._running.release()
                with self._lock:
                    self._mean_s = 0.8 * self._mean_s + 0.2 * (time.monotonic() - start)
        finally:
            self._admitted.release()


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


def _response(model_name: str, outs: list[LocalCompletion], chat: bool) -> dict[str, Any]:
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


def _error_payload(
    message: str,
    kind: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def make_handler(
    backend: HFBackend,
    model_name: str,
    limits: ServeLimits | None = None,
    admission: Admission | None = None,
) -> type[BaseHTTPRequestHandler]:
    limits = limits or ServeLimits()
    gate = admission or Admission(limits)
    context = backend.context_length
    cap = body_cap(context)

    class Handler(BaseHTTPRequestHandler):
        server_version = "asmopt-serve"
        protocol_version = "HTTP/1.1"
        timeout = limits.read_timeout_s  # every read and write of the connection

        def log_message(self, fmt: str, *args: Any) -> None:
            log.info("%s %s", self.address_string(), fmt % args)

        def _send(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _error(
            self,
            status: int,
            message: str,
            kind: str = "invalid_request_error",
            param: str | None = None,
            code: str | None = None,
            headers: dict[str, str] | None = None,
        ) -> None:
            self._send(status, _error_payload(message, kind, param, code), headers)

        def send_error(
            self, code: int, message: str | None = None, explain: str | None = None
        ) -> None:
            """Errors found by the HTTP layer itself (a malformed request line, a header too
            long) are answered in the same JSON shape as every other error."""
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._error(code, message or explain or "bad request")

        def __getattr__(self, name: str) -> Any:
            """`do_PUT`, `do_BREW`, ...: every method without a handler is a 405 naming the
            allowed ones (the standard library answers 501, a server fault, instead)."""
            if name.startswith("do_"):
                return self._not_allowed
            raise AttributeError(name)

        def _path(self) -> str:
            return self.path.rstrip("/") or "/"

        def _not_allowed(self) -> None:
            self.close_connection = True  # a body, if one was sent, is not read
            allowed = ROUTES.get(self._path(), "GET, POST")
            with contextlib.suppress(OSError):
                self._error(
                    405,
                    f"method {self.command} is not allowed on {self.path[:200]}; "
                    f"allowed: {allowed}",
                    code="method_not_allowed",
                    headers={"Allow": allowed},
                )

        def _routed(self, method: str) -> bool:
            """Whether the path takes this method; if not, it is answered (404 or 405)."""
            allowed = ROUTES.get(self._path())
            if allowed is None:
                self.close_connection = True  # a body, if one was sent, is not read
                self._error(404, f"no route {self.path[:200]}")
            elif allowed != method:
                self._not_allowed()
            return allowed == method

        def do_GET(self) -> None:
            try:
                if not self._routed("GET"):
                    return
                if self._path() == "/health":
                    limits_now = {"context": context, "max_body_bytes": cap}
                    self._send(200, {"status": "ok", **gate.state(), **limits_now})
                    return
                model = {"id": model_name, "object": "model", "owned_by": "asmopt"}
                self._send(200, {"object": "list", "data": [model]})
            except OSError:
                self.close_connection = True

        def _content_length(self) -> int:
            """The body's declared length, refused before a byte of the body is read when it
            is missing, not a number, empty or over the cap this model's context sets."""
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                self.close_connection = True
                raise _BadRequest("chunked request bodies are not supported", status=411)
            raw_length = self.headers.get("Content-Length")
            if raw_length is None:
                self.close_connection = True
                raise _BadRequest("a Content-Length header is required", status=411)
            try:
                length = int(raw_length.strip())
            except ValueError:
                self.close_connection = True  # the body's end is unknown: end the connection
                raise _BadRequest(f"Content-Length is not a number: {raw_length[:40]!r}") from None
            if length <= 0:
                raise _BadRequest("the request body is empty; send a JSON object")
            if length > cap:
                self.close_connection = True
                raise _BadRequest(
                    f"the request body of {length} bytes is over this server's cap of {cap} "
                    f"bytes ({BODY_BYTES_PER_TOKEN} bytes per token of the model's "
                    f"{context}-token context, at most {MAX_BODY})",
                    status=413,
                    code="request_too_large",
                )
            return length

        def handle_expect_100(self) -> bool:
            """Say "100 Continue" only to a body this server will read: a client that asks
            first is answered (413, 405, ...) without sending a body that would be refused."""
            if ROUTES.get(self._path()) != self.command:
                return True  # the method handler answers 404 or 405
            try:
                self._content_length()
            except _BadRequest:
                return True  # do_POST meets the same refusal and answers it
            return super().handle_expect_100()

        def _read_body(self, length: int) -> bytearray:
            """`length` bytes, which must all arrive within the read timeout (a client that
            sends one byte now and then cannot hold this thread)."""
            deadline = time.monotonic() + limits.read_timeout_s
            data = bytearray()
            while len(data) < length:
                try:
                    if time.monotonic() > deadline:
                        raise TimeoutError
                    piece = self.rfile.read1(min(length - len(data), 1 << 16))
                except TimeoutError:
                    self.close_connection = True
                    raise _BadRequest(
                        f"the request body did not arrive within {limits.read_timeout_s:g} s",
                        status=408,
                        code="timeout",
                    ) from None
                if not piece:
                    self.close_connection = True
                    raise _BadRequest("the request body ended before Content-Length bytes")
                data += piece
            return data

        def _body(self) -> dict[str, Any]:
            data = self._read_body(self._content_length())
            try:
                body = json.loads(data)
            except (ValueError, RecursionError):  # ValueError: also an int over 4300 digits
                raise _BadRequest("request body is not valid JSON") from None
            if not isinstance(body, dict):
                raise _BadRequest("request body must be a JSON object")
            return body

        def do_POST(self) -> None:
            """Every outcome is an answer; a client gone before it is written ends the
            connection quietly (a write to it fails)."""
            try:
                try:
                    self._post()
                except _BadRequest as exc:
                    self._error(exc.status, str(exc), exc.kind, exc.param, exc.code, exc.headers)
                except OSError:
                    raise
                except Exception as exc:  # a bug of ours: still an answer, and logged here
                    log.exception("request failed")
                    self.close_connection = True
                    message = f"internal error: {type(exc).__name__}: {exc}"
                    self._error(500, message, "server_error")
            except OSError:  # the client went away
                self.close_connection = True

        def _post(self) -> None:
            if not self._routed("POST"):
                return
            chat = self._path() == "/v1/chat/completions"
            body = self._body()
            asked = body.get("model")
            if isinstance(asked, str) and asked != model_name:  # before the other fields
                self._error(
                    404,
                    f"model {asked!r} not found; this server serves {model_name!r}",
                    "model_not_found",
                    "model",
                )
                return
            request = _parse(_ChatRequest if chat else _CompletionRequest, body)
            top_logprobs = request.top_logprobs_asked()
            if isinstance(request, _ChatRequest):
                prompt = backend.render([m.model_dump() for m in request.messages])
            else:
                assert isinstance(request, _CompletionRequest)
                prompt = request.prompt
            counted = backend.count_tokens(prompt, context)
            max_new = fit_tokens(request, counted, context, "messages" if chat else "prompt")
            if top_logprobs is not None:
                check_logits_memory(backend, request.n or 1, max_new)
            with gate.slot():
                outs = self._generate([prompt] * (request.n or 1), request, max_new, top_logprobs)
            if outs is not None:
                self._send(200, _response(model_name, outs, chat))

        def _generate(
            self,
            prompts: list[str],
            request: _Request,
            max_new_tokens: int,
            top_logprobs: int | None,
        ) -> list[LocalCompletion] | None:
            """The completions, or None once a failure has been answered as a 500."""
            try:
                return backend.generate_prompts(
                    prompts,
                    request.sampling(max_new_tokens),
                    stop=request.stop,
                    top_logprobs=top_logprobs,
                )
            except Exception as exc:  # reported to the client as a server error, logged here
                log.exception("generation failed")
                self._error(500, f"generation failed: {type(exc).__name__}: {exc}", "server_error")
                return None

    return Handler


def _busy_response(retry_after: str) -> bytes:
    """A whole HTTP 503 response, for a connection refused before a handler takes it."""
    body = json.dumps(
        _error_payload(
            "asmopt serve has too many open connections; retry after the Retry-After seconds",
            "server_error",
            code="server_busy",
        )
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: {retry_after}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def linger_close(sock: socket.socket, seconds: float = LINGER_S) -> None:
    """Half-close, then read and drop what the client still sends until it closes (at most
    `seconds`), then close: closing a socket with unread bytes makes the kernel send a
    reset, which can destroy an answer already written (a 413 sent before the body, a 503
    sent before the request) before the client reads it."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(1 << 16):
                break
    sock.close()


class _HTTPServer(ThreadingHTTPServer):
    """The standard threading server with a real backlog, a bounded number of connections
    served at once (one more gets a 503 at once) and a lingering close for every one."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        limits: ServeLimits,
        retry_after: Callable[[], str],
    ) -> None:
        self.limits = limits
        self.retry_after = retry_after
        self._connections = threading.Semaphore(limits.max_connections)
        # Refusals linger too, so they are bounded as well; past both limits (a flood) a
        # connection is closed unanswered rather than given one more thread.
        self._refusals = threading.Semaphore(limits.max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._connections.acquire(blocking=False):
            if self._refusals.acquire(blocking=False):
                threading.Thread(target=self._refuse, args=(request,), daemon=True).start()
            else:
                request.close()
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: the slot is free again
            self._connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()

    def _refuse(self, request: socket.socket) -> None:
        try:
            with contextlib.suppress(OSError):
                request.settimeout(self.limits.read_timeout_s)
                request.sendall(_busy_response(self.retry_after()))
            linger_close(request)
        finally:
            self._refusals.release()

    def shutdown_request(self, request: Any) -> None:
        linger_close(request)


def check_port(host: str, port: int) -> None:
    """Raise OSError now if (host, port) cannot be bound, so a busy port is reported before a
    model takes its time to load (the server binds the same way: SO_REUSEADDR)."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))


class ModelServer:
    """A running server; `start()` in a background thread (tests) or `serve_forever()`."""

    def __init__(
        self,
        backend: HFBackend,
        host: str = "127.0.0.1",
        port: int = 8000,
        model_name: str | None = None,
        limits: ServeLimits | None = None,
    ) -> None:
        self.model_name = model_name or backend.name
        self.limits = limits or ServeLimits()
        self.admission = Admission(self.limits)
        handler = make_handler(backend, self.model_name, self.limits, self.admission)
        self.httpd = _HTTPServer((host, port), handler, self.limits, self.admission.retry_after)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ModelServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
