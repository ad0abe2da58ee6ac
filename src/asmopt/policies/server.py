"""The server a user starts around one back-end (`asmopt serve`, tests): a socket bound and
listening from the start, and the HTTP application (serve_asgi) run on it from this thread
or a background one. The guarantees it keeps are listed in serve.py."""

from __future__ import annotations

import socket
import threading
import time

from asmopt.policies.hf_local import HFBackend
from asmopt.policies.serve import (
    LISTEN_BACKLOG,
    START_TIMEOUT_S,
    STOP_GRACE_S,
    Admission,
    ServeLimits,
)
from asmopt.policies.serve_asgi import build_server


def _bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) with SO_REUSEADDR (IPv6 when the host has a ':'),
    not yet listening; OSError when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def check_port(host: str, port: int) -> None:
    """Raise OSError now if (host, port) cannot be bound, so a busy port is reported before a
    model takes its time to load (the server binds the same way)."""
    _bound_socket(host, port).close()


class ModelServer:
    """A server around one back-end: `start()` serves from a background thread (tests) and
    returns once it answers, `serve_forever()` serves from this thread (the command: Ctrl+C
    ends it once the requests being answered are, STOP_GRACE_S at most, or at once when
    pressed twice); `stop()` ends either within about STOP_GRACE_S. The socket is bound and
    listening from construction on, so `url` is known (port 0 picks a free one) and early
    connections wait in the backlog until the server runs."""

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
        self._socket = _bound_socket(host, port)
        try:
            self._socket.listen(LISTEN_BACKLOG)
            self._server = build_server(backend, self.model_name, self.limits, self.admission)
        except BaseException:
            self._socket.close()
            raise
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on."""
        host, port = self._socket.getsockname()[:2]
        return host, port

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"

    def start(self) -> ModelServer:
        self._thread = threading.Thread(target=self.serve_forever, name="asmopt-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"asmopt serve did not start on {self.url}")
            time.sleep(0.01)
        return self

    def serve_forever(self) -> None:
        self._server.run(sockets=[self._socket])

    def stop(self) -> None:
        """Stop accepting, close idle connections at once, give requests being answered
        STOP_GRACE_S, then close the rest; returns once the server's thread has ended."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=STOP_GRACE_S + 5)
        self._socket.close()
