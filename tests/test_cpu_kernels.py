"""The numeric tests again, under other CPU kernel paths than this machine's best one.

CI machines differ (AVX2 only; AVX-512 with bf16/AMX units), and matmul, exp and reduction kernels
differ between them in summation order and fused multiply-add. A tolerance that only holds on one
instruction set must fail here, on any machine, rather than on the next CI machine. Each path runs
the numeric test modules in a fresh interpreter with ATen's vectorised kernels, MKL's BLAS and
oneDNN all held to that instruction set; the child's report header proves which ATen path ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
NUMERIC_MODULES = ["test_engine.py", "test_batch_loop.py", "test_representation.py", "test_perplexity.py",
                   "test_sleb.py", "test_prune.py", "test_probe_cli.py"]
PATHS = {
    # name: (ATen capability reported by torch, environment that selects it)
    "default": ("DEFAULT", {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
                            "ONEDNN_MAX_CPU_ISA": "SSE41"}),
    "avx2": ("AVX2", {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                      "ONEDNN_MAX_CPU_ISA": "AVX2"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(PATHS))
def test_numeric_tests_pass_on_kernel_path(path, tmp_path):
    capability, env_vars = PATHS[path]
    env = {**os.environ, **env_vars, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "pytest", "-m", "not slow", "-p", "no:cacheprovider",
           "--basetemp", str(tmp_path / "t"), *[str(TESTS / m) for m in NUMERIC_MODULES]]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=TESTS.parent)
    out = proc.stdout + proc.stderr
    assert f"torch CPU capability: {capability}" in out, out[-3000:]
    assert proc.returncode == 0, f"numeric tests fail on the {path} kernel path:\n{out[-6000:]}"
    assert " passed" in out and " failed" not in out
