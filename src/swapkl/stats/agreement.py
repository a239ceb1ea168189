"""Agreement between per-layer scores of different guides (all oriented: low = safe to remove).

For two score vectors over the layers that both score (finite values):

* Spearman's rho and Kendall's tau-b (:func:`swapkl.stats.rank_correlation.spearman_kendall`; ties get
  average ranks / the tau-b correction; NaN by its one rule);
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
* chance levels and permutation p-values (:func:`rank_chance`): under a uniformly random reference ranking
  the exact-rank rate has expectation ``exact_rank_chance = 1 - 1/m`` and the severe rate
  ``severe_chance = (m - k)(m - k + 1) / m^2`` (``k = severe_offset``: the share of the m^2 (guide rank,
  reference rank) cells at least k apart; 9/16 as m grows); ``exact_rank_p`` and ``severe_p`` are the one-sided permutation
  p-values P(rate under a random permutation <= observed rate) (low rates = agreement): exact over all m!
  permutations when m! <= 10,000, else ``(1 + #{perm <= obs}) / (1 + 10,000)`` over 10,000 seeded random
  permutations (the null does not depend on the observed ranks, so it is drawn once per (m, k));
* ``pearson``: Pearson's r of the two score vectors over the same layers, in swapkl's orientation
  (both low = safe to remove, so positive means agreement); ``pearson_paper_sign = -pearson``,
  the paper's convention, which correlates a similarity score (high = redundant) with a relevance
  score (high = needed), so that agreement shows as a negative correlation;
* ``pearson_all_blocks`` (and ``pearson_all_blocks_paper_sign``): the same r over every layer both vectors
  score, the boundary layers included. The first and last blocks are outliers of both scores (removing
  them costs far more than any other), so they can dominate r, up to giving it the other sign than over the
  interior blocks. The second paper excluded them from its per-layer comparison
  (docs/relevance.md), so its R (-0.46, -0.23, -0.15) is compared with ``pearson_paper_sign``.

Whether an r over the interior blocks rests on a few of them (:func:`pearson_robustness`, the relevance
statistics' columns): ``pearson_p`` is the one-sided permutation p-value of r (agreement beyond a random pairing
of the two scores: with 16 to 28 blocks a bootstrap over blocks is degenerate); ``outlying_layers`` are the
interior blocks outside Tukey's fences (1.5 IQR beyond the quartiles) on either score, and
``pearson_without_outliers`` (with its paper sign and its p-value) is r over the other blocks.
:func:`fisher_interval` gives r's interval for a comparison with a published value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from swapkl.stats.rank_correlation import spearman_kendall

#: permutations of the null distribution of the rank statistics (exact enumeration below this many)
N_PERMUTATIONS = 10_000

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


def _permutations(m: int, salt: int) -> tuple[np.ndarray, bool]:
    """Every permutation of 0..m-1 (m! <= N_PERMUTATIONS; True) or N_PERMUTATIONS seeded uniform ones (False)."""
    if math.factorial(m) <= N_PERMUTATIONS:
        return np.array(list(itertools.permutations(range(m))), dtype=np.int64), True
    rng = np.random.default_rng([m, salt])
    return rng.permuted(np.tile(np.arange(m), (N_PERMUTATIONS, 1)), axis=1), False


@lru_cache(maxsize=64)
def _null_rates(m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact-rank and severe rates of ranks 0..m-1 against every permutation (m! <= N_PERMUTATIONS) or
    against N_PERMUTATIONS seeded uniform permutations."""
    perms, _ = _permutations(m, k)
    off = np.abs(perms - np.arange(m))
    return (off != 0).mean(axis=1), (off >= k).mean(axis=1)


def rank_chance(m: int, k: int, exact_rate: float, severe_rate: float) -> dict:
    """Chance levels and one-sided permutation p-values of the exact-rank and severe misranking rates of m
    ranked layers with severe offset k (see the module docstring)."""
    exact_null, severe_null = _null_rates(m, k)
    exhaustive = math.factorial(m) <= N_PERMUTATIONS

    def p_value(null: np.ndarray, obs: float) -> float:
        hits = int(np.sum(null <= obs + 1e-12))
        return hits / len(null) if exhaustive else (1 + hits) / (1 + len(null))

    return dict(exact_rank_chance=1.0 - 1.0 / m, severe_chance=(m - k) * (m - k + 1) / m**2,
                exact_rank_p=p_value(exact_null, exact_rate), severe_p=p_value(severe_null, severe_rate))


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
               exact_rank_chance=nan, exact_rank_p=nan, severe_chance=nan, severe_p=nan,
               pearson=nan, pearson_paper_sign=nan, **_pearson(x, y, np.isfinite(x) & np.isfinite(y), "_all_blocks"))
    if m < 2:
        return out
    gr, rr = ordinal_ranks(x[layers]), ordinal_ranks(y[layers])
    offset = np.abs(gr - rr)
    severe = math.ceil(m / 4)
    exact = float(1.0 - np.trace(rank_confusion(gr, rr)) / m)
    severe_rate = float(np.mean(offset >= severe))
    out.update(guide_rank=gr.tolist(), reference_rank=rr.tolist(), exact_rank_misranking=exact,
               severe_misranking=severe_rate, severe_offset=severe, **rank_chance(m, severe, exact, severe_rate))
    out.update(_pearson(x, y, keep))
    return out


