"""The HTTP side of `asmopt serve`: a Starlette application served by uvicorn.

`serve.py` says what a request means (fields, limits, admission, the OpenAI shapes); this
module carries it over HTTP. It imports Starlette and uvicorn, so it is imported only when a
`ModelServer` is built. What it adds to them, and why (the guarantees are listed in
`serve.py`'s docstring):

- `_Gate` meets every request before routing: the connection limit (503 with Retry-After
  in the OpenAI shape; uvicorn's own `limit_concurrency` answers in plain text without
  Retry-After, so it is not used), a method other than GET and POST (405 with the path's
  Allow: Starlette's router would serve HEAD on GET routes and name the allowed methods in
  set order), a trailing slash (ignored, where the router would redirect).
- Starlette's own 404 and 405, every `ApiError` and any failure of ours are answered in the
  OpenAI error shape (`_answer`), the headers spelled as the standard library's server did.
- `_GuardedH11Protocol` is uvicorn's h11 protocol with what uvicorn leaves out: a deadline
  for a request line and headers (uvicorn bounds their size, and times only the idle time
  between requests), a deadline for a client to read its answer, a lingering close
  (`_LingeringTransport`), an answer to a client that half-closes after its request, and a
  malformed request answered in the OpenAI shape instead of plain text.
- `off_loop` runs blocking work (parsing and counting a prompt, generating) on a daemon
  thread of its own, so the event loop keeps answering, and stopping never waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http
import inspect
import json
import logging
import re
import socket
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import h11
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from asmopt.policies.hf_local import HFBackend
from asmopt.policies.serve import (
    ANY_ROUTE,
    LINGER_S,
    LISTEN_BACKLOG,
    MAX_HEAD_BYTES,
    ROUTES,
    STOP_GRACE_S,
    Admission,
    ApiError,
    ServeLimits,
    body_cap,
    completion_payload,
    declared_length,
    error_payload,
    generate,
    plan,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


async def off_loop(work: Callable[[], T]) -> T:
    """`work()` on a daemon thread of its own, awaited without blocking the event loop.

    Not `asyncio.to_thread`: its pool's threads are joined when the loop closes, so stopping
    the server (or Ctrl+C) would wait for a generation to end, and its few workers would
    queue a burst's prompt counting behind it. Threads here are as many as the requests
    being worked on, which the connection limit and the admission slots bound."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(deliver: Callable[[], object]) -> None:
        if not done.done():  # done: the request's task was cancelled (the server stopped)
            deliver()

    def run() -> None:
        deliver: Callable[[], object]
        try:
            deliver = functools.partial(done.set_result, work())
        except Exception as exc:  # delivered to the awaiting request, answered there
            deliver = functools.partial(done.set_exception, exc)
        # RuntimeError: the loop has closed (the server stopped): nobody waits any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, deliver)

    threading.Thread(target=run, name="asmopt-serve-work", daemon=True).start()
    return await done


