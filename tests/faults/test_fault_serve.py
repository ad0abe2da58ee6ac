"""`asmopt serve` under bad and heavy use (docs/faults.md): every malformed request gets a
4xx JSON error in the OpenAI shape, never a dropped connection (fault 12); limits derived
from the model's context (body size before it is read, prompt + max_tokens before any
generation), a 429 when the generation queue is full, a 503 past the connection limit, a
read timeout; a busy port is reported before the model loads. Numbers follow the tiny
model's context C (4096 tokens): its body cap is 64 KiB + 64 * C bytes."""

from __future__ import annotations

import http.client
import json
import re
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import env, error_line, run_asmopt


@pytest.fixture(scope="module")
def backend(tiny_model_dir: Path) -> Any:
    from asmopt.policies.hf_local import HFBackend

    return HFBackend(tiny_model_dir)


@pytest.fixture(scope="module")
def context(backend: Any) -> int:
    return int(backend.context_length)


def _body_cap(context: int) -> int:
    """The documented cap: 64 KiB plus 64 bytes per token of the context."""
    return (64 << 10) + 64 * context


@pytest.fixture(scope="module")
def server(backend: Any) -> Iterator[Any]:
    from asmopt.policies.server import ModelServer

    srv = ModelServer(backend, port=0, model_name="tiny").start()
    yield srv
    srv.stop()


@pytest.fixture()
def limited(backend: Any) -> Iterator[Callable[..., Any]]:
    """Start a server with the given limits (ServeLimits fields); stopped after the test."""
    from asmopt.policies.serve import ServeLimits
    from asmopt.policies.server import ModelServer

    started: list[Any] = []

    def start(**limits: Any) -> Any:
        srv = ModelServer(backend, port=0, model_name="tiny", limits=ServeLimits(**limits))
        started.append(srv.start())
        return srv

    yield start
    for srv in started:
        srv.stop()


def _answer(sock: socket.socket) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One HTTP response from `sock`: status, JSON body, headers."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    return response.status, json.loads(response.read()), dict(response.getheaders())


