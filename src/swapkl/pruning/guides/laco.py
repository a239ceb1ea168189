"""LaCo merge as the paper ran it: adjacent blocks merged by weight averaging, ordered by
interchange KL.

Adjacent pairs ``(i, i + 1)`` are taken in ascending order of their interchange KL (ties: lower
``i``), skipping a pair that shares a block with an accepted one; at budget ``n`` the first ``n``
accepted pairs are merged (nested in ``n``): slot ``i`` runs the average of blocks ``i`` and
``i + 1`` (:mod:`swapkl.model.merge`) and block ``i + 1`` is removed. Rows list the removed blocks in
``removed_layers`` and the merged slots in ``merged_layers``. Unlike Yang et al.'s LaCo (RDSC
merge of several layers into one, accepted by a representation-similarity threshold), this is the
paper's pairwise-average variant (its Table 15, footnote section mark).

``laco_paper`` is the same merge with the pairs ordered as the paper's script ordered them: by the
replacement distance ``max(KL(M_{i<-i+1}), KL(M_{i+1<-i}))`` of the probe rows (the paper measured it at the
last position of each prompt, the probe's KL position setting); ``laco`` orders by interchange KL.
"""

from __future__ import annotations

import logging

from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.guide_registry import Pruned, Selection
from swapkl.pruning.selection import pair_distances

log = logging.getLogger(__name__)


def laco_pairs(adjacent_kl: dict[tuple[int, int], float], n: int) -> list[tuple[int, int]] | None:
    """The first ``n`` disjoint adjacent pairs by ascending KL (None when fewer exist)."""
    used: set[int] = set()
    chosen: list[tuple[int, int]] = []
    for (i, j), _ in sorted(adjacent_kl.items(), key=lambda kv: (kv[1], kv[0])):
        if len(chosen) == n:
            break
        if i not in used and j not in used:
            used.update((i, j))
            chosen.append((i, j))
    return chosen if len(chosen) == n else None


def _merge_selection(ctx: GuideContext, name: str, order_by: str) -> Selection | None:
    if order_by.split("_")[0] not in ctx.protocols():
        return ctx.skip(name, f"no {order_by.split('_')[0]} rows to order the adjacent pairs")
    adjacent = {k: v for k, v in pair_distances(ctx.probe, order_by).items() if k[1] - k[0] == 1 and v == v}
    sel = Selection()
    for n in ctx.budgets:
        pairs = laco_pairs(adjacent, n)
        if pairs is None:
            log.warning("guide %s: budget %d not reached: fewer than %d disjoint adjacent pairs were probed", name, n, n)
            sel.removed[(n, None)] = None
            continue
        sel.removed[(n, None)] = Pruned(tuple(sorted(j for _, j in pairs)), tuple(sorted(i for i, _ in pairs)))
    return sel


def laco(ctx: GuideContext) -> Selection | None:
    return _merge_selection(ctx, "laco", "interchange")


def laco_paper(ctx: GuideContext) -> Selection | None:
    return _merge_selection(ctx, "laco_paper", "replacement_max")
