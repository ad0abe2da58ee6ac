"""verl and TRL adapters: real rows, real scoring, and TRL's GRPOTrainer for two CPU steps,
once from hand-written code and once from the documented script (docs/training.md)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from asmopt.adequacy import UnfitProgramError
from asmopt.programs import load_builtin_suite
from asmopt.programs.rows import INPUTS_SPEC_FIELD, PROGRAM_ID_FIELD, ItemError, row_inputs_spec
from asmopt.reward.adapters import TRLReward, compute_score, dry_run_verl, program_from_row
from asmopt.reward.service import ScoreConfig
from asmopt.toolchain import Toolchain
from asmopt.train.data import trl_columns

PROGRAM = load_builtin_suite().select(split="train")[0]
ROOT = Path(__file__).resolve().parents[1]


def _row(toolchain: Toolchain) -> tuple[str, dict]:
    """A row as `asmopt data export --format verl-parquet` writes it: with the program's
    input generator, so that a score of it draws fresh inputs (a row without one is unfit
    for reward: `_fixed_row`)."""
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
        PROGRAM_ID_FIELD: PROGRAM.id,
        INPUTS_SPEC_FIELD: row_inputs_spec(PROGRAM),
    }
    assert extra[INPUTS_SPEC_FIELD], f"{PROGRAM.id} has no input generator"
    return asm, extra


def _fixed_row(extra: dict) -> dict:
    """The same row as the published SuperCoder file has it: no input generator."""
    return {k: v for k, v in extra.items() if k not in (PROGRAM_ID_FIELD, INPUTS_SPEC_FIELD)}


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
    # The dry run scores a real answer (a row's -O3 baseline) through the sandbox: a copy,
    # which passes and earns 0 under robust.
    dry = dry_run_verl(reward="robust", measure="none")
    assert dry["verdict"] == "pass" and dry["score"] == 0.0 and not dry["excluded"]


def _same_score(a: dict, b: dict) -> None:
    """Two verl dicts for one answer agree on everything but how long each took."""
    assert {k: v for k, v in a.items() if k != "seconds"} == {
        k: v for k, v in b.items() if k != "seconds"
    }


def test_verl_batch_form_returns_one_dict_per_answer_as_one_at_a_time(
    toolchain: Toolchain,
) -> None:
    """verl's BatchRewardManager calls compute_score(data_sources=, solution_strs=,
    ground_truths=, extra_infos=) once for the batch and reads a list back."""
    asm, extra = _row(toolchain)
    answers = [f"```assembly\n{asm}```", "no code", f"```assembly\n\tbogus %rax\n{asm}```"]
    kwargs = {"reward": "robust", "measure": "none", "workers": 2, "backend": "thread"}
    batch = compute_score(
        data_sources=["asmopt/builtin"] * 3,
        solution_strs=answers,
        ground_truths=[asm] * 3,
        extra_infos=[dict(extra) for _ in answers],
        **kwargs,
    )
    assert isinstance(batch, list) and len(batch) == 3
    assert [b["verdict"] for b in batch] == ["pass", "extraction_error", "assemble_error"]
    for answer, got in zip(answers, batch, strict=True):
        one = compute_score("asmopt/builtin", answer, asm, dict(extra), **kwargs)
        assert isinstance(one, dict)
        _same_score(got, one)
    # verl passes numpy arrays for data_sources and extra_infos (object dtype); they work.
    np = pytest.importorskip("numpy")
    again = compute_score(
        data_sources=np.array(["asmopt/builtin"], dtype=object),
        solution_strs=answers[:1],
        ground_truths=[asm],
        extra_infos=np.array([dict(extra)], dtype=object),
        **kwargs,
    )
    assert isinstance(again, list)
    _same_score(again[0], batch[0])


def test_verl_batch_form_refuses_what_it_cannot_score(toolchain: Toolchain) -> None:
    asm, extra = _row(toolchain)
    with pytest.raises(TypeError, match="both"):
        compute_score("s", "x", asm, extra, solution_strs=["x"], extra_infos=[extra])
    with pytest.raises(ValueError, match=r"2 solution_strs.*1 extra_infos"):
        compute_score(solution_strs=["x", "y"], extra_infos=[extra], measure="none")
    with pytest.raises(ValueError, match=r"extra_info.*answer 1 of the batch"):
        compute_score(solution_strs=["x", "y"], extra_infos=[extra, None], measure="none")
    with pytest.raises(TypeError, match="for a batch"):
        compute_score()


def test_verl_rows_read_back_by_pandas_score_as_lists(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    """pandas reads a parquet row's list columns back as numpy arrays (and a caller may
    hold tuples): they are the same tests, taken element by element, still strings only."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pd = pytest.importorskip("pandas")
    np = pytest.importorskip("numpy")
    asm, extra = _row(toolchain)
    pq.write_table(pa.Table.from_pylist([{"extra_info": extra}]), tmp_path / "rows.parquet")
    read = pd.read_parquet(tmp_path / "rows.parquet")["extra_info"][0]
    assert isinstance(read["inputs"], np.ndarray) and isinstance(read["outputs"], np.ndarray)
    kwargs = {"reward": "robust", "measure": "none"}
    copy = f"```assembly\n{asm}```"
    listed = compute_score("s", copy, asm, extra, **kwargs)
    assert isinstance(listed, dict) and listed["verdict"] == "pass"
    _same_score(compute_score("s", copy, asm, read, **kwargs), listed)
    as_tuples = dict(extra, inputs=tuple(extra["inputs"]), outputs=tuple(extra["outputs"]))
    _same_score(compute_score("s", copy, asm, as_tuples, **kwargs), listed)
    # numpy's own string dtype (not object) reads the same.
    unicode = dict(extra, inputs=np.array(extra["inputs"]), outputs=np.array(extra["outputs"]))
    program = program_from_row(unicode, asm)
    assert [t.stdin.decode() for t in program.tests] == extra["inputs"]
    assert all(type(t.stdin) is bytes for t in program.tests)

    n = len(extra["inputs"])
    with pytest.raises(ItemError, match="not strings"):
        program_from_row(dict(extra, inputs=np.arange(n)), asm)
    with pytest.raises(ItemError, match="not strings"):
        program_from_row(dict(extra, inputs=tuple(x.encode() for x in extra["inputs"])), asm)
    with pytest.raises(ItemError, match="not lists"):
        program_from_row(dict(extra, inputs=np.array([extra["inputs"]])), asm)
    with pytest.raises(ItemError, match="not lists"):
        program_from_row(dict(extra, inputs="".join(extra["inputs"])), asm)


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
            timing={"max_pairs": 4, "budget_s": 2.0},
        ),
    ]
    assert len({tuple(sorted(o)) for o in outs}) == 1
    for out in outs:
        for key, value in out.items():
            assert type(value) in (int, float, str), (key, value)
        # The result's message (a person's, which may quote test data) is replaced by the
        # feedback a policy may see (tests/test_feedback_hidden.py).
        assert "message" not in out and out["feedback"].startswith(f"Verdict: {out['verdict']}.")
    copy, bad, timed = outs
    # A row with an input generator is scored on drawn inputs, and is fit.
    assert all(o["fixed_inputs"] == 0.0 and o["unfit"] == 0.0 for o in outs)
    # A SuperCoder row without one is refused; allowed explicitly, it scores with the same
    # keys, and says so.
    fixed = _fixed_row(extra)
    with pytest.raises(UnfitProgramError, match=r"refusing reward .*\(fixed_inputs"):
        compute_score("s", f"```assembly\n{asm}```", asm, fixed, measure="none")
    allowed = compute_score(
        "s", f"```assembly\n{asm}```", asm, fixed, measure="none", allow_unfit=True
    )
    assert sorted(allowed) == sorted(copy) and allowed["verdict"] == "pass"
    assert allowed["fixed_inputs"] == 1.0 and allowed["unfit"] == 1.0
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


