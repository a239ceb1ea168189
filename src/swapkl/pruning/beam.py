"""Width-w beam search over removal sets, scored by a cost (calibration NLL in pruning).

Step 1 scores the single removals of the *seed* layers (in pruning: the ``k`` layers with the
lowest interchange scores); step ``n > 1`` scores every extension of each kept set by one more
layer (any layer not in it). Each step keeps the ``width`` cheapest sets (ties: the
lexicographically smaller sorted set) and its cheapest set is the answer at ``n`` blocks. A set
reached twice is scored once; ``evals[n]`` counts the distinct sets scored up to step ``n``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from swapkl.errors import SwapKLError


@dataclass
class BeamResult:
    best: dict[int, tuple[int, ...]] = field(default_factory=dict)  # n -> cheapest set of n layers
    cost: dict[int, float] = field(default_factory=dict)
    evals: dict[int, int] = field(default_factory=dict)  # n -> distinct sets scored up to step n


def beam_search(cost: Callable[[list[tuple[int, ...]]], Sequence[float]], n_layers: int, seeds: Sequence[int],
                max_n: int, width: int = 3) -> BeamResult:
    """``cost(sets)`` returns one cost per set (lower is better); sets are sorted tuples."""
    if width < 1 or not 0 <= max_n < n_layers:
        raise SwapKLError(f"beam search needs width >= 1 and 0 <= n < {n_layers} (got width {width}, n {max_n})")
    if max_n and not seeds:
        raise SwapKLError("beam search has no seed layer")
    scored: dict[tuple[int, ...], float] = {}
    res = BeamResult()
    beams: list[tuple[int, ...]] = [()]
    for step in range(1, max_n + 1):
        pool = seeds if step == 1 else range(n_layers)
        cands = sorted({tuple(sorted((*b, int(l)))) for b in beams for l in pool if l not in b})
        new = [c for c in cands if c not in scored]
        if new:
            values = list(cost(new))
            if len(values) != len(new):
                raise SwapKLError(f"beam cost returned {len(values)} values for {len(new)} sets")
            scored.update(zip(new, (float(v) for v in values)))
        ranked = sorted(cands, key=lambda c: (scored[c], c))
        beams = ranked[:width]
        res.best[step], res.cost[step], res.evals[step] = beams[0], scored[beams[0]], len(scored)
    return res
