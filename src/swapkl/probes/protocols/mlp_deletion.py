"""``mlp_deletion``: block i runs without its MLP sublayer, whose update to the residual stream is zero (the
stream passes through it; :mod:`swapkl.model.sublayers`). One variant per block, whatever the pair set."""

from __future__ import annotations

from swapkl.model.sublayer_variants import sublayer_deletion
from swapkl.probes.protocols.protocol_registry import Protocol, register


def _variants(pairs, n_layers: int, n_units: int):
    return [sublayer_deletion("mlp_deletion", "mlp", i, n_layers) for i in range(n_layers)]


register(Protocol("mlp_deletion", order=85, variants=_variants, columns=("layer_i",), pairs=None,
                  changes_weights=True, minutes_per_gb=4,
                  help="block i runs without its MLP sublayer (every block, whatever the pair set)"))