def _pearson(x: np.ndarray, y: np.ndarray, keep: np.ndarray, suffix: str = "") -> dict:
    """``pearson{suffix}`` and ``pearson{suffix}_paper_sign`` over the layers ``keep`` (NaN for fewer than 2 or a
    constant vector)."""
    xs, ys = x[keep], y[keep]
    r = float("nan")
    if len(xs) >= 2 and not (np.all(xs == xs[0]) or np.all(ys == ys[0])):
        from scipy import stats  # heavy (about a second): the figures and tables that read ranks do not need it

        r = float(stats.pearsonr(xs, ys).statistic)
    return {f"pearson{suffix}": r, f"pearson{suffix}_paper_sign": -r}


def pearson_permutation_p(x, y) -> float:
    """One-sided permutation p-value of Pearson's r of ``x`` and ``y`` being as large as observed when the
    pairing of the two vectors is random: P(r(x, y[perm]) >= r(x, y)), exact over every permutation when m! <=
    N_PERMUTATIONS, else ``(1 + hits) / (1 + N_PERMUTATIONS)`` over seeded random ones (NaN for fewer than 3
    points or a constant vector). In swapkl's orientation a large r is agreement."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    m = len(x)
    if m < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    xs = (x - x.mean()) / np.linalg.norm(x - x.mean())
    ys = (y - y.mean()) / np.linalg.norm(y - y.mean())
    observed = float(xs @ ys)
    perms, exhaustive = _permutations(m, 1)
    null = ys[perms] @ xs
    hits = int(np.sum(null >= observed - 1e-12))
    return hits / len(null) if exhaustive else (1 + hits) / (1 + len(null))


def fisher_interval(r: float, m: int, level: float = 0.95) -> tuple[float, float]:
    """Fisher's z interval of a Pearson r over m points, ``tanh(atanh(r) +- z / sqrt(m - 3))``: exact only for
    bivariate normal scores, which outlying blocks violate (NaN for m < 4)."""
    from scipy import stats

    if m < 4 or not np.isfinite(r):
        return float("nan"), float("nan")
    half = float(stats.norm.ppf(0.5 + level / 2)) / math.sqrt(m - 3)
    z = math.atanh(max(min(r, 1 - 1e-15), -1 + 1e-15))
    return math.tanh(z - half), math.tanh(z + half)


def outlying(x: np.ndarray) -> np.ndarray:
    """Tukey's fences: True where a value lies below Q1 - 1.5 IQR or above Q3 + 1.5 IQR (numpy's linear
    quantiles)."""
    q1, q3 = np.percentile(x, [25, 75])
    return (x < q1 - 1.5 * (q3 - q1)) | (x > q3 + 1.5 * (q3 - q1))


def pearson_robustness(x, y, layers) -> dict:
    """How much Pearson's r over ``layers`` rests on outlying blocks: its permutation p-value (``pearson_p``), the
    blocks outside Tukey's fences on either score (``outlying_layers``), and r, its paper-sign twin and its
    p-value over the other blocks (``pearson_without_outliers*``, ``n_without_outliers``)."""
    x = np.asarray(x, dtype=np.float64)[layers]
    y = np.asarray(y, dtype=np.float64)[layers]
    layers = np.asarray(layers, dtype=np.int64)
    nan = float("nan")
    out = dict(pearson_p=nan, outlying_layers=[], n_without_outliers=0, pearson_without_outliers=nan,
               pearson_without_outliers_paper_sign=nan, pearson_without_outliers_p=nan)
    if len(x) < 3:
        return out
    out["pearson_p"] = pearson_permutation_p(x, y)
    far = outlying(x) | outlying(y)
    rest = ~far
    r = _pearson(x, y, rest)["pearson"]
    out.update(outlying_layers=layers[far].tolist(), n_without_outliers=int(rest.sum()), pearson_without_outliers=r,
               pearson_without_outliers_paper_sign=-r, pearson_without_outliers_p=pearson_permutation_p(x[rest], y[rest]))
    return out


def compare(x, y) -> dict:
    """Spearman, Kendall and misranking rate over the layers both score."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    nan = float("nan")
    rho, tau = spearman_kendall(x, y)
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
