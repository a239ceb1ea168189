"""Pair sets: which block pairs (i, j) a probe runs. The variants that the protocols build from a pair
(:class:`swapkl.model.variant.Variant`) are registered in :mod:`swapkl.probes.protocols`."""

from __future__ import annotations

from swapkl.errors import ConfigError, SwapKLError
from swapkl.probes import pair_sets


def parse_pair_set(spec: str) -> tuple[str, int | None]:
    """Return ("adjacent", 1) / ("within", K) / ("all", None) for a pair-set name
    (:func:`swapkl.probes.pair_sets.parse_pair_set`, reported as a :class:`SwapKLError`)."""
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
