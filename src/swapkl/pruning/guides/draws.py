"""Rows that are not a selection rule's choice: the unpruned model, random draws and their mean."""

from __future__ import annotations

import logging

from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.guide_registry import Pruned, Selection, register_guide
from swapkl.pruning.selection import BudgetError, random_rng, random_select

log = logging.getLogger(__name__)

# budget 0, the model itself; every row's base_ppl
register_guide("base", rank=0, label="Unpruned model", family="control",
               plotted=False)(None)


@register_guide("random", rank=900, label="Random (one draw)", family="control", plotted=False)
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


# mean, s.d., min and max of the random draws per budget
register_guide("random_mean", rank=910, label="Random (mean ± s.d. of draws; band: min–max)",
               family="control")(None)
