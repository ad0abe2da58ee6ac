"""`asmopt serve MODEL_DIR`: an OpenAI-compatible HTTP server around the local back-end.

It exists so models that vLLM cannot serve (our looped model among them) are evaluated
through the same HTTP path as any served model, and so tests exercise that path for real on
loopback. Endpoints: GET /v1/models, POST /v1/chat/completions, POST /v1/completions,
GET /health. Generation is serialised (one batch at a time); `n` > 1 is generated as one
batch.

Every parameter is either honoured or refused with a 400 naming it, never silently ignored:
`n`, `temperature`, `top_p`, `max_tokens` / `max_completion_tokens`, `seed`, `stop` (a
string or up to 4; the text ends before the earliest, finish_reason "stop") and `logprobs`
(chat: `logprobs` + `top_logprobs`; completions: `logprobs` 0..5) are honoured; parameters
that only change nothing at one value (`presence_penalty` 0, `tools` [], `stream` false,
...) are accepted at that value; anything else is refused. Streaming is not supported.
A first model to try: `asmopt.train.tiny.build_tiny_model` (README, "Language models").
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
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

from asmopt.policies.hf_local import HFBackend, LocalCompletion, TokenLogprob
from asmopt.policies.llm import SamplingParams

log = logging.getLogger(__name__)
MAX_BODY = 32 << 20
MAX_STOP = 4  # as in the OpenAI API
DEFAULT_MAX_TOKENS = 256


class _BadRequest(Exception):
    """A request this server refuses; becomes a 4xx JSON error in the OpenAI shape."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.param = param
        self.status = status
        self.code = code


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
class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "developer", "user", "assistant"]
    content: str

    @field_validator("content", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        """A string, or a list of text parts (joined); images and audio cannot be read."""
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(
            isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
            for p in value
        ):
            return "".join(p["text"] for p in value)
        raise ValueError("must be a string or a list of text parts")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: StrictStr | None = None
    n: Annotated[StrictInt, Field(ge=1, le=64)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2, strict=True)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1, strict=True)] | None = None
    max_tokens: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    seed: StrictInt | None = None
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
        return tuple(stops)

    def sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=1.0 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            max_new_tokens=self.token_budget(),
            seed=self.seed,
        )

    def token_budget(self) -> int:
        return self.max_tokens or DEFAULT_MAX_TOKENS

    def top_logprobs_asked(self) -> int | None:
        """None: no log-probabilities; k >= 0: the sampled tokens' and k alternatives."""
        return None


class _ChatRequest(_Request):
    messages: Annotated[list[_Message], Field(min_length=1)]
    max_completion_tokens: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    logprobs: StrictBool | None = None
    top_logprobs: Annotated[StrictInt, Field(ge=0, le=20)] | None = None

    def token_budget(self) -> int:
        return self.max_completion_tokens or super().token_budget()

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


def make_handler(backend: HFBackend, model_name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "asmopt-serve"
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:
            log.info("%s %s", self.address_string(), fmt % args)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
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
        ) -> None:
            self._send(
                status,
                {"error": {"message": message, "type": kind, "param": param, "code": code}},
            )

        def send_error(
            self, code: int, message: str | None = None, explain: str | None = None
        ) -> None:
            """Errors found by the HTTP layer itself (a malformed request line, a header too
            long) are answered in the same JSON shape as every other error."""
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._error(code, message or explain or "bad request")

        def do_GET(self) -> None:
            try:
                if self.path.rstrip("/") in ("/v1/models", "/models"):
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": model_name, "object": "model", "owned_by": "asmopt"}],
                        },
                    )
                elif self.path == "/health":
                    self._send(200, {"status": "ok"})
                else:
                    self._error(404, f"no route {self.path}")
            except OSError:
                self.close_connection = True

        def _body(self) -> Any:
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
            if length > MAX_BODY:
                self.close_connection = True
                raise _BadRequest(f"request body over {MAX_BODY} bytes", status=413)
            data = self.rfile.read(length)
            if len(data) < length:
                self.close_connection = True
                raise _BadRequest("the request body ended before Content-Length bytes")
            try:
                return json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                raise _BadRequest("request body is not valid JSON") from None

        def do_POST(self) -> None:
            try:
                self._post()
            except _BadRequest as exc:
                self._error(exc.status, str(exc), param=exc.param, code=exc.code)
            except OSError:  # the client went away
                self.close_connection = True
            except Exception as exc:  # a bug of ours: still an answer, and logged here
                log.exception("request failed")
                self.close_connection = True
                self._error(500, f"internal error: {type(exc).__name__}: {exc}", "server_error")

        def _post(self) -> None:
            path = self.path.rstrip("/")
            if path not in ("/v1/chat/completions", "/v1/completions"):
                self.close_connection = True  # the body is not read
                self._error(404, f"no route {self.path}")
                return
            body = self._body()
            if not isinstance(body, dict):
                raise _BadRequest("request body must be a JSON object")
            chat = path.endswith("chat/completions")
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
            prompts = [prompt] * (request.n or 1)
            try:
                outs = backend.generate_prompts(
                    prompts, request.sampling(), stop=request.stop, top_logprobs=top_logprobs
                )
            except Exception as exc:  # reported to the client as a server error, logged here
                log.exception("generation failed")
                self._error(500, f"generation failed: {type(exc).__name__}: {exc}", "server_error")
                return
            self._send(200, _response(model_name, outs, chat))

    return Handler


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
    ) -> None:
        self.model_name = model_name or backend.name
        self.httpd = ThreadingHTTPServer((host, port), make_handler(backend, self.model_name))
        self.httpd.daemon_threads = True
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
