"""The verl recipe (needs GPUs, so CI only validates it): reference hyper-parameters and a
reward entry point with verl's signature that really scores."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import yaml

RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "verl"


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
    assert cfg["data"]["max_prompt_length"] == 2000 == cfg["data"]["max_response_length"]
    assert cfg["actor_rollout_ref"]["rollout"]["temperature"] == 0.5
    assert cfg["actor_rollout_ref"]["rollout"]["n"] == 1
    assert cfg["trainer"]["n_gpus_per_node"] == 4 and cfg["trainer"]["total_epochs"] == 1


def test_reward_entry_point_has_verls_signature_and_scores() -> None:
    cfg = yaml.safe_load((RECIPE / "asmopt_ppo.yaml").read_text())
    crf = cfg["custom_reward_function"]
    path = RECIPE / Path(crf["path"]).name
    spec = importlib.util.spec_from_file_location("asmopt_reward_recipe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, crf["name"])
    params = list(inspect.signature(fn).parameters)
    assert params[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    kwargs = dict(crf["reward_kwargs"], measure="none", workers=1, backend="thread")
    out = module.dry_run_verl(**kwargs)
    assert out["verdict"] == "extraction_error" and out["score"] == -1.0


def test_launch_script_dry_runs_the_reward_first() -> None:
    script = (RECIPE / "run_ppo.sh").read_text()
    assert "dry_run_verl" in script and "verl.trainer.main_ppo" in script
    assert script.index("dry_run_verl") < script.index("verl.trainer.main_ppo")
