"""Exact search over removal sets: best-first under a monotone bound, exhaustive enumeration, and the
comparison with greedy (SLEB-iterative) and beam search on one cost.

The cost of a removal set ``S`` is any function scored on the engine; the pruning guides use the
calibration NLL of the model with ``S`` removed (:func:`swapkl.pruning.sleb.calibration_nll`).

**Best-first search** (A* with the parent's cost as heuristic). Sets are grown in canonical order (a
child of ``S`` adds one block larger than ``max(S)`` that still leaves room for the rest), so every set
of ``n`` blocks has exactly one path from the empty set. The frontier is ordered by cost; the first
set of ``n`` blocks popped is returned. It is optimal **if the cost is monotone**: removing a further
block never lowers it (``cost(S ∪ {b}) >= cost(S)``). Then every set not yet reached descends from a
frontier set and costs at least that set's cost, so ``bound`` -- the least cost left on the frontier
when the search stops -- is a lower bound on everything unexplored, and ``best_cost <= bound`` is the
certificate. Calibration NLL is *not* monotone in general (removing a harmful block can lower it), so
the certificate is conditional: the search counts every scored child cheaper than its parent
(``violations``, a counterexample to the assumption seen on the way); seeing none does not prove the
assumption (on tiny random models the best-first answer can be wrong with no counterexample among the
sets it scored), so ``certified`` -- optimal with an unconditional proof -- is true only for
:func:`exhaustive`, which scores all C(L, n) sets. No valid lower bound is known for calibration NLL
without such an assumption.

``n_evals`` counts the distinct removal sets scored (the unpruned model, scored alongside every batch,
is not counted), the unit of the cost model :func:`projected_hours`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from swapkl.pruning.beam import beam_search
from swapkl.errors import SwapKLError

Cost = Callable[[list[tuple[int, ...]]], Sequence[float]]


@dataclass(frozen=True)
class SearchResult:
    removed: tuple[int, ...]
    cost: float
    n_evals: int
    bound: float  # least cost on the frontier at the stop (inf: nothing left unexplored)
    violations: int  # scored children cheaper than their parent (counterexamples to monotone cost)
    certified: bool  # optimal with an unconditional proof (exhaustive enumeration only)


class CountingCost:
    """A cost memoised by set; ``n_evals`` is the number of distinct sets scored so far."""

    def __init__(self, cost: Cost):
        self._cost = cost
        self.scored: dict[tuple[int, ...], float] = {}

    @property
    def n_evals(self) -> int:
        return len(self.scored)

    def __call__(self, sets: list[tuple[int, ...]]) -> list[float]:
        new = sorted({s for s in sets if s not in self.scored})
        if new:
            values = [float(v) for v in self._cost(new)]
            if len(values) != len(new):
                raise SwapKLError(f"search cost returned {len(values)} values for {len(new)} sets")
            if any(math.isnan(v) for v in values):
                raise SwapKLError("search cost is NaN for some removal set")
            self.scored.update(zip(new, values))
        return [self.scored[s] for s in sets]


def _check(n_layers: int, n: int) -> None:
    if not 1 <= n < n_layers:
        raise SwapKLError(f"cannot remove {n} of {n_layers} blocks exactly (need 1 <= n < {n_layers})")


def best_first(cost: Cost, n_layers: int, n: int, *, base_cost: float = -math.inf,
               max_evals: int | None = None) -> SearchResult:
    """The cheapest set of ``n`` blocks by best-first search: optimal when the cost is monotone, with
    ``cost <= bound`` as the certificate under that assumption (see the module).

    ``base_cost``: the unpruned model's cost (the root's; only used to count violations at depth 1).
    ``max_evals``: stop with an error once this many sets are scored."""
    _check(n_layers, n)
    counted = cost if isinstance(cost, CountingCost) else CountingCost(cost)
    start = counted.n_evals
    frontier: list[tuple[float, tuple[int, ...]]] = [(base_cost, ())]
    violations = 0
    while True:
        value, s = heapq.heappop(frontier)
        if len(s) == n:
            bound = frontier[0][0] if frontier else math.inf
            return SearchResult(s, value, counted.n_evals - start, bound, violations, False)
        last = s[-1] if s else -1
        children = [(*s, b) for b in range(last + 1, n_layers - (n - len(s)) + 1)]
        for child, v in zip(children, counted(children)):
            violations += v < value
            heapq.heappush(frontier, (v, child))
        if max_evals is not None and counted.n_evals - start > max_evals:
            raise SwapKLError(f"best-first search for {n} of {n_layers} blocks passed {max_evals} evaluations; "
                              "raise the limit or use exhaustive enumeration")


def exhaustive(cost: Cost, n_layers: int, n: int, *, chunk: int = 64) -> SearchResult:
    """The cheapest set of ``n`` blocks by scoring all C(L, n) sets (ties: the lexicographically first)."""
    _check(n_layers, n)
    counted = cost if isinstance(cost, CountingCost) else CountingCost(cost)
    start = counted.n_evals
    best: tuple[float, tuple[int, ...]] | None = None
    combos = itertools.combinations(range(n_layers), n)
    while batch := list(itertools.islice(combos, chunk)):
        for s, v in zip(batch, counted(batch)):
            if best is None or v < best[0]:
                best = (v, s)
    return SearchResult(best[1], best[0], counted.n_evals - start, math.inf, 0, True)


def greedy(cost: Cost, n_layers: int, n: int) -> tuple[tuple[int, ...], float]:
    """SLEB-iterative on ``cost``: remove the cheapest block, re-score, repeat (a width-1 beam: the same
    ties, lower block first)."""
    res = beam_search(cost, n_layers, list(range(n_layers)), n, width=1)
    return res.best[n], res.cost[n]


def beam(cost: Cost, n_layers: int, n: int, width: int = 3) -> tuple[tuple[int, ...], float]:
    """Width-``width`` beam over removal sets seeded by every block."""
    res = beam_search(cost, n_layers, list(range(n_layers)), n, width=width)
    return res.best[n], res.cost[n]


def compare(cost: Cost, n_layers: int, budgets: Sequence[int], *, base_cost: float, beam_width: int = 3,
            max_evals: int | None = None) -> list[dict]:
    """Rows (one per budget and method: greedy, beam, best_first, and exhaustive where C(L, n) is at most
    ``max_evals``) with each method's set, cost, own evaluation count and gap to the best-first optimum."""
    rows = []
    for n in budgets:
        found = {}
        for method, run in (("greedy", lambda c: greedy(c, n_layers, n)),
                            ("beam", lambda c: beam(c, n_layers, n, beam_width))):
            counted = CountingCost(cost)
            s, v = run(counted)
            found[method] = dict(removed=s, cost=v, n_evals=counted.n_evals, bound=None, violations=None,
                                 certified=False)
        methods = [("best_first", best_first, dict(base_cost=base_cost, max_evals=max_evals))]
        if max_evals is None or math.comb(n_layers, n) <= max_evals:
            methods.append(("exhaustive", exhaustive, {}))
        for method, search, kw in methods:
            r = search(CountingCost(cost), n_layers, n, **kw)
            found[method] = dict(removed=r.removed, cost=r.cost, n_evals=r.n_evals, bound=r.bound,
                                 violations=r.violations, certified=r.certified)
        optimum = min(v["cost"] for v in found.values())
        for method, v in found.items():
            rows.append(dict(budget=n, method=method, removed_layers=list(v["removed"]), cost=v["cost"],
                             gap_to_best=v["cost"] - optimum, n_evals=v["n_evals"],
                             n_enumeration=math.comb(n_layers, n), bound=v["bound"],
                             monotone_violations=v["violations"], certified=v["certified"]))
    return rows
