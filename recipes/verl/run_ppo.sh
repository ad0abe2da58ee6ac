#!/usr/bin/env bash
# PPO with verl on asmopt's reward (needs GPUs, verl and vLLM; CI checks everything up to
# the GPUs with verl's own code: tests/test_verl_recipe.py). Run it in verl's environment,
# with asmopt installed there without extras (docs/training.md, "verl: two environments"):
#   asmopt data export --format verl-parquet -o data --max-prompt-tokens 8000 --tokenizer MODEL_DIR
#   bash recipes/verl/run_ppo.sh [hydra overrides...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export ASMOPT_RECIPE_DIR="$here"
# Fail before any GPU work if the reward cannot be imported or called.
python3 -c "from asmopt.reward.adapters import dry_run_verl; print('reward dry run:', dry_run_verl(reward='robust', measure='none')['verdict'])"
exec python3 -m verl.trainer.main_ppo --config-path="$here" --config-name=asmopt_ppo "$@"
