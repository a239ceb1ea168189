"""The variant: one modified model, described by the block run at each slot.

A *variant* is described by the sequence of block indices executed slot by slot. The base model runs
``[0, 1, ..., L-1]``. Protocols that change weights run blocks built for the variant: their order names them by
negative ids, unique to the variant's recipe (so two variants never share a stream computed by different
weights), and ``Variant.blocks`` says how to build each (:class:`swapkl.model.engine.ProbeEngine` builds them per
batch, runs the variant, and frees them). The probe protocols that build variants are registered in
:mod:`swapkl.probes.protocols`; the removals of several blocks at once (pruning) are here. It lies in the model
package because the engine runs it; the probes, pruning and export describe what to run with it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    """One modified model. ``order[k]`` is the block run at the k-th executed slot."""

    protocol: str
    layer_i: int | None
    layer_j: int | None
    order: tuple[int, ...]
    head: int | None = None
    #: ``(block id, recipe)``: recipe ``("average", a, b)``, ``("head", block, donor, unit)``, ``("sublayer", block,
    #: donor, part)`` (block with donor's attention or MLP) or ``("skip", block, part)`` (block without it)
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
