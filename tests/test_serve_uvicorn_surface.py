"""What `asmopt serve` takes from uvicorn that is not uvicorn's public interface.

`serve_asgi._GuardedH11Protocol` subclasses uvicorn's h11 protocol (its docstring says why
no public setting does the job). These tests assert each thing the subclass relies on, so a
uvicorn release that moves one fails here, by name, instead of silently dropping a deadline
or an answer; pyproject.toml pins uvicorn to the releases that pass.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest

uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

import h11  # noqa: E402  (uvicorn's own dependency)
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle  # noqa: E402
from uvicorn.server import ServerState  # noqa: E402

from asmopt.policies import serve_asgi  # noqa: E402


def _parameters(function: object) -> tuple[str, ...]:
    return tuple(inspect.signature(function).parameters)  # type: ignore[arg-type]


def test_each_hook_the_guard_overrides_is_uvicorns_with_the_same_parameters() -> None:
    for name, parameters in serve_asgi._H11_HOOKS.items():
        assert name in vars(H11Protocol), f"uvicorn's H11Protocol no longer defines {name}"
        assert _parameters(getattr(H11Protocol, name)) == parameters, name
        assert _parameters(getattr(serve_asgi._GuardedH11Protocol, name)) == parameters, name
    assert serve_asgi.uvicorn_problems() == []


def test_the_hook_list_names_every_method_the_guard_overrides() -> None:
    """A new override of an uvicorn method must be named in `_H11_HOOKS` (so checked)."""
    own = {name for name in vars(serve_asgi._GuardedH11Protocol) if not name.startswith("__")}
    inherited = set(dir(H11Protocol))
    assert own & inherited == set(serve_asgi._H11_HOOKS)


def test_uvicorn_still_calls_the_hooks_that_are_its_own() -> None:
    """asyncio calls the transport's hooks; uvicorn itself calls these two. One it stopped
    calling would leave the override in place and doing nothing."""
    events = inspect.getsource(H11Protocol.handle_events)
    assert "self.send_400_response(" in events
    assert "on_response=self.on_response_complete" in events
    shutdown = inspect.getsource(uvicorn.Server.shutdown)
    assert ".shutdown()" in shutdown  # the server asks each connection to shut down


def test_a_changed_hook_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def send_400_response(self: H11Protocol, message: str, status: int) -> None: ...

    monkeypatch.setattr(H11Protocol, "send_400_response", send_400_response)
    assert serve_asgi.uvicorn_problems() == ["send_400_response"]


def test_the_attributes_the_guard_reads_are_set_by_uvicorn() -> None:
    """`loop`, `conn` (an h11 connection), `cycle` (None between requests) from the
    constructor uvicorn calls; `transport`, the one `connection_made` was given (the guard
    gives it the lingering transport, through which uvicorn must then write)."""

    async def app(scope: object, receive: object, send: object) -> None: ...

    assert _parameters(H11Protocol.__init__) == (
        "self", "config", "server_state", "app_state", "_loop",
    )
    config = uvicorn.Config(app, interface="asgi3", lifespan="off", log_config=None)
    loop = asyncio.new_event_loop()
    try:
        protocol = H11Protocol(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
        assert protocol.loop is loop
        assert isinstance(protocol.conn, h11.Connection)
        assert protocol.cycle is None

        class Transport:
            def get_extra_info(self, name: str, default: object = None) -> object:
                return default

        transport = Transport()
        protocol.connection_made(transport)  # type: ignore[arg-type]
        assert protocol.transport is transport
    finally:
        loop.close()
    assert "self.response_complete = False" in inspect.getsource(RequestResponseCycle)


def test_the_server_hook_and_state_the_stop_uses() -> None:
    """`_Server.shutdown` extends `uvicorn.Server.shutdown(sockets=...)` and then aborts what
    `server_state.connections` still holds."""
    assert _parameters(uvicorn.Server.shutdown) == ("self", "sockets")
    assert _parameters(serve_asgi._Server.shutdown) == ("self", "sockets")
    assert isinstance(ServerState().connections, set)
