"""Guides from the residual streams: ShortGPT BI and Gromov angular distance (read from the
representation file), and linear CKA between each block's input and output (measured on the
calibration windows, :mod:`swapkl.probes.cka`)."""

from __future__ import annotations

import logging

import numpy as np

from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.guide_registry import Pruned, Selection
from swapkl.pruning.selection import BudgetError, angular_table, bi_scores, contiguous_select, lowest_select

log = logging.getLogger(__name__)


def lowest(ctx: GuideContext, name: str, scores: np.ndarray) -> Selection:
    """The ``n`` lowest-scored layers at every budget, no spacing (ties: lower index first)."""
    sel = Selection(scores={name: scores})
    for n in ctx.budgets:
        try:
            sel.removed[(n, None)] = Pruned(tuple(lowest_select(scores, n)))
        except BudgetError as e:
            log.warning("baseline %s: %s", name, e)
            sel.removed[(n, None)] = None
    return sel


def bi(ctx: GuideContext) -> Selection | None:
    """ShortGPT: the ``n`` blocks of lowest block influence, no spacing."""
    if ctx.rep is None:
        return None
    return lowest(ctx, "bi", bi_scores(ctx.rep, ctx.n_layers))


def angular(ctx: GuideContext) -> Selection | None:
    """Gromov et al.: the contiguous block whose entry and exit streams are closest in angle."""
    if ctx.rep is None:
        return None
    ang = angular_table(ctx.rep, ctx.angular_metric)
    sel = Selection(scores={"angular": np.array([ang.get((l, 1), np.nan) for l in range(ctx.n_layers)])})
    for n in ctx.budgets:
        try:
            sel.removed[(n, None)] = Pruned(tuple(contiguous_select(ang, n, ctx.n_layers)))
        except BudgetError as e:
            log.warning("baseline %s: %s", "angular", e)
            sel.removed[(n, None)] = None
    return sel


def cka(ctx: GuideContext) -> Selection | None:
    """The ``n`` blocks whose output is most similar (linear CKA) to their input, no spacing.

    Score ``1 - CKA(h_in, h_out)`` over the valid tokens of the calibration windows (low = safe)."""
    if not ctx.measures:
        return ctx.skip("cka", "no model and calibration windows to measure")
    from swapkl.probes.cka import block_cka  # torch side: the figures read the guides without torch

    sim = block_cka(ctx.engine, ctx.calib, batch_size=ctx.batch_size, device=ctx.device)
    return lowest(ctx, "cka", 1.0 - sim)
