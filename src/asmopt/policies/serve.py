"""`asmopt serve MODEL_DIR`: an OpenAI-compatible HTTP server around the local back-end.

It exists so models that vLLM cannot serve (our looped model among them) are evaluated
through the same HTTP path as any served model, and so tests exercise that path for real on
loopback. Endpoints: GET /v1/models, POST /v1/chat/completions, POST /v1/completions,
GET /health. Generation is serialised (one batch at a time); `n` > 1 is generated as one
batch. Streaming is not supported and is refused with a clear 400.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
)

from asmopt.policies.hf_local import HFBackend
from asmopt.policies.llm import SamplingParams

log = logging.getLogger(__name__)
MAX_BODY = 32 << 20


class _BadRequest(Exception):
    """A request this server refuses; becomes a 4xx JSON error in the OpenAI shape."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.param = param
        self.status = status


# Request bodies, validated field by field. Unknown fields are allowed (OpenAI clients send
# `user`, `logprobs`, ... that this server ignores); null means "the default", as in the
# OpenAI API; a wrong type is a 400 naming the field.
class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: StrictStr
    content: StrictStr


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: StrictStr | None = None
    n: Annotated[StrictInt, Field(ge=1, le=64)] | None = None
    temperature: Annotated[float, Field(ge=0, le=2, strict=True)] | None = None
    top_p: Annotated[float, Field(gt=0, le=1, strict=True)] | None = None
    max_tokens: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    max_completion_tokens: Annotated[StrictInt, Field(ge=1, le=1 << 20)] | None = None
    seed: StrictInt | None = None
    stream: StrictBool | None = None

    def sampling(self) -> SamplingParams:
        return SamplingParams(
            temperature=1.0 if self.temperature is None else self.temperature,
            top_p=1.0 if self.top_p is None else self.top_p,
            max_new_tokens=self.max_tokens or self.max_completion_tokens or 256,
            seed=self.seed,
        )


class _ChatRequest(_Request):
    messages: Annotated[list[_Message], Field(min_length=1)]


class _CompletionRequest(_Request):
    prompt: Annotated[StrictStr, Field(min_length=1)]


def _parse(model: type[_Request], body: Any) -> _Request:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        param = ".".join(str(p) for p in err["loc"]) or None
        raise _BadRequest(
            f"{param}: {err['msg']} (got {err.get('input')!r})"[:300], param
        ) from None


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
        ) -> None:
            self._send(
                status,
                {"error": {"message": message, "type": kind, "param": param, "code": None}},
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
                self._error(exc.status, str(exc), param=exc.param)
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
            if request.stream:
                raise _BadRequest("streaming is not supported by asmopt serve", "stream")
            params = request.sampling()
            n = request.n or 1
            if isinstance(request, _ChatRequest):
                prompt = backend.render([m.model_dump() for m in request.messages])
            else:
                assert isinstance(request, _CompletionRequest)
                prompt = request.prompt
            try:
                outs = backend.generate_prompts([prompt] * n, params)
            except Exception as exc:  # reported to the client as a server error, logged here
                log.exception("generation failed")
                self._error(500, f"generation failed: {type(exc).__name__}: {exc}", "server_error")
                return
            choices = []
            for i, c in enumerate(outs):
                if chat:
                    choices.append(
                        {
                            "index": i,
                            "finish_reason": c.finish_reason,
                            "message": {"role": "assistant", "content": c.text},
                        }
                    )
                else:
                    choices.append({"index": i, "finish_reason": c.finish_reason, "text": c.text})
            prompt_tokens = outs[0].prompt_tokens if outs else 0
            completion_tokens = sum(c.completion_tokens for c in outs)
            self._send(
                200,
                {
                    "id": f"asmopt-{uuid.uuid4().hex[:16]}",
                    "object": "chat.completion" if chat else "text_completion",
                    "created": int(time.time()),
                    "model": model_name,
                    "choices": choices,
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                },
            )

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
