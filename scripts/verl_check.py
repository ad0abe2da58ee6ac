"""Run verl's own code on the verl recipe and asmopt's reward; print what happened as JSON.

Runs inside verl's environment (scripts/verl_env.sh) with asmopt's `src` on PYTHONPATH;
tests/test_verl_recipe.py calls it and asserts on the JSON. Nothing here re-implements verl:

1. `verl.trainer.main_ppo.main` composes recipes/verl/asmopt_ppo.yaml with verl's Hydra
   config and runs verl's `validate_config`, exactly as `python -m verl.trainer.main_ppo`
   does; only the hand-off to Ray and the GPUs (`run_ppo`) is replaced by a capture.
2. `asmopt data export` writes the verl parquet, prompt-length-aware (`--max-prompt-tokens`,
   `--tokenizer`), and verl's `create_rl_dataset` / `RLHFDataset` loads it with the
   recipe's `filter_overlong_prompts`, counting with the same tokenizer plus its chat template.
3. verl's reward loop (`RewardLoopWorker`, which loads the recipe's custom reward file by
   path with its `reward_kwargs`, and its `naive` reward manager) scores real answers, and
   the legacy `NaiveRewardManager` scores the same batch.
4. `process_validation_metrics` averages every diagnostic, as verl's validation does.

No model is downloaded: the "model" is a small tokenizer trained here on the exported
prompts plus a model config, which is all that config validation, the dataset and the
reward manager read from a model directory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "recipes" / "verl"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_model_dir(out: Path, texts: list[str]) -> Path:
    """A tokenizer (byte-level BPE trained on `texts`) and a tiny Llama config, saved like
    a HF model directory. No weights: nothing here runs the model."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4000,
        special_tokens=["<pad>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>")
    fast.chat_template = CHAT_TEMPLATE
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
        architectures=["LlamaForCausalLM"],
    ).save_pretrained(out)
    return out


