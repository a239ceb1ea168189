"""LaCo merge as the paper ran it: adjacent blocks merged by weight averaging, ordered by
interchange KL.

Adjacent pairs ``(i, i + 1)`` are taken in ascending order of their interchange KL (ties: lower
``i``), skipping a pair that shares a block with an accepted one; at budget ``n`` the first ``n``
accepted pairs are merged (nested in ``n``): slot ``i`` runs the average of blocks ``i`` and
``i + 1`` (:mod:`swapkl.merge`) and block ``i + 1`` is removed. Rows list the removed blocks in
``removed_layers`` and the merged slots in ``merged_layers``. Unlike Yang et al.'s LaCo (RDSC
merge of several layers into one, accepted by a representation-similarity threshold), this is the
paper's pairwise-average variant (its Table 15, footnote section mark).
"""

from __future__ import annotations

import logging

from swapkl.guides.context import GuideContext
from swapkl.guides.registry import Pruned, Selection, register_guide
from swapkl.selection import pair_distances

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


@register_guide("laco", rank=110, label="LaCo merge (adjacent pairs averaged, by interchange KL)",
                family="merge", linestyle=":", marker="p")
def laco(ctx: GuideContext) -> Selection | None:
    if "interchange" not in ctx.protocols():
        return ctx.skip("laco", "no interchange rows to order the adjacent pairs")
    adjacent = {k: v for k, v in pair_distances(ctx.probe, "interchange").items() if k[1] - k[0] == 1 and v == v}
    sel = Selection()
    for n in ctx.budgets:
        pairs = laco_pairs(adjacent, n)
        if pairs is None:
            log.warning("guide laco: budget %d not reached: fewer than %d disjoint adjacent pairs were probed", n, n)
            sel.removed[(n, None)] = None
            continue
        sel.removed[(n, None)] = Pruned(tuple(sorted(j for _, j in pairs)), tuple(sorted(i for i, _ in pairs)))
    return sel
