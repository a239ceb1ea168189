"""``mlp_replacement`` ``M^mlp_{i<-j}``: slot i runs its own block with block j's MLP sublayer (and the norms
around it; :mod:`swapkl.model.sublayers` says how each architecture is composed). Directed, like replacement."""

from __future__ import annotations

from swapkl.model.sublayer_variants import sublayer_replacement
from swapkl.probes.protocols.protocol_registry import Protocol, register


def _variants(pairs, n_layers: int, n_units: int):
    return [sublayer_replacement("mlp_replacement", "mlp", a, b, n_layers)
            for i, j in pairs for a, b in ((i, j), (j, i))]


register(Protocol("mlp_replacement", order=81, variants=_variants, changes_weights=True, minutes_per_gb=16,
                  help="slot i runs its block with block j's MLP sublayer (both directions)"))
