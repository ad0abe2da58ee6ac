"""`asmopt serve MODEL_DIR`: an OpenAI-compatible HTTP server around the local back-end.

It exists so models that vLLM cannot serve (our looped model among them) are evaluated
through the same HTTP path as any served model, and so tests exercise that path for real on
loopback. Endpoints: GET /v1/models, POST /v1/chat/completions, POST /v1/completions,
GET /health. Generation is serialised (one batch at a time); `n` > 1 is generated as one
batch. Streaming is not supported and is refused with a clear 400.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from asmopt.policies.hf_local import HFBackend
from asmopt.policies.llm import SamplingParams

log = logging.getLogger(__name__)
MAX_BODY = 32 << 20


class _BadRequest(Exception):
    pass


def _sampling(body: dict[str, Any]) -> SamplingParams:
    try:
        return SamplingParams(
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            max_new_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or 256),
            seed=int(body["seed"]) if body.get("seed") is not None else None,
        )
    except (TypeError, ValueError) as exc:
        raise _BadRequest(f"bad sampling parameter: {exc}") from None


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
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
            self._send(status, {"error": {"message": message, "type": kind}})

        def do_GET(self) -> None:
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

        def do_POST(self) -> None:
            path = self.path.rstrip("/")
            if path not in ("/v1/chat/completions", "/v1/completions"):
                self._error(404, f"no route {self.path}")
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                if length <= 0 or length > MAX_BODY:
                    raise _BadRequest(f"request body must be 1..{MAX_BODY} bytes")
                body = json.loads(self.rfile.read(length))
                if not isinstance(body, dict):
                    raise _BadRequest("request body must be a JSON object")
                if body.get("stream"):
                    raise _BadRequest("streaming is not supported by asmopt serve")
                if body.get("model") not in (None, model_name):
                    self._error(
                        404,
                        f"model {body.get('model')!r} not found; this server serves {model_name!r}",
                        "model_not_found",
                    )
                    return
                params = _sampling(body)
                n = int(body.get("n", 1))
                if not 1 <= n <= 64:
                    raise _BadRequest("n must be between 1 and 64")
                chat = path.endswith("chat/completions")
                if chat:
                    messages = body.get("messages")
                    if not isinstance(messages, list) or not all(
                        isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages
                    ):
                        raise _BadRequest("'messages' must be a list of {role, content}")
                    prompt = backend.render(messages)
                else:
                    prompt = body.get("prompt")
                    if not isinstance(prompt, str):
                        raise _BadRequest("'prompt' must be a string")
            except (json.JSONDecodeError, UnicodeDecodeError):
                self._error(400, "request body is not valid JSON")
                return
            except _BadRequest as exc:
                self._error(400, str(exc))
                return
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
