"""Detect revisions of a model that serve the same weights as an earlier revision.

Some published checkpoints (e.g. several pythia-2.8b branches) are byte-identical under
different revision names. Plotting them as training progress would be wrong, so the aggregate
marks each such revision with ``duplicate_of`` = the earliest revision (by training step, then
name) holding the same ``weights_sha256`` and ``model_config_sha256`` from the provenance
metadata (the same weights under another config.json compute another function).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checkpoint:
    model: str
    revision: str
    step: int | None
    weights_sha256: str | None
    config_sha256: str | None = None


def revision_order(step: int | None, revision: str) -> tuple:
    """Sort key: revisions with a step first, by step; then the others by name."""
    return (step is None, step if step is not None else 0, revision)


def find_duplicates(checkpoints: list[Checkpoint]) -> dict[tuple[str, str], str | None]:
    """Map (model, revision) -> the earlier revision with identical weights, or None.

    Logs a warning for each duplicate and for each checkpoint without a weight hash (which
    cannot be checked and is never marked).
    """
    out: dict[tuple[str, str], str | None] = {}
    first_by_hash: dict[tuple[str, str], str] = {}
    for c in sorted(checkpoints, key=lambda c: (c.model, revision_order(c.step, c.revision))):
        out[(c.model, c.revision)] = None
        if not c.weights_sha256:
            log.warning("%s %s: no weights_sha256 in its provenance; cannot check it for duplicate "
                        "weights", c.model, c.revision)
            continue
        key = (c.model, c.weights_sha256, c.config_sha256)
        if key in first_by_hash:
            orig = first_by_hash[key]
            out[(c.model, c.revision)] = orig
            log.warning("%s %s serves the same weights (sha256 %s...) as %s: marked duplicate_of=%s "
                        "and left out of trajectory statistics and plots",
                        c.model, c.revision, c.weights_sha256[:12], orig, orig)
        else:
            first_by_hash[key] = c.revision
    return out
