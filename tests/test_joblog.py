"""Every workflow script reports a SwapKLError as one line in its job log and exits with code 2, no traceback.

The scripts run here as Snakemake runs them: as a fresh Python process with a `snakemake` object in their
globals (a stand-in with the attributes the script reads), so the test covers the real script files.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swapkl.errors import SwapKLError
from swapkl.joblog import check_job_device

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((REPO / "workflow" / "scripts").glob("*.py"))

# Runs one script with a stand-in `snakemake` object built from the JSON in argv[2].
RUNNER = """
import json, runpy, sys
from types import SimpleNamespace as NS
spec = json.loads(sys.argv[2])
class Named(list):
    def __init__(self, items):
        super().__init__(items.values() if isinstance(items, dict) else items)
        self.__dict__.update(items if isinstance(items, dict) else {})
    def get(self, key, default=None):
        return self.__dict__.get(key, default)
    def items(self):
        return self.__dict__.items()
snakemake = NS(input=Named(spec["input"]), output=Named(spec["output"]), params=Named(spec["params"]),
               wildcards=Named(spec["wildcards"]), log=Named(spec["log"]), threads=1, rule=spec.get("rule"),
               resources=Named(spec.get("resources", {})), config=spec.get("config", {}))
runpy.run_path(sys.argv[1], init_globals={"snakemake": snakemake}, run_name="__main__")
"""


def run_script(script: Path, tmp_path: Path, env=None, **spec) -> tuple[subprocess.CompletedProcess, str]:
    log = tmp_path / "job.log"
    spec = {"input": {}, "output": {}, "params": {}, "wildcards": {}, **spec, "log": [str(log)]}
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(script), json.dumps(spec)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    return proc, log.read_text() if log.exists() else ""


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_runs_its_call_inside_job_log(script):
    """A script is its imports, then one `with job_log(snakemake):` holding everything else."""
    body = ast.parse(script.read_text()).body
    assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)  # the docstring
    *imports, last = body[1:]
    assert all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in imports)
    assert isinstance(last, ast.With)
    assert ast.unparse(last.items[0].context_expr) == "job_log(snakemake)"


def test_swapkl_error_is_one_log_line_and_exit_code_2(tmp_path):
    # the download script on a machine without the hub (HF_HUB_OFFLINE: no request is even attempted)
    out = tmp_path / "resources" / "checkpoints" / "m" / "main"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc, log = run_script(REPO / "workflow/scripts/download_checkpoint.py", tmp_path, env=env,
                           output=[str(out)], params={"source": "swapkl-tests/does-not-exist", "retries": 3, "member": False},
                           wildcards={"model": "m", "revision": "main"})
    assert proc.returncode == 2, proc.stderr
    lines = log.splitlines()
    assert lines[-1].startswith("swapkl: error: ") and "swapkl-tests/does-not-exist@main" in lines[-1], log
    assert "Traceback" not in log + proc.stderr + proc.stdout
    assert not out.exists() and not (tmp_path / "resources" / "checkpoints" / "m" / "main.partial").exists()


def test_other_exceptions_keep_their_traceback(tmp_path):
    # a bug (here: a rule that forgot the wildcard its script reads) is not dressed up as bad input
    proc, log = run_script(REPO / "workflow/scripts/plot_figure.py", tmp_path, rule="plot_gap_trajectory",
                           input={"aggregate": str(tmp_path / "table.parquet")},
                           output={f"{name}_{ext}": str(tmp_path / f"{name}.{ext}") for ext in ("png", "pdf")
                                   for name in ("gap_trajectory", "gap_trajectory_fwd")})
    assert proc.returncode not in (0, 2), log
    assert "Traceback" in log and "KeyError: 'model'" in log


def test_gpu_job_without_a_cuda_device_fails_in_one_line(tmp_path):
    """A GPU rule's job (resources: gpu=1) on a torch that sees no CUDA device stops before it runs anything,
    instead of running on the CPU (CUDA_VISIBLE_DEVICES="" hides any GPU of the machine that runs the test)."""
    out = tmp_path / "replacement.parquet"
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc, log = run_script(REPO / "workflow/scripts/run_job.py", tmp_path, env=env, rule="probe_checkpoint",
                           output={"replacement": str(out)}, resources={"gpu": 1}, config={"device": "auto"},
                           params={"job": {"kind": "probe", "model": str(tmp_path)}, "files": {}})
    assert proc.returncode == 2, proc.stderr + log
    lines = log.splitlines()
    assert len(lines) == 1 and lines[0].startswith("swapkl: error: rule probe_checkpoint requests 1 GPU(s) but "
                                                   "torch "), log
    assert "sees no CUDA device" in lines[0] and "device: cpu" in lines[0]
    assert not out.exists()


def test_device_cpu_or_no_gpu_request_passes_the_check(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # restored after the test
    check_job_device(1, "cpu", "probe")  # the CPU on purpose
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""  # and the job's process sees no GPU, wherever it runs
    check_job_device(0, "auto", "aggregate_results")  # a rule that asks for no GPU
    with pytest.raises(SwapKLError, match="rule probe requests 2 GPU"):
        check_job_device(2, "auto", "probe")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    check_job_device(1, "auto", "probe")
    with pytest.raises(SwapKLError, match="config device 'gpu'"):
        check_job_device(1, "gpu", "probe")
