"""benchmarks/gpu_check.sh in its CPU dry mode (what CI can run): one line per model with every figure."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

NUMBER = r"([0-9][0-9,.]*(?:e[-+]?[0-9]+)?)"
MODEL_LINE = re.compile(
    rf"^model (?P<name>\S+): L=(?P<L>\d+) d=\d+ V=\d+ weights \d+ MiB torch\.float32; 4x32 tokens, batch 4, 4 variants"
    rf" \| engine (?P<eng_tps>{NUMBER}) variant-tokens/s, (?P<eng_tf>{NUMBER}) TFLOP/s, MFU n/a \(no peak for this device\)"
    rf" \| naive (?P<naive_tps>{NUMBER}) variant-tokens/s, {NUMBER} TFLOP/s"
    rf" \| engine/naive speed-up (?P<speedup>{NUMBER})x \(block evaluations (?P<evals>\d+) vs (?P<naive_evals>\d+)\)"
    rf" \| peak memory above weights engine -?\d+ MiB, naive -?\d+ MiB"
    rf" \| max per-window KL relative diff engine vs naive (?P<diff>{NUMBER})$")


def _num(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.slow
def test_gpu_check_dry_run_prints_every_figure_per_model():
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh"), "--dry-run"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("gpu_check: device cpu; bf16 dense peak n/a (table: H200 989.5"), lines[0]
    assert re.fullmatch(r"gpu_check: done in \d+ s", lines[-1]), lines[-1]
    models = [MODEL_LINE.match(line) for line in lines[1:-1]]
    assert all(models), [line for line, m in zip(lines[1:-1], models) if not m]
    assert [m["name"] for m in models] == ["pythia-tiny", "llama-tiny"]  # no installed model in the dry run
    for m in models:
        assert _num(m["eng_tps"]) > 0 and _num(m["naive_tps"]) > 0 and _num(m["eng_tf"]) > 0
        assert _num(m["speedup"]) > 0
        # naive: the base pass and every variant run from slot 0 (4 blocks; a deletion 3); the engine resumes
        # each variant at its first changed slot
        assert 4 + 4 * 3 <= int(m["naive_evals"]) <= 4 * (4 + 1) and int(m["evals"]) < int(m["naive_evals"])
        # the same variants measured: engine and naive agree to float32 rounding of the naive KL, not O(1)
        assert _num(m["diff"]) < 1e-2


def test_peak_table_matches_device_names():
    from gpu_check import peak_of

    assert peak_of("NVIDIA H200") == 989.5
    assert peak_of("NVIDIA H100 80GB HBM3") == 989.5
    assert peak_of("NVIDIA H100 PCIe") == 756.5
    assert peak_of("NVIDIA A100-SXM4-80GB") == 312.0
    assert peak_of("NVIDIA GeForce RTX 4090") is None
