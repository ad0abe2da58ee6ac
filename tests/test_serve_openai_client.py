"""`asmopt serve` as the official `openai` client sees it: real HTTP on loopback around a
tiny random model from `asmopt.train.tiny.build_tiny_model` (the model a first try uses).

Whatever the client asks for is either honoured (n, stop, max_tokens, logprobs) or refused
with a 400 that names the parameter, so `openai.BadRequestError.param` says what to change.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asmopt.policies.llm import PolicyError, SamplingParams
from asmopt.policies.openai_http import OpenAIBackend

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.ml  # a tiny local model

MODEL = "tiny"
MESSAGES = [{"role": "user", "content": "Write the x86-64 assembly of main."}]
GREEDY_TOKENS = 32


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from asmopt.train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("serve") / "tiny-llama", "llama")


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[Any]:
    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.server import ModelServer

    srv = ModelServer(HFBackend(model_dir), port=0, model_name=MODEL).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server: Any) -> Any:
    return openai.OpenAI(base_url=server.url, api_key="x", max_retries=0, timeout=60)


def chat(client: Any, **params: Any) -> Any:
    return client.chat.completions.create(model=MODEL, messages=MESSAGES, **params)


@pytest.fixture(scope="module")
def greedy(client: Any) -> str:
    """The model's greedy answer, which the stop tests cut: deterministic for a seeded model."""
    return chat(client, temperature=0, max_tokens=GREEDY_TOKENS).choices[0].message.content


def stop_in(text: str) -> str:
    """A stop string `text` first holds past its first character: a character that decoded
    whole (a random byte model also writes partial UTF-8, shown as U+FFFD)."""
    usable = [ch for ch in text if ch != "\ufffd" and text.index(ch) > 0]
    assert usable, f"the answer has no usable stop character: {text!r}"
    return usable[0]


@pytest.fixture(scope="module")
def stop(greedy: str) -> str:
    return stop_in(greedy)


def test_n_returns_n_choices(client: Any) -> None:
    resp = chat(client, n=2, temperature=0.8, seed=1, max_tokens=6)
    assert [c.index for c in resp.choices] == [0, 1]
    assert all(c.finish_reason in ("stop", "length") for c in resp.choices)
    assert resp.usage.completion_tokens >= 2 and resp.usage.prompt_tokens > 0


def test_max_tokens_ends_with_length(client: Any) -> None:
    resp = chat(client, temperature=0, max_tokens=5)
    assert resp.choices[0].finish_reason == "length"
    assert resp.usage.completion_tokens == 5


@pytest.mark.parametrize("as_list", [False, True])
def test_stop_cuts_before_the_stop_string(
    client: Any, greedy: str, stop: str, as_list: bool
) -> None:
    asked: Any = [stop, "never-written-by-this-model"] if as_list else stop
    resp = chat(client, temperature=0, max_tokens=GREEDY_TOKENS, stop=asked)
    choice = resp.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.content == greedy[: greedy.index(stop)]
    # Generation ended at the stop string instead of running on to max_tokens.
    assert resp.usage.completion_tokens < GREEDY_TOKENS


def test_completions_endpoint_honours_stop_and_n(client: Any) -> None:
    prompt = "main:\n"
    full = client.completions.create(model=MODEL, prompt=prompt, temperature=0, max_tokens=24)
    text = full.choices[0].text
    stop = stop_in(text)
    resp = client.completions.create(
        model=MODEL, prompt=prompt, temperature=0, max_tokens=24, stop=[stop], n=2
    )
    assert [c.text for c in resp.choices] == [text[: text.index(stop)]] * 2
    assert {c.finish_reason for c in resp.choices} == {"stop"}


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_backend_stops_each_row_of_a_batch_on_its_own(model_dir: Path) -> None:
    """Rows of one batch end apart: one at its stop string, the other running on."""
    from asmopt.policies.hf_local import HFBackend

    backend = HFBackend(model_dir)
    prompts = ["main:\n", "int f(void) {"]
    params = SamplingParams(temperature=0, max_new_tokens=24)
    full = backend.generate_prompts(prompts, params)
    stop = stop_in(full[0].text)
    cut = backend.generate_prompts(prompts, params, stop=[stop], top_logprobs=1)
    for whole, part in zip(full, cut, strict=True):
        if stop in whole.text:
            assert part.text == whole.text[: whole.text.index(stop)]
            assert part.finish_reason == "stop"
        else:
            assert (part.text, part.finish_reason) == (whole.text, whole.finish_reason)
        assert part.logprobs is not None and len(part.logprobs) == part.completion_tokens


