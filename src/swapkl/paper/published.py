"""The published-numbers registry (``published.yaml``) as a file: where it lies and which config entries its numbers
belong to. Light on purpose (yaml only): the workflow's planner reads it to know whether a run reproduces anything
(:mod:`swapkl.paper.scorecard` computes the scorecard itself)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml


def registry_path() -> Path:
    return Path(str(resources.files("swapkl.paper") / "published.yaml"))


def published_models(path: str | Path | None = None) -> set[str]:
    """The config entries (``model`` of each registry entry) whose results hold a published number's counterpart."""
    doc = yaml.safe_load(Path(path or registry_path()).read_text())
    return {str(e["model"]) for e in doc.get("entries", []) if isinstance(e, dict) and "model" in e}
