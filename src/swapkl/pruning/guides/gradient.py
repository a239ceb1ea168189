"""Guides from gradients on calibration text: first-order Taylor block importance (:mod:`swapkl.pruning.taylor`)."""

from __future__ import annotations

from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.guide_registry import Selection
from swapkl.pruning.guides.residual import lowest


def taylor(ctx: GuideContext) -> Selection | None:
    """The ``n`` blocks of lowest first-order Taylor importance on the calibration windows, no spacing."""
    if not ctx.measures:
        return ctx.skip("taylor", "no model and calibration windows to measure")
    from swapkl.pruning.taylor import taylor_importance  # torch side: the figures read the guides without torch

    a = ctx.engine.adapter
    return lowest(ctx, "taylor", taylor_importance(a.model, a.blocks, ctx.calib, batch_size=ctx.batch_size,
                                                   device=ctx.device))
