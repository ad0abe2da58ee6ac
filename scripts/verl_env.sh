#!/usr/bin/env bash
# verl's own virtual environment, for checking the verl recipe against verl's real code
# (tests/test_verl_recipe.py), built exactly as docs/training.md ("verl on a CPU") tells a
# user to build it, and nothing more: verl with --no-deps, torch, the CPU-side list below,
# then asmopt from the tree under test through pip with no extras (as `pip install asmopt`),
# so that a dependency missing from the docs or from pyproject.toml fails here.
#
#   scripts/verl_env.sh                prints the environment's python on stdout
#   scripts/verl_env.sh COMMAND ARGS   runs COMMAND with the environment's bin first on PATH,
#                                      holding the lock, so no other tree's asmopt replaces
#                                      this one while it runs; exits with its status
#
# Idempotent and cached per user, like pip's own cache: $ASMOPT_VERL_VENV, default
# ${XDG_CACHE_HOME:-~/.cache}/asmopt/verl-VERSION, rebuilt only when verl's version, the
# list below or asmopt's declared dependencies (pyproject.toml) change; asmopt itself is
# reinstalled whenever the tree's package files change. Everything runs under a lock, so
# concurrent callers wait for one build. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

PYTHON=${PYTHON:-python3}
VERL_VERSION=${VERL_VERSION:-0.9.1}
VENV=${ASMOPT_VERL_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/asmopt/verl-$VERL_VERSION}
# The docs' `pip install torch`, pinned to the CPU build this project's machines carry
# (as scripts/setup.sh).
TORCH="torch==${TORCH_VERSION:-2.13.0}"

# docs/training.md's CPU-side list, word for word (verl 0.9.1's own bounds where it declares
# one): what verl's config composition, config validation, dataset and reward loop import
# on a CPU, as scripts/verl_check.py measures it (tests/test_verl_recipe.py checks that this
# list and the docs' agree).
REQUIREMENTS=(
  "tensordict>=0.8,<=0.10.0,!=0.9.0"
  "transformers>=5.5.3,<5.11,!=5.6.0"
  "numpy>=2"
  "pyarrow>=19"
  "pandas"
  "hydra-core"
  "datasets"
  "ray>=2.41"
  "aiohttp"
  "pillow"
  "codetiming"
)

# What `pip install asmopt` brings: the [project] dependencies, no extras.
asmopt_deps=$("$PYTHON" -c '
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["dependencies"]))
')
env_key=$(printf '%s\n' "verl==$VERL_VERSION" "$TORCH" "${REQUIREMENTS[@]}" "--" "$asmopt_deps" \
  | sha256sum | cut -c1-16)
stamp="$VENV/.asmopt-verl-$env_key"

# The files an asmopt build reads, copied out of the tree: pip builds a local directory in
# place, and that would write build/ and *.egg-info into the tree.
PACKAGE_FILES=(pyproject.toml README.md src)
package_files() {
  find "${PACKAGE_FILES[@]}" \( -name __pycache__ -o -name '*.egg-info' \) -prune -o -type f -print0 \
    | LC_ALL=C sort -z
}
tree_key=$(package_files | xargs -0 sha256sum | sha256sum | cut -c1-16)

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if [ ! -f "$stamp" ]; then
  start=$SECONDS
  echo "verl_env: creating $VENV (verl $VERL_VERSION; a few minutes the first time)" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --no-deps "verl==$VERL_VERSION" >&2
  "$VENV/bin/pip" install -q "$TORCH" >&2
  "$VENV/bin/pip" install -q "${REQUIREMENTS[@]}" >&2
  touch "$stamp"
  echo "verl_env: ready in $((SECONDS - start)) s" >&2
fi
if [ "$(cat "$VENV/.asmopt-tree" 2>/dev/null)" != "$tree_key" ]; then
  echo "verl_env: installing asmopt from $ROOT" >&2
  copy=$(mktemp -d)
  trap 'rm -rf "$copy"' EXIT
  package_files | tar --null -T - -cf - | tar -xf - -C "$copy"
  rm -f "$VENV/.asmopt-tree"
  "$VENV/bin/pip" install -q "$copy" >&2
  echo "$tree_key" >"$VENV/.asmopt-tree"
fi
if [ $# -eq 0 ]; then
  echo "$VENV/bin/python"
  exit 0
fi
# The command does not inherit the lock's descriptor: what it leaves running (Ray's
# daemons) must not hold the lock after it ends.
PATH="$VENV/bin:$PATH" "$@" 9>&-
