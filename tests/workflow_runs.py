"""Running the real workflow on the offline smoke demo in a folder of its own (shared by the slow tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMOKE_CONFIG = REPO / "config" / "demo_smoke.yaml"


def run_demo(workdir: Path, configfile: Path | str = SMOKE_CONFIG, extra=()) -> subprocess.CompletedProcess:
    """`snakemake` on the repository's Snakefile with ``configfile`` alone, results in ``workdir``."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--replace-workflow-config", "--configfile", str(REPO / configfile), "--cores", "2",
           "--resources", "gpu=2", "--nolock", *extra]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3000)
