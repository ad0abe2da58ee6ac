#!/usr/bin/env bash
# PPO with verl on asmopt's reward (needs GPUs, verl and vLLM; CI checks everything up to
# the GPUs with verl's own code: tests/test_verl_recipe.py). Run it in verl's environment,
# with asmopt installed there without extras (docs/training.md, "verl: two environments"):
#   asmopt data export --format verl-parquet -o data --max-prompt-tokens 8000 --tokenizer MODEL_DIR
#   bash recipes/verl/run_ppo.sh [hydra overrides...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export ASMOPT_RECIPE_DIR="$here"
# Fail before any GPU work if the reward cannot be imported, called or run: the dry run
# scores the -O3 baseline of the training file's first row through the sandbox, in both of
# the forms verl calls it, and stops here unless it passes (no bubblewrap, no gcc, a row the
# reward cannot read).
train="${ASMOPT_TRAIN_PARQUET:-data/train.parquet}"
python3 - "$train" <<'PY'
import os
import sys

from asmopt.errors import AsmoptError
from asmopt.reward.adapters import dry_run_verl

if not os.path.isfile(sys.argv[1]):
    sys.exit(
        f"run_ppo.sh: no training parquet at {sys.argv[1]}; set ASMOPT_TRAIN_PARQUET to the "
        "file `asmopt data export --format verl-parquet` wrote"
    )
try:
    out = dry_run_verl(sys.argv[1], reward="robust", measure="none")
except AsmoptError as exc:
    sys.exit(f"run_ppo.sh: {exc}")
print(f"reward dry run: {out['verdict']} (the -O3 baseline of the first row of {sys.argv[1]})")
PY
exec python3 -m verl.trainer.main_ppo --config-path="$here" --config-name=asmopt_ppo "$@"
