"""Corpus -> tokenizer -> token arrays: everything the trainers read, built once per study.

Layout under the study's output directory:

    corpus/     docs.jsonl, meta.json          (asmopt.study.corpus)
    tokenizer/  tokenizer.json + HF files      (asmopt.study.tokenizer)
    data/       {train,heldout}_{tokens,mask,docs}.npy, meta.json

Each split is one token stream: documents in corpus order, each `prompt ids + assembly ids +
<|eot|>`, prompt and assembly encoded separately so the boundary is exact. `mask` is 1 on
tokens that belong to the assembly (and the closing `<|eot|>`): held-out "assembly loss" is
the loss on predicting those tokens. `docs` rows are (start, prompt_len, length).

Every step is skipped when its inputs have not changed (config, corpus, tokenizer hash).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from asmopt.errors import InputError
from asmopt.study.config import StudyConfig
from asmopt.study.corpus import CorpusStats, Document, build_corpus, corpus_texts, read_documents
from asmopt.study.tokenizer import (
    EOT,
    encode,
    load_tokenizer,
    mark_trained,
    train_tokenizer,
    trained_with,
)

SPLITS = ("train", "heldout")

# Progress notices (`progress=True`) are INFO records here; `asmopt study` shows them on
# stderr, so stdout holds only what a command prints (`--json`: JSON alone).
log = logging.getLogger(__name__)


@dataclass
class TokenSplit:
    """One split as arrays; see the module docstring."""

    tokens: np.ndarray  # [N] int64 token ids
    mask: np.ndarray  # [N] uint8, 1 = assembly token
    docs: np.ndarray  # [D, 3] int64: start, prompt_len, length

    @property
    def size(self) -> int:
        return int(self.tokens.shape[0])


@dataclass
class Prepared:
    """What `prepare` hands to the trainer and the study."""

    root: Path
    tokenizer: Any
    train: TokenSplit
    heldout: TokenSplit
    corpus: CorpusStats
    heldout_docs: list[Document]

    @property
    def tokenizer_dir(self) -> Path:
        return self.root / "tokenizer"


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def tokenize_documents(tokenizer: Any, docs: list[Document]) -> TokenSplit:
    eot = tokenizer.convert_tokens_to_ids(EOT)
    tokens: list[int] = []
    mask: list[int] = []
    rows: list[tuple[int, int, int]] = []
    for d in docs:
        prompt = encode(tokenizer, d.prompt)
        completion = [*encode(tokenizer, d.asm), eot]
        rows.append((len(tokens), len(prompt), len(prompt) + len(completion)))
        tokens += prompt + completion
        mask += [0] * len(prompt) + [1] * len(completion)
    return TokenSplit(
        tokens=np.asarray(tokens, dtype=np.int64),
        mask=np.asarray(mask, dtype=np.uint8),
        docs=np.asarray(rows, dtype=np.int64).reshape(-1, 3),
    )


def _save_split(split: TokenSplit, data_dir: Path, name: str) -> None:
    for field_name in ("tokens", "mask", "docs"):
        np.save(data_dir / f"{name}_{field_name}.npy", getattr(split, field_name))


def _load_split(data_dir: Path, name: str) -> TokenSplit:
    return TokenSplit(
        **{f: np.load(data_dir / f"{name}_{f}.npy") for f in ("tokens", "mask", "docs")}
    )


def prepare(cfg: StudyConfig, *, toolchain: Any = None, progress: bool = False) -> Prepared:
    """Builds (or reuses) the corpus, the tokenizer and the token arrays of a study."""
    root = Path(cfg.output_dir)
    corpus_dir, tok_dir, data_dir = root / "corpus", root / "tokenizer", root / "data"
    stats = build_corpus(cfg.corpus, corpus_dir, toolchain=toolchain, progress=progress)
    train_docs = read_documents(corpus_dir, "train")
    heldout_docs = read_documents(corpus_dir, "heldout")
    if not train_docs or not heldout_docs:
        raise InputError(
            f"the corpus has {len(train_docs)} training and {len(heldout_docs)} held-out "
            "documents; both must be non-empty (more synthetic programs, or a suite with "
            "validation/test programs)"
        )
    corpus_hash = _file_hash(corpus_dir / "docs.jsonl")
    wanted_tok = {**asdict(cfg.tokenizer), "corpus": corpus_hash}
    if trained_with(tok_dir) == wanted_tok:
        tokenizer = load_tokenizer(tok_dir)
    else:
        if progress:
            log.info("tokenizer: training BPE (%d tokens)", cfg.tokenizer.vocab_size)
        tokenizer = train_tokenizer(
            corpus_texts(train_docs),
            cfg.tokenizer.vocab_size,
            tok_dir,
            min_frequency=cfg.tokenizer.min_frequency,
        )
        mark_trained(tok_dir, wanted_tok)
    data_key = {"corpus": corpus_hash, "tokenizer": _file_hash(tok_dir / "tokenizer.json")}
    meta_path = data_dir / "meta.json"
    if meta_path.is_file() and json.loads(meta_path.read_text()).get("key") == data_key:
        train, heldout = _load_split(data_dir, "train"), _load_split(data_dir, "heldout")
    else:
        if progress:
            log.info("data: tokenizing the corpus")
        train = tokenize_documents(tokenizer, train_docs)
        heldout = tokenize_documents(tokenizer, heldout_docs)
        data_dir.mkdir(parents=True, exist_ok=True)
        _save_split(train, data_dir, "train")
        _save_split(heldout, data_dir, "heldout")
        counts = {
            name: {
                "tokens": s.size,
                "assembly_tokens": int(s.mask.sum()),
                "documents": int(s.docs.shape[0]),
            }
            for name, s in (("train", train), ("heldout", heldout))
        }
        meta_path.write_text(
            json.dumps({"key": data_key, "counts": counts}, indent=2) + "\n", encoding="utf-8"
        )
    return Prepared(root, tokenizer, train, heldout, stats, heldout_docs)
