"""A toy probe protocol for tests/test_protocols.py, which copies this file into a copy of the package's
protocol folder (swapkl/probes/protocols/) and nothing else: it is never imported by the test process itself.

``toy_average``: slot i (the lower block of each pair) runs the weight average of blocks i and j, once per pair.
"""

from __future__ import annotations

from swapkl.model.variant import Variant
from swapkl.probes.protocols.averaging import averaging
from swapkl.probes.protocols.protocol_registry import Protocol, register


def _variants(pairs, n_layers, n_units):  # pairs: the pair set's (i, j), i < j
    return [Variant("toy_average", i, j, averaging(i, j, n_layers).order, blocks=averaging(i, j, n_layers).blocks)
            for i, j in pairs]


register(Protocol("toy_average", order=1000, variants=_variants, pairs="unordered", changes_weights=True,
                  minutes_per_gb=1, help="toy: slot i runs the average of blocks i and j (once per pair)"))
