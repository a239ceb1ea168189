"""Pair sets and the variant: one modified model, described by the block run at each slot.

A *variant* is described by the sequence of block indices executed slot by slot. The base model runs
``[0, 1, ..., L-1]``. Protocols that change weights run blocks built for the variant: their order names them by
negative ids, unique to the variant's recipe (so two variants never share a stream computed by different
weights), and ``Variant.blocks`` says how to build each (:class:`swapkl.model.engine.ProbeEngine` builds them per
batch, runs the variant, and frees them). The probe protocols that build variants are registered in
:mod:`swapkl.probes.protocols`; the removals of several blocks at once (pruning) are here.
"""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.config import ConfigError, pair_sets
from swapkl.errors import SwapKLError



def parse_pair_set(spec: str) -> tuple[str, int | None]:
    """Return ("adjacent", 1) / ("within", K) / ("all", None) for a pair-set name
    (:func:`swapkl.config.pair_sets.parse_pair_set`, reported as a :class:`SwapKLError`)."""
    try:
        return pair_sets.parse_pair_set(spec)
    except ConfigError as err:
        raise SwapKLError(str(err)) from None


def max_distance(spec: str, n_layers: int) -> int:
    """Largest |i-j| included by a pair set for a model with ``n_layers`` blocks."""
    _, k = parse_pair_set(spec)
    return n_layers - 1 if k is None else min(k, n_layers - 1)


def pairs_for(spec: str, n_layers: int) -> list[tuple[int, int]]:
    """All unordered pairs (i, j), i < j, in a pair set, sorted."""
    k = max_distance(spec, n_layers)
    return [(i, j) for i in range(n_layers) for j in range(i + 1, n_layers) if j - i <= k]


@dataclass(frozen=True)
class Variant:
    """One modified model. ``order[k]`` is the block run at the k-th executed slot."""

    protocol: str
    layer_i: int | None
    layer_j: int | None
    order: tuple[int, ...]
    head: int | None = None
    #: ``(block id, recipe)``: recipe ``("average", a, b)`` or ``("head", block, donor, unit)``
    blocks: tuple[tuple[int, tuple], ...] = ()

    @property
    def key(self) -> str:
        j = "" if self.layer_j is None else f"{self.layer_j}"
        i = "" if self.layer_i is None else f"{self.layer_i}"
        return f"{self.protocol}:{i}:{j}" + ("" if self.head is None else f":{self.head}")

    def first_changed_slot(self, n_layers: int) -> int:
        """First slot whose block differs from the base model (resume point)."""
        for k, b in enumerate(self.order):
            if b != k:
                return k
        return len(self.order) if len(self.order) < n_layers else n_layers


def removal(layers: list[int] | tuple[int, ...], n_layers: int, protocol: str = "pruned") -> Variant:
    """Several blocks skipped at once (used by pruning)."""
    drop = set(layers)
    return Variant(protocol, None, None, tuple(b for b in range(n_layers) if b not in drop))


def removal_variant(layers, n_layers: int) -> Variant:
    """The variant without ``layers``, keyed by the removed set (``removed[3,5]::``)."""
    layers = tuple(sorted(layers))
    return removal(layers, n_layers, protocol="removed[" + ",".join(map(str, layers)) + "]")
