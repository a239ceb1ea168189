"""``averaging_paper`` ``A2(i, j)``: the paper's merge test, its own variant of :mod:`averaging
<swapkl.probes.protocols.averaging>` (whose clean definition keeps its name): slots i and j both run the average
of blocks i and j; symmetric, one variant per unordered pair, stored i < j. The paper measured it on the last
position of each prompt only; that is the probe's KL position setting, not part of the variant."""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.averaging import averaging
from swapkl.probes.protocols.protocol_registry import Protocol, register


def averaging_paper(i: int, j: int, n_layers: int) -> Variant:
    """Slots i and j both run the average of blocks i and j (stored i < j). Each slot keeps its own block's
    structure (e.g. a layer index an architecture reads) with the averaged parameters, as loading the average
    into both blocks does: the blocks of :func:`averaging` (i, j) and (j, i)."""
    i, j = min(i, j), max(i, j)
    a, b = averaging(i, j, n_layers).blocks[0], averaging(j, i, n_layers).blocks[0]
    order = list(range(n_layers))
    order[i], order[j] = a[0], b[0]
    return Variant("averaging_paper", i, j, tuple(order), blocks=(a, b))


def _variants(pairs, n_layers: int, n_units: int) -> list[Variant]:
    return [averaging_paper(i, j, n_layers) for i, j in pairs]


register(Protocol("averaging_paper", order=60, variants=_variants, pairs="unordered", changes_weights=True,
                  minutes_per_gb=8, help="the paper's: slots i and j both run the average (once per pair)"))
