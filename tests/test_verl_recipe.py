"""The verl recipe. Training needs GPUs, so CI proves everything up to them with verl's own
code (the slow test: verl installed in its own environment by scripts/verl_env.sh, driven
by scripts/verl_check.py); the fast tests check the reference hyper-parameters, that the
reward sits under the key verl reads, and a reward entry point with verl's signatures (one
answer; a batch) that really scores."""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "verl"


def test_recipe_uses_reference_hyperparameters() -> None:
    cfg = yaml.safe_load((RECIPE / "asmopt_ppo.yaml").read_text())
    assert cfg["defaults"][0] == "ppo_trainer"
    assert cfg["algorithm"]["adv_estimator"] == "gae"
    assert cfg["algorithm"]["gamma"] == 1.0 and cfg["algorithm"]["lam"] == 1.0
    actor = cfg["actor_rollout_ref"]["actor"]
    assert actor["optim"]["lr"] == 1e-6 and actor["clip_ratio"] == 0.2
    assert actor["entropy_coeff"] == 0.0 and actor["use_kl_loss"] is False
    assert actor["ppo_mini_batch_size"] == 16 and actor["ppo_epochs"] == 1
    assert cfg["critic"]["optim"]["lr"] == 1e-5 and cfg["critic"]["cliprange_value"] == 0.5
    assert cfg["data"]["train_batch_size"] == 16
    # Not the reference's 2,000 tokens: built-in prompts run to ~8,000 (docs/training.md).
    assert cfg["data"]["max_prompt_length"] >= 8000
    assert cfg["actor_rollout_ref"]["rollout"]["temperature"] == 0.5
    assert cfg["actor_rollout_ref"]["rollout"]["n"] == 1
    assert cfg["trainer"]["n_gpus_per_node"] == 4 and cfg["trainer"]["total_epochs"] == 1


def test_recipe_gives_the_reward_where_verl_reads_it() -> None:
    """verl 0.9 reads `reward.custom_reward_function`; its trainers never migrate a
    top-level `custom_reward_function`, so a reward given there never reaches training."""
    cfg = yaml.safe_load((RECIPE / "asmopt_ppo.yaml").read_text())
    assert "custom_reward_function" not in cfg
    crf = cfg["reward"]["custom_reward_function"]
    assert Path(crf["path"]).name == "asmopt_reward.py" and crf["name"] == "compute_score"
    assert crf["reward_kwargs"]["reward"] == "robust"


