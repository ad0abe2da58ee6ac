"""verl and TRL adapters: real rows, real scoring, and TRL's GRPOTrainer for two CPU steps."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from asmopt.programs import load_builtin_suite
from asmopt.reward.adapters import TRLReward, compute_score, dry_run_verl
from asmopt.reward.service import ScoreConfig
from asmopt.toolchain import Toolchain

PROGRAM = load_builtin_suite().select(split="train")[0]


def _row(toolchain: Toolchain) -> tuple[str, dict]:
    asm = toolchain.baseline_assembly(PROGRAM)
    extra = {
        "split": "train",
        "index": 3,
        "c_code": PROGRAM.source,
        "inputs": [t.stdin.decode() for t in PROGRAM.tests],
        "outputs": [t.expected_stdout.decode() for t in PROGRAM.tests],
        "question": "...",
        "c_only_question": "...",
        "answer": f"```assembly\n{asm}```",
        "unoptimized_assembly": asm,
    }
    return asm, extra


def test_verl_compute_score(toolchain: Toolchain) -> None:
    asm, extra = _row(toolchain)
    out = compute_score(
        "asmopt/builtin",
        f"```assembly\n{asm}```",
        asm,
        extra,
        reward="supercoder-design1",
        measure="none",
    )
    assert out["score"] == 1.0 and out["verdict"] == "pass" and out["identical"]
    bad = compute_score(
        "asmopt/builtin", "no code", asm, extra, reward="supercoder-design1", measure="none"
    )
    assert bad["score"] == -1.0 and bad["verdict"] == "extraction_error"
    with pytest.raises(ValueError, match="extra_info"):
        compute_score("x", "y", asm, None)
    dry = dry_run_verl(reward="robust", measure="none")
    assert dry["score"] == -1.0 and not dry["excluded"]


def test_verl_diagnostics_are_numbers_or_strings_with_the_same_keys(toolchain: Toolchain) -> None:
    """verl stacks every key of every sample and averages it: no None (np.mean fails), no
    bool (a tensor mean fails), the same keys for a pass, a failure and a timed answer."""
    asm, extra = _row(toolchain)
    outs = [
        compute_score("s", f"```assembly\n{asm}```", asm, extra, measure="none"),
        compute_score("s", "no code", asm, extra, measure="none"),
        compute_score(
            "s",
            f"```assembly\n{asm}\tnop\n```",
            asm,
            extra,
            measure="time",
            timing_max_pairs=4,
            timing_budget_s=2.0,
        ),
    ]
    assert len({tuple(sorted(o)) for o in outs}) == 1
    for out in outs:
        for key, value in out.items():
            assert type(value) in (int, float, str), (key, value)
    copy, bad, timed = outs
    assert copy["timed"] == 0.0 and copy["raw_speedup"] == -1.0 and copy["identical"] == 1.0
    assert bad["verdict"] == "extraction_error" and bad["speedup"] == -1.0
    if timed["verdict"] == "pass":  # a trailing nop is harmless; then it was timed
        assert timed["timed"] == 1.0 and timed["raw_speedup"] > 0


def test_trl_reward_signature_and_values(toolchain: Toolchain) -> None:
    asm = toolchain.baseline_assembly(PROGRAM)
    reward = TRLReward(ScoreConfig(reward="robust", measure="none"), backend="thread")
    try:
        reward.dry_run()
        logged: dict[str, float] = {}
        values = reward(
            prompts=["p", "p", "p"],
            completions=[
                f"```asm\n{asm}```",
                "nothing",
                [{"role": "assistant", "content": f"```asm\n{asm}```"}],
            ],
            program_id=[PROGRAM.id] * 3,
            log_metric=lambda k, v: logged.__setitem__(k, v),
        )
        assert values == [0.0, -1.0, 0.0]
        assert logged["asmopt/pass"] == pytest.approx(2 / 3)
        with pytest.raises(ValueError, match="program_id"):
            reward(prompts=["p"], completions=["x"], other=[1])
    finally:
        reward.close()


@pytest.mark.ml
def test_trl_grpo_trainer_runs_two_steps_with_our_reward(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    trl = pytest.importorskip("trl")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    suite = load_builtin_suite()
    ids = [p.id for p in suite.select(split="train")[:4]]
    data = datasets.Dataset.from_dict(
        {"prompt": [f"Optimize {i}:" for i in ids], "program_id": ids}
    )
    reward = TRLReward(ScoreConfig(reward="robust", measure="none"), backend="thread")
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=2,
        learning_rate=1e-4,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=0,
        beta=0.0,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=data,
        processing_class=tokenizer,
    )
    try:
        trainer.train()
    finally:
        reward.close()
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert logged and all(math.isfinite(h["reward"]) for h in logged)
    # A random model writes no assembly: every sample is an extraction error (-1).
    assert all(h["reward"] == pytest.approx(-1.0) for h in logged)
