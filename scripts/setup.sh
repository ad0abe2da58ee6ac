#!/usr/bin/env bash
# Idempotent set-up: system packages (when root), a local virtual environment, the package.
# Safe to rerun; it does nothing when everything is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
SYSTEM_PACKAGES=(gcc g++ bubblewrap valgrind hyperfine llvm)

missing=()
for pkg in "${SYSTEM_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing system packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing system packages: ${missing[*]}" >&2
    echo "setup: install them with: sudo apt-get install ${missing[*]}" >&2
    for must in gcc bubblewrap; do
      if printf '%s\n' "${missing[@]}" | grep -qx "$must"; then exit 1; fi
    done
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi

# Reinstall only when the project's declared dependencies change.
stamp="$VENV/.asmopt-installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python packages into $VENV (first run takes a few minutes)"
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
  # The CPU build of torch; an unpinned torch would pull a multi-GB CUDA build.
  if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
    "$VENV/bin/pip" install -q "torch==${TORCH_VERSION:-2.13.0}"
  fi
  "$VENV/bin/pip" install -q -e ".[train,rl,data,report,dev]"
  rm -f "$VENV"/.asmopt-installed-*
  touch "$stamp"
fi
