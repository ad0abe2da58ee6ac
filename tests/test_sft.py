"""Supervised warm start and the data sources: loss goes down, resume is exact, rows from a
suite carry prompts in the evaluation format and targets the answer extractor reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import lazy

from asmopt.train.config import SFTConfig, config_from_dict, load_config
from asmopt.train.data import RowSampler, load_rows, rows_from_jsonl

if TYPE_CHECKING:
    from asmopt.train import metrics_log, sft
else:
    metrics_log = lazy("asmopt.train.metrics_log")
    sft = lazy("asmopt.train.sft")

SFT_YAML = Path(__file__).resolve().parents[1] / "src/asmopt/train/configs/sft_tiny.yaml"


def quiet(text: str) -> None:
    pass


def small(out: Path, model: Path | str, **fields: Any) -> SFTConfig:
    base: dict[str, Any] = {
        "model": str(model),
        "device": "cpu",
        "train_data": "text-task:train",
        "val_data": "text-task:validation",
        "val_max_rows": 4,
        "output_dir": str(out),
        "batch_size": 4,
        "micro_batch_size": 2,
        "lr": 3e-3,
        "lr_schedule": "constant",
        "total_steps": 4,
        "save_every": 0,
        "tensorboard": False,
        "save_final_model": False,
    }
    base.update(fields)
    return config_from_dict(SFTConfig, base)


@pytest.mark.ml
@pytest.mark.usefixtures("one_thread")
def test_sft_tiny_config_lowers_the_loss_and_exports_a_loadable_model(tmp_path: Path) -> None:
    cfg = load_config(SFTConfig, SFT_YAML, {"output_dir": str(tmp_path), "total_steps": 15})
    summary = sft.train_sft(cfg, progress=False, echo=quiet)
    assert summary["val_end"]["loss"] < 0.5 * summary["val_start"]["loss"]
    assert summary["val_end"]["token_accuracy"] > summary["val_start"]["token_accuracy"]

    from asmopt.policies.hf_local import HFBackend
    from asmopt.policies.llm import SamplingParams

    backend = HFBackend(tmp_path / "final")
    (out,) = backend.generate(
        [{"role": "user", "content": "Reply in lowercase letters: kilo"}],
        1,
        SamplingParams(0.0, 1.0, 8),
    )
    assert out.text.startswith("abc")  # the only completion it was taught


@pytest.mark.ml
@pytest.mark.usefixtures("one_thread")
def test_sft_resume_gives_the_same_metrics(tmp_path: Path, llama_dir: Path) -> None:
    whole, split = tmp_path / "whole", tmp_path / "split"
    sft.train_sft(small(whole, llama_dir, total_steps=6, eval_every=2), progress=False, echo=quiet)
    sft.train_sft(small(split, llama_dir, total_steps=3, eval_every=2), progress=False, echo=quiet)
    sft.train_sft(small(split, llama_dir, total_steps=6, eval_every=2), progress=False, echo=quiet)

    def stable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in rows]

    # The split run also validated at its old last step (3): compare the common lines.
    a = stable(metrics_log.read_metrics(whole))
    b = [
        r
        for r in stable(metrics_log.read_metrics(split))
        if not (r["kind"] == "val" and r["step"] == 3)
    ]
    assert a == b


@pytest.mark.ml
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("arch", ["plt", "lora"])
def test_sft_runs_on_plt_and_with_lora(tmp_path: Path, llama_dir: Path, arch: str) -> None:
    if arch == "lora":
        pytest.importorskip("peft")
        cfg = small(tmp_path, llama_dir, total_steps=2, lora_r=4, save_final_model=True)
    else:
        cfg = small(tmp_path, "tiny:plt", total_steps=2, model_overrides={"hidden_size": 32})
    summary = sft.train_sft(cfg, progress=False, echo=quiet)
    assert summary["last_train"]["loss"] > 0
    if arch == "lora":
        config = json.loads((tmp_path / "final" / "config.json").read_text())
        assert config["model_type"] == "llama"  # merged: a plain model, not an adapter


# --------------------------------------------------------------------------- data


class FakeToolchain:
    """Stands in for gcc: the baseline is a fixed text per program and flags."""

    def baseline_assembly(self, program: Any, flags: Any = ("-O3",)) -> str:
        return f"\t.text\n\t.globl main\nmain:\n\t# {program.id} {' '.join(flags)}\n\tret\n"


def test_rows_from_the_builtin_suite() -> None:
    from asmopt.policies.extract import extract_assembly

    rows = load_rows("suite:validation", toolchain=FakeToolchain(), target_flags=["-O2"])
    assert rows and all(r["split"] == "validation" for r in rows)
    first = rows[0]
    (message,) = first["prompt"]
    assert message["role"] == "user"
    assert f"# {first['program_id']} -O3" in message["content"]  # the prompt shows -O3
    assert "C Code:" in message["content"]
    assert extract_assembly(first["completion"]) == FakeToolchain().baseline_assembly(
        type("P", (), {"id": first["program_id"]}), ("-O2",)
    )
    assert "completion" not in load_rows("suite:validation", toolchain=FakeToolchain())[0]


def test_diff_template_targets_are_diffs_the_reward_applies() -> None:
    """With the `diff` template the SFT target is a unified diff (real gcc output at -O3 and
    at the target flags) that the answer reader turns back into the target assembly; splits
    join with `+`; a target equal to the baseline is left out with a warning."""
    from asmopt.policies.diff_format import apply_unified_diff
    from asmopt.policies.extract import extract_diff
    from asmopt.programs import load_builtin_suite
    from asmopt.toolchain import default_toolchain

    tc = default_toolchain()
    flags = ["-O3", "-fno-asynchronous-unwind-tables"]
    rows = load_rows(
        "suite:validation+test", template="diff", target_flags=flags, diff_context=0, toolchain=tc
    )
    suite = load_builtin_suite()
    held_out = {p.id for p in suite.select(split="validation") + suite.select(split="test")}
    assert {r["program_id"] for r in rows} == held_out
    for row in rows[:3]:
        program = suite.get(row["program_id"])
        diff = extract_diff(row["completion"])
        assert diff is not None and "@@" in diff
        # Zero context: only removals (unwind directives and their labels), no kept lines.
        body = [ln for ln in diff.splitlines() if not ln.startswith(("@@", "---", "+++"))]
        assert body and all(ln.startswith("-") for ln in body)
        assert any(ln.startswith("-\t.cfi_") for ln in body)
        rebuilt = apply_unified_diff(tc.baseline_assembly(program), diff)
        assert rebuilt == tc.baseline_assembly(program, tuple(flags))
    with pytest.warns(UserWarning, match="baseline itself"), pytest.raises(ValueError):
        load_rows("suite:test", template="diff", target_flags=["-O3"], toolchain=tc)


def test_rows_from_jsonl_and_their_errors(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"prompt": "write main", "completion": "x", "program_id": "p1"})
        + "\n\n"
        + json.dumps({"prompt": [{"role": "user", "content": "hi"}], "completion": "y"})
        + "\n"
    )
    rows = load_rows(str(path), need_completion=True)
    assert [r.get("program_id") for r in rows] == ["p1", None]
    path.write_text('{"prompt": "a"}\n{"prompt": 3}\n')
    with pytest.raises(ValueError, match=r"rows.jsonl:2: prompt must be"):
        rows_from_jsonl(path)
    path.write_text('{"prompt": "a"}\n')
    with pytest.raises(ValueError, match=r"rows.jsonl:1: SFT rows need a string 'completion'"):
        rows_from_jsonl(path, need_completion=True)
    with pytest.raises(ValueError, match="not suite:SPLIT, text-task:SPLIT or an existing"):
        load_rows("nowhere.jsonl")


@pytest.mark.ml  # the order comes from torch's generator
def test_row_sampler_position_resumes_the_stream() -> None:
    a = RowSampler(10, train_seed=3)
    first = a.next(7)
    b = RowSampler(10, train_seed=3)
    b.load_state_dict(a.state_dict())
    assert a.next(25) == b.next(25)
    assert sorted(first + RowSampler(10, train_seed=3).next(10)[7:]) == list(range(10))
    with pytest.raises(ValueError, match="with 10 training rows, now there are 11"):
        RowSampler(11, train_seed=3).load_state_dict(a.state_dict())
