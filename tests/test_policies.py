"""Prompts, answer extraction, the diff edit format, and the LLM back-ends over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from asmopt.policies.base import PolicyRequest
from asmopt.policies.diff_format import DiffError, apply_unified_diff
from asmopt.policies.extract import extract_assembly, extract_diff
from asmopt.policies.llm import LLMPolicy, PolicyError, SamplingParams
from asmopt.policies.openai_http import OpenAIBackend, TransientError
from asmopt.policies.prompts import TemplateError, load_template
from asmopt.programs.model import Program, TestCase

ASM = "\t.text\n\t.globl main\nmain:\n\txorl %eax, %eax\n\tret\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"```assembly\n{ASM}```", ASM),
        (f"Here you go:\n```asm\n{ASM}```\nThis is faster because...", ASM),
        (f"```x86asm\n{ASM}```", ASM),
        (f"```s\n{ASM}```", ASM),
        (f"```assembly\nold\n```\nbetter:\n```assembly\n{ASM}```", ASM),  # last fence wins
        (f"```assembly\n{ASM}", ASM),  # truncated: no closing fence
        (f"```assembly\n{ASM.rstrip()}", ASM),  # truncated mid-line
        (f"```\n{ASM}```", ASM),  # untagged but clearly assembly
        (f"```c\nint main(){{}}\n```\n```assembly\n{ASM}```", ASM),
        ("I cannot help with that.", None),
        ("", None),
        ("```assembly\n```", None),
        ("```python\nprint(1)\n```", None),
        (ASM, ASM),  # bare assembly without fences
    ],
)
def test_extract_assembly(text: str, expected: str | None) -> None:
    assert extract_assembly(text) == expected


def test_diff_applies_with_wrong_line_numbers() -> None:
    base = "a\nb\nc\nd\ne\n"
    diff = "--- a.s\n+++ b.s\n@@ -9,3 +9,3 @@\n b\n-c\n+C\n d\n"
    assert apply_unified_diff(base, diff) == "a\nb\nC\nd\ne\n"
    two = "@@ -1,2 +1,1 @@\n a\n-b\n@@ -4,2 +3,3 @@\n d\n+d2\n e\n"
    assert apply_unified_diff(base, two) == "a\nc\nd\nd2\ne\n"
    # Garbled or missing header numbers still open a hunk, searched for after the last one.
    garbled = "@@ -2,1 +,0 @@\n-b\n@@ @@\n-d\n@@ -x +y @ @\n-e\n"
    assert apply_unified_diff(base, garbled) == "a\nc\n"
    with pytest.raises(DiffError, match="hunk 2"):
        apply_unified_diff(base, "@@ @@\n-d\n@@ @@\n-b\n")  # hunks apply in order


def test_zero_context_insertions_land_after_their_line() -> None:
    # `@@ -N,0 +M @@` inserts after old line N; a pure insertion matches anywhere, so its
    # number is all that places it.
    assert apply_unified_diff("a\nb\nc\n", "@@ -2,0 +3 @@\n+X\n") == "a\nb\nX\nc\n"
    assert apply_unified_diff("a\nb\n", "@@ -0,0 +1 @@\n+X\n") == "X\na\nb\n"
    assert apply_unified_diff("a\nb\n", "@@ -2,0 +3 @@\n+X\n") == "a\nb\nX\n"
    # A number past the end (a model's guess) appends; it never indexes outside the text.
    assert apply_unified_diff("a\nb\n", "@@ -99999,0 +1 @@\n+X\n") == "a\nb\nX\n"
    # After an earlier hunk, an insertion numbered before it still lands after that hunk.
    assert apply_unified_diff("a\nb\nc\n", "@@ -2 @@\n-b\n@@ -0,0 @@\n+X\n") == "a\nX\nc\n"


@pytest.mark.parametrize("context", [0, 1, 3])
def test_difflib_diffs_of_random_edits_reproduce_their_target(context: int) -> None:
    # What the SFT targets and most models write: difflib's unified diff, here of random
    # deletions, insertions and replacements (pure insertions included), at any context.
    import difflib
    import random

    rng = random.Random(context)
    for _ in range(300):
        base = [f"l{i}" for i in range(rng.randint(0, 30))]
        target = list(base)
        for _ in range(rng.randint(1, 6)):
            at = rng.randint(0, len(target))
            kind = rng.choice(["insert", "delete", "replace"])
            if kind == "insert" or not target or at == len(target):
                target[at:at] = [f"new{rng.randint(0, 99)}" for _ in range(rng.randint(1, 3))]
            elif kind == "delete":
                del target[at : at + rng.randint(1, 3)]
            else:
                target[at] = f"rep{rng.randint(0, 99)}"
        diff = "\n".join(difflib.unified_diff(base, target, n=context, lineterm=""))
        if not diff:
            continue
        text = "\n".join(base) + "\n" if base else ""
        assert apply_unified_diff(text, diff).splitlines() == target, diff


@pytest.mark.parametrize(
    ("diff", "needle"),
    [
        ("@@ -1 +1 @@\n-zzz\n+y\n", "do not match"),
        ("no hunks here", "before the first @@"),
        ("", "no @@ hunks"),
        ("@@ -1 +1 @@\n*a\n", "does not start with"),
    ],
)
def test_bad_diffs(diff: str, needle: str) -> None:
    with pytest.raises(DiffError, match=needle):
        apply_unified_diff("a\nb\n", diff)


def test_extract_diff() -> None:
    assert extract_diff("```diff\n@@ -1 +1 @@\n-a\n+b\n```") == "@@ -1 +1 @@\n-a\n+b\n"
    assert extract_diff("nothing") is None


def test_templates(tmp_path: Path) -> None:
    ref = load_template("reference")
    text = ref.render("int main(){ return 0; }", ASM, feedback="test t1: wrong_output")
    assert "```c\nint main(){ return 0; }\n```" in text
    assert "```assembly\n" + ASM.rstrip("\n") + "\n```" in text
    assert "wrong_output" in text and text.rstrip().endswith("Optimized Assembly Code:")
    assert ASM.strip() not in load_template("c_only").render("x", ASM)
    assert load_template("diff").edit_format == "diff"
    own = tmp_path / "mine.txt"
    own.write_text("Speed up $c_code please, cost $$5")
    assert load_template(str(own)).render("X", "Y") == "Speed up X please, cost $5"
    own.write_text("Hello $name")
    with pytest.raises(TemplateError, match="unknown placeholders"):
        load_template(str(own))
    with pytest.raises(TemplateError, match="unknown template"):
        load_template("nonexistent-template")


# ---------------------------------------------------------------------------- back-ends
@pytest.fixture(scope="module")
def server(tiny_model_dir: Path) -> Iterator[object]:
    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.server import ModelServer

    srv = ModelServer(HFBackend(tiny_model_dir), port=0, model_name="tiny").start()
    yield srv
    srv.stop()


PROGRAM = Program(id="p", source="int main(void){return 0;}\n", tests=(TestCase("t1", b"", b""),))


@pytest.mark.ml  # a tiny local model
def test_hf_backend_batched_and_seeded(tiny_model_dir: Path) -> None:
    from asmopt.policies.hf_local import HFBackend

    backend = HFBackend(tiny_model_dir, batch_size=2)
    params = SamplingParams(temperature=0.8, max_new_tokens=12, sampling_seed=3)
    msgs = [{"role": "user", "content": "optimize main"}]
    a = backend.generate(msgs, 3, params)
    b = backend.generate(msgs, 3, params)
    assert [c.text for c in a] == [c.text for c in b]  # same seed, same samples
    assert all(1 <= c.completion_tokens <= 12 and c.prompt_tokens > 0 for c in a)
    greedy = backend.generate(msgs, 2, SamplingParams(max_new_tokens=8))
    assert greedy[0].text == greedy[1].text


@pytest.mark.ml  # a tiny local model
def test_hf_backend_never_generates_past_the_models_context(tiny_model_dir: Path) -> None:
    """The eval default asks for a whole answer's worth of tokens; a model with a shorter
    context answers what fits and says "length", and a prompt filling it is refused."""
    from asmopt.policies.hf_local import HFBackend

    backend = HFBackend(tiny_model_dir)
    msgs = [{"role": "user", "content": "optimize main"}]
    [probe] = backend.generate(msgs, 1, SamplingParams(max_new_tokens=1))
    backend.context_length = probe.prompt_tokens + 5
    [short] = backend.generate(msgs, 1, SamplingParams())  # default: 8192 new tokens
    assert short.completion_tokens <= 5
    backend.context_length = probe.prompt_tokens
    with pytest.raises(PolicyError, match="no room to answer"):
        backend.generate(msgs, 1, SamplingParams())


@pytest.mark.ml  # served by a tiny local model
def test_serve_and_openai_policy_end_to_end(server: object) -> None:
    backend = OpenAIBackend(base_url=server.url, model="tiny", api="chat")  # type: ignore[attr-defined]
    backend.preflight()
    policy = LLMPolicy(
        backend=backend,
        name="openai",
        params=SamplingParams(temperature=0.7, max_new_tokens=10, sampling_seed=1),
    )
    cands = policy.propose(PolicyRequest(PROGRAM, ASM, num_samples=2))
    assert len(cands) == 2
    for cand in cands:
        # A random model writes no assembly: its own verdict, not a crash.
        assert cand.assembly is None and cand.extra["extraction_error"]
        assert cand.completion_tokens > 0 and cand.raw_response is not None
    assert backend.usage["requests"] == 2
    comp = OpenAIBackend(base_url=server.url, model="tiny", api="completions")  # type: ignore[attr-defined]
    out = comp.generate([{"role": "user", "content": "main:"}], 1, SamplingParams(max_new_tokens=4))
    assert out[0].completion_tokens >= 1


@pytest.mark.ml  # served by a tiny local model
def test_serve_rejects_bad_requests(server: object) -> None:
    import urllib.error
    import urllib.request

    def post(body: bytes) -> tuple[int, dict]:
        req = urllib.request.Request(
            f"{server.url}/chat/completions",
            data=body,  # type: ignore[attr-defined]
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    assert post(b"{garbage")[0] == 400
    assert post(json.dumps({"model": "other", "messages": []}).encode())[0] == 404
    code, body = post(
        json.dumps({"messages": [{"role": "user", "content": "x"}], "stream": True}).encode()
    )
    assert code == 400 and "streaming" in body["error"]["message"]


@pytest.mark.ml  # served by a tiny local model
def test_wrong_model_name_and_unreachable(server: object) -> None:
    with pytest.raises(PolicyError, match="not served"):
        OpenAIBackend(base_url=server.url, model="gpt-9").preflight()  # type: ignore[attr-defined]
    dead = OpenAIBackend(base_url="http://127.0.0.1:9/v1", model="m", max_retries=1, backoff_s=0.01)
    with pytest.raises(PolicyError, match="cannot reach"):
        dead.preflight()
    with pytest.raises(PolicyError, match="http"):
        OpenAIBackend(base_url="localhost:8000", model="m")


class _Scripted(BaseHTTPRequestHandler):
    """A deliberately broken server: status and body are chosen by the test."""

    script: ClassVar[list[tuple[int, bytes]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def _reply(self) -> None:
        status, body = self.script.pop(0) if self.script else (200, b"{}")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _reply

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._reply()


@pytest.fixture()
def scripted() -> Iterator[tuple[str, list]]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    _Scripted.script = []
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", _Scripted.script
    httpd.shutdown()
    httpd.server_close()


def test_401_garbage_and_retries(scripted: tuple[str, list]) -> None:
    url, script = scripted
    msgs = [{"role": "user", "content": "x"}]
    params = SamplingParams(max_new_tokens=4)
    script[:] = [(401, b'{"error": "bad key"}')]
    with pytest.raises(PolicyError, match="authentication failed"):
        OpenAIBackend(base_url=url, model="m").generate(msgs, 1, params)
    ok = json.dumps(
        {
            "choices": [{"message": {"content": "```asm\nmain:\n```"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 5},
        }
    ).encode()
    script[:] = [(503, b"busy"), (429, b"slow down"), (200, ok)]
    out = OpenAIBackend(base_url=url, model="m", backoff_s=0.01).generate(msgs, 1, params)
    assert out[0].text.startswith("```asm") and out[0].completion_tokens == 5
    script[:] = [(200, b"<html>not json</html>")] * 3
    with pytest.raises(TransientError, match="invalid JSON"):
        OpenAIBackend(base_url=url, model="m", max_retries=2, backoff_s=0.01).generate(
            msgs, 1, params
        )
    script[:] = [(200, b'{"choices": []}')]
    with pytest.raises(TransientError, match="malformed response"):
        OpenAIBackend(base_url=url, model="m").generate(msgs, 1, params)


@pytest.mark.ml  # a tiny local model
def test_model_dir_problems_are_named(tmp_path: Path, tiny_model_dir: Path) -> None:
    from asmopt.policies.hf_local import HFBackend

    with pytest.raises(PolicyError, match="not found"):
        HFBackend(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicyError, match=r"no config\.json"):
        HFBackend(tmp_path / "empty")
    no_weights = tmp_path / "no_weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text((tiny_model_dir / "config.json").read_text())
    with pytest.raises(PolicyError, match="no weights"):
        HFBackend(no_weights)
    (no_weights / "model.safetensors").write_bytes(
        (tiny_model_dir / "model.safetensors").read_bytes()
    )
    with pytest.raises(PolicyError, match="no tokenizer"):
        HFBackend(no_weights)


@pytest.mark.ml  # a tiny local model
def test_eval_over_http_end_to_end(server: object, tmp_path: Path) -> None:
    """`asmopt eval --policy openai` against `asmopt serve`'s server, as a user runs it."""
    import subprocess
    import sys

    from asmopt.programs import load_builtin_suite

    pid = load_builtin_suite().select(split="test")[0].id
    cmd = [
        sys.executable,
        "-m",
        "asmopt.cli",
        "eval",
        "--policy",
        "openai",
        "--model",
        "tiny",
        "--base-url",
        server.url,
        "--only",
        pid,
        "--measure",
        "none",  # type: ignore[attr-defined]
        "--max-tokens",
        "8",
        "--samples",
        "2",
        "--temperature",
        "0.7",
        "--run-dir",
        str(tmp_path / "run"),
        "--json",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["summary"]["policy"] == "openai:tiny"
    assert [r["verdict"] for r in out["results"]] == ["extraction_error"] * 2
    assert "best_of_n" in out["summary"]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and json.loads(again.stdout)["summary"]["resumed"] == 2


def test_serve_names_each_uvicorn_hook_it_extends_and_this_uvicorn_has_them(monkeypatch) -> None:
    """The guarded h11 protocol overrides hooks that are not uvicorn's public interface; a
    release without one is refused by name instead of silently losing a deadline."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from asmopt.policies import serve_asgi

    assert serve_asgi.uvicorn_problems() == []
    monkeypatch.delattr(H11Protocol, "send_400_response")
    assert serve_asgi.uvicorn_problems() == ["send_400_response"]
    with pytest.raises(RuntimeError, match="send_400_response"):
        serve_asgi.build_server(None, "m", None, None)  # type: ignore[arg-type]
