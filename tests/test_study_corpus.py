"""Synthetic C generator, corpus building on real gcc, tokenizer, data arrays, study config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from asmopt.study.config import load_study_config
from asmopt.study.corpus import (
    CorpusConfig,
    build_corpus,
    clean_assembly,
    format_prompt,
    read_documents,
    synthetic_sources,
)
from asmopt.study.synthetic import TEMPLATES, synthetic_program


def test_generator_is_deterministic_by_seed() -> None:
    assert synthetic_program(7) == synthetic_program(7)
    assert synthetic_program(7, max_functions=1) == synthetic_program(7, max_functions=1)
    texts = {synthetic_program(k) for k in range(40)}
    assert len(texts) == 40
    # A pinned prefix: the generator must not change silently (bump GENERATOR_VERSION and
    # update this when it changes on purpose).
    assert synthetic_program(0).startswith("#include <stdio.h>\n")
    assert "int main(void)" in synthetic_program(0)


def test_generator_covers_every_template() -> None:
    names = {f.__name__ for f in TEMPLATES}
    seen = set()
    marks = {
        "_arith": "return (",
        "_reduce": "const ",
        "_nested": "for (int j",
        "_bits": "(unsigned x)",
        "_switch": "switch (",
        "_recursion": "(int n)\n{\n    if (n <",
        "_struct": "struct rec",
        "_string": "const char *s",
        "_float": "double ",
        "_sort": "int j = i - 1",
    }
    assert set(marks) == names
    for k in range(200):
        text = synthetic_program(k)
        seen |= {n for n, m in marks.items() if m in text}
    assert seen == names


def test_held_out_synthetic_programs_by_seed() -> None:
    sources = synthetic_sources(CorpusConfig(synthetic_programs=20, heldout_every=10))
    held = [s.program.id for s in sources if s.split == "heldout"]
    assert held == ["syn000000", "syn000010"]


def test_prompt_and_assembly_cleaning() -> None:
    assert format_prompt("int x;", "-O2") == "// C source\nint x;\n// gcc -O2 -S\n"
    asm = '\t.file\t"main.c"\n\t.text\nmain:\n\tret\n\t.ident\t"GCC: 13"\n'
    assert clean_assembly(asm) == "\t.text\nmain:\n\tret\n"


class CountingToolchain:
    """Wraps the real toolchain and counts compile calls (to check corpus reuse)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def compile_assembly(self, program: Any, flags: Any) -> Any:
        self.calls += 1
        return self.inner.compile_assembly(program, flags)


def test_build_corpus_on_two_programs(toolchain: Any, tmp_path: Path) -> None:
    cfg = CorpusConfig(
        builtin=False,
        synthetic_programs=2,
        heldout_every=2,
        levels=["-O0", "-O2"],
        jobs=2,
    )
    counting = CountingToolchain(toolchain)
    stats = build_corpus(cfg, tmp_path, toolchain=counting)
    assert counting.calls == 4
    assert stats.documents == {"heldout": 2, "train": 2}
    assert stats.programs == {"heldout": 1, "train": 1}
    assert stats.skipped == []
    docs = read_documents(tmp_path)
    assert [d.id for d in docs] == ["syn000000-O0", "syn000000-O2", "syn000001-O0", "syn000001-O2"]
    for d in docs:
        assert "main:" in d.asm and ".ident" not in d.asm and ".cfi_" not in d.asm
        assert d.prompt.endswith(f"// gcc {d.level} -S\n")
    assert read_documents(tmp_path, "heldout")[0].program == "syn000000"
    # The same config again: nothing is compiled, the stats are read back.
    again = build_corpus(cfg, tmp_path, toolchain=counting)
    assert counting.calls == 4 and again == stats
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["config"]["levels"] == ["-O0", "-O2"]


def test_tokenizer_and_token_arrays(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from asmopt.study.corpus import Document
    from asmopt.study.data import tokenize_documents
    from asmopt.study.tokenizer import EOT, encode, load_tokenizer, train_tokenizer

    docs = [
        Document(f"d{k}", "synthetic", f"p{k}", "train", "-O1", f"int f{k}(void);", asm)
        for k, asm in enumerate(["\tmovl\t$1, %eax\n\tret\n", "\taddl\t%esi, %edi\n\tret\n"])
    ]
    tok = train_tokenizer((d.prompt + d.asm for d in docs * 20), 300, tmp_path)
    assert len(tok) <= 300
    loaded = load_tokenizer(tmp_path)
    text = "\tmovl\t$1, %eax\n\tret\n"
    assert loaded.decode(encode(loaded, text)) == text
    assert loaded.convert_tokens_to_ids(EOT) == tok.convert_tokens_to_ids(EOT)
    # Any byte sequence has an encoding (byte-level): no unknown tokens.
    assert loaded.decode(encode(loaded, "λ → ∑ \x01")) == "λ → ∑ \x01"
    split = tokenize_documents(loaded, docs)
    start, prompt_len, length = split.docs[1].tolist()
    assert start == split.docs[0][2]
    assert split.size == split.docs[:, 2].sum()
    eot = loaded.convert_tokens_to_ids(EOT)
    assert split.tokens[start + length - 1] == eot
    assert split.mask[start : start + prompt_len].sum() == 0
    assert split.mask[start + prompt_len : start + length].all()
    assert loaded.decode(split.tokens[start + prompt_len : start + length - 1]) == docs[1].asm


def test_study_config_is_strict() -> None:
    cfg = load_study_config("toy", ["train.max_steps=9", "model.window=3", "eval.task_level=-O1"])
    assert cfg.train.max_steps == 9 and cfg.model.window == 3
    with pytest.raises(ValueError, match=r"did you mean 'train\.max_steps'"):
        load_study_config("toy", ["train.max_step=9"])
    with pytest.raises(ValueError, match="expected an integer"):
        load_study_config("toy", ["train.max_steps=many"])
    with pytest.raises(ValueError, match=r"not among corpus\.levels"):
        load_study_config("toy", ["eval.task_level=-O3"])
    with pytest.raises(FileNotFoundError, match="built-in study config"):
        load_study_config("no_such_config")
    for name in ("cpu_seeds", "cpu_small", "gpu", "toy"):
        load_study_config(name)


def test_the_old_seed_key_is_refused_naming_init_seed(tmp_path: Path) -> None:
    """`train.seed` was renamed `train.init_seed` (the initial weights' seed, beside
    `train.data_seed`): the old key is refused naming the new one, in a file and on the
    command line, while a model or study.json saved under it is still read."""
    from asmopt.study.config import TrainSpec, renamed_in_saved
    from asmopt.study.findings import first_seed

    assert load_study_config("toy", ["train.init_seed=3"]).train.init_seed == 3
    with pytest.raises(ValueError, match=r"--set train\.seed: .*is now train\.init_seed"):
        load_study_config("toy", ["train.seed=3"])
    config = tmp_path / "old.yaml"
    config.write_text("train:\n  seed: 3\n")
    refused = r"old\.yaml: the key 'train\.seed' is now train\.init_seed"
    with pytest.raises(ValueError, match=refused):
        load_study_config(str(config))
    assert renamed_in_saved(TrainSpec, {"seed": 3, "lr": 0.1}) == {"init_seed": 3, "lr": 0.1}
    assert first_seed({"config": {"train": {"seed": 4}}}) == 4
    assert first_seed({"config": {"train": {"init_seed": 5}}}) == 5