def test_trl_columns_are_suite_prompts_and_drop_long_ones_loudly() -> None:
    """TRL keeps every prompt however long, so the helper drops them and says which."""
    suite = load_builtin_suite()
    all_rows = trl_columns("train")
    assert len(all_rows["prompt"]) == len(suite.select(split="train"))
    # A limit between the shortest and the longest prompt (the suite's prompts change with
    # its programs): some are kept, some dropped, and the warning says how many.
    lengths = sorted(len(p[0]["content"]) for p in all_rows["prompt"])
    limit = lengths[len(lengths) // 2]
    dropped = rf"dropped \d+ of \d+ train prompt\(s\) longer than {limit}"
    with pytest.warns(UserWarning, match=dropped):
        short = trl_columns("train", max_prompt_chars=limit)
    assert sorted(short) == ["program_id", "prompt"]
    assert 0 < len(short["prompt"]) < len(all_rows["prompt"])
    for prompt, program_id in zip(short["prompt"], short["program_id"], strict=True):
        [message] = prompt
        assert message["role"] == "user" and len(message["content"]) <= limit
        assert suite.get(program_id).source.strip() in message["content"]
    with pytest.raises(ValueError, match="tokenizer"):
        trl_columns("train", max_prompt_tokens=100)
    with pytest.raises(ValueError, match="no prompt"), pytest.warns(UserWarning):
        trl_columns("train", max_prompt_chars=100)


def trl_snippet() -> str:
    """The one python block of the TRL section of docs/training.md, verbatim."""
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    section = text.split("\n### TRL\n", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 1, f"expected one python block in the TRL section, got {len(blocks)}"
    return blocks[0]


def replace_line(text: str, starts: str, new: str) -> str:
    """Replace the one line that starts with `starts`: a doc edit that renames or
    duplicates it fails here instead of running the snippet unchanged."""
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.startswith(starts)]
    assert len(hits) == 1, f"{starts!r} begins {len(hits)} lines of the snippet, not 1"
    lines[hits[0]] = new + "\n"
    return "".join(lines)


@pytest.mark.slow  # a whole job end to end (make test-slow; CI runs both)
@pytest.mark.ml
def test_trl_documented_grpo_script_runs(tmp_path: Path, tiny_model_dir: Path) -> None:
    """The documented GRPOTrainer script runs as a user would run it: a plain script with no
    main guard, in its own interpreter. Only the model (a tiny local one) and the size of
    the run change; TRL must train two steps on rewards we computed, none excluded."""
    pytest.importorskip("datasets")
    pytest.importorskip("trl")
    script = replace_line(trl_snippet(), "MODEL = ", f"MODEL = {str(tiny_model_dir)!r}")
    script = replace_line(
        script,
        "args = GRPOConfig(",
        'args = GRPOConfig(output_dir="out", per_device_train_batch_size=2, num_generations=2, '
        "max_completion_length=8, max_steps=2, learning_rate=1e-4, logging_steps=1, "
        'report_to="none", save_strategy="steps", save_steps=2, use_cpu=True, seed=0, '
        "beta=0.0)",
    )
    path = tmp_path / "grpo_asmopt.py"
    path.write_text(script, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])]
    )
    # Offline (nothing may be downloaded), a private HF cache, and one torch thread: tiny
    # matrices on a shared machine are slower with two threads waiting for each other.
    env.update(
        HF_HUB_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    proc = subprocess.run(
        [sys.executable, str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # Our reward saw the unguarded script and scored on threads instead of dying workers.
    assert f"{path} has no `if __name__" in proc.stderr, proc.stderr[-4000:]
    # The tiny tokenizer spends about a token a character, so the 8,000-token limit drops
    # most prompts, and says so.
    assert re.search(r"dropped \d+ of \d+ train prompt", proc.stderr), proc.stderr[-4000:]
    state = json.loads((tmp_path / "out" / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    logged = [h for h in state["log_history"] if "reward" in h]
    assert len(logged) == 2, state["log_history"]
    for entry in logged:
        # Every sample was scored by us, as an extraction error (a random model writes no
        # assembly): an excluded sample would be NaN in TRL's mean, or show as infra_error.
        assert math.isfinite(entry["reward"]) and entry["reward"] == pytest.approx(-1.0)
        assert entry["rewards/asmopt_robust/mean"] == pytest.approx(-1.0), entry
        assert entry["asmopt/extraction_error"] == pytest.approx(1.0), entry
        assert not any(key.startswith("asmopt/infra") for key in entry), entry


def test_mapping_entry_points_take_nested_timing_and_name_the_old_flat_keys(
    toolchain: Toolchain,
) -> None:
    """verl's reward_kwargs and the trainers' `reward_options` give ScoreConfig as a
    mapping: `timing` nested is taken, an old flat key is refused before anything runs."""
    from asmopt.train.reward_registry import make_reward

    _, extra = _row(toolchain)
    out = compute_score("s", "no code", "\t.text\n", extra, measure="none", timing={"budget_s": 4})
    assert out["verdict"] == "extraction_error"
    with pytest.raises(ValueError, match=r"^timing_budget_s: use timing\.budget_s"):
        compute_score("s", "no code", "\t.text\n", extra, measure="none", timing_budget_s=4.0)
    with pytest.raises(ValueError, match=r"^timing_precision: use timing\.precision"):
        make_reward("execution", {"measure": "none", "timing_precision": "target"})


def _score_options(options: dict[str, object]) -> dict[str, object]:
    """The ScoreConfig fields of an execution reward's options (the rest: the service's)."""
    service_keys = {"suite", "workers", "backend", "allow_unfit"}
    return {k: v for k, v in options.items() if k not in service_keys}


def test_shipped_configs_spell_the_reward_timing_as_one_nested_mapping() -> None:
    """Every trainer config, learning-run config and the verl recipe that configures the
    execution reward builds a ScoreConfig (a retired flat key would be refused)."""
    import yaml

    repo = Path(__file__).resolve().parents[1]
    checked = 0
    for path in sorted(
        [
            *(repo / "src/asmopt/train/configs").glob("*.yaml"),
            *(repo / "bench/speed_learning").glob("*.yaml"),
            *(repo / "bench/learning_run").glob("*.yaml"),
        ]
    ):
        data = yaml.safe_load(path.read_text())
        if data.get("reward") == "execution":
            ScoreConfig.from_options(_score_options(data.get("reward_options", {})))
            checked += 1
    recipe = yaml.safe_load((repo / "recipes/verl/asmopt_ppo.yaml").read_text())
    ScoreConfig.from_options(
        _score_options(recipe["reward"]["custom_reward_function"]["reward_kwargs"])
    )
    assert checked >= 2
    speed = yaml.safe_load((repo / "bench/speed_learning/ppo.yaml").read_text())
    assert ScoreConfig.from_options(_score_options(speed["reward_options"])).timing.budget_s == 10
