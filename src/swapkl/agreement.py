"""Agreement between per-layer scores of different guides (all oriented: low = safe to remove).

For two score vectors over the layers that both score (finite values):

* Spearman's rho and Kendall's tau-b (``scipy.stats``; ties get average ranks / the tau-b
  correction);
* misranking rate: among the layer pairs ``(a, b)``, ``a < b``, that neither vector ties, the share
  ordered differently, i.e. with ``(x_a - x_b) * (y_a - y_b) < 0``. Against the deletion-cost
  ranking (reference ``deletion``) this is the share of layer pairs a guide orders differently
  from the single-block deletion KL.

The second seed paper ("Rethinking Layer Relevance Beyond Cosine Similarity") compares rankings
through a rank confusion matrix instead, with the first and last layers excluded. For that:

* ``excluded_layers``: the boundary layers left out of the rank statistics below (layer 0 and
  layer L-1 when ``exclude_boundary``; none otherwise); the remaining m layers that both vectors
  score are ranked 0..m-1 (ordinal ranks, ascending score, ties broken by the lower layer index),
  giving ``layers``, ``guide_rank`` and ``reference_rank`` (lists, one entry per compared layer);
* the confusion matrix ``C[a, b]`` counts the layers ranked ``a`` by the guide and ``b`` by the
  reference (:func:`rank_confusion`);
* ``exact_rank_misranking``: the share of those layers whose exact rank differs,
  ``1 - trace(C) / m`` (at chance ``1 - 1/m``, about 96% for 24 layers with the boundary ones left out);
* ``severe_misranking``: the share whose rank differs by at least ``severe_offset`` positions. The
  paper calls such mismatches severe without publishing the cut-off; swapkl uses
  ``severe_offset = ceil(m / 4)`` (a quarter of the ranking) and records it in every row;
* ``pearson``: Pearson's r of the two score vectors over the same layers, in swapkl's orientation
  (both low = safe to remove, so positive means agreement); ``pearson_paper_sign = -pearson``,
  the paper's convention, which correlates a similarity score (high = redundant) with a relevance
  score (high = needed), so that agreement shows as a negative correlation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from scipy import stats

def spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row of ``x`` against the same row of ``y`` (``[..., n]`` arrays; NaN when a
    row's ranks are all tied or n < 2)."""
    rx = stats.rankdata(np.asarray(x, dtype=np.float64), axis=-1)
    ry = stats.rankdata(np.asarray(y, dtype=np.float64), axis=-1)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (rx * ry).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def misranking(x, y) -> tuple[float, int]:
    """(share of untied layer pairs ordered differently, number of untied pairs)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    a, b = np.triu_indices(len(x), k=1)
    dx, dy = x[a] - x[b], y[a] - y[b]
    untied = (dx != 0) & (dy != 0)
    n = int(untied.sum())
    if n == 0:
        return float("nan"), 0
    return float(((dx * dy) < 0)[untied].sum() / n), n


def ordinal_ranks(x) -> np.ndarray:
    """Rank 0..m-1 of each value, ascending, ties broken by position (lower index first)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.lexsort((np.arange(len(x)), x))
    ranks = np.empty(len(x), dtype=np.int64)
    ranks[order] = np.arange(len(x))
    return ranks


def rank_confusion(guide_rank, reference_rank) -> np.ndarray:
    """``C[a, b]``: number of layers ranked ``a`` by the guide and ``b`` by the reference."""
    g = np.asarray(guide_rank, dtype=np.int64)
    r = np.asarray(reference_rank, dtype=np.int64)
    c = np.zeros((len(g), len(g)), dtype=np.int64)
    np.add.at(c, (g, r), 1)
    return c


def rank_statistics(x, y, *, exclude_boundary: bool = True) -> dict:
    """The confusion-matrix statistics of the second seed paper (see the module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n_layers = len(x)
    excluded = [0, n_layers - 1] if exclude_boundary and n_layers > 2 else []
    keep = np.isfinite(x) & np.isfinite(y)
    keep[excluded] = False
    layers = np.flatnonzero(keep)
    m = len(layers)
    nan = float("nan")
    out = dict(excluded_layers=sorted(set(excluded)), n_ranked=m, layers=layers.tolist(), guide_rank=[],
               reference_rank=[], exact_rank_misranking=nan, severe_misranking=nan, severe_offset=None,
               pearson=nan, pearson_paper_sign=nan)
    if m < 2:
        return out
    gr, rr = ordinal_ranks(x[layers]), ordinal_ranks(y[layers])
    offset = np.abs(gr - rr)
    severe = math.ceil(m / 4)
    out.update(guide_rank=gr.tolist(), reference_rank=rr.tolist(),
               exact_rank_misranking=float(1.0 - np.trace(rank_confusion(gr, rr)) / m),
               severe_misranking=float(np.mean(offset >= severe)), severe_offset=severe)
    xs, ys = x[layers], y[layers]
    if not (np.all(xs == xs[0]) or np.all(ys == ys[0])):
        r = float(stats.pearsonr(xs, ys).statistic)
        out.update(pearson=r, pearson_paper_sign=-r)
    return out


def compare(x, y) -> dict:
    """Spearman, Kendall and misranking rate over the layers both score."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    nan = float("nan")
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        rho = tau = nan
    else:
        rho = float(stats.spearmanr(x, y).statistic)
        tau = float(stats.kendalltau(x, y).statistic)
    mis, n_pairs = misranking(x, y) if len(x) >= 2 else (nan, 0)
    return dict(n_compared=int(len(x)), spearman=rho, kendall=tau, misranking_rate=mis, n_pairs=n_pairs)


def agreement_rows(scores: Mapping[str, np.ndarray], meta: dict) -> list[dict]:
    """One row per ordered pair of guides (guide != reference), in the order of ``scores``."""
    rows = []
    for g, x in scores.items():
        for r, y in scores.items():
            if g != r:
                rows.append(dict(meta, guide=g, reference=r, **compare(x, y), **rank_statistics(x, y)))
    return rows
