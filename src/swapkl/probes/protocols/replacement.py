"""``replacement`` ``M_{i<-j}``: slot i runs block j's weights; every other slot keeps its block. Directed: both
directions of every pair are measured."""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.protocol_registry import Protocol, register


def replacement(i: int, j: int, n_layers: int) -> Variant:
    """Slot i runs block j's weights (``M_{i<-j}``)."""
    order = list(range(n_layers))
    order[i] = j
    return Variant("replacement", i, j, tuple(order))


def _variants(pairs, n_layers: int, n_units: int) -> list[Variant]:
    return [v for i, j in pairs for v in (replacement(i, j, n_layers), replacement(j, i, n_layers))]


register(Protocol("replacement", order=10, variants=_variants, minutes_per_gb=15,
                  help="slot i runs block j (both directions of each pair)"))