def _exchange(srv: Any, request: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Send raw bytes, read one HTTP response (status, JSON body, headers)."""
    with socket.create_connection(srv.address, timeout=60) as sock:
        sock.sendall(request)
        return _answer(sock)


def _raw(srv: Any, request: bytes) -> tuple[int, dict[str, Any]]:
    status, payload, _ = _exchange(srv, request)
    return status, payload


def _post(srv: Any, body: bytes, path: str = "/v1/chat/completions", **headers: str) -> Any:
    head = {"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}
    lines = "".join(f"{k}: {v}\r\n" for k, v in head.items())
    return _raw(srv, f"POST {path} HTTP/1.1\r\nHost: x\r\n{lines}\r\n".encode() + body)


MSG = [{"role": "user", "content": "hi"}]
BAD_BODIES = [
    ({"messages": MSG, "n": "abc"}, "n"),
    ({"messages": MSG, "n": 0}, "n"),
    ({"messages": []}, "messages"),
    ({"messages": "hello"}, "messages"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
    ({"messages": MSG, "temperature": "hot"}, "temperature"),
    ({"messages": MSG, "max_tokens": -3}, "max_tokens"),
    ({"messages": MSG, "seed": 1.5}, "seed"),
    ({"messages": MSG, "stream": True}, "stream"),
    ({"messages": MSG, "seed": 2**70}, "seed"),
    ({"messages": MSG, "seed": -(2**64)}, "seed"),
    ({"messages": [{"role": "user", "content": "hi\ud800"}]}, "messages.0.content"),
    ({"messages": MSG, "stop": ["\udfff"]}, "stop"),
]


@pytest.mark.ml
@pytest.mark.parametrize("body, param", BAD_BODIES)
def test_fault12_bad_fields_are_400_in_openai_shape(server: Any, body: Any, param: str) -> None:
    status, payload = _post(server, json.dumps(body).encode())
    assert status == 400
    err = payload["error"]
    assert err["type"] == "invalid_request_error" and err["param"] == param
    assert isinstance(err["message"], str) and "code" in err


@pytest.mark.ml
@pytest.mark.parametrize(
    "body, headers, status",
    [
        (b"{}", {"Content-Length": "abc"}, 400),
        (b"not json", {}, 400),
        (b"[1, 2]", {}, 400),
        (b'{"prompt": 5}', {}, 400),
        (b'{"messages": [], "n": 1' + b"0" * 5000 + b"}", {}, 400),  # past int's digit limit
    ],
)
def test_fault12_malformed_requests_get_an_answer(
    server: Any, body: bytes, headers: dict[str, str], status: int
) -> None:
    path = "/v1/completions" if b"prompt" in body else "/v1/chat/completions"
    got, payload = _post(server, body, path, **headers)
    assert got == status and payload["error"]["type"] == "invalid_request_error"


@pytest.mark.ml
def test_fault12_null_means_default(server: Any) -> None:
    body = {"messages": MSG, "n": None, "max_tokens": 2, "temperature": None}
    status, payload = _post(server, json.dumps(body).encode())
    assert status == 200 and len(payload["choices"]) == 1


def test_fault12_busy_port_is_reported_before_the_model_loads(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        # No model at all in this directory: the port is what must be reported.
        line = error_line(run_asmopt("serve", str(tmp_path), "--port", str(port)))
    assert f"127.0.0.1:{port}" in line and "--port" in line


def _chat(srv: Any, content: str, **params: Any) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"messages": [{"role": "user", "content": content}], **params})
    return _post(srv, body.encode())


def _numbers(message: str) -> set[int]:
    return {int(n) for n in re.findall(r"\d+", message)}


@pytest.mark.ml
@pytest.mark.parametrize(
    "chars, tokens, param",
    [
        (lambda c: 80_000, lambda c: 2, "messages"),  # the reported 80,020-token prompt
        (lambda c: c + 1_000, lambda c: None, "messages"),
        (lambda c: 10, lambda c: c + 1_000, "max_tokens"),
        (lambda c: c // 2, lambda c: c // 2 + 100, "max_completion_tokens"),
    ],
    ids=["reported", "prompt-alone", "max_tokens", "max_completion_tokens"],
)
def test_serve_limits_over_context_is_400_naming_both_numbers(
    server: Any,
    backend: Any,
    context: int,
    chars: Callable[[int], int],
    tokens: Callable[[int], int | None],
    param: str,
) -> None:
    content = "@" * chars(context)  # "@" is one token of the tiny tokenizer
    prompt = backend.render([{"role": "user", "content": content}])
    prompt_tokens = backend.count_tokens(prompt, context).tokens
    wanted = tokens(context)
    name = "max_tokens" if param == "messages" else param
    params = {} if wanted is None else {name: wanted}
    start = time.monotonic()
    status, payload = _chat(server, content, **params)
    assert time.monotonic() - start < 10  # refused before any generation
    err = payload["error"]
    assert status == 400 and err["param"] == param, payload
    assert err["type"] == "invalid_request_error" and err["code"] == "context_length_exceeded"
    asked = set() if param == "messages" else {wanted}  # the prompt alone is too long
    assert {context, prompt_tokens, *asked} <= _numbers(err["message"]), err


@pytest.mark.ml
def test_serve_limits_missing_max_tokens_defaults_to_what_fits(
    server: Any, backend: Any, context: int
) -> None:
    content = "@" * (context - 40)
    prompt = backend.render([{"role": "user", "content": content}])
    room = context - backend.count_tokens(prompt, context).tokens
    assert 0 < room < 100
    status, payload = _chat(server, content, temperature=1.0, seed=5)
    assert status == 200, payload
    usage = payload["usage"]
    assert usage["total_tokens"] <= context and usage["completion_tokens"] <= room


@pytest.mark.ml
@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("BREW", "/v1/chat/completions", "POST"),
        ("PUT", "/v1/models", "GET"),
        ("DELETE", "/", "GET, POST"),
        ("GET", "/v1/completions", "POST"),
        ("POST", "/health", "GET"),
    ],
)
def test_serve_limits_unknown_method_is_405_with_allow(
    server: Any, method: str, path: str, allowed: str
) -> None:
    body = b'{"messages": []}'
    request = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    status, payload, headers = _exchange(server, request.encode() + body)
    assert status == 405 and headers["Allow"] == allowed
    assert (
        payload["error"]["type"] == "invalid_request_error"
        and method in payload["error"]["message"]
    )


@pytest.mark.ml
@pytest.mark.parametrize("over", [1, 30_000_000], ids=["just-over", "30MB"])
def test_serve_limits_body_over_cap_is_413_before_it_is_read(
    server: Any, context: int, over: int
) -> None:
    """Only the headers are sent: an answer proves the body was not waited for."""
    length = max(_body_cap(context) + 1, over)
    with socket.create_connection(server.address, timeout=10) as sock:
        head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        sock.sendall(f"{head}Content-Length: {length}\r\n\r\n".encode())
        status, payload, headers = _answer(sock)
    assert status == 413 and headers["Connection"] == "close"
    assert {length, _body_cap(context), context} <= _numbers(payload["error"]["message"])
    assert payload["error"]["type"] == "invalid_request_error"


def _first_line_after_expect(srv: Any, length: int) -> bytes:
    with socket.create_connection(srv.address, timeout=10) as sock:
        head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
        sock.sendall(f"{head}Content-Length: {length}\r\n\r\n".encode())
        return sock.makefile("rb").readline()


@pytest.mark.ml
def test_serve_limits_expect_100_continue_only_for_a_body_it_will_read(
    server: Any, context: int
) -> None:
    """A client that asks before sending (curl does for large bodies) hears the refusal
    instead of a "100 Continue" that would make it send the whole body first; a body
    within the cap still gets its "100 Continue"."""
    assert _first_line_after_expect(server, _body_cap(context) + 1).split()[1] == b"413"
    assert _first_line_after_expect(server, 2).split()[1] == b"100"


def _health(srv: Any) -> dict[str, Any]:
    status, payload = _raw(srv, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200
    return payload


def _hold_the_slot(
    srv: Any, tokens: int = 300
) -> tuple[threading.Thread, list[tuple[int, dict[str, Any]]]]:
    """A request that generates `tokens` tokens, started on a thread; returns once it does."""
    held: list[tuple[int, dict[str, Any]]] = []
    # Greedy from "hi" never ends early on this model: the request generates for a while.
    long = json.dumps({"prompt": "hi", "temperature": 0, "max_tokens": tokens}).encode()
    holder = threading.Thread(target=lambda: held.append(_post(srv, long, "/v1/completions")))
    holder.start()
    deadline = time.monotonic() + 30
    while _health(srv)["generating"] == 0:
        assert time.monotonic() < deadline and holder.is_alive(), held
        time.sleep(0.02)
    return holder, held


@pytest.mark.ml
def test_serve_limits_full_queue_is_429_with_retry_after(limited: Callable[..., Any]) -> None:
    srv = limited(max_concurrent=1, max_queue=0)
    holder, held = _hold_the_slot(srv)
    request = json.dumps({"messages": MSG, "max_tokens": 2}).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(request)}"
    status, payload, headers = _exchange(srv, f"{head}\r\n\r\n".encode() + request)
    holder.join(timeout=120)
    assert status == 429 and int(headers["Retry-After"]) >= 1
    err = payload["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["code"] == "rate_limit_exceeded" and "busy" in err["message"]
    assert held and held[0][0] == 200
    assert _chat(srv, "hi", max_tokens=2)[0] == 200  # the slot is free again


@pytest.mark.ml
def test_serve_limits_a_wait_past_the_queue_timeout_is_503_with_retry_after(
    limited: Callable[..., Any],
) -> None:
    srv = limited(max_concurrent=1, max_queue=1, queue_timeout_s=0.5)
    holder, held = _hold_the_slot(srv, tokens=3000)  # seconds on a CPU
    request = json.dumps({"messages": MSG, "max_tokens": 2}).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(request)}"
    waited: list[tuple[int, dict[str, Any], dict[str, str]]] = []
    start = time.monotonic()
    waiter = threading.Thread(
        target=lambda: waited.append(_exchange(srv, f"{head}\r\n\r\n".encode() + request))
    )
    waiter.start()
    seen_waiting = False
    while waiter.is_alive() and not seen_waiting:
        seen_waiting = _health(srv)["waiting"] == 1
    waiter.join(timeout=10)
    took = time.monotonic() - start
    holder.join(timeout=120)
    assert seen_waiting and waited, waited
    status, payload, headers = waited[0]
    assert status == 503 and int(headers["Retry-After"]) >= 1 and 0.4 < took < 5, waited
    assert (
        payload["error"]["code"] == "server_busy" and "waited 0.5 s" in payload["error"]["message"]
    )
    assert held and held[0][0] == 200


@pytest.mark.ml
def test_serve_our_own_failures_are_500_in_openai_shape(
    server: Any, backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure injected into the back-end (generating, then rendering the prompt) is still
    answered, as a server_error, and the server serves on."""

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(backend, "generate_prompts", fail)
    status, payload = _chat(server, "hi", max_tokens=2)
    assert status == 500 and payload["error"]["type"] == "server_error"
    assert payload["error"]["message"] == "generation failed: RuntimeError: injected"
    monkeypatch.setattr(backend, "render", fail)
    status, payload = _chat(server, "hi", max_tokens=2)
    assert status == 500 and payload["error"]["type"] == "server_error"
    assert payload["error"]["message"] == "internal error: RuntimeError: injected"
    monkeypatch.undo()
    assert _chat(server, "hi", max_tokens=2)[0] == 200


@pytest.mark.ml
def test_serve_limits_connections_past_the_limit_get_503(limited: Callable[..., Any]) -> None:
    srv = limited(max_connections=1)
    with socket.create_connection(srv.address, timeout=10):  # holds the one
        time.sleep(0.2)  # accepted and handed to its thread
        status, payload, headers = _exchange(srv, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 503 and int(headers["Retry-After"]) >= 1
    assert payload["error"]["code"] == "server_busy"


@pytest.mark.ml
def test_serve_limits_a_stalled_body_is_408_after_the_read_timeout(
    limited: Callable[..., Any],
) -> None:
    srv = limited(read_timeout_s=1)
    with socket.create_connection(srv.address, timeout=10) as sock:
        head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
        sock.sendall(head.encode() + b'{"messages": ')  # and then nothing
        start = time.monotonic()
        status, payload, _ = _answer(sock)
    assert status == 408 and time.monotonic() - start < 5
    assert payload["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    "flag, value, needle",
    [
        ("--max-concurrent", "0", "--max-concurrent must be 1..256"),
        ("--max-queue", "-1", "--max-queue must be 0..100000"),
        ("--read-timeout", "nan", "--read-timeout must be"),
    ],
)
def test_serve_limits_flags_are_checked_before_the_model_loads(
    tmp_path: Path, flag: str, value: str, needle: str
) -> None:
    line = error_line(run_asmopt("serve", str(tmp_path), "--port", "0", flag, value))
    assert needle in line


TRICKLED_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: "
HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"


def _trickle_until_answered(sock: socket.socket, limit_s: float = 5.0) -> float:
    """Send a request head one byte every 0.1 s, so no single read ever waits long, until the
    server answers; the seconds that took."""
    sock.sendall(TRICKLED_HEAD)
    start = time.monotonic()
    while not select.select([sock], [], [], 0.1)[0]:
        assert time.monotonic() - start < limit_s, "the trickled head was never cut off"
        sock.sendall(b"a")
    return time.monotonic() - start


@pytest.mark.ml
def test_serve_limits_a_trickled_head_is_cut_off_while_others_are_answered(
    limited: Callable[..., Any],
) -> None:
    """A client trickling its headers holds its connection for the read timeout in all (not
    per byte), and meanwhile another client within the connection limit is answered."""
    srv = limited(read_timeout_s=1, max_connections=2)
    meanwhile: list[dict[str, Any]] = []
    with socket.create_connection(srv.address, timeout=10) as slow:
        waiter = threading.Thread(target=lambda: (time.sleep(0.3), meanwhile.append(_health(srv))))
        waiter.start()
        took = _trickle_until_answered(slow)
        status, payload, headers = _answer(slow)
        waiter.join(timeout=10)
    assert status == 408 and payload["error"]["code"] == "timeout"
    assert headers["Connection"] == "close" and 0.9 <= took < 3
    assert meanwhile and meanwhile[0]["status"] == "ok"


@pytest.mark.ml
def test_serve_limits_a_trickler_holds_the_last_connection_slot_only_until_its_deadline(
    limited: Callable[..., Any],
) -> None:
    srv = limited(read_timeout_s=1, max_connections=1)
    with socket.create_connection(srv.address, timeout=10) as slow:
        slow.sendall(TRICKLED_HEAD)
        time.sleep(0.2)  # accepted
        busy, payload, _ = _exchange(srv, HEALTH)
        assert busy == 503 and payload["error"]["code"] == "server_busy"
        _trickle_until_answered(slow)
        assert _answer(slow)[0] == 408
    deadline = time.monotonic() + 5  # the server sees the trickler close, then frees its slot
    while (status := _exchange(srv, HEALTH)[0]) != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status == 200


@pytest.mark.ml
def test_serve_limits_a_head_unfinished_past_its_cap_is_400_in_openai_shape(server: Any) -> None:
    """A head that keeps growing without ending (no blank line yet) is refused once it is
    over MAX_HEAD_BYTES, before its deadline: its memory is bounded too."""
    from asmopt.policies.serve import MAX_HEAD_BYTES

    with socket.create_connection(server.address, timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (MAX_HEAD_BYTES + 1))
        start = time.monotonic()
        status, payload, headers = _answer(sock)
    assert status == 400 and headers["Connection"] == "close" and time.monotonic() - start < 5
    err = payload["error"]
    assert err["type"] == "invalid_request_error" and str(MAX_HEAD_BYTES) in err["message"]


@pytest.mark.ml
@pytest.mark.parametrize(
    "line, extra, status",
    [
        ("GET /v1/completions", "Content-Length: 10", 405),
        ("BREW /v1/chat/completions", "Content-Length: 10", 405),
        ("POST /v1/nowhere", "Content-Length: 10", 404),
        ("POST /v1/chat/completions", "Transfer-Encoding: chunked", 411),
    ],
)
def test_serve_limits_no_100_continue_for_a_request_refused_before_its_body(
    server: Any, line: str, extra: str, status: int
) -> None:
    """A refusal is the first thing said; "100 Continue" would make the client send a body
    nobody reads."""
    with socket.create_connection(server.address, timeout=10) as sock:
        sock.sendall(
            f"{line} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n{extra}\r\n\r\n".encode()
        )
        first = sock.makefile("rb").readline()
    assert first.split()[1] == str(status).encode()


@pytest.mark.ml
def test_serve_a_client_that_half_closes_after_its_request_gets_its_answer(server: Any) -> None:
    body = json.dumps({"messages": MSG, "max_tokens": 2}).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    with socket.create_connection(server.address, timeout=60) as sock:
        sock.sendall(head.encode() + body)
        sock.shutdown(socket.SHUT_WR)
        status, payload, _ = _answer(sock)
    assert status == 200 and len(payload["choices"]) == 1


@pytest.mark.parametrize(
    ("request_bytes", "half_close"),
    [(b"GET /health\r\n", False), (b"GET /health\r\n", True), (b"GET /health\r\n\r\n", False)],
    ids=["line_only", "line_then_half_close", "line_and_blank"],
)
def test_serve_an_http09_request_line_gets_a_400_at_once(
    server: Any, request_bytes: bytes, half_close: bool
) -> None:
    """A request line without an HTTP version (HTTP/0.9) is answered 400 in the OpenAI
    shape when its line ends, not left to the read timeout or dropped without a byte."""
    with socket.create_connection(server.address, timeout=10) as sock:
        sock.sendall(request_bytes)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        status, payload, _ = _answer(sock)
    assert status == 400 and "HTTP/1.1" in payload["error"]["message"], payload


def test_serve_pipelined_requests_before_a_half_close_are_all_answered(server: Any) -> None:
    one = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(server.address, timeout=30) as sock:
        sock.sendall(one * 3)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(1 << 16):  # to the end: the connection closes after them
            received += chunk
    statuses = re.findall(rb"HTTP/1.1 (\d+) ", received)  # each body ends without a newline
    assert statuses == [b"200"] * 3, received


def test_serve_a_half_head_then_a_half_close_gets_a_400(server: Any) -> None:
    with socket.create_connection(server.address, timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        sock.shutdown(socket.SHUT_WR)
        status, payload, _ = _answer(sock)
    assert status == 400 and payload["error"]["type"], payload


@pytest.mark.ml
def test_serve_stop_is_prompt_with_connections_open(backend: Any, context: int) -> None:
    """An idle connection, a kept-alive one and one lingering after a 413 do not hold up
    stop(); afterwards the port refuses connections and every one of them is closed."""
    from asmopt.policies.server import ModelServer

    srv = ModelServer(backend, port=0, model_name="tiny").start()
    address = srv.address
    idle = socket.create_connection(address, timeout=10)
    kept = socket.create_connection(address, timeout=10)
    kept.sendall(HEALTH)
    assert _answer(kept)[0] == 200
    lingering = socket.create_connection(address, timeout=10)
    head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
    lingering.sendall(f"{head}Content-Length: {_body_cap(context) + 1}\r\n\r\n".encode())
    assert _answer(lingering)[0] == 413
    start = time.monotonic()
    srv.stop()
    assert time.monotonic() - start < 2
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=2)
    for sock in (idle, kept, lingering):
        with sock:
            assert sock.recv(1 << 16) == b""  # closed by the server, nothing more


def test_importing_serve_needs_neither_starlette_nor_uvicorn() -> None:
    """The HTTP stack loads with the first ModelServer, not with the package or the CLI."""
    code = (
        "import sys, asmopt, asmopt.policies, asmopt.policies.serve, asmopt.cli.main\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'starlette', 'uvicorn', 'h11'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env(), timeout=120
    )
    assert out.returncode == 0 and out.stdout.strip() == "[]", out


@pytest.mark.slow  # about 15 s: 64 x 128 tokens with log-probabilities
@pytest.mark.ml
def test_serve_limits_a_client_that_stops_reading_its_answer_is_dropped(
    limited: Callable[..., Any],
) -> None:
    """An answer of about 10 MB (64 choices of 128 tokens with 20 alternatives each) to a
    client that reads none of it: once the kernel's buffers are full the server waits the
    read timeout, then drops the connection, so the client finds its answer cut short."""
    srv = limited(read_timeout_s=1)
    body = json.dumps(
        {"messages": MSG, "n": 64, "max_tokens": 128, "logprobs": True, "top_logprobs": 20}
    ).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting
        sock.settimeout(60)
        sock.connect(srv.address)
        sock.sendall(head.encode() + body)
        # The generation takes 10-20 s alone and over a minute beside other work: wait for
        # its end (the deadline only bounds a hang), since until then nothing is written.
        deadline = time.monotonic() + 600
        while _health(srv)["generating"] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        while _health(srv)["generating"] == 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _health(srv)["generating"] == 0, "the answer was still being generated"
        # Then the 10 MB answer is built, which beside other work takes seconds more: wait
        # for its first bytes without reading them (select consumes nothing), so that the
        # server's writes block and its read timeout runs out meanwhile.
        ready, _, _ = select.select([sock], [], [], 300)
        assert ready, "no byte of the answer was written"
        time.sleep(3)
        with pytest.raises((http.client.IncompleteRead, ConnectionResetError)):
            _answer(sock)
    assert _health(srv)["status"] == "ok"
