"""Random draws, the control that is not a selection rule's choice (the unpruned model's row and the draws' mean
are rows derived from the others: :mod:`swapkl.pruning.guides` registers them without a function)."""

from __future__ import annotations

import logging

from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.guide_registry import Pruned, Selection
from swapkl.pruning.selection import BudgetError, random_rng, random_select

log = logging.getLogger(__name__)


def random_draws(ctx: GuideContext) -> Selection:
    """``n_random`` uniform draws per budget under the guides' spacing (or ``options.random_spacing``), seeded
    per (seed, budget, draw), from the interior blocks 1..L-2 unless ``options.random_interior`` is off; a
    budget the interior cannot hold under the spacing gives infeasible rows."""
    sel = Selection()
    spacing = ctx.spacing if ctx.options.random_spacing is None else ctx.options.random_spacing
    interior = ctx.options.random_interior
    for n in ctx.budgets:
        for k in range(ctx.n_random):
            try:
                chosen = random_select(ctx.n_layers, n, spacing, random_rng(ctx.seed, n, k), interior=interior)
            except BudgetError as e:
                log.warning("guide random: %s", e)
                sel.removed[(n, k)] = None
                continue
            sel.removed[(n, k)] = Pruned(tuple(chosen))
    return sel

