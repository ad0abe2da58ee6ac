#!/usr/bin/env bash
# verl's own virtual environment, for checking the verl recipe against verl's real code
# (tests/test_verl_recipe.py). verl pins its own transformers, numpy and torch, which need
# not agree with asmopt's `train` extra, so it never shares asmopt's environment: verl
# itself goes in with --no-deps, then only what its config composition, config validation,
# dataset and reward-loop code import on a CPU (no vLLM, no flash-attention, no wandb).
# asmopt is not installed here: the reward needs only plain asmopt, which the caller puts
# on PYTHONPATH from the tree under test.
#
# Idempotent and cached per user, like pip's own cache: $ASMOPT_VERL_VENV, default
# ${XDG_CACHE_HOME:-~/.cache}/asmopt/verl-VERSION, rebuilt only when the list below
# changes, under a lock so that concurrent callers wait for one build. Prints the
# environment's python on stdout (progress goes to stderr).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VERL_VERSION=${VERL_VERSION:-0.9.1}
VENV=${ASMOPT_VERL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/asmopt/verl-$VERL_VERSION}

# verl 0.9.1's own bounds for what it declares; torch is the CPU build (as in setup.sh).
REQUIREMENTS=(
  "torch==${TORCH_VERSION:-2.13.0}"
  "tensordict>=0.8,<=0.10.0,!=0.9.0"
  "transformers>=5.5.3,<5.11,!=5.6.0"
  "numpy>=2"
  "pyarrow>=19"
  "pandas"
  "hydra-core"
  "omegaconf"
  "datasets"
  "ray>=2.41"
  "aiohttp"
  "pillow"
  "codetiming"
  "dill"
  "packaging"
  # asmopt's own core dependencies the reward imports (pyproject.toml)
  "pebble>=5.0"
  "jinja2>=3.1"
)

stamp="$VENV/.asmopt-verl-$(printf '%s\n' "verl==$VERL_VERSION" "${REQUIREMENTS[@]}" | sha256sum | cut -c1-16)"
mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [ ! -f "$stamp" ]; then
  start=$SECONDS
  echo "verl_env: creating $VENV (verl $VERL_VERSION; a few minutes the first time)" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --no-deps "verl==$VERL_VERSION" >&2
  "$VENV/bin/pip" install -q "${REQUIREMENTS[@]}" >&2
  touch "$stamp"
  echo "verl_env: ready in $((SECONDS - start)) s" >&2
fi
echo "$VENV/bin/python"
