"""``head_interchange_paper`` ``H1(i<-j, u)``: the paper's one-direction head swap, its own variant of
:mod:`head_interchange <swapkl.probes.protocols.head_interchange>` (whose clean definition keeps its name):
block i (the lower) runs with head unit u copied from block j; block j is unchanged; one variant per unordered
pair and unit. The paper measured it on the last position of each prompt only; that is the probe's KL position
setting, not part of the variant."""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.head_interchange import head_interchange
from swapkl.probes.protocols.protocol_registry import Protocol, register


def head_interchange_paper(i: int, j: int, unit: int, n_layers: int, n_units: int) -> Variant:
    """Block i (the lower, i < j) runs with head unit ``unit`` copied from block j; block j unchanged."""
    i, j = min(i, j), max(i, j)
    recipient = head_interchange(i, j, unit, n_layers, n_units).blocks[0]  # block i with j's unit
    order = list(range(n_layers))
    order[i] = recipient[0]
    return Variant("head_interchange_paper", i, j, tuple(order), head=unit, blocks=(recipient,))


def _variants(pairs, n_layers: int, n_units: int) -> list[Variant]:
    return [head_interchange_paper(i, j, u, n_layers, n_units) for i, j in pairs for u in range(n_units)]


register(Protocol("head_interchange_paper", order=70, variants=_variants, columns=("layer_i", "layer_j", "head"),
                  pairs="unordered", changes_weights=True, minutes_per_gb=16,
                  help="the paper's: block i takes head unit u of block j, one direction (per pair and unit)"))
