"""Guides from the probe files: the published static greedy (:func:`swapkl.pruning.selection.greedy_select`,
spacing Delta) over interchange, replacement (max / mean of both directions) and single-block
deletion KL, the anti-guided bound (highest interchange scores first, same spacing), and the paper's
settings of :class:`swapkl.pruning.selection_options.SelectionOptions` (``ctx.options``): scoring partners limited to a
pair set, ties broken by deletion KL, the greedy within a layer region (``*_clustered``) and named fixed
layer sets (``fixed``, one row per set, ``fixed_set`` = its name)."""

from __future__ import annotations

import logging

import numpy as np

from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.guide_registry import Pruned, Selection
from swapkl.pruning.selection import (
    BudgetError,
    deletion_scores,
    fixed_select,
    fixed_set_keys,
    greedy_select,
    layer_scores_from_pairs,
    pair_distances,
    restrict_pairs,
)

log = logging.getLogger(__name__)


def protocol_scores(ctx: GuideContext, guide: str) -> np.ndarray | None:
    """Per-layer score of a protocol guide, or None when its protocol was not probed."""
    protocol = guide.split("_")[0]
    if protocol not in ctx.protocols():
        return None
    if guide == "deletion":
        return deletion_scores(ctx.probe, ctx.n_layers)
    pairs = restrict_pairs(pair_distances(ctx.probe, guide), ctx.options.score_pairs, ctx.n_layers)
    return layer_scores_from_pairs(pairs, ctx.n_layers)


def _tiebreak(ctx: GuideContext) -> np.ndarray | None:
    """Equal scores are ordered by deletion KL (then index) unless the options say index order."""
    if ctx.options.tie_break != "deletion" or "deletion" not in ctx.protocols():
        return None
    return deletion_scores(ctx.probe, ctx.n_layers)


def greedy(ctx: GuideContext, name: str, scores: np.ndarray, *, descending: bool = False,
           region: tuple[int, int] | None = None) -> Selection:
    sel = Selection()
    tiebreak = _tiebreak(ctx)
    for n in ctx.budgets:
        try:
            sel.removed[(n, None)] = Pruned(tuple(greedy_select(scores, n, ctx.spacing, descending=descending,
                                                                tiebreak=tiebreak, region=region)))
        except BudgetError as e:
            log.warning("guide %s: %s", name, e)
            sel.removed[(n, None)] = None
    return sel


def _protocol_guide(name: str):
    def guide(ctx: GuideContext) -> Selection | None:
        s = protocol_scores(ctx, name)
        if s is None:
            log.warning("no %s rows in the probe files: guide %s skipped", name.split("_")[0], name)
            return None
        sel = greedy(ctx, name, s)
        sel.scores[name] = s
        return sel

    guide.__name__ = guide.__qualname__ = name
    guide.__doc__ = f"Static greedy over the {name.replace('_', ' ')} per-layer scores (spacing Delta)."
    return guide


interchange = _protocol_guide("interchange")
replacement_max = _protocol_guide("replacement_max")
replacement_mean = _protocol_guide("replacement_mean")
deletion = _protocol_guide("deletion")


def anti_interchange(ctx: GuideContext) -> Selection | None:
    """The same scan over descending interchange scores: the sanity bound."""
    s = protocol_scores(ctx, "interchange")
    return None if s is None else greedy(ctx, "anti_interchange", s, descending=True)


def _clustered_guide(name: str, scores_of: str):
    def guide(ctx: GuideContext) -> Selection | None:
        region = ctx.options.clustered_region
        if region is None:
            return None  # only when a region is configured
        s = protocol_scores(ctx, scores_of)
        return None if s is None else greedy(ctx, name, s, region=region)

    guide.__name__ = guide.__qualname__ = name
    guide.__doc__ = f"The {scores_of} greedy restricted to the layers of ``options.clustered_region``."
    return guide


interchange_clustered = _clustered_guide("interchange_clustered", "interchange")
replacement_max_clustered = _clustered_guide("replacement_max_clustered", "replacement_max")


def fixed_sets(ctx: GuideContext) -> Selection | None:
    """Named fixed layer sets (the paper's hard-coded tables), evaluated exactly like a guide's set; the row
    key's second element is ``(name, index)``: the name is written as ``fixed_set``, the index (sets of one
    size within a name, :func:`swapkl.pruning.selection.fixed_set_keys`) as ``random_draw``; the budget is the set's
    size."""
    if not ctx.options.fixed_sets:
        return None
    sel = Selection()
    for name, k, layers in fixed_set_keys(ctx.options.fixed_sets):
        chosen = fixed_select(layers, ctx.n_layers, name)
        sel.removed[(len(chosen), (name, k))] = Pruned(tuple(chosen))
    return sel

