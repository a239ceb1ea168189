"""Rows that are not a selection rule's choice: the unpruned model, random draws and their mean."""

from __future__ import annotations

from swapkl.guides.context import GuideContext
from swapkl.guides.registry import Pruned, Selection, register_guide
from swapkl.selection import random_rng, random_select

# budget 0, the model itself; every row's base_ppl
register_guide("base", rank=0, label="Unpruned model", family="control", colour="black",
               plotted=False)(None)


@register_guide("random", rank=900, label="Random (one draw)", family="control", colour="black",
                marker=".", plotted=False)
def random_draws(ctx: GuideContext) -> Selection:
    """``n_random`` uniform draws per budget under the guides' spacing (or ``options.random_spacing``), seeded
    per (seed, budget, draw)."""
    sel = Selection()
    spacing = ctx.spacing if ctx.options.random_spacing is None else ctx.options.random_spacing
    for n in ctx.budgets:
        for k in range(ctx.n_random):
            sel.removed[(n, k)] = Pruned(tuple(random_select(ctx.n_layers, n, spacing, random_rng(ctx.seed, n, k))))
    return sel


# mean, s.d., min and max of the random draws per budget
register_guide("random_mean", rank=910, label="Random (mean ± s.d. of draws; band: min–max)",
               family="control", colour="black", linestyle="--", marker="o")(None)
