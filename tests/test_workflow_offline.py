"""Without the model hub, `snakemake --cores all` on the study config stops before any job starts.

The hub is made unreachable for certain, also on a machine that has network access, by pointing
huggingface_hub at a host under `.invalid` (RFC 2606: never resolves).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from test_workflow_config import expand_seeds

REPO = Path(__file__).resolve().parents[1]
DEMO_COMMAND = "make demo (snakemake --workflow-profile profiles/demo)"


def test_study_without_hub_stops_at_once_in_a_few_lines(tmp_path):
    env = dict(os.environ, HF_ENDPOINT="https://hub.swapkl-test.invalid")
    env.pop("HF_HUB_OFFLINE", None)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "all", "--directory", str(tmp_path),
                           "--configfile", str(REPO / "config.yaml")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert len(out.splitlines()) <= 30, out
    models, _ = expand_seeds(yaml.safe_load((REPO / "config.yaml").read_text()))  # seed family members too
    # a model on another model's weights (same_weights_as) downloads nothing itself
    expected = [(name, rev) for name, m in models.items() if m.get("enabled", True) and "source" in m
                for rev in m["revisions"]]
    head = re.search(r"^swapkl: (\d+) checkpoint\(s\) of this run need the model hub, which is unreachable "
                     r"\(hub\.swapkl-test\.invalid does not resolve: .+\): (.+) and (\d+) more\.$", out, re.M)
    assert head, out
    assert int(head.group(1)) == len(expected) and int(head.group(3)) == len(expected) - 3
    named = re.findall(r"(\S+)/(\S+) \((\S+)@(\S+)\)", head.group(2))
    assert [(m, r) for m, r, _, _ in named] == expected[:3]
    assert all(src == models[m]["source"] and rev == r for m, r, src, rev in named)
    # the three ways on
    assert DEMO_COMMAND in out and "`local: DIR`" in out and "HF_TOKEN" in out
    # no job started: nothing was written into the results tree, no job log, no partial download
    assert not any((tmp_path / d).exists() for d in ("logs", "resources", "results")), out
    assert "Job stats" not in out and "SNAKEMAKE" not in out  # stopped before the banner and the job table


def test_dry_run_without_hub_still_lists_the_jobs(tmp_path):
    """Only a run that executes jobs is stopped: a dry run offline still shows what the study would do."""
    env = dict(os.environ, HF_ENDPOINT="https://hub.swapkl-test.invalid")
    env.pop("HF_HUB_OFFLINE", None)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--directory", str(tmp_path),
                           "--configfile", str(REPO / "config.yaml")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "download_checkpoint" in proc.stdout and "need the model hub" not in proc.stdout + proc.stderr
