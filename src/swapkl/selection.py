"""Which blocks to remove: the protocol-guided static greedy and the baselines' selection rules.

Every rule here is pure (scores in, block indices out); the measurements that produce the scores
live in the probe files, and SLEB's calibration NLL in :mod:`swapkl.sleb`.

Orientation: for every per-layer score in this module a LOW value means "safe to remove".

Static greedy (as published):

1. per-layer score ``s(i) = min over probed partners j != i of d(i, j)`` (pair guides), or the
   single-block deletion KL (deletion guide);
2. sort the layers by ascending ``s``; ties break by the lower layer index first;
3. scan the sorted list and accept ``i`` unless ``|i - k| <= spacing`` for an already accepted
   ``k`` (``spacing = 1``: no two adjacent removals; ``spacing = 0``: no constraint);
4. stop when ``n`` layers are accepted.

Layers without a score (no probed partner, NaN) are never candidates. If the scan ends before
``n`` layers are accepted, :class:`BudgetError` (a :class:`SwapKLError`) names the budget, the
spacing and the number of layers. The anti-guided bound runs the same scan over descending scores
(ties again lower index first).

Baselines:

* ShortGPT BI: the ``n`` lowest-BI layers, no spacing constraint (ties: lower index first);
* Gromov angular distance: the contiguous block ``[l, l + n)`` whose start ``l`` minimises the
  angular distance between the residual streams entering slot ``l`` and slot ``l + n``
  (ties: lowest start);
* random: uniform over all n-subsets that satisfy the same spacing as the guided rules (exact
  sampling through the bijection ``x_k = y_k + k * spacing`` with an n-subset ``y`` of
  ``range(L - (n - 1) * spacing)``), seeded per (seed, budget, draw).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError

PAIR_GUIDES = ("interchange", "replacement_max", "replacement_mean")


class BudgetError(SwapKLError):
    """A budget the selection rule cannot reach under its constraints."""


def max_feasible(n_layers: int, spacing: int) -> int:
    """Largest number of blocks that can be removed with pairwise index distance > ``spacing``."""
    return math.ceil(n_layers / (spacing + 1)) if n_layers > 0 else 0


def check_budget(n: int, n_layers: int, spacing: int) -> None:
    """A clear error when ``n`` is negative or beyond what ``spacing`` allows in ``n_layers`` blocks."""
    if spacing < 0:
        raise SwapKLError(f"spacing must be >= 0, got {spacing}")
    if n < 0:
        raise BudgetError(f"budget must be >= 0, got {n}")
    top = max_feasible(n_layers, spacing)
    if n > top:
        raise BudgetError(
            f"budget {n} is infeasible: with spacing {spacing} at most {top} of {n_layers} layers can be removed"
        )


# ------------------------------------------------------------------------------------------ scores


def pair_distances(probe: pd.DataFrame, guide: str) -> dict[tuple[int, int], float]:
    """Pair distances ``d(i, j)`` (keys ``i < j``) for a pair guide from probe rows.

    * ``interchange``: the KL of ``M_{i<->j}``;
    * ``replacement_max`` / ``replacement_mean``: max / mean of ``r(i<-j)`` and ``r(j<-i)``;
      pairs with only one direction probed are left out.
    """
    if guide not in PAIR_GUIDES:
        raise SwapKLError(f"unknown pair guide {guide!r}: choose from {', '.join(PAIR_GUIDES)}")
    proto = "interchange" if guide == "interchange" else "replacement"
    rows = probe[probe["protocol"] == proto]
    vals = {(int(i), int(j)): float(v) for i, j, v in zip(rows["layer_i"], rows["layer_j"], rows["kl_mean"])}
    if guide == "interchange":
        return {(min(i, j), max(i, j)): v for (i, j), v in vals.items()}
    out = {}
    for (i, j), v in vals.items():
        if i < j and (j, i) in vals:
            w = vals[(j, i)]
            out[(i, j)] = max(v, w) if guide == "replacement_max" else 0.5 * (v + w)
    return out


def layer_scores_from_pairs(d: Mapping[tuple[int, int], float], n_layers: int) -> np.ndarray:
    """``s(i) = min over probed partners j != i of d(i, j)``; NaN for a layer without a partner."""
    s = np.full(n_layers, np.inf)
    for (i, j), v in d.items():
        if i == j or not (0 <= i < n_layers and 0 <= j < n_layers):
            raise SwapKLError(f"pair ({i}, {j}) is not a pair of distinct layers of a {n_layers}-layer model")
        if np.isnan(v):
            continue
        s[i] = min(s[i], v)
        s[j] = min(s[j], v)
    s[np.isinf(s)] = np.nan
    return s


def deletion_scores(probe: pd.DataFrame, n_layers: int) -> np.ndarray:
    """Single-block deletion KL per layer (NaN where not probed)."""
    s = np.full(n_layers, np.nan)
    rows = probe[probe["protocol"] == "deletion"]
    for i, v in zip(rows["layer_i"], rows["kl_mean"]):
        s[int(i)] = float(v)
    return s


def bi_scores(rep: pd.DataFrame, n_layers: int) -> np.ndarray:
    """ShortGPT block influence per layer from a representation file (NaN where missing)."""
    s = np.full(n_layers, np.nan)
    rows = rep[(rep["metric"] == "bi") & (rep["width"] == 1)]
    for i, v in zip(rows["layer_i"], rows["value"]):
        s[int(i)] = float(v)
    return s


def angular_table(rep: pd.DataFrame, metric: str = "angular") -> dict[tuple[int, int], float]:
    """``{(start, width): distance}`` for ``metric`` ("angular" or "angular_last")."""
    if metric not in ("angular", "angular_last"):
        raise SwapKLError(f"unknown angular metric {metric!r}: choose 'angular' or 'angular_last'")
    rows = rep[rep["metric"] == metric]
    return {(int(l), int(w)): float(v) for l, w, v in zip(rows["layer_i"], rows["width"], rows["value"])}


# ------------------------------------------------------------------------------------------ rules


def _order(scores: Sequence[float], descending: bool) -> list[int]:
    """Layer indices by score (ascending or descending), ties lower index first, NaN dropped."""
    s = np.asarray(scores, dtype=np.float64)
    idx = [i for i in range(len(s)) if not np.isnan(s[i])]
    return sorted(idx, key=lambda i: ((-s[i]) if descending else s[i], i))


def greedy_select(scores: Sequence[float], n: int, spacing: int = 1, *, descending: bool = False) -> list[int]:
    """The published static greedy; returns the accepted layers sorted by index.

    ``descending=True`` gives the anti-guided bound. Raises :class:`BudgetError` when ``n`` is
    infeasible for the spacing, or when the scan ends with fewer than ``n`` accepted layers.
    """
    n_layers = len(scores)
    check_budget(n, n_layers, spacing)
    accepted: list[int] = []
    if n == 0:
        return accepted
    for i in _order(scores, descending):
        if all(abs(i - k) > spacing for k in accepted):
            accepted.append(i)
            if len(accepted) == n:
                return sorted(accepted)
    raise BudgetError(
        f"budget {n} not reached: the greedy scan with spacing {spacing} over {n_layers} layers "
        f"accepted only {len(accepted)} ({sorted(accepted)})"
    )


def lowest_select(scores: Sequence[float], n: int) -> list[int]:
    """The ``n`` lowest-scored layers, no spacing (ShortGPT BI); ties lower index first."""
    order = _order(scores, descending=False)
    if n < 0 or n > len(order):
        raise BudgetError(f"budget {n} is infeasible: {len(order)} of {len(scores)} layers have a score")
    return sorted(order[:n])


def contiguous_select(table: Mapping[tuple[int, int], float], n: int, n_layers: int) -> list[int]:
    """Gromov et al.: the block ``[l, l + n)`` with the smallest ``table[(l, n)]`` (ties: lowest l)."""
    if n == 0:
        return []
    if not 0 < n < n_layers:
        raise BudgetError(f"budget {n} is infeasible for a contiguous block of a {n_layers}-layer model")
    cands = [(table[(l, n)], l) for l in range(n_layers - n + 1) if (l, n) in table and not np.isnan(table[(l, n)])]
    if not cands:
        raise BudgetError(f"no angular distance of width {n} in the representation file")
    _, start = min(cands)
    return list(range(start, start + n))


def random_select(n_layers: int, n: int, spacing: int, rng: np.random.Generator) -> list[int]:
    """A uniformly random n-subset whose members are more than ``spacing`` apart."""
    check_budget(n, n_layers, spacing)
    m = n_layers - (n - 1) * spacing
    y = np.sort(rng.choice(m, size=n, replace=False)) if n else np.array([], dtype=np.int64)
    return [int(v) + k * spacing for k, v in enumerate(y)]


def random_rng(seed: int, budget: int, draw: int) -> np.random.Generator:
    """Generator of one random draw: depends only on (seed, budget, draw)."""
    return np.random.default_rng([int(seed), int(budget), int(draw)])
