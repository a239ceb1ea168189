"""A download that keeps failing ends its own job with a clear error while independent jobs finish."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_failing_download_does_not_stop_independent_jobs(tmp_path):
    micro = yaml.safe_load((REPO / "tests" / "slurm" / "demo_micro.yaml").read_text())
    # a hub model that cannot be fetched (no hub here; HF_HUB_OFFLINE makes that certain and fast)
    micro["models"]["unreachable"] = {"source": "swapkl-tests/does-not-exist", "revisions": ["main"],
                                      "pair_sets": ["adjacent"]}
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(micro))
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
         "--replace-workflow-config", "--configfile", str(cfg), "--cores", "2", "--keep-going", "--retries", "0",
         "--set-threads", "probe_checkpoint=1", "probe=1"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    log = (tmp_path / "logs" / "unreachable" / "main" / "download_checkpoint.log").read_text()
    assert "download of swapkl-tests/does-not-exist@main failed" in log, log[-2000:]
    # no partial checkpoint left behind
    assert not (tmp_path / "resources" / "checkpoints" / "unreachable" / "main").exists()
    assert not (tmp_path / "resources" / "checkpoints" / "unreachable" / "main.partial").exists()
    # the demo model's jobs, which do not depend on the download, all finished
    for rev in ("step0", "step30"):
        for protocol in ("replacement", "interchange", "deletion"):
            f = tmp_path / "results" / "probes" / "pythia-demo" / rev / f"{protocol}.parquet"
            assert f.is_file() and f.stat().st_size > 0, f