def test_reward_entry_point_has_verls_signature_and_scores() -> None:
    cfg = yaml.safe_load((RECIPE / "asmopt_ppo.yaml").read_text())
    crf = cfg["reward"]["custom_reward_function"]
    path = RECIPE / Path(crf["path"]).name
    spec = importlib.util.spec_from_file_location("asmopt_reward_recipe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, crf["name"])
    params = list(inspect.signature(fn).parameters)
    assert params[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    # BatchRewardManager's keywords, by name, as verl passes them.
    assert {"data_sources", "solution_strs", "ground_truths", "extra_infos"} <= set(params)
    kwargs = dict(crf["reward_kwargs"], measure="none", workers=1, backend="thread")
    out = module.dry_run_verl(**kwargs)  # a real answer: the -O3 baseline of a built-in row
    assert out["verdict"] == "pass" and out["score"] == 0.0 and out["identical"] == 1.0


def test_launch_script_dry_runs_the_reward_first() -> None:
    script = (RECIPE / "run_ppo.sh").read_text()
    assert "dry_run_verl" in script and "verl.trainer.main_ppo" in script
    assert script.index("dry_run_verl") < script.index("verl.trainer.main_ppo")


def _cpu_install_lines() -> list[list[str]]:
    """The `pip install` commands of docs/training.md's "verl on a CPU" block, split as the
    shell splits them (continuation lines joined, comments dropped)."""
    docs = (ROOT / "docs" / "training.md").read_text()
    section = docs[docs.index("#### verl on a CPU") :]
    start = section.index("```bash\n") + len("```bash\n")
    block = section[start : section.index("\n```", start)]
    block = block.replace("\\\n", " ")
    words = (shlex.split(line, comments=True) for line in block.splitlines())
    return [w[2:] for w in words if w[:2] == ["pip", "install"]]


def _script_requirements(script: str) -> list[str]:
    body = re.search(r"^REQUIREMENTS=\((.*?)^\)", script, re.S | re.M)
    assert body is not None, "scripts/verl_env.sh has no REQUIREMENTS list"
    return shlex.split(body.group(1), comments=True)


def test_verl_env_installs_what_the_docs_say() -> None:
    """CI's verl environment is the documented CPU install, line for line: verl without its
    dependencies, torch, the CPU-side list word for word, then asmopt through pip with no
    extras. And every documented install of asmopt into verl's environments brings asmopt's
    dependencies (no --no-deps: the reward imports pebble, which verl does not bring)."""
    script = (ROOT / "scripts" / "verl_env.sh").read_text()
    installs = _cpu_install_lines()
    assert installs[0] == ["--no-deps", "verl==0.9.1"]
    assert "VERL_VERSION=${VERL_VERSION:-0.9.1}" in script
    assert 'pip" install -q --no-deps "verl==$VERL_VERSION"' in script
    assert installs[1] == ["torch"] and 'TORCH="torch==' in script
    assert 'pip" install -q "$TORCH"' in script
    assert installs[2] == _script_requirements(script)
    assert 'pip" install -q "${REQUIREMENTS[@]}"' in script
    assert installs[3:] == [["asmopt"]]
    assert 'pip" install -q "$copy"' in script and "PYTHONPATH" not in script
    # The order of the script's installs is the docs'.
    order = ["--no-deps", '"$TORCH"', '"${REQUIREMENTS[@]}"', '"$copy"']
    positions = [script.index(f'pip" install -q {word}') for word in order]
    assert positions == sorted(positions)
    docs = (ROOT / "docs" / "training.md").read_text()
    verl_docs = docs[docs.index("### verl: two environments") : docs.index("### TRL")]
    asmopt_installs = re.findall(r"^pip install .*asmopt.*$", verl_docs, re.M)
    assert len(asmopt_installs) >= 2
    for line in asmopt_installs:
        assert "--no-deps" not in line and "asmopt[" not in line, line


def _verl_check(work: Path) -> dict:
    """verl's environment (built once, cached; asmopt reinstalled from this tree when its
    package files changed), then scripts/verl_check.py in it, under the environment's lock
    so that no other tree's asmopt replaces this one meanwhile."""
    check = ["python", str(ROOT / "scripts" / "verl_check.py"), "--work", str(work)]
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "verl_env.sh"), *check],
        capture_output=True,
        text=True,
        timeout=1800 + 900,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("VERL_CHECK ")]
    assert proc.returncode == 0 and lines, (
        f"verl check failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
    return json.loads(lines[-1].removeprefix("VERL_CHECK "))


@pytest.mark.slow
def test_recipe_trains_as_far_as_verls_own_code_goes_without_gpus(tmp_path: Path) -> None:
    """verl's main_ppo composition and validate_config accept the recipe; verl's dataset
    loads our export; from the config main_ppo hands its trainer, untouched, verl's reward
    loop (started by verl's run_ppo) and its legacy naive and batch managers score real
    answers with our reward; verl's process_validation_metrics averages every diagnostic."""
    out = _verl_check(tmp_path)
    # The reward's asmopt is the one pip installed in verl's environment, not this tree's src.
    installed = Path(out["asmopt"])
    assert "site-packages" in installed.parts and not installed.is_relative_to(ROOT), installed
    assert out["validate_config"] == "passed"
    assert out["task_runner"] == "TaskRunnerV1"  # verl's default trainer took the config
    cfg = out["config"]
    assert cfg["actor_micro"] >= 1 and cfg["critic_micro"] >= 1
    assert cfg["rollout_log_prob_micro"] >= 1
    assert cfg["reward_kwargs"]["reward"] == "robust"
    assert cfg["legacy_custom_reward_function"] == {"path": None, "name": None}

    # Nothing of ours changed the config between composition and the reward paths: verl
    # loads our reward from it by itself, and its reward loop builds from it.
    assert out["config_untouched"] is True
    assert out["custom_reward_fn_loaded"] is True
    loop = out["reward_loop"]
    assert loop["manager_class"] == "NaiveRewardManager" and loop["workers"] == 2
    assert loop["agent_loop_score"] == out["samples"][0]["score"]
    # verl's reward loop has no batch manager; verl itself says so, naming it.
    assert out["reward_loop_batch_manager"] == "refused: Unknown reward manager: batch"

    # The export dropped (and named) what is too long, counting with the model's chat template
    # as verl does, at verl's own limit: verl's filter then keeps every exported row, verl's
    # count of the longest kept prompt is the export's, and verl counts exactly the dropped
    # rows over the limit.
    kept = out["prompt_filter"]["rows"]
    limit = out["prompt_filter"]["limit"]
    assert limit == cfg["max_prompt_length"]
    assert "with its chat template" in out["prompt_filter"]["counted_by"]
    verl_counts = out["verl_prompt_tokens"]
    assert max(verl_counts["exported"]) == out["prompt_filter"]["longest_kept"] <= limit
    over = sum(n > limit for n in verl_counts["all"])
    assert over == len(out["prompt_filter"]["dropped"])
    assert out["rlhf_dataset_rows"] == {"train": kept["train"], "validation": kept["validation"]}
    assert kept["train"] + len(out["prompt_filter"]["dropped"]) >= 1
    assert sum(kept.values()) + len(out["prompt_filter"]["dropped"]) == sum(
        out["exported_rows"].values()
    )

    # Real answers get the verdicts and robust rewards they deserve, on both reward paths.
    expected = {
        "copy": ("pass", 0.0),
        "broken": ("assemble_error", -1.0),
        "prose": ("extraction_error", -1.0),
    }
    for sample in out["samples"]:
        if sample["kind"] in expected:
            assert (sample["verdict"], sample["score"]) == expected[sample["kind"]], sample
        else:  # no `ret`: falls through into whatever follows; never a pass
            assert sample["verdict"] != "pass" and sample["score"] < 0, sample
    assert out["legacy_scores"] == [s["score"] for s in out["samples"]]
    # The batch manager, one call for the batch, on rows as pandas reads them (numpy arrays).
    assert out["pandas_inputs_type"] == "ndarray"
    assert out["batch_scores"] == [s["score"] for s in out["samples"]]
    assert out["batch_extra_keys"] == out["legacy_extra_keys"]

    # Every diagnostic is a number or a string, never None, and verl averaged each number.
    for key, types in out["extra_info_types"].items():
        assert set(types) <= {"float", "int", "str"}, (key, types)
    numeric = {k for k, t in out["extra_info_types"].items() if "str" not in t}
    assert numeric <= set(out["metrics"]), numeric - set(out["metrics"])
    for key in numeric:
        (value,) = out["metrics"][key].values()
        assert isinstance(value, float), (key, value)
    assert out["metrics"]["reward"] == out["metrics"]["score"]
