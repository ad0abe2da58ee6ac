"""Pieces the learning runs share: their tokenizer, answer sampling and report writing.

Both runs (`ppo_learning_run.py`, `speed_learning_run.py`) learn a BPE tokenizer on the
training split only, sample answers from a saved policy for held-out prompts exactly as PPO
renders them, and write a Markdown report with its raw data beside it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

TOKENIZER_LEVELS = (("-O3",), ("-O2",), ("-O1",), ("-O0",))


def build_tokenizer(
    out: Path,
    programs: Iterable[Any],
    vocab_size: int,
    extra: Callable[[Any, str], list[str]] | None = None,
) -> Path:
    """A byte-level BPE learnt from the programs' C sources and their gcc -O0..-O3 assembly
    (plus `extra(program, o3_assembly)` texts); reused when already trained the same way."""
    from asmopt.study.tokenizer import TOKENIZER_FILE, train_tokenizer, trained_with
    from asmopt.toolchain import default_toolchain

    settings = {"vocab_size": vocab_size, "min_frequency": 2}
    if (out / TOKENIZER_FILE).is_file() and trained_with(out) == settings:
        return out
    toolchain = default_toolchain()
    texts: list[str] = []
    for program in programs:
        texts.append(program.source)
        texts += [toolchain.baseline_assembly(program, flags) for flags in TOKENIZER_LEVELS]
        if extra is not None:
            texts += extra(program, toolchain.baseline_assembly(program, ("-O3",)))
    train_tokenizer(texts, vocab_size, out)
    return out


def sample_answers(
    model_dir: Path,
    ppo_config: Path,
    data: str,
    *,
    suite: str | None = None,
    samples: int = 1,
    seed: int = 0,
    batch_size: int = 16,
    temperature: float | None = None,
) -> list[tuple[dict[str, Any], str, int]]:
    """(row, answer text, answer tokens) for `samples` answers per row of `data`, at the
    config's rollout temperature (or `temperature`), with the prompts rendered and filtered
    as PPO does."""
    import torch

    from asmopt.train.config import PPOConfig, load_config
    from asmopt.train.data import load_rows
    from asmopt.train.modeling import decode_response, generate, load_causal_lm, load_tokenizer
    from asmopt.train.ppo import prepare_rows

    cfg = load_config(PPOConfig, ppo_config)
    torch.manual_seed(seed)
    tokenizer = load_tokenizer(model_dir)
    model = load_causal_lm(model_dir, "float32", torch.device("cpu")).eval()
    rows, texts = prepare_rows(
        load_rows(data, suite=suite, template=cfg.prompt_template),
        tokenizer,
        cfg,
        "val_data",
        lambda text: None,
    )
    rows = [r for r in rows for _ in range(samples)]
    texts = [t for t in texts for _ in range(samples)]
    gens = generate(
        model,
        tokenizer,
        texts,
        max_new_tokens=cfg.max_response_len,
        temperature=cfg.temperature if temperature is None else temperature,
        top_p=1.0,
        batch_size=batch_size,
        device=torch.device("cpu"),
    )
    return [
        (row, decode_response(tokenizer, gen), len(gen.response))
        for row, gen in zip(rows, gens, strict=True)
    ]


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: `-` for a missing value, floats to `digits` places."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def publish(text: str, target: Path, save_raw: Callable[[Path], None]) -> None:
    """Write the report, its raw data beside it (`<report>/` without the suffix), and echo it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    save_raw(target.with_suffix(""))
    print(text)
    print(f"report written to {target}", file=sys.stderr)
