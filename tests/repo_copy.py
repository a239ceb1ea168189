"""A copy of the package and the workflow in a temporary folder, for the tests that drop an extension (a toy
protocol, a toy figure family) into it and run the command line and Snakemake there."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def repo_copy(tmp_path: Path, *folders: str) -> Path:
    """``tmp_path/tree`` holding src, workflow, envs and ``folders`` (caches left out), the Snakefile and
    config.yaml."""
    tree = tmp_path / "tree"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("src", "workflow", "envs", *folders):
        shutil.copytree(REPO / name, tree / name, ignore=skip)
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(REPO / name, tree / name)
    return tree