class JSONAnswer(Response):
    """A JSON response whose own headers keep the case they are written in (Retry-After,
    Allow, Connection), as the standard library's server sent them: Starlette lowercases
    header names, which HTTP allows but a client that looks a header up exactly does not
    expect."""

    media_type = "application/json"

    def __init__(
        self, payload: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(json.dumps(payload).encode(), status)
        own = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        self.raw_headers = own + self.raw_headers


def _answer(error: ApiError) -> JSONAnswer:
    """An ApiError as an answer; one given before the body was read ends the connection."""
    headers = dict(error.headers)
    if error.close:
        headers["Connection"] = "close"
    return JSONAnswer(error.payload(), error.status, headers)


def _not_allowed(method: str, path: str) -> ApiError:
    allowed = ROUTES.get(path, ANY_ROUTE)
    return ApiError(
        f"method {method} is not allowed on {path[:200]}; allowed: {allowed}",
        status=405,
        code="method_not_allowed",
        headers={"Allow": allowed},
        close=True,  # a body, if one was sent, is not read
    )


async def read_body(request: Request, length: int, timeout_s: float) -> bytearray:
    """The `length` bytes of the body, which must all arrive within `timeout_s` (a client that
    sends one byte now and then cannot hold the connection). h11 holds the body to its
    Content-Length, so what arrives is never longer; a 408 when it is too slow."""
    data = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            async for piece in request.stream():
                data += piece
    except TimeoutError:
        raise ApiError(
            f"the request body did not arrive within {timeout_s:g} s",
            status=408,
            code="timeout",
            close=True,
        ) from None
    except ClientDisconnect:  # the answer goes nowhere; the request ends here
        raise ApiError("the request body ended before Content-Length bytes", close=True) from None
    if len(data) != length:
        raise ApiError("the request body ended before Content-Length bytes", close=True)
    return data


class _Service:
    """The endpoints, around one back-end. `open_connections` counts the server's open
    connections; it is set once the uvicorn server exists (the application comes first)."""

    def __init__(
        self, backend: HFBackend, model_name: str, limits: ServeLimits, admission: Admission
    ) -> None:
        self.backend = backend
        self.model_name = model_name
        self.limits = limits
        self.admission = admission
        self.open_connections: Callable[[], int] = lambda: 0

    async def models(self, request: Request) -> Response:
        # `max_model_len` is the context as vLLM lists it, so a client (`--policy openai`)
        # can fit its answer budget to the model before it sends anything.
        model = {
            "id": self.model_name,
            "object": "model",
            "owned_by": "asmopt",
            "max_model_len": self.backend.context_length,
        }
        return JSONAnswer({"object": "list", "data": [model]})

    async def health(self, request: Request) -> Response:
        context = self.backend.context_length
        limits_now = {"context": context, "max_body_bytes": body_cap(context)}
        return JSONAnswer({"status": "ok", **self.admission.state(), **limits_now})

    async def chat(self, request: Request) -> Response:
        return await self._complete(request, chat=True)

    async def completions(self, request: Request) -> Response:
        return await self._complete(request, chat=False)

    async def _complete(self, request: Request, chat: bool) -> Response:
        """Each refusal as early as it can be known: the declared length before the body is
        read (so before uvicorn says "100 Continue"), the fields and the prompt's tokens
        before a generation slot is taken."""
        length = declared_length(request.headers, self.backend.context_length)
        data = await read_body(request, length, self.limits.read_timeout_s)
        job = await off_loop(lambda: plan(self.backend, self.model_name, data, chat))
        async with self.admission.slot():
            outs = await off_loop(lambda: generate(self.backend, job))
        return JSONAnswer(completion_payload(self.model_name, outs, chat))


class _Gate:
    """What every request meets before routing: the connection limit, then the method
    (see the module docstring); the path it passes on has no trailing slash."""

    def __init__(self, app: ASGIApp, service: _Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"].rstrip("/") or "/"
        refusal = self._refusal(scope["method"], path)
        if refusal is not None:
            await _answer(refusal)(scope, receive, send)
            return
        await self.app({**scope, "path": path}, receive, send)

    def _refusal(self, method: str, path: str) -> ApiError | None:
        limit = self.service.limits.max_connections
        if self.service.open_connections() > limit:
            why = f"more than {limit} connections open"
            return self.service.admission.busy(503, why, close=True)
        if method not in ("GET", "POST"):
            return _not_allowed(method, path)
        return None


async def _routing_refusal(request: Request, exc: Exception) -> Response:
    """Starlette's router found no route (404) or the other method's route (405)."""
    assert isinstance(exc, HTTPException)
    path = request.url.path
    if exc.status_code == 405:
        return _answer(_not_allowed(request.method, path))
    if exc.status_code == 404:
        return _answer(ApiError(f"no route {path[:200]}", status=404, close=True))
    return _answer(ApiError(str(exc.detail), status=exc.status_code, close=True))


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _answer(exc)


async def _internal_error(request: Request, exc: Exception) -> Response:
    """A bug of ours: still an answer; Starlette then re-raises it for uvicorn to log."""
    message = f"internal error: {type(exc).__name__}: {exc}"
    return _answer(ApiError(message, status=500, kind="server_error", close=True))


def build_app(service: _Service) -> Starlette:
    endpoints = {
        "/v1/models": service.models,
        "/models": service.models,
        "/health": service.health,
        "/v1/chat/completions": service.chat,
        "/v1/completions": service.completions,
    }
    routes = [Route(path, endpoints[path], methods=[method]) for path, method in ROUTES.items()]
    return Starlette(
        routes=routes,
        middleware=[Middleware(_Gate, service=service)],
        exception_handlers={
            HTTPException: _routing_refusal,
            ApiError: _refused,
            Exception: _internal_error,
        },
    )


def _raw_answer(status: int, message: str, code: str | None) -> bytes:
    """A whole HTTP response with an error in the OpenAI shape, for the protocol to write
    where no request reached the application (a head too slow or malformed)."""
    body = json.dumps(error_payload(message, code=code)).encode()
    head = (
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


HTTP09_REFUSED = (
    "the request line has no HTTP version (an HTTP/0.9 request): this server speaks "
    "HTTP/1.1 (e.g. GET /health HTTP/1.1)"
)
_VERSION_AT_END = re.compile(rb" HTTP/\d\.\d$")


def _versionless_line(buffered: bytes | bytearray) -> bool:
    """Whether the unparsed head's first line is complete and ends without an HTTP version:
    an HTTP/0.9 client sends that line and waits, so it is answered as soon as it ends."""
    head = bytes(buffered).lstrip(b"\r\n")
    if b"\n" not in head:
        return False
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    return _VERSION_AT_END.search(line) is None


class _LingeringTransport:
    """A connection's transport whose close() lingers: it half-closes once what is written
    has gone, drops what the client still sends, and closes when the client does or after
    `linger_s`. Closing a socket with unread bytes makes the kernel send a reset, which can
    destroy an answer already written (a 413 sent before the body) before the client reads
    it, and makes a client still sending its body fail instead of reading the answer."""

    def __init__(
        self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop, linger_s: float
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._linger_s = linger_s
        self._timer: asyncio.TimerHandle | None = None
        self.lingering = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self.lingering or self._transport.is_closing()

    def close(self) -> None:
        if self.lingering or self._transport.is_closing():
            return
        self.lingering = True
        if self._linger_s <= 0 or not self._transport.can_write_eof():
            self._transport.close()
            return
        self._transport.write_eof()  # after what is buffered: the answer goes first
        self._transport.resume_reading()
        self._timer = self._loop.call_later(self._linger_s, self._transport.close)

    def hurry(self) -> None:
        """The server is stopping: close at once, now and from now on."""
        self._linger_s = 0
        if self.lingering:
            self._transport.close()

    def lost(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the deadlines, the lingering close and the answers it
    lacks (module docstring). `timeout_s` is the server's read timeout: `_protocol_for`
    makes a subclass per server, since uvicorn builds protocols from a class.

    Why a subclass of a class that is not uvicorn's public interface: handing uvicorn a
    protocol class (`Config(http=...)`) is public, but none of its settings does this job.
    `timeout_keep_alive` is armed only after an answer and cancelled by the first byte of
    the next head, so a head that trickles in (or a first one) has no deadline; nothing
    bounds a client that stops reading its answer; uvicorn's `eof_received` closes on a
    half-close; its 400 is plain text; `limit_concurrency` answers without Retry-After.
    Doing it with public means only would mean writing the whole HTTP/1.1 protocol again
    (the request cycle, flow control, 100 Continue, pipelining). What it takes from
    uvicorn, the hooks in `_H11_HOOKS` and the attributes `loop`, `conn`, `cycle` (with
    `response_complete`) and `transport`, is pinned in pyproject.toml and asserted by
    tests/test_serve_uvicorn_surface.py, so an upgrade that moves any of it fails there."""

    timeout_s = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_clock: asyncio.TimerHandle | None = None
        self._write_clock: asyncio.TimerHandle | None = None
        self._linger: _LingeringTransport | None = None
        self._peer_done = False  # the client half-closed: it sends nothing more

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._linger = _LingeringTransport(cast(asyncio.Transport, transport), self.loop, LINGER_S)
        super().connection_made(cast(asyncio.Transport, self._linger))
        self._start_head_clock()

    def data_received(self, data: bytes) -> None:
        if self._linger is not None and self._linger.lingering:
            return  # what a client sends after its answer is dropped
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            if _versionless_line(self.conn.trailing_data[0]):
                self._answer_and_close(400, HTTP09_REFUSED, None)
                return
            self._start_head_clock()  # a head has begun and is not whole yet
        else:
            self._stop_head_clock()

    def eof_received(self) -> bool | None:
        """A client that half-closes after sending its requests still gets every answer
        (pipelined requests included, in order); the connection closes after the last.
        A request head left unfinished is answered 400 first."""
        if self._linger is not None and self._linger.lingering:
            return None
        self._peer_done = True
        if self.cycle is None or self.cycle.response_complete:
            self._end_after_peer()
        return True  # the transport stays open for the answers still to come

    def on_response_complete(self) -> None:
        super().on_response_complete()  # starts the next pipelined request, if whole
        idle = self.cycle is None or self.cycle.response_complete
        if self._peer_done and idle and not self.transport.is_closing():
            self._end_after_peer()

    def _end_after_peer(self) -> None:
        """Nothing is being answered and the client sends nothing more: answer what it
        left unfinished (400), then close."""
        pending = self.conn.trailing_data[0] if self.conn.their_state is h11.IDLE else b""
        if bytes(pending).strip():
            self._answer_and_close(
                400, "the connection was half-closed before the request head was complete", None
            )
        else:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        self._stop_write_clock()
        if self._linger is not None:
            self._linger.lost()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client is not reading its answer: it has `timeout_s` to start again."""
        super().pause_writing()
        if self._write_clock is None:
            self._write_clock = self.loop.call_later(self.timeout_s, self.transport.abort)

    def resume_writing(self) -> None:
        self._stop_write_clock()
        super().resume_writing()

    def send_400_response(self, msg: str) -> None:
        """h11 could not parse the request (uvicorn says only that, in plain text)."""
        self._answer_and_close(
            400,
            "the request is not valid HTTP/1.1 (a malformed request line or header, a bad "
            f"Content-Length, or a request head still unfinished after {MAX_HEAD_BYTES} bytes)",
            None,
        )

    def shutdown(self) -> None:
        if self._linger is not None:
            self._linger.hurry()
        try:
            super().shutdown()
        except h11.LocalProtocolError:  # h11 will not record a close in this state
            self.transport.close()

    def _start_head_clock(self) -> None:
        if self._head_clock is None:
            self._head_clock = self.loop.call_later(self.timeout_s, self._head_too_slow)

    def _stop_head_clock(self) -> None:
        if self._head_clock is not None:
            self._head_clock.cancel()
            self._head_clock = None

    def _stop_write_clock(self) -> None:
        if self._write_clock is not None:
            self._write_clock.cancel()
            self._write_clock = None

    def _head_too_slow(self) -> None:
        self._head_clock = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            message = f"the request line and headers did not arrive within {self.timeout_s:g} s"
            self._answer_and_close(408, message, "timeout")

    def _answer_and_close(self, status: int, message: str, code: str | None) -> None:
        """Write a whole error answer and close, unless an answer is already under way
        (nothing may follow it then: just close)."""
        self._stop_head_clock()
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(_raw_answer(status, message, code))
        self.transport.close()


# What `_GuardedH11Protocol` takes from uvicorn's h11 protocol, which is not uvicorn's
# public interface: the hooks it overrides, each with the parameters it is called with. A
# uvicorn release that renames one or changes its parameters would otherwise break a
# guarantee without a word; `build_server` refuses it by name (and
# tests/test_serve_uvicorn_surface.py checks the rest of what the subclass relies on).
_H11_HOOKS: dict[str, tuple[str, ...]] = {
    "connection_made": ("self", "transport"),
    "data_received": ("self", "data"),
    "eof_received": ("self",),
    "on_response_complete": ("self",),
    "connection_lost": ("self", "exc"),
    "pause_writing": ("self",),
    "resume_writing": ("self",),
    "send_400_response": ("self", "msg"),
    "shutdown": ("self",),
}


def _parameters(hook: Callable[..., object]) -> tuple[str, ...] | None:
    try:
        return tuple(inspect.signature(hook).parameters)
    except (TypeError, ValueError):  # no signature to read: taken as a changed hook
        return None


def uvicorn_problems() -> list[str]:
    """The hooks of uvicorn's h11 protocol that `_GuardedH11Protocol` needs and this
    uvicorn lacks or calls with other parameters (empty: none)."""
    problems = []
    for name, parameters in _H11_HOOKS.items():
        hook = getattr(H11Protocol, name, None)
        if not callable(hook) or _parameters(hook) != parameters:
            problems.append(name)
    return problems


def _protocol_for(limits: ServeLimits) -> type[_GuardedH11Protocol]:
    class _ServeProtocol(_GuardedH11Protocol):
        timeout_s = limits.read_timeout_s

    return _ServeProtocol


class _Server(uvicorn.Server):
    """uvicorn's server, which after its own graceful shutdown (STOP_GRACE_S for requests
    being answered, then their tasks cancelled) also drops the connections still open, so a
    stopped server leaves no socket behind."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets=sockets)
        for connection in list(self.server_state.connections):
            connection.transport.abort()


def build_server(
    backend: HFBackend, model_name: str, limits: ServeLimits, admission: Admission
) -> uvicorn.Server:
    """A uvicorn server of the application, to run on an already listening socket (its
    `run(sockets=...)`). Logging is left as the caller configured it."""
    missing = uvicorn_problems()
    if missing:
        raise RuntimeError(
            f"uvicorn {uvicorn.__version__} lacks, or calls with other parameters, what "
            f"asmopt serve extends in its h11 protocol ({', '.join(missing)}); install the "
            "range pyproject.toml names"
        )
    service = _Service(backend, model_name, limits, admission)
    config = uvicorn.Config(
        build_app(service),
        http=_protocol_for(limits),
        ws="none",
        lifespan="off",
        interface="asgi3",
        loop="asyncio",
        log_config=None,
        proxy_headers=False,
        server_header=False,
        headers=[("Server", "asmopt-serve")],
        backlog=LISTEN_BACKLOG,
        timeout_keep_alive=limits.read_timeout_s,  # type: ignore[arg-type]  # any seconds
        timeout_graceful_shutdown=STOP_GRACE_S,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
    )
    server = _Server(config)
    service.open_connections = lambda: len(server.server_state.connections)
    return server
