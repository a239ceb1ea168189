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


def test_study_without_hub_stops_at_once_with_one_line_per_checkpoint(tmp_path):
    env = dict(os.environ, HF_ENDPOINT="https://hub.swapkl-test.invalid")
    env.pop("HF_HUB_OFFLINE", None)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "all", "--directory", str(tmp_path),
                           "--configfile", str(REPO / "config.yaml")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    models, _ = expand_seeds(yaml.safe_load((REPO / "config.yaml").read_text()))  # seed family members too
    # one line per download; a model on another model's weights (same_weights_as) downloads nothing itself
    expected = [(name, rev) for name, m in models.items() if m.get("enabled", True) and "source" in m
                for rev in m["revisions"]]
    lines = re.findall(r"^(\S+)/(\S+): cannot download (\S+)@\S+: the model hub is unreachable "
                       r"\(hub\.swapkl-test\.invalid does not resolve: .+\)$", out, re.M)
    assert [(m, r) for m, r, _ in lines] == expected, out
    assert all(source == models[m]["source"] for m, _, source in lines)
    assert out.count(DEMO_COMMAND) == 1
    # no job started: nothing was written into the results tree, no job log, no partial download
    assert not any((tmp_path / d).exists() for d in ("logs", "resources", "results")), out
    # Snakemake's banner (about 25 lines) and job table (one line per rule), the lines above, the error:
    # nothing per job beyond one line
    rule_files = "".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    n_rules = len(re.findall(r"^(?:rule \w+:|use rule \w+ as \w+)", rule_files, re.M))
    assert len(out.splitlines()) < 30 + n_rules + len(expected), out
