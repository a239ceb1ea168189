"""Which blocks to remove: the protocol-guided static greedy and the baselines' selection rules.

Every rule here is pure (scores in, block indices out); the measurements that produce the scores
live in the probe files, and SLEB's calibration NLL in :mod:`swapkl.pruning.sleb`.

Orientation: for every per-layer score in this module a LOW value means "safe to remove".

Static greedy (as published):

1. per-layer score ``s(i) = min over probed partners j != i of d(i, j)`` (pair guides), or the
   single-block deletion KL (deletion guide);
2. sort the layers by ascending ``s``; ties break by the tie-break score when one is given (the
   pruning run passes the single-block deletion KL: the two layers of the best pair share ``s``,
   and the one whose deletion costs less goes first -- the paper removed 20 of its best Pythia pair
   19<->20, which index order would not), then by the lower layer index;
3. scan the sorted list and accept ``i`` unless ``|i - k| <= spacing`` for an already accepted
   ``k`` (``spacing = 1``: no two adjacent removals; ``spacing = 0``: no constraint);
4. stop when ``n`` layers are accepted.

Layers without a score (no probed partner, NaN) are never candidates. The partners can be limited
to a pair set (:func:`restrict_pairs`; the paper scored over adjacent pairs or |i-j| <= 3), and
the candidates to a region of layers (the "clustered" variant: the same scan over the layers
``lo <= i < hi`` only). If the scan ends before
``n`` layers are accepted, :class:`BudgetError` (a :class:`SwapKLError`) names the budget, the
spacing and the number of layers. The anti-guided bound runs the same scan over descending scores
(ties again lower index first).

Baselines:

* ShortGPT BI: the ``n`` lowest-BI layers, no spacing constraint (ties: lower index first);
* Gromov angular distance: the contiguous block ``[l, l + n)`` whose start ``l`` minimises the
  angular distance between the residual streams entering slot ``l`` and slot ``l + n``
  (ties: lowest start);
* fixed sets: layer sets named in the config (e.g. the paper's hard-coded tables), checked by
  :func:`fixed_select` and evaluated exactly like the guides' sets;
* random: uniform over all n-subsets of the interior blocks ``1 .. L-2`` (the first and last block are
  never drawn, as in the paper's random baselines; ``random_interior=False`` draws from every block)
  that satisfy a spacing -- by default the guided rules' one; the paper's random baseline ignored it
  (spacing 0) (exact sampling through the bijection ``x_k = y_k + k * spacing`` with an n-subset ``y`` of
  ``range(L' - (n - 1) * spacing)``, ``L'`` the number of candidate blocks), seeded per (seed, budget, draw).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.pruning.feasible import max_feasible
from swapkl.probes.pairs import pairs_for

PAIR_GUIDES = ("interchange", "replacement_max", "replacement_mean")


class BudgetError(SwapKLError):
    """A budget the selection rule cannot reach under its constraints."""


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


def restrict_pairs(d: Mapping[tuple[int, int], float], pair_set: str | None,
                   n_layers: int) -> dict[tuple[int, int], float]:
    """The pair distances of the partners in ``pair_set`` ("adjacent", "within:K", "all"; None keeps
    every probed pair). Every pair of the set must have been probed, else :class:`SwapKLError`."""
    if pair_set is None:
        return dict(d)
    wanted = pairs_for(pair_set, n_layers)
    missing = [p for p in wanted if p not in d]
    if missing:
        raise SwapKLError(f"scoring pair set {pair_set} needs pair {missing[0][0]},{missing[0][1]} "
                          f"({len(missing)} missing), which was not probed")
    return {p: d[p] for p in wanted}


# ------------------------------------------------------------------------------------------ rules


def _order(scores: Sequence[float], descending: bool, tiebreak: Sequence[float] | None = None) -> list[int]:
    """Layer indices by score (ascending or descending), ties by ``tiebreak`` (same direction; NaN
    last) when given, then lower index first; NaN scores dropped."""
    s = np.asarray(scores, dtype=np.float64)
    t = np.zeros(len(s)) if tiebreak is None else np.asarray(tiebreak, dtype=np.float64)
    if len(t) != len(s):
        raise SwapKLError(f"tie-break scores cover {len(t)} layers, the scores {len(s)}")
    sign = -1.0 if descending else 1.0
    idx = [i for i in range(len(s)) if not np.isnan(s[i])]
    return sorted(idx, key=lambda i: (sign * s[i], np.isnan(t[i]), 0.0 if np.isnan(t[i]) else sign * t[i], i))


def greedy_select(scores: Sequence[float], n: int, spacing: int = 1, *, descending: bool = False,
                  tiebreak: Sequence[float] | None = None, region: tuple[int, int] | None = None) -> list[int]:
    """The published static greedy; returns the accepted layers sorted by index.

    ``descending=True`` gives the anti-guided bound; ``tiebreak`` orders layers of equal score
    (see the module docstring); ``region = (lo, hi)`` keeps only the candidates ``lo <= i < hi``.
    Raises :class:`BudgetError` when ``n`` is infeasible for the spacing, or when the scan ends with
    fewer than ``n`` accepted layers.
    """
    n_layers = len(scores)
    check_budget(n, n_layers, spacing)
    if region is not None and not 0 <= region[0] < region[1] <= n_layers:
        raise SwapKLError(f"region {list(region)} is not a layer range [lo, hi) of a {n_layers}-layer model")
    accepted: list[int] = []
    if n == 0:
        return accepted
    for i in _order(scores, descending, tiebreak):
        if region is not None and not region[0] <= i < region[1]:
            continue
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


def fixed_select(layers: Sequence[int], n_layers: int, name: str) -> list[int]:
    """A named fixed layer set, checked (distinct layers of the model, at least one kept), sorted."""
    out = sorted(int(v) for v in layers)
    if len(set(out)) != len(out) or not out:
        raise SwapKLError(f"fixed set {name}: {list(layers)} must list distinct layers")
    if out[0] < 0 or out[-1] >= n_layers or len(out) >= n_layers:
        raise SwapKLError(f"fixed set {name}: {list(layers)} is not a removable set of a {n_layers}-layer model")
    return out


def random_select(n_layers: int, n: int, spacing: int, rng: np.random.Generator, *,
                  interior: bool = False) -> list[int]:
    """A uniformly random n-subset whose members are more than ``spacing`` apart; ``interior``: of the
    blocks ``1 .. n_layers - 2`` only (the first and last block are never drawn)."""
    first, count = (1, n_layers - 2) if interior else (0, n_layers)
    if interior and count < 1:
        raise BudgetError(f"a {n_layers}-layer model has no interior block to draw")
    try:
        check_budget(n, count, spacing)
    except BudgetError as e:
        raise BudgetError(f"{e} ({'interior blocks 1..' + str(n_layers - 2) if interior else 'all blocks'})") from None
    m = count - (n - 1) * spacing
    y = np.sort(rng.choice(m, size=n, replace=False)) if n else np.array([], dtype=np.int64)
    return [first + int(v) + k * spacing for k, v in enumerate(y)]


def fixed_set_keys(fixed_sets: Mapping[str, Sequence[Sequence[int]]]) -> list[tuple[str, int | None, list[int]]]:
    """Every set of ``fixed_sets`` as ``(name, index, layers)``: ``index`` numbers the sets of one size within a
    name (0, 1, ... in config order) when the name holds several of that size, else None -- so no set is lost
    to another of its size (the rows' ``random_draw`` column carries the index)."""
    out = []
    for name, sets in fixed_sets.items():
        sizes = [len(set(s)) for s in sets]
        seen: dict[int, int] = {}
        for layers, size in zip(sets, sizes):
            k = seen.get(size, 0)
            seen[size] = k + 1
            out.append((name, k if sizes.count(size) > 1 else None, list(layers)))
    return out


def random_rng(seed: int, budget: int, draw: int) -> np.random.Generator:
    """Generator of one random draw: depends only on (seed, budget, draw)."""
    return np.random.default_rng([int(seed), int(budget), int(draw)])
