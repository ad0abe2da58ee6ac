#!/usr/bin/env bash
# PPO with verl on asmopt's reward (needs GPUs, verl and vLLM; not run in CI).
#   asmopt data export --format verl-parquet --split train -o data/train.parquet
#   asmopt data export --format verl-parquet --split validation -o data/validation.parquet
#   bash recipes/verl/run_ppo.sh [hydra overrides...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export ASMOPT_RECIPE_DIR="$here"
# Fail before any GPU work if the reward cannot be imported or called.
python3 -c "from asmopt.reward.adapters import dry_run_verl; print('reward dry run:', dry_run_verl(reward='robust', measure='none')['verdict'])"
exec python3 -m verl.trainer.main_ppo --config-path="$here" --config-name=asmopt_ppo "$@"
