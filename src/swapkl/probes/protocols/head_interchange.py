"""``head_interchange`` ``H(i<->j, u)``: blocks i and j exchange head unit u (:mod:`swapkl.model.heads`: a
key/value head with the query heads that read it), everything else stays; one variant per unordered pair and
unit, stored i < j. Its two modified blocks are named by negative ids unique to the recipe (see
:mod:`swapkl.probes.protocols.averaging`)."""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.protocol_registry import Protocol, register


def head_interchange(i: int, j: int, unit: int, n_layers: int, n_units: int) -> Variant:
    """Blocks i and j (stored i < j) exchange head unit ``unit``."""
    i, j = min(i, j), max(i, j)
    base = n_layers * n_layers + 2 * ((i * n_layers + j) * n_units + unit)
    a, b = -(1 + base), -(2 + base)
    order = list(range(n_layers))
    order[i], order[j] = a, b
    return Variant("head_interchange", i, j, tuple(order), head=unit,
                   blocks=((a, ("head", i, j, unit)), (b, ("head", j, i, unit))))


def _variants(pairs, n_layers: int, n_units: int) -> list[Variant]:
    return [head_interchange(i, j, u, n_layers, n_units) for i, j in pairs for u in range(n_units)]


register(Protocol("head_interchange", order=50, variants=_variants, columns=("layer_i", "layer_j", "head"),
                  pairs="unordered", changes_weights=True, minutes_per_gb=16,
                  help="blocks i and j exchange one head unit (per pair and unit)"))
