"""``mlp_interchange`` ``M^mlp_{i<->j}``: blocks i and j exchange their MLP sublayers (with the norms around
them; :mod:`swapkl.model.sublayers`), everything else stays. One variant per unordered pair, stored i < j."""

from __future__ import annotations

from swapkl.model.sublayer_variants import sublayer_interchange
from swapkl.probes.protocols.protocol_registry import Protocol, register


def _variants(pairs, n_layers: int, n_units: int):
    return [sublayer_interchange("mlp_interchange", "mlp", i, j, n_layers) for i, j in pairs]


register(Protocol("mlp_interchange", order=83, variants=_variants, pairs="unordered", changes_weights=True,
                  minutes_per_gb=16, help="blocks i and j exchange their MLP sublayers (once per pair)"))