def test_chat_logprobs_shape_and_values(client: Any) -> None:
    resp = chat(client, temperature=0, max_tokens=6, logprobs=True, top_logprobs=3)
    choice = resp.choices[0]
    entries = choice.logprobs.content
    assert len(entries) == resp.usage.completion_tokens == 6
    for entry in entries:
        assert entry.logprob <= 0 and len(entry.top_logprobs) == 3
        tops = [t.logprob for t in entry.top_logprobs]
        assert tops == sorted(tops, reverse=True) and sum(math.exp(t) for t in tops) <= 1 + 1e-6
        # Greedy: the sampled token is the most likely one, with the same log-probability.
        assert entry.token == entry.top_logprobs[0].token
        assert entry.logprob == pytest.approx(tops[0], abs=1e-5)
    # The tokens' bytes spell the answer exactly, partial UTF-8 characters included.
    spelled = b"".join(bytes(e.bytes) for e in entries).decode("utf-8", "replace")
    assert spelled == choice.message.content


def test_sampled_logprobs_and_no_logprobs_by_default(client: Any) -> None:
    resp = chat(client, temperature=1.0, seed=3, max_tokens=8, logprobs=True)
    entries = resp.choices[0].logprobs.content
    assert entries and all(e.logprob <= 0 and e.top_logprobs == [] for e in entries)
    assert chat(client, max_tokens=2).choices[0].logprobs is None


def test_completions_logprobs(client: Any) -> None:
    resp = client.completions.create(
        model=MODEL, prompt="main:\n", temperature=0, max_tokens=4, logprobs=2
    )
    lp = resp.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 4
    assert lp.text_offset[0] == 0 and all(v <= 0 for v in lp.token_logprobs)
    for token, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs, strict=True):
        assert top[token] == value and 1 <= len(top) <= 3


def test_streaming_is_refused_with_400(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, max_tokens=4, stream=True)
    assert info.value.param == "stream" and "streaming" in info.value.message


@pytest.mark.parametrize(
    "params, param",
    [
        ({"n": 0}, "n"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"stop": ""}, "stop"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ({"presence_penalty": 0.5}, "presence_penalty"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"extra_body": {"min_p": 0.1}}, "min_p"),
    ],
)
def test_bad_requests_name_the_parameter(client: Any, params: dict[str, Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, max_tokens=2, **params)
    err = info.value
    assert err.status_code == 400 and err.param == param and err.type == "invalid_request_error"


def test_over_context_is_bad_request_naming_both_numbers(client: Any) -> None:
    """The tiny model's context is 8192 tokens: 9000 more cannot fit, and the server says
    so before generating anything (OpenAI's code for it: context_length_exceeded)."""
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, max_tokens=9000)
    err = info.value
    assert err.param == "max_tokens" and err.code == "context_length_exceeded"
    assert "8192" in err.message and "9000" in err.message


def test_do_nothing_values_are_accepted(client: Any) -> None:
    resp = chat(
        client,
        max_tokens=2,
        presence_penalty=0,
        frequency_penalty=0,
        logit_bias={},
        stream=False,
        tool_choice="none",
        response_format={"type": "text"},
        user="someone",
    )
    assert len(resp.choices) == 1


def test_own_client_sends_stop_and_names_refusals(server: Any, greedy: str, stop: str) -> None:
    backend = OpenAIBackend(base_url=server.url, model=MODEL, stop=(stop,))
    params = SamplingParams(temperature=0, max_new_tokens=GREEDY_TOKENS)
    (out,) = backend.generate(MESSAGES, 1, params)
    assert out.text == greedy[: greedy.index(stop)] and out.finish_reason == "stop"
    too_long = SamplingParams(max_new_tokens=(1 << 20) + 1)
    with pytest.raises(PolicyError, match=r"refused the request \(HTTP 400\).*'max_tokens'"):
        backend.generate(MESSAGES, 1, too_long)
    with pytest.raises(PolicyError, match="stop"):
        OpenAIBackend(base_url=server.url, model=MODEL, stop=("a", "b", "c", "d", "e"))


def test_serve_points_to_a_tiny_model(tmp_path: Path) -> None:
    import subprocess
    import sys

    run = [sys.executable, "-m", "asmopt.cli", "serve"]
    helped = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=60)
    assert "build_tiny_model" in helped.stdout
    missing = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "build_tiny_model" in missing.stderr
    empty = subprocess.run(
        [*run, str(tmp_path), "--port", "0"], capture_output=True, text=True, timeout=60
    )
    assert empty.returncode == 2 and "no config.json" in empty.stderr
    assert "build_tiny_model" in empty.stderr and len(empty.stderr.strip().splitlines()) == 1
