"""`asmopt eval --policy openai` against `asmopt serve tiny-llama`, the README's first try,
with the default flags: the client asks the server for the model's context (`/v1/models`)
and fits `--max-tokens` (8,192 by default, the tiny model's whole context) to what the
prompt leaves; a prompt that alone fills the context is the user's error (one line, exit
2), never an infra_error that a rerun would repeat.

Programs are chosen by measuring their prompts, not by name (the built-in suite changes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.ml  # a tiny local model behind real HTTP on loopback

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from asmopt.train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("serve") / "tiny-llama", "llama")


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[Any]:
    """`asmopt serve tiny-llama`: the model named after its directory, as the CLI names it."""
    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.server import ModelServer

    srv = ModelServer(HFBackend(model_dir), port=0).start()
    yield srv
    srv.stop()


def context_of_tiny_model() -> int:
    from asmopt.train.tiny import TINY_DEFAULTS

    return int(TINY_DEFAULTS["max_position_embeddings"])  # 8,192: the default --max-tokens


def prompt_tokens(model_dir: Path) -> dict[str, int]:
    """Each built-in program's prompt (the reference template, one user turn, the chat
    template with the generation prompt) in the tiny model's tokens."""
    from transformers import AutoTokenizer

    from asmopt.policies.prompts import load_template, render_prompt
    from asmopt.programs import load_builtin_suite
    from asmopt.toolchain import default_toolchain

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    template = load_template("reference")
    toolchain = default_toolchain()
    out = {}
    for program in load_builtin_suite().select():
        messages = template.messages(program.source, toolchain.baseline_assembly(program))
        out[program.id] = len(tokenizer(render_prompt(tokenizer, messages))["input_ids"])
    return out


def eval_cli(server: Any, program: str, run_dir: Path) -> subprocess.CompletedProcess[str]:
    """The documented command with default flags (only the program and run directory)."""
    argv = ["eval", "--policy", "openai", "--model", server.model_name]
    argv += ["--base-url", server.url, "--only", program, "--run-dir", str(run_dir), "--json"]
    return subprocess.run(
        [sys.executable, "-m", "asmopt.cli", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=900,
    )


def test_models_listing_gives_the_context(server: Any) -> None:
    from asmopt.policies.openai_http import OpenAIBackend

    backend = OpenAIBackend(base_url=server.url, model=server.model_name)
    backend.preflight()
    assert backend.context == context_of_tiny_model()


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
def test_eval_with_default_flags_fits_the_answer_to_the_context(
    server: Any, model_dir: Path, tmp_path: Path
) -> None:
    context = context_of_tiny_model()
    lengths = prompt_tokens(model_dir)
    fitting = {p: n for p, n in lengths.items() if n < context - 16}
    assert fitting, f"no built-in prompt fits the tiny model's {context} tokens: {lengths}"
    program = min(fitting, key=fitting.get)  # type: ignore[arg-type]
    proc = eval_cli(server, program, tmp_path / "fits")
    assert proc.returncode == 0, proc.stderr[-3000:]
    done = json.loads(proc.stdout)
    assert done["summary"]["infra_errors"] == 0, done["summary"]
    (result,) = done["results"]
    assert result["verdict"] != "infra_error", result["message"]
    used = result["policy"]
    # The default --max-tokens (the whole context) was cut to what the prompt leaves.
    assert used["prompt_tokens"] == fitting[program]
    assert 0 < used["completion_tokens"] <= context - used["prompt_tokens"]
    assert "Traceback" not in proc.stderr

    over = {p: n for p, n in lengths.items() if n >= context}
    if not over:
        pytest.skip(f"every built-in prompt fits {context} tokens: no over-long one to refuse")
    longest = max(over, key=over.get)  # type: ignore[arg-type]
    refused = eval_cli(server, longest, tmp_path / "over")
    assert refused.returncode == 2, refused.stderr[-3000:]
    lines = refused.stderr.strip().splitlines()
    assert lines[-1].startswith(f"asmopt: error: {longest}: ") and "no room" in lines[-1]
    assert "Traceback" not in refused.stderr and "infra" not in refused.stderr


@pytest.mark.parametrize("said, numbers", [
    # asmopt serve
    ("this model's context is 8192 tokens, but the prompt has 7100 tokens and max_tokens asks "
     "for 8191 more (15291 in all); ask for at most 1092 (parameter 'max_tokens')", (8192, 7100)),
    ("this model's context is 8192 tokens, and the prompt alone has at least 8192 tokens; "
     "shorten the prompt (parameter 'messages')", (8192, 8192)),
    # vLLM, older and newer; OpenAI
    ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
     "(904 in the messages, 4096 in the completion). Please reduce the length.", (4096, 904)),
    ("'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context "
     "length is 4096 tokens and your request has 904 input tokens (4096 > 4096 - 904).",
     (4096, 904)),
    ("'top_p' must be in (0, 1] (parameter 'top_p')", (None, None)),
])  # fmt: skip
def test_a_refusal_over_the_context_gives_its_numbers(
    said: str, numbers: tuple[int | None, int | None]
) -> None:
    from asmopt.policies.openai_http import RequestRefused

    assert RequestRefused("refused", 400, said).context_numbers() == numbers
