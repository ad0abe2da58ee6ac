"""Fault 12: every malformed request to `asmopt serve` gets a 4xx JSON error in the OpenAI
shape, never a dropped connection; a busy port is reported before the model loads
(docs/faults.md)."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import error_line, run_asmopt


@pytest.fixture(scope="module")
def server(tiny_model_dir: Path) -> Iterator[Any]:
    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.serve import ModelServer

    srv = ModelServer(HFBackend(tiny_model_dir), port=0, model_name="tiny").start()
    yield srv
    srv.stop()


def _raw(srv: Any, request: bytes) -> tuple[int, dict[str, Any]]:
    """Send raw bytes, read one HTTP response (status and JSON body)."""
    host, port = srv.httpd.server_address[:2]
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(request)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, json.loads(response.read())


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
