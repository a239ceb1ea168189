"""``averaging`` ``A(i<-i+j)``: slot i runs the block whose parameters are the average of blocks i and j; every
other slot, j included, keeps its block (so ``A(i<-i+i)`` is the base model: the midpoint between the base
model and replacement ``M_{i<-j}`` in weight space). LaCo's merge, which also removes block j, is the pruning
baseline ``laco``. Directed, like replacement.

The variant's order names the averaged block by a negative id unique to its recipe, so two variants never share
a stream computed by different weights; ``Variant.blocks`` says how to build it
(:class:`swapkl.model.engine.ProbeEngine` builds it per batch, runs the variant, and frees it).
"""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.protocol_registry import Protocol, register


def averaging(i: int, j: int, n_layers: int) -> Variant:
    """Slot i runs the average of blocks i and j; block j stays at slot j."""
    order = list(range(n_layers))
    bid = -(1 + i * n_layers + j)
    order[i] = bid
    return Variant("averaging", i, j, tuple(order), blocks=((bid, ("average", i, j)),))


def _variants(pairs, n_layers: int, n_units: int) -> list[Variant]:
    return [v for i, j in pairs for v in (averaging(i, j, n_layers), averaging(j, i, n_layers))]


register(Protocol("averaging", order=40, variants=_variants, changes_weights=True, minutes_per_gb=16,
                  help="slot i runs the weight average of blocks i and j (both directions)"))
