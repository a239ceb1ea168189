"""Pair sets and the variants (modified block orders) probed for each protocol.

A *variant* is described by the sequence of block indices executed slot by slot.
The base model runs ``[0, 1, ..., L-1]``. Protocols that change weights (``averaging``,
``head_interchange``) run blocks built for the variant: their order names them by negative ids,
unique to the variant's recipe (so two variants never share a stream computed by different
weights), and ``Variant.blocks`` says how to build each (:meth:`swapkl.model.engine.ProbeEngine`
builds them per batch, runs the variant, and frees them).

* ``averaging`` ``A(i<-i+j)``: slot i runs the block whose parameters are the average of blocks i and
  j; every other slot, j included, keeps its block (so ``A(i<-i+i)`` is the base model: the
  midpoint between the base model and replacement ``M_{i<-j}`` in weight space). LaCo's merge,
  which also removes block j, is the pruning baseline ``laco``. Directed, like replacement.
* ``head_interchange`` ``H(i<->j, u)``: blocks i and j exchange head unit u (:mod:`swapkl.model.heads`:
  a key/value head with the query heads that read it), everything else stays; one variant per
  unordered pair and unit.

The paper's own variants of these two (named ``*_paper``; the clean definitions above keep their names):

* ``averaging_paper`` ``A2(i, j)``: slots i and j both run the average of blocks i and j (the paper's merge
  test); symmetric, one variant per unordered pair, stored i < j;
* ``head_interchange_paper`` ``H1(i<-j, u)``: block i (the lower) runs with head unit u copied from block j;
  block j is unchanged (the paper's one-direction head swap); one variant per unordered pair and unit.

The paper measured both on the last position of each prompt only; that is the probe's KL position setting,
not part of the variant.
"""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.config import ConfigError, pair_sets
from swapkl.errors import SwapKLError

PROTOCOLS = ("replacement", "interchange", "deletion", "averaging", "head_interchange", "averaging_paper",
             "head_interchange_paper")
#: protocols whose variants run blocks built from the model's weights
WEIGHT_PROTOCOLS = ("averaging", "head_interchange", "averaging_paper", "head_interchange_paper")
#: protocols whose variants swap one head unit (a ``head`` per row)
HEAD_PROTOCOLS = ("head_interchange", "head_interchange_paper")


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


def parse_protocols(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    items = [p.strip() for p in items if p.strip()]
    if not items:
        raise SwapKLError("no protocol given: choose from " + ", ".join(PROTOCOLS))
    for p in items:
        if p not in PROTOCOLS:
            raise SwapKLError(f"unknown protocol {p!r}: choose from " + ", ".join(PROTOCOLS))
    return [p for p in PROTOCOLS if p in items]


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


def replacement(i: int, j: int, n_layers: int) -> Variant:
    """Slot i runs block j's weights (``M_{i<-j}``)."""
    order = list(range(n_layers))
    order[i] = j
    return Variant("replacement", i, j, tuple(order))


def interchange(i: int, j: int, n_layers: int) -> Variant:
    """Blocks i and j exchange slots (``M_{i<->j}``), stored with i < j."""
    i, j = min(i, j), max(i, j)
    order = list(range(n_layers))
    order[i], order[j] = j, i
    return Variant("interchange", i, j, tuple(order))


def deletion(i: int, n_layers: int) -> Variant:
    """Block i is skipped; the residual stream passes through."""
    return Variant("deletion", i, None, tuple(b for b in range(n_layers) if b != i))


def removal(layers: list[int] | tuple[int, ...], n_layers: int, protocol: str = "pruned") -> Variant:
    """Several blocks skipped at once (used by pruning)."""
    drop = set(layers)
    return Variant(protocol, None, None, tuple(b for b in range(n_layers) if b not in drop))


def removal_variant(layers, n_layers: int) -> Variant:
    """The variant without ``layers``, keyed by the removed set (``removed[3,5]::``)."""
    layers = tuple(sorted(layers))
    return removal(layers, n_layers, protocol="removed[" + ",".join(map(str, layers)) + "]")


def averaging(i: int, j: int, n_layers: int) -> Variant:
    """Slot i runs the average of blocks i and j; block j stays at slot j."""
    order = list(range(n_layers))
    bid = -(1 + i * n_layers + j)
    order[i] = bid
    return Variant("averaging", i, j, tuple(order), blocks=((bid, ("average", i, j)),))


def head_interchange(i: int, j: int, unit: int, n_layers: int, n_units: int) -> Variant:
    """Blocks i and j (stored i < j) exchange head unit ``unit``."""
    i, j = min(i, j), max(i, j)
    base = n_layers * n_layers + 2 * ((i * n_layers + j) * n_units + unit)
    a, b = -(1 + base), -(2 + base)
    order = list(range(n_layers))
    order[i], order[j] = a, b
    return Variant("head_interchange", i, j, tuple(order), head=unit,
                   blocks=((a, ("head", i, j, unit)), (b, ("head", j, i, unit))))


def averaging_paper(i: int, j: int, n_layers: int) -> Variant:
    """Slots i and j both run the average of blocks i and j (stored i < j). Each slot keeps its own block's
    structure (e.g. a layer index an architecture reads) with the averaged parameters, as loading the average
    into both blocks does: the blocks of :func:`averaging` (i, j) and (j, i)."""
    i, j = min(i, j), max(i, j)
    a, b = averaging(i, j, n_layers).blocks[0], averaging(j, i, n_layers).blocks[0]
    order = list(range(n_layers))
    order[i], order[j] = a[0], b[0]
    return Variant("averaging_paper", i, j, tuple(order), blocks=(a, b))


def head_interchange_paper(i: int, j: int, unit: int, n_layers: int, n_units: int) -> Variant:
    """Block i (the lower, i < j) runs with head unit ``unit`` copied from block j; block j unchanged."""
    i, j = min(i, j), max(i, j)
    recipient = head_interchange(i, j, unit, n_layers, n_units).blocks[0]  # block i with j's unit
    order = list(range(n_layers))
    order[i] = recipient[0]
    return Variant("head_interchange_paper", i, j, tuple(order), head=unit, blocks=(recipient,))


def build_variants(protocols: list[str], pair_set: str, n_layers: int, n_units: int = 1) -> list[Variant]:
    """Variants for the protocols, in a fixed order: replacement (both directions), interchange, deletion,
    averaging (both directions), head interchange (per pair, unit 0..n_units-1), the paper's averaging (per
    pair) and one-direction head swap (per pair and unit)."""
    pairs = pairs_for(pair_set, n_layers)
    out: list[Variant] = []
    if "replacement" in protocols:
        for i, j in pairs:
            out.append(replacement(i, j, n_layers))
            out.append(replacement(j, i, n_layers))
    if "interchange" in protocols:
        out.extend(interchange(i, j, n_layers) for i, j in pairs)
    if "deletion" in protocols:
        out.extend(deletion(i, n_layers) for i in range(n_layers))
    if "averaging" in protocols:
        for i, j in pairs:
            out.append(averaging(i, j, n_layers))
            out.append(averaging(j, i, n_layers))
    if "head_interchange" in protocols:
        out.extend(head_interchange(i, j, u, n_layers, n_units) for i, j in pairs for u in range(n_units))
    if "averaging_paper" in protocols:
        out.extend(averaging_paper(i, j, n_layers) for i, j in pairs)
    if "head_interchange_paper" in protocols:
        out.extend(head_interchange_paper(i, j, u, n_layers, n_units) for i, j in pairs for u in range(n_units))
    return out
