"""`asmopt serve` under a burst (docs/faults.md): 50 clients at once on loopback, half of
them malformed in different ways (bad JSON, a wrong type, a prompt over the context, a
Content-Length over the cap, one 30 MB body sent whole, an unknown parameter, a seed over
64 bits, an unknown method). Every request gets an HTTP status (no reset, no silence), the
server survives (a valid request then succeeds), and its memory stays under RSS_CEILING
the whole time; a watchdog kills it the moment it goes over, so a regression fails the
test instead of exhausting the machine (the 30 MB body once grew the server to 22.7 GB).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import asmopt_cmd, env

pytestmark = [pytest.mark.slow, pytest.mark.ml]

CLIENTS = 50
RSS_CEILING = 1536 << 20  # bytes; the tiny model's server idles at about 0.5 GiB
CLIENT_TIMEOUT_S = 120
MSG = [{"role": "user", "content": "hi"}]
Address = tuple[str, int]


def _rss(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of a live process from /proc (bytes)."""
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    assert match, text
    return int(match.group(1)) << 10


class _Watchdog:
    """Samples the server's RSS every 20 ms and kills it past the ceiling."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.peak = 0
        self.killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.02) and self.proc.poll() is None:
            try:
                self.peak = max(self.peak, _rss(self.proc.pid))
            except (OSError, AssertionError):  # the process just ended
                return
            if self.peak > RSS_CEILING:
                self.killed = True
                self.proc.kill()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture()
def served(tiny_model_dir: Path, tmp_path: Path) -> Iterator[tuple[Address, _Watchdog]]:
    """`asmopt serve` as a process on a free port; its log goes to a file (a pipe nobody
    reads would fill and stop the server)."""
    log_path = tmp_path / "serve.log"
    cmd = asmopt_cmd("serve", str(tiny_model_dir), "--port", "0", "--name", "tiny")
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env())
    watchdog = _Watchdog(proc)
    try:
        yield _address(log_path, proc), watchdog
    finally:
        watchdog.stop()
        proc.kill()
        proc.wait(timeout=30)


def _address(log_path: Path, proc: subprocess.Popen[bytes]) -> Address:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        found = re.search(r"at http://([\d.]+):(\d+)/v1", log_path.read_text(errors="replace"))
        if found:
            return found.group(1), int(found.group(2))
        assert proc.poll() is None, log_path.read_text()
        time.sleep(0.1)
    raise AssertionError(f"the server did not start: {log_path.read_text()}")


def _answer(sock: socket.socket) -> int:
    response = http.client.HTTPResponse(sock)
    response.begin()
    payload = json.loads(response.read())
    assert response.status == 200 or set(payload["error"]) == {"message", "type", "param", "code"}
    return response.status


def _send(address: Address, head: str, body: bytes = b"") -> int:
    """One raw request (the whole body sent before the answer is read), its status."""
    with socket.create_connection(address, timeout=CLIENT_TIMEOUT_S) as sock:
        sock.sendall(f"{head}\r\nHost: x\r\n\r\n".encode() + body)
        return _answer(sock)


def _post(address: Address, body: bytes, path: str = "/v1/chat/completions") -> int:
    return _send(address, f"POST {path} HTTP/1.1\r\nContent-Length: {len(body)}", body)


def _chat(**fields: Any) -> bytes:
    return json.dumps({"messages": MSG, **fields}).encode()


def _declares_too_much(address: Address) -> int:
    """Content-Length far over the cap, a little of the body, then the answer is read."""
    with socket.create_connection(address, timeout=CLIENT_TIMEOUT_S) as sock:
        head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 30000000"
        sock.sendall(f"{head}\r\n\r\n".encode() + b" " * (64 << 10))
        return _answer(sock)


def _over_context() -> bytes:
    """100,000 tokens ("@" is one token): over the tiny model's context, under its body cap."""
    return json.dumps({"messages": [{"role": "user", "content": "@" * 100_000}]}).encode()


def _thirty_megabytes() -> bytes:
    """The reported body: one chat message of 30 MB, under the old 32 MiB cap."""
    return json.dumps({"messages": [{"role": "user", "content": "x" * 30_000_000}]}).encode()


# What each malformed client sends and the status it must get.
MALFORMED: list[tuple[str, Callable[[Address], int], int]] = [
    ("bad JSON", lambda a: _post(a, b"{not json"), 400),
    ("wrong type", lambda a: _post(a, _chat(n="abc")), 400),
    ("over the context", lambda a: _post(a, _over_context()), 400),
    ("Content-Length over the cap", _declares_too_much, 413),
    ("unknown parameter", lambda a: _post(a, _chat(min_p=0.1)), 400),
    ("seed over 64 bits", lambda a: _post(a, _chat(seed=2**70)), 400),
    ("unknown method", lambda a: _send(a, "BREW /v1/chat/completions HTTP/1.1"), 405),
]


def _valid(address: Address) -> int:
    return _post(address, _chat(max_tokens=8, temperature=0))


def _clients() -> list[tuple[str, Callable[[Address], int], set[int]]]:
    """Half valid, half malformed (every kind, in turn), and one 30 MB body sent whole."""
    clients: list[tuple[str, Callable[[Address], int], set[int]]] = [
        ("30 MB body", lambda a: _post(a, _thirty_megabytes()), {413})
    ]
    for i in range(CLIENTS // 2 - 1):
        name, send, status = MALFORMED[i % len(MALFORMED)]
        clients.append((name, send, {status}))
    clients += [("valid", _valid, {200, 429})] * (CLIENTS - len(clients))
    return clients


def _burst(address: Address) -> list[tuple[str, set[int], int | str]]:
    """Every client at once (a barrier), each its own thread: (kind, wanted, got)."""
    clients = _clients()
    barrier = threading.Barrier(len(clients))
    results: list[tuple[str, set[int], int | str]] = []

    def run(name: str, send: Callable[[Address], int], wanted: set[int]) -> None:
        barrier.wait()
        try:
            got: int | str = send(address)
        except Exception as exc:  # a reset, a timeout, a missing answer: recorded, asserted
            got = f"{type(exc).__name__}: {exc}"
        results.append((name, wanted, got))

    threads = [threading.Thread(target=run, args=client) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=CLIENT_TIMEOUT_S + 60)
    assert not any(t.is_alive() for t in threads), "a client got no answer in time"
    return results


def test_serve_burst_of_50_half_malformed_all_answered(
    served: tuple[Address, _Watchdog],
) -> None:
    address, watchdog = served
    start = time.monotonic()
    results = _burst(address)
    took = time.monotonic() - start
    wrong = [(name, wanted, got) for name, wanted, got in results if got not in wanted]
    assert not watchdog.killed, f"server RSS went over {RSS_CEILING >> 20} MiB: killed"
    assert len(results) == CLIENTS and not wrong, wrong
    assert _valid(address) == 200  # alive, and a slot is free again
    peak = max(watchdog.peak, _rss(watchdog.proc.pid, "VmHWM"))
    print(f"{CLIENTS} clients answered in {took:.1f} s; server peak RSS {peak >> 20} MiB")
    assert peak < RSS_CEILING
