"""``deletion``: block i is skipped and the residual stream passes through; one variant per block, whatever the
pair set. (In the workflow its file comes with the representation baselines: rule ``probe_checkpoint``.)"""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.protocol_registry import Protocol, register


def deletion(i: int, n_layers: int) -> Variant:
    """Block i is skipped; the residual stream passes through."""
    return Variant("deletion", i, None, tuple(b for b in range(n_layers) if b != i))


def _variants(pairs, n_layers: int, n_units: int) -> list[Variant]:
    return [deletion(i, n_layers) for i in range(n_layers)]


register(Protocol("deletion", order=30, variants=_variants, columns=("layer_i",), pairs=None, minutes_per_gb=2,
                  help="block i is skipped (every block, whatever the pair set)"))
