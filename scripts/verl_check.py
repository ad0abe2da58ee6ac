"""Run verl's own code on the verl recipe and asmopt's reward; print what happened as JSON.

Runs inside verl's environment (scripts/verl_env.sh), where asmopt is installed by pip from
the tree under test as docs/training.md tells a user to install it (not put on PYTHONPATH);
tests/test_verl_recipe.py calls it and asserts on the JSON. Nothing here re-implements verl,
and nothing stands between verl's composition of the recipe and verl's use of it: the
config that `main_ppo` hands to its trainer is the config every reward path below reads,
unchanged (no migration of legacy keys, no copy, no edit; the check asserts it is still
what composition made when the reward paths start).

1. `verl.trainer.main_ppo.main` composes recipes/verl/asmopt_ppo.yaml with verl's Hydra
   config and runs verl's `validate_config`, exactly as `python -m verl.trainer.main_ppo`
   does; the hand-off to the trainer (`run_ppo`) is captured instead of run.
2. `asmopt data export` writes the verl parquet, prompt-length-aware (`--max-prompt-tokens`,
   `--tokenizer`), and verl's `create_rl_dataset` / `RLHFDataset` loads it with the
   recipe's `filter_overlong_prompts`, counting with the same tokenizer plus its chat template.
3. verl's real `run_ppo` takes the composed config: it starts Ray as it does for training
   and hands the config to a task runner in Ray, where only the trainer (GPUs) is replaced
   by a probe that does what both of verl's trainers do before their reward (resolve the
   config) and then builds verl's `RewardLoopManager` from it, as the trainers do. Its
   `compute_rm_score` (the colocated path) and one worker's `compute_score` (the agent
   loop's streaming path) score a DataProto of real answers.
4. The legacy managers, `NaiveRewardManager` (one answer per call) and `BatchRewardManager`
   (the whole batch in one call), get their reward function from verl's own
   `get_custom_reward_fn` on the composed config and score the same answers; the batch
   manager is given rows as pandas reads them back (inputs and outputs as numpy arrays).
5. `process_validation_metrics` averages every diagnostic, as verl's validation does.

No model is downloaded: the "model" is a small tokenizer trained here on the exported
prompts plus a model config, which is all that config validation, the dataset and the
reward managers read from a model directory.
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
    """`asmopt ...` as installed in this (verl's) environment."""
    proc = subprocess.run(
        [sys.executable, "-m", "asmopt.cli", *args, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"asmopt {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout)


def compose(overrides: list[str], hydra_dir: Path) -> tuple[Any, str, Any]:
    """verl's main_ppo entry point up to (not including) `run_ppo`: Hydra composition of
    the recipe with verl's config, `auto_set_device` and `validate_config`. Returns the
    config `main` hands to `run_ppo`, the task runner it chose (verl's trainer) and verl's
    own `run_ppo`, for the reward paths to be started the way training starts."""
    import verl.trainer.main_ppo as main_ppo

    captured: dict[str, Any] = {}
    real_run_ppo = main_ppo.run_ppo

    def capture(config: Any, task_runner_class: Any) -> None:
        captured["config"] = config
        # A Ray actor class keeps the name of the class it wraps in its metadata.
        meta = getattr(task_runner_class, "__ray_metadata__", None)
        captured["runner"] = getattr(meta, "class_name", repr(task_runner_class))

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
        main_ppo.run_ppo = real_run_ppo
    if "config" not in captured:
        raise RuntimeError("verl's main_ppo did not reach run_ppo")
    return captured["config"], captured["runner"], real_run_ppo


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


def reward_loop_probe(data: Any, out: Path) -> Any:
    """A task runner for verl's `run_ppo` that, in place of a trainer, builds the reward
    loop from the config it is handed and scores `data` with it, writing JSON to `out`.

    It does to the config what both of verl's task runners do before their trainer exists
    (`OmegaConf.resolve`) and builds `RewardLoopManager(config=..., rm_resource_pool=None)`
    as both trainers do without a reward model; then the colocated path
    (`compute_rm_score`, whole batch) and the agent loop's path (one worker's
    `compute_score`, one answer) score. `run_ppo` discards what a runner returns, hence
    the file."""
    import ray

    @ray.remote(num_cpus=1)
    class RewardLoopProbe:
        def run(self, config: Any) -> None:
            from omegaconf import OmegaConf
            from verl.experimental.reward_loop import RewardLoopManager

            OmegaConf.resolve(config)
            manager = RewardLoopManager(config=config, rm_resource_pool=None)
            began = time.monotonic()
            scored = manager.compute_rm_score(data)
            seconds = round(time.monotonic() - began, 2)
            scores = scored.batch["rm_scores"].sum(dim=-1).tolist()
            keys = scored.meta_info["reward_extra_keys"]
            outputs = [
                {
                    "reward_score": score,
                    "reward_extra_info": {k: scored.non_tensor_batch[k][i].item() for k in keys},
                }
                for i, score in enumerate(scores)
            ]
            handles = manager.reward_loop_worker_handles or []
            single = ray.get(handles[0].compute_score.remote(data[0:1])) if handles else None
            out.write_text(
                json.dumps(
                    {
                        "workers": len(manager.reward_loop_workers),
                        "manager_class": manager.reward_manager_cls.__name__,
                        "seconds": seconds,
                        "agent_loop_score": None if single is None else single["reward_score"],
                        "outputs": outputs,
                    },
                    default=str,
                )
            )

    return RewardLoopProbe


def compose_phase(work: Path, model: Path, report: dict[str, Any]) -> tuple[Any, Any, Any]:
    """1. Compose and validate exactly as main_ppo does; returns the composed config, the
    same as a plain container (to check later that nothing changed it), and the captured
    `run_ppo`. The overrides are what a user passes on main_ppo's command line: where the
    data, the model and the reward file are, and two reward workers (verl's default is
    eight, more than the few CPUs of a CI machine need)."""
    overrides = [
        f"data.train_files={work}/data/train.parquet",
        f"data.val_files={work}/data/validation.parquet",
        f"actor_rollout_ref.model.path={model}",
        f"critic.model.path={model}",
        f"reward.custom_reward_function.path={RECIPE / 'asmopt_reward.py'}",
        "reward.num_workers=2",
    ]
    config, runner, run_ppo = compose(overrides, work / "hydra")
    from omegaconf import OmegaConf

    composed = OmegaConf.to_container(config)
    report["validate_config"] = "passed"
    report["task_runner"] = runner
    rollout = config.actor_rollout_ref.rollout
    report["config"] = {
        "max_prompt_length": config.data.max_prompt_length,
        "max_response_length": config.data.max_response_length,
        "actor_micro": config.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu,
        "critic_micro": config.critic.ppo_micro_batch_size_per_gpu,
        "rollout_log_prob_micro": rollout.log_prob_micro_batch_size_per_gpu,
        "reward_manager": config.reward.reward_manager.name,
        "reward_kwargs": OmegaConf.to_container(config.reward.custom_reward_function.reward_kwargs),
        # The legacy top-level key stays at verl's empty default: the recipe does not use it.
        "legacy_custom_reward_function": OmegaConf.to_container(config.custom_reward_function),
    }
    return config, composed, run_ppo


def verl_counts(tokenizer: Any, directory: Path) -> list[int]:
    """verl's own count of every prompt of an export, as its overlong filter makes it."""
    import pandas as pd
    from verl.utils.tokenizer import normalize_token_ids

    counts = []
    for split_file in sorted(directory.glob("*.parquet")):
        for prompt in pd.read_parquet(split_file)["prompt"]:
            ids = tokenizer.apply_chat_template(
                [dict(m) for m in prompt], add_generation_prompt=True, tokenize=True
            )
            counts.append(len(normalize_token_ids(ids)))
    return counts


def dataset_phase(
    work: Path, model: Path, config: Any, max_prompt_tokens: int, report: dict[str, Any]
) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    """2. The prompt-length-aware export, then verl's dataset with the recipe's filter;
    returns the tokenizer and the dataset's items per split. The export counts with the
    model's chat template as verl's filter does, so both get the same limit (no margin for
    the template)."""
    from omegaconf import OmegaConf

    limit = max_prompt_tokens or int(config.data.max_prompt_length)
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

    tokenizer = hf_tokenizer(str(model))

    # verl's count over the unfiltered export (how many exceed the limit) and over the
    # filtered one (the longest kept).
    report["verl_prompt_tokens"] = {
        "all": verl_counts(tokenizer, work / "full"),
        "exported": verl_counts(tokenizer, work / "data"),
    }
    data_cfg = OmegaConf.merge(config.data, {"max_prompt_length": limit})
    loaded = {}
    items: dict[str, list[dict[str, Any]]] = {}
    for split, path in (("train", config.data.train_files), ("validation", config.data.val_files)):
        ds = create_rl_dataset(path, data_cfg, tokenizer, None, is_train=split == "train")
        loaded[split] = len(ds)
        items[split] = [ds[i] for i in range(len(ds))]
    report["rlhf_dataset_rows"] = loaded
    return tokenizer, items


def reward_loop_phase(
    work: Path,
    config: Any,
    composed: Any,
    run_ppo: Any,
    data_batch: Any,
    rows: list[dict[str, Any]],
    row_kinds: list[str],
    report: dict[str, Any],
) -> dict[str, list[Any]]:
    """3. verl's reward loop, started as training starts it, on real answers (`data_batch`:
    an answer of kind `row_kinds[i]` to `rows[i]`); returns every score and diagnostic it
    gave, by name."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    report["config_untouched"] = OmegaConf.to_container(config) == composed
    loop_out = work / "reward_loop.json"
    run_ppo(config, task_runner_class=reward_loop_probe(data_batch, loop_out))
    loop = json.loads(loop_out.read_text())
    report["reward_loop"] = {k: v for k, v in loop.items() if k != "outputs"}
    outputs = loop["outputs"]
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
    # verl 0.9.1's reward loop registers per-answer managers only; a batch manager named in
    # `reward.reward_manager.name` is refused by verl itself, before anything is scored.
    try:
        resolve_reward_manager_cls(
            OmegaConf.merge(config, {"reward": {"reward_manager": {"name": "batch"}}})
        )
        report["reward_loop_batch_manager"] = "accepted"
    except ValueError as exc:
        report["reward_loop_batch_manager"] = f"refused: {exc}"
    return infos


def legacy_managers_phase(
    config: Any,
    tokenizer: Any,
    data_batch: Any,
    rows: list[dict[str, Any]],
    row_kinds: list[str],
    report: dict[str, Any],
) -> None:
    """4. The legacy managers, their reward function loaded by verl from the composed config,
    on the same answers."""
    import pandas as pd
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import BatchRewardManager, NaiveRewardManager

    compute_score = get_custom_reward_fn(config)
    report["custom_reward_fn_loaded"] = compute_score is not None
    naive = NaiveRewardManager(tokenizer=tokenizer, num_examine=0, compute_score=compute_score)
    naive_out = naive(data_batch, return_dict=True)
    report["legacy_scores"] = [float(x) for x in naive_out["reward_tensor"].sum(dim=-1)]
    report["legacy_extra_keys"] = sorted(naive_out["reward_extra_info"])

    # The batch manager reads the same rows as pandas gives them back: inputs and outputs are
    # numpy arrays there, not lists.
    frame = pd.read_parquet(config.data.val_files)
    by_index = {}
    for record in frame.to_dict("records"):
        record["raw_prompt"] = [dict(m) for m in record["prompt"]]
        by_index[record["extra_info"]["index"]] = record
    pandas_rows = [by_index[row["extra_info"]["index"]] for row in rows]
    report["pandas_inputs_type"] = type(pandas_rows[0]["extra_info"]["inputs"]).__name__
    batch_manager = BatchRewardManager(
        tokenizer=tokenizer, num_examine=0, compute_score=compute_score
    )
    t1 = time.monotonic()
    batch_out = batch_manager(batch(tokenizer, pandas_rows, row_kinds), return_dict=True)
    report["batch_manager_seconds"] = round(time.monotonic() - t1, 2)
    report["batch_scores"] = [float(x) for x in batch_out["reward_tensor"].sum(dim=-1)]
    report["batch_extra_keys"] = sorted(batch_out["reward_extra_info"])


def metrics_phase(data_batch: Any, infos: dict[str, list[Any]], report: dict[str, Any]) -> None:
    """5. verl's validation metrics over everything the reward returned."""
    from verl.trainer.ppo.metric_utils import process_validation_metrics

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, type=Path, help="scratch directory")
    ap.add_argument("--max-prompt-tokens", type=int, default=0, help="0: the recipe's")
    args = ap.parse_args()
    work: Path = args.work
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import asmopt

    # Where the reward's package comes from: the environment's install, not the tree.
    report: dict[str, Any] = {"python": sys.version.split()[0], "asmopt": asmopt.__file__}
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

    config, composed, run_ppo = compose_phase(work, model, report)
    tokenizer, items = dataset_phase(work, model, config, args.max_prompt_tokens, report)
    val = items["validation"]
    kinds = ["copy", "broken", "prose", "no_ret"]
    rows = [val[i % len(val)] for i in range(len(kinds) * 2)]
    row_kinds = [kinds[i % len(kinds)] for i in range(len(rows))]
    data_batch = batch(tokenizer, rows, row_kinds)
    infos = reward_loop_phase(work, config, composed, run_ppo, data_batch, rows, row_kinds, report)
    legacy_managers_phase(config, tokenizer, data_batch, rows, row_kinds, report)
    metrics_phase(data_batch, infos, report)
    report["seconds"] = round(time.monotonic() - t0, 1)
    import ray

    ray.shutdown()
    print("VERL_CHECK " + json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
