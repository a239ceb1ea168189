"""The cost model that projects removal-set searches to large models (the optimal-search study itself, on one
checkpoint, is :mod:`swapkl.studies.optimal_search`).

Cost model: a search's wall time is ``n_evals x seconds per evaluation / n_gpus``, where one evaluation
is one pass of the pruned model over the calibration set. Assumptions, stated where they are used:

* the seconds per evaluation are what the paper's own runs imply: its accuracy-guided greedy prune of
  LLaMA3-8B (32 blocks, 25% = 8 removed) took 4.6 h for ``greedy_evals(32, 8) = 228`` evaluations on
  one GPU; its 50% prune of LLaMA3-70B (80 blocks, 40 removed) was estimated at 1.1 to 8.5 days for
  ``greedy_evals(80, 40) = 2420`` evaluations on two H100s (the range: the calibration set);
* evaluations of different sets are independent, so ``r`` model replicas divide the time by ``r`` with
  no overhead (optimistic). A replica is one GPU for LLaMA3-8B and the pair of H100s for LLaMA3-70B
  (its weights do not fit one): one or two GPUs for 8B, two or four for 70B;
* the engine's resumption (each set restarts from its first removed slot) is ignored: a full forward.
"""

from __future__ import annotations

import math

from swapkl.errors import SwapKLError

#: (model, blocks, removed, hours low, hours high, GPUs per replica) -- the paper's figures, on one replica
PAPER_RUNS = (("LLaMA3-8B", 32, 8, 4.6, 4.6, 1), ("LLaMA3-70B", 80, 40, 1.1 * 24, 8.5 * 24, 2))


def greedy_evals(n_layers: int, n: int) -> int:
    """Evaluations of greedy iterative pruning (SLEB / accuracy-guided): L + (L - 1) + ... for n steps."""
    return sum(n_layers - k for k in range(n))


def beam_evals(n_layers: int, n: int, width: int = 3) -> int:
    """An upper bound on a width-``w`` beam's evaluations seeded by every block (distinct sets scored)."""
    return n_layers + sum(min(width * (n_layers - k), math.comb(n_layers, k + 1)) for k in range(1, n))


def projected_hours(n_evals: float, seconds_per_eval: float, replicas: int = 1) -> float:
    """Wall hours of ``n_evals`` evaluations at ``seconds_per_eval`` each, split over ``replicas``."""
    if replicas < 1 or seconds_per_eval < 0 or n_evals < 0:
        raise SwapKLError("the cost model needs replicas >= 1 and non-negative evaluations and seconds")
    return n_evals * seconds_per_eval / replicas / 3600.0


def cost_table(replicas=(1, 2), best_first_fraction: float | None = None) -> list[dict]:
    """Projected hours per model, method and number of model replicas. ``best_first_fraction``: the best-first search's
    measured evaluations as a fraction of exhaustive enumeration (from the demo), applied to C(L, n) -- a
    rough extrapolation, since the fraction depends on the model's cost landscape."""
    rows = []
    for model, L, n, lo_h, hi_h, paper_gpus in PAPER_RUNS:
        per_eval = [h * 3600.0 / greedy_evals(L, n) for h in (lo_h, hi_h)]  # seconds on one replica
        evals = {"greedy": greedy_evals(L, n), "beam3": beam_evals(L, n, 3), "exhaustive": math.comb(L, n)}
        if best_first_fraction is not None:
            evals["best_first (demo fraction)"] = math.comb(L, n) * best_first_fraction
        for method, e in evals.items():
            for r in replicas:
                lo, hi = (projected_hours(e, s, r) for s in per_eval)
                rows.append(dict(model=model, n_layers=L, removed=n, method=method, n_evals=float(e), replicas=r,
                                 gpus=r * paper_gpus, hours_low=lo, hours_high=hi, paper_hours_low=lo_h,
                                 paper_hours_high=hi_h))
    return rows