def asmopt_cli(*args: str) -> dict[str, Any]:
    """`asmopt ...` from the tree under test, in this (verl's) interpreter."""
    proc = subprocess.run(
        [sys.executable, "-m", "asmopt.cli", *args, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"asmopt {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout)


def compose(overrides: list[str], hydra_dir: Path) -> Any:
    """verl's main_ppo entry point up to (not including) `run_ppo`: Hydra composition of
    the recipe with verl's config, `auto_set_device` and `validate_config`."""
    import verl.trainer.main_ppo as main_ppo

    captured: dict[str, Any] = {}

    def capture(config: Any, task_runner_class: Any) -> None:
        captured["config"] = config

    main_ppo.run_ppo = capture
    argv = sys.argv
    sys.argv = [
        "main_ppo",
        f"--config-path={RECIPE}",
        "--config-name=asmopt_ppo",
        f"hydra.run.dir={hydra_dir}",
        "hydra.output_subdir=null",
        *overrides,
    ]
    try:
        main_ppo.main()
    finally:
        sys.argv = argv
    if "config" not in captured:
        raise RuntimeError("verl's main_ppo did not reach run_ppo")
    return captured["config"]


def answers(row: dict[str, Any]) -> dict[str, str]:
    """Real answers a policy writes, from one exported row: a verbatim copy of the -O3
    baseline, the copy with one instruction corrupted (does not assemble), prose with no
    assembly, and the baseline with its `ret` removed (builds, then crashes or misbehaves)."""
    asm = row["reward_model"]["ground_truth"]
    lines = asm.splitlines()
    no_ret = "\n".join(line for line in lines if line.strip() != "ret") + "\n"
    first = next(i for i, line in enumerate(lines) if line.startswith("\t") and "." not in line[:2])
    broken = lines[:]
    broken[first] = "\tnot_an_instruction %rax, %rax"
    return {
        "copy": f"```assembly\n{asm}```",
        "broken": "```assembly\n" + "\n".join(broken) + "\n```",
        "prose": "I would unroll the loop, but here is no code.",
        "no_ret": f"```assembly\n{no_ret}```",
    }


def batch(tokenizer: Any, items: list[dict[str, Any]], kinds: list[str]) -> Any:
    """A DataProto shaped like a rollout's output: left-padded prompts, right-padded
    responses, their attention mask, and the row's non-tensor fields."""
    import numpy as np
    import torch
    from verl import DataProto

    prompts, responses = [], []
    for item, kind in zip(items, kinds, strict=True):
        prompts.append(
            tokenizer.apply_chat_template(
                item["raw_prompt"], add_generation_prompt=True, tokenize=True
            )
        )
        responses.append(tokenizer.encode(answers(item)[kind], add_special_tokens=False))
    if prompts and not isinstance(prompts[0], list):  # a BatchEncoding
        prompts = [list(p["input_ids"]) for p in prompts]
    pl, rl = max(map(len, prompts)), max(map(len, responses))
    pad = tokenizer.pad_token_id
    p_ids = torch.tensor([[pad] * (pl - len(p)) + p for p in prompts])
    r_ids = torch.tensor([r + [pad] * (rl - len(r)) for r in responses])
    mask = torch.tensor(
        [
            [0] * (pl - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (rl - len(r))
            for p, r in zip(prompts, responses, strict=True)
        ]
    )
    return DataProto.from_dict(
        tensors={
            "prompts": p_ids,
            "responses": r_ids,
            "input_ids": torch.cat([p_ids, r_ids], dim=1),
            "attention_mask": mask,
        },
        non_tensors={
            "data_source": np.array([i["data_source"] for i in items], dtype=object),
            "reward_model": np.array([i["reward_model"] for i in items], dtype=object),
            "extra_info": np.array([dict(i["extra_info"]) for i in items], dtype=object),
            "uid": np.array([f"{i['extra_info']['index']}" for i in items], dtype=object),
        },
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, type=Path, help="scratch directory")
    ap.add_argument("--max-prompt-tokens", type=int, default=0, help="0: the recipe's")
    args = ap.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report: dict[str, Any] = {"python": sys.version.split()[0]}
    t0 = time.monotonic()

    # The tokenizer is trained on the prompts of a first, unfiltered export.
    full = asmopt_cli("data", "export", "--format", "verl-parquet", "-o", str(work / "full"))
    import pandas as pd

    texts = []
    for split_file in sorted((work / "full").glob("*.parquet")):
        for prompt in pd.read_parquet(split_file)["prompt"]:
            texts.extend(m["content"] for m in prompt)
    model = build_model_dir(work / "model", texts)
    report["exported_rows"] = full["report"]["stats"]["rows"]

    # 1. Compose and validate exactly as main_ppo does.
    overrides = [
        f"data.train_files={work}/data/train.parquet",
        f"data.val_files={work}/data/validation.parquet",
        f"actor_rollout_ref.model.path={model}",
        f"critic.model.path={model}",
        f"custom_reward_function.path={RECIPE / 'asmopt_reward.py'}",
    ]
    config = compose(overrides, work / "hydra")
    from omegaconf import OmegaConf

    report["validate_config"] = "passed"
    rollout = config.actor_rollout_ref.rollout
    report["config"] = {
        "max_prompt_length": config.data.max_prompt_length,
        "max_response_length": config.data.max_response_length,
        "actor_micro": config.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu,
        "critic_micro": config.critic.ppo_micro_batch_size_per_gpu,
        "rollout_log_prob_micro": rollout.log_prob_micro_batch_size_per_gpu,
        "reward_kwargs": OmegaConf.to_container(config.custom_reward_function.reward_kwargs),
    }

    # 2. The prompt-length-aware export, then verl's dataset with the recipe's filter.
    # The export counts with the model's chat template as verl's filter does, so both get the
    # same limit (no margin for the template).
    limit = args.max_prompt_tokens or int(config.data.max_prompt_length)
    data = asmopt_cli(
        "data", "export", "--format", "verl-parquet", "-o", str(work / "data"),
        "--max-prompt-tokens", str(limit), "--tokenizer", str(model),
    )  # fmt: skip
    report["prompt_filter"] = {
        "limit": limit,
        "rows": data["report"]["stats"]["rows"],
        "longest_kept": data["report"]["stats"]["prompt_tokens"]["longest_kept"],
        "counted_by": data["report"]["stats"]["prompt_tokens"]["counted_by"],
        "dropped": [d["item"] for d in data["report"]["drops"] if d["reason"] == "prompt_too_long"],
    }
    from verl.trainer.ppo.utils import create_rl_dataset
    from verl.utils import hf_tokenizer
    from verl.utils.tokenizer import normalize_token_ids

    tokenizer = hf_tokenizer(str(model))

    # verl's own count of every prompt, as its overlong filter makes it: over the unfiltered
    # export (how many exceed the limit) and over the filtered one (the longest kept).
    def verl_counts(directory: Path) -> list[int]:
        counts = []
        for split_file in sorted(directory.glob("*.parquet")):
            for prompt in pd.read_parquet(split_file)["prompt"]:
                ids = tokenizer.apply_chat_template(
                    [dict(m) for m in prompt], add_generation_prompt=True, tokenize=True
                )
                counts.append(len(normalize_token_ids(ids)))
        return counts

    report["verl_prompt_tokens"] = {
        "all": verl_counts(work / "full"),
        "exported": verl_counts(work / "data"),
    }
    data_cfg = OmegaConf.merge(config.data, {"max_prompt_length": limit})
    loaded = {}
    items: dict[str, list[dict[str, Any]]] = {}
    for split, path in (("train", config.data.train_files), ("validation", config.data.val_files)):
        ds = create_rl_dataset(path, data_cfg, tokenizer, None, is_train=split == "train")
        loaded[split] = len(ds)
        items[split] = [ds[i] for i in range(len(ds))]
    report["rlhf_dataset_rows"] = loaded

    # 3. verl's reward loop and legacy reward manager on real answers.
    from verl.experimental.reward_loop.reward_loop import (
        RewardLoopWorker,
        migrate_legacy_reward_impl,
    )
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager.naive import NaiveRewardManager

    reward_config = migrate_legacy_reward_impl(OmegaConf.create(OmegaConf.to_container(config)))
    val = items["validation"]
    kinds = ["copy", "broken", "prose", "no_ret"]
    rows = [val[i % len(val)] for i in range(len(kinds) * 2)]
    row_kinds = [kinds[i % len(kinds)] for i in range(len(rows))]
    data_batch = batch(tokenizer, rows, row_kinds)
    worker = RewardLoopWorker(reward_config)
    t1 = time.monotonic()
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(data_batch))
    report["reward_loop_seconds"] = round(time.monotonic() - t1, 2)
    loop_scores = [float(o["reward_score"]) for o in outputs]
    extra_keys = sorted(outputs[0]["reward_extra_info"])
    infos: dict[str, list[Any]] = {"reward": loop_scores}
    for key in extra_keys:
        infos[key] = [o["reward_extra_info"][key] for o in outputs]
    report["samples"] = [
        {
            "kind": kind,
            "program": row["extra_info"]["index"],
            "score": score,
            "verdict": o["reward_extra_info"]["verdict"],
        }
        for kind, row, score, o in zip(row_kinds, rows, loop_scores, outputs, strict=True)
    ]
    report["extra_info_types"] = {
        key: sorted({type(v).__name__ for v in values}) for key, values in infos.items()
    }

    legacy = NaiveRewardManager(
        tokenizer=tokenizer, num_examine=0, compute_score=get_custom_reward_fn(reward_config)
    )
    legacy_out = legacy(data_batch, return_dict=True)
    report["legacy_scores"] = [float(x) for x in legacy_out["reward_tensor"].sum(dim=-1)]
    legacy_extra = legacy_out["reward_extra_info"]
    report["legacy_extra_keys"] = sorted(legacy_extra)

    # 4. verl's validation metrics over everything the reward returned.
    metrics = process_validation_metrics(
        list(data_batch.non_tensor_batch["data_source"]),
        list(data_batch.non_tensor_batch["uid"]),
        infos,
    )
    source = next(iter(metrics))
    report["metrics"] = {
        var: {name: value for name, value in per.items() if name.startswith("mean@")}
        for var, per in metrics[source].items()
    }
    report["seconds"] = round(time.monotonic() - t0, 1)
    print("VERL_CHECK " + json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
