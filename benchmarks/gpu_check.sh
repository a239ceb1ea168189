#!/usr/bin/env bash
# The probe engine's GPU check: tokens/s, TFLOP/s, MFU, engine vs naive and peak memory at the Pythia-1.4B and
# Llama-3.1-8B shapes (random bf16 weights, built from a config: nothing is downloaded), then the real models
# found installed. Under 5 minutes on one H100/H200-class GPU. `--dry-run`: tiny shapes on the CPU (CI).
# Other options: python benchmarks/gpu_check.py --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
python="${PYTHON:-$root/.venv/bin/python}"
[ -x "$python" ] || python="$(command -v python3)"
export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" "$here/gpu_check.py" "$@"
