"""Pair sets and the variants (modified block orders) probed for each protocol.

A *variant* is described by the sequence of block indices executed slot by slot.
The base model runs ``[0, 1, ..., L-1]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from swapkl.errors import SwapKLError

PROTOCOLS = ("replacement", "interchange", "deletion")
_WITHIN = re.compile(r"^within:([0-9]+)$")


def parse_pair_set(spec: str) -> tuple[str, int | None]:
    """Return ("adjacent", 1) / ("within", K) / ("all", None) for a pair-set name."""
    if spec == "adjacent":
        return "adjacent", 1
    if spec == "all":
        return "all", None
    m = _WITHIN.match(spec)
    if m and int(m.group(1)) >= 1:
        return "within", int(m.group(1))
    raise SwapKLError(f"unknown pair set {spec!r}: expected 'adjacent', 'within:K' (K>=1) or 'all'")


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

    @property
    def key(self) -> str:
        j = "" if self.layer_j is None else f"{self.layer_j}"
        i = "" if self.layer_i is None else f"{self.layer_i}"
        return f"{self.protocol}:{i}:{j}"

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


def build_variants(protocols: list[str], pair_set: str, n_layers: int) -> list[Variant]:
    """Variants for the protocols, in a fixed order: replacement (both directions), interchange, deletion."""
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
    return out
