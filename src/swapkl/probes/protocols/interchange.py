"""``interchange`` ``M_{i<->j}``: blocks i and j exchange slots; every block still runs once. One variant per
unordered pair, stored i < j."""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.protocol_registry import Protocol, register


def interchange(i: int, j: int, n_layers: int) -> Variant:
    """Blocks i and j exchange slots (``M_{i<->j}``), stored with i < j."""
    i, j = min(i, j), max(i, j)
    order = list(range(n_layers))
    order[i], order[j] = j, i
    return Variant("interchange", i, j, tuple(order))


def _variants(pairs, n_layers: int, n_units: int) -> list[Variant]:
    return [interchange(i, j, n_layers) for i, j in pairs]


register(Protocol("interchange", order=20, variants=_variants, pairs="unordered", minutes_per_gb=8,
                  help="blocks i and j exchange slots (once per pair)"))
