"""How many blocks a pruning run can remove. Pure (standard library only), so that the workflow's config
validation (:mod:`swapkl.config.checks`, imported where Snakemake runs without torch) uses the same definition as
the pruning run itself."""

from __future__ import annotations

import math


def max_feasible(n_layers: int, spacing: int) -> int:
    """Largest number of blocks that can be removed with pairwise index distance > ``spacing``."""
    return math.ceil(n_layers / (spacing + 1)) if n_layers > 0 else 0


def max_budget(n_layers: int, spacing: int) -> int:
    """Largest pruning budget of an ``n_layers``-block model: feasible with ``spacing``, one block kept."""
    return min(max_feasible(n_layers, spacing), n_layers - 1)
