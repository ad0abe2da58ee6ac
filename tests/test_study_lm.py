"""The `train lm` trainer: matched settings across R, schedule, data order, exact resumption."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import lazy

from asmopt.study.config import StudyConfig, load_study_config
from asmopt.study.corpus import CorpusStats, Document
from asmopt.study.synthetic import synthetic_program
from asmopt.study.tokenizer import train_tokenizer

if TYPE_CHECKING:
    import torch

    from asmopt.study import data as study_data
    from asmopt.study import lm
else:
    torch = lazy("torch")
    lm = lazy("asmopt.study.lm")
    study_data = lazy("asmopt.study.data")  # numpy

pytestmark = pytest.mark.ml


def fake_prepared(tmp_path: Path) -> study_data.Prepared:
    """Documents with stand-in assembly: the trainer only needs token arrays."""
    docs = []
    for k in range(16):
        asm = "".join(f"\tmovl\t${k * j}, %eax\n\taddl\t%esi, %edi\n" for j in range(8)) + "\tret\n"
        split = "heldout" if k % 4 == 0 else "train"
        source = synthetic_program(k)
        docs.append(Document(f"d{k}", "synthetic", f"p{k}", split, "-O1", source, asm))
    tok = train_tokenizer((d.prompt + d.asm for d in docs), 350, tmp_path / "tokenizer")
    train = study_data.tokenize_documents(tok, [d for d in docs if d.split == "train"])
    held_docs = [d for d in docs if d.split == "heldout"]
    heldout = study_data.tokenize_documents(tok, held_docs)
    stats = CorpusStats({}, {}, {}, {}, [], 0.0, 0, 0)
    return study_data.Prepared(tmp_path, tok, train, heldout, stats, held_docs)


def toy_config(tmp_path: Path, *overrides: str) -> StudyConfig:
    return load_study_config("toy", [f"output_dir={tmp_path / 'run'}", *overrides])


def test_every_loop_count_starts_from_the_same_weights(tmp_path: Path) -> None:
    prepared = fake_prepared(tmp_path)
    cfg = toy_config(tmp_path)
    one = lm.build_model(cfg, 1, prepared.tokenizer).state_dict()
    three = lm.build_model(cfg, 3, prepared.tokenizer).state_dict()
    shared = set(one) & set(three)
    assert shared == set(one)  # R = 3 only adds the gates
    assert all(torch.equal(one[k], three[k]) for k in shared)
    assert all("plt_gate" in k for k in set(three) - shared)


def test_a_model_saved_under_the_old_seed_key_is_still_the_same_recipe(tmp_path: Path) -> None:
    """A finished model or checkpoint saved when the weights' seed was `train.seed` is
    compared under its new name, train.init_seed: reused when it matches, named when not."""
    from asmopt.study.config import to_dict

    cfg = toy_config(tmp_path, "train.init_seed=2")
    saved = to_dict(cfg)
    saved["train"]["seed"] = saved["train"].pop("init_seed")
    assert lm.same_settings(saved, cfg, lm.RESUMABLE) == []
    saved["train"]["seed"] = 3
    assert lm.same_settings(saved, cfg, lm.RESUMABLE) == ["train.init_seed"]


def test_schedule_and_data_order(tmp_path: Path) -> None:
    cfg = toy_config(tmp_path, "train.max_steps=10", "train.warmup_steps=2", "train.lr=1.0")
    spec = cfg.train
    assert lm.lr_at(0, spec) == pytest.approx(0.5)
    assert lm.lr_at(1, spec) == pytest.approx(1.0)
    assert lm.lr_at(2, spec) == pytest.approx(1.0)
    assert lm.lr_at(10, spec) == pytest.approx(spec.min_lr_ratio)
    prepared = fake_prepared(tmp_path)
    a = lm.pretrain_batch(prepared.train, 5, spec, 2)
    b = lm.pretrain_batch(prepared.train, 5, spec, 2)
    c = lm.pretrain_batch(prepared.train, 6, spec, 2)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])
    assert torch.equal(a[0][:, 1:], a[1][:, :-1])  # targets are the next tokens
    # SFT rows: the prompt is never a target, padding is never a target.
    x, y = lm.sft_batch(prepared.train, 0, spec, 2, pad_id=1)
    assert x.shape == y.shape == (2, spec.seq_len)
    # Long prompts are cut from the left so that half of the context is assembly.
    doc = prepared.train.docs[0]
    prompt_len, length = int(doc[1]), int(doc[2])
    assert prompt_len > spec.seq_len // 2
    inputs, rows = lm.document_rows(prepared.train, [0], spec.seq_len, 1, assembly_only=True)
    kept = spec.seq_len // 2  # prompt tokens left in the row
    assert (rows[0, : kept - 1] == lm.IGNORE).all()
    assert (rows[0, kept - 1 :] != lm.IGNORE).all()
    start = int(doc[0]) + prompt_len - kept
    assert inputs[0].tolist() == prepared.train.tokens[start : start + spec.seq_len].tolist()
    assert length - (prompt_len - kept) > spec.seq_len


def test_interrupted_run_resumes_to_the_same_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared = fake_prepared(tmp_path)
    settings = ("train.max_steps=4", "train.save_every=2", "train.eval_every=0")
    straight = toy_config(tmp_path / "a", *settings)
    lm.train_lm(straight, 2, prepared=prepared, progress=False)

    broken = toy_config(tmp_path / "b", *settings)
    real = lm.lr_at

    def stop_at_three(step: int, spec: object) -> float:
        if step == 3:
            raise KeyboardInterrupt
        return real(step, spec)  # type: ignore[arg-type]

    monkeypatch.setattr("asmopt.study.lm.lr_at", stop_at_three)
    with pytest.raises(KeyboardInterrupt):
        lm.train_lm(broken, 2, prepared=prepared, progress=False)
    monkeypatch.setattr("asmopt.study.lm.lr_at", real)
    summary = lm.train_lm(broken, 2, prepared=prepared, progress=False)
    assert summary["steps"] == 4

    from asmopt.models.plt import load_plt_pretrained

    wa = load_plt_pretrained(lm.model_dir(straight, 2) / "final").state_dict()
    wb = load_plt_pretrained(lm.model_dir(broken, 2) / "final").state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    curve = (lm.model_dir(broken, 2) / "metrics.jsonl").read_text().splitlines()
    steps = [line for line in curve if '"kind": "train"' in line]
    assert len(steps) == 2  # log_every 2: steps 2 and 4, none duplicated by the resume

    # A finished model is reused; a changed recipe is refused instead of mixed.
    again = lm.train_lm(broken, 2, prepared=prepared, progress=False)
    assert again["train_seconds"] == summary["train_seconds"]
    changed = toy_config(tmp_path / "b", *settings, "train.lr=0.5")
    (lm.model_dir(changed, 2) / "final" / lm.SUMMARY_FILE).unlink()
    with pytest.raises(ValueError, match=r"train\.lr"):
        lm.train_lm(changed, 2, prepared=prepared, progress=False)


def test_sft_starts_from_a_pretrained_model(tmp_path: Path) -> None:
    prepared = fake_prepared(tmp_path)
    base = toy_config(tmp_path / "a", "train.max_steps=2", "train.eval_every=0")
    lm.train_lm(base, 2, prepared=prepared, progress=False)
    final = lm.model_dir(base, 2) / "final"
    sft = toy_config(
        tmp_path / "a",
        "train.objective=sft",
        f"train.init_from={final}",
        "train.max_steps=2",
        "train.eval_every=0",
    )
    summary = lm.train_lm(sft, 2, prepared=prepared, progress=False)
    assert lm.model_dir(sft, 2).name == "R2-sft"
    assert summary["steps"] == 2 and summary["tokens_seen"] > 0
    # Only assembly tokens are targets in SFT: fewer than the rows x seq_len of pre-training.
    assert summary["tokens_seen"] < 2 * sft.train.batch_size * sft.train.seq_len
    with pytest.raises(ValueError, match="R = 2, not 3"):
        lm.train_lm(sft, 3, prepared=prepared, progress=False)


def test_a_cuda_device_without_cuda_is_refused_before_any_data_work(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    cfg = toy_config(tmp_path, "train.device=cuda")
    with pytest.raises(ValueError, match="torch sees no CUDA device"):
        lm.train_lm(cfg, 1, progress=False)  # no prepared corpus: it must not get that far
    run_dir = tmp_path / "run"
    assert not run_dir.exists() or not any(run_dir.rglob("*"))  # no corpus, no model files
