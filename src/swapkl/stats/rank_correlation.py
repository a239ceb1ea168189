"""Spearman's rho and Kendall's tau-b: the one place swapkl computes rank correlations, with one rule for when
they are undefined.

**The NaN rule.** A rank correlation of ``x`` and ``y`` (over the last axis) is NaN when it has fewer than
``min_points`` points, or when either input ranks all its points equal (a constant input: no ranking). A NaN
among the inputs gives NaN. ``min_points`` is 2 (the least a correlation needs) unless a caller asks for
more: the deletion-vs-BI figure and the predictor-validity summary report rho only from 3 points on.
Callers that drop unscored (non-finite) points first do so before calling (:func:`swapkl.stats.agreement.compare`).

Two computations, both on average ranks (ties share the mean of their ranks):

* :func:`spearman` and :func:`kendall` are vectorised over rows (``[..., n]``): Pearson's r of the rank
  vectors, ``sum(rx ry) / sqrt(sum(rx^2) sum(ry^2))`` with ranks centred, and tau-b from the signs of the
  item pairs, for bootstraps and many pairs at once;
* :func:`spearman_kendall` is one pair through ``scipy.stats`` (``spearmanr``; ``kendalltau``'s tau-b, which
  corrects for ties), for the agreement tables.

:func:`average_ranks` is ``scipy.stats.rankdata``'s ``"average"`` method in numpy (the same exact half-integer
ranks, NaN rows all NaN), so that the tables that only need :func:`spearman` do not import ``scipy.stats``
(about a second per job); only :func:`spearman_kendall` does.

The two agree to rounding (tests/test_rank_correlation.py); each caller keeps the one it always used, so no
published number moves by a bit.
"""

from __future__ import annotations

import numpy as np


def average_ranks(x) -> np.ndarray:
    """Average ranks (1-based; ties share the mean of their ranks) of each row of ``x`` over its last axis, as
    ``scipy.stats.rankdata(x, axis=-1)`` gives them: a row holding a NaN ranks all NaN."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[-1]
    if x.size == 0:
        return np.empty(x.shape)
    order = np.argsort(x, axis=-1, kind="stable")
    ordered = np.take_along_axis(x, order, axis=-1)
    flat = ordered.reshape(-1, n)
    first = np.ones(flat.shape, dtype=bool)
    first[:, 1:] = flat[:, 1:] != flat[:, :-1]
    starts = np.flatnonzero(first.ravel())
    counts = np.diff(starts, append=flat.size)
    ordinal = np.broadcast_to(np.arange(1, n + 1, dtype=np.float64), flat.shape)
    tied = np.repeat(ordinal[first] + (counts - 1) / 2, counts).reshape(x.shape)
    ranks = np.empty(x.shape)
    np.put_along_axis(ranks, order, tied, axis=-1)
    ranks[np.any(np.isnan(x), axis=-1)] = np.nan
    return ranks


def _undefined(x: np.ndarray, y: np.ndarray, min_points: int) -> np.ndarray:
    """The NaN rule (module docstring) for each row of ``[..., n]`` arrays (NaNs propagate in the formulas)."""
    if x.shape[-1] < min_points:
        return np.ones(x.shape[:-1], dtype=bool)
    constant = lambda a: np.all(a == a[..., :1], axis=-1)  # noqa: E731
    return constant(x) | constant(y)


def spearman(x, y, *, min_points: int = 2) -> np.ndarray:
    """Spearman's rho of each row of ``x`` against the same row of ``y`` (``[..., n]`` arrays; NaN as the
    module docstring says)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape[-1] < min_points:
        return np.full(np.broadcast_shapes(x.shape, y.shape)[:-1], np.nan)
    rx = average_ranks(x)
    ry = average_ranks(y)
    rx = rx - rx.mean(axis=-1, keepdims=True)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=-1) * (ry * ry).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(den > 0, (rx * ry).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)
    return np.where(_undefined(x, y, min_points), np.nan, rho)


def kendall(x, y, *, min_points: int = 2) -> np.ndarray:
    """Kendall's tau-b of each row of ``x`` against the same row of ``y`` (``[..., n]`` arrays; NaN as the
    module docstring says): scipy's ``(concordant - discordant) / sqrt((P - ties_x) (P - ties_y))`` over the
    ``P = n (n - 1) / 2`` item pairs, vectorised over rows (for bootstraps)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    a, b = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., a] - x[..., b]), np.sign(y[..., a] - y[..., b])
    total = float(len(a))
    den = np.sqrt((total - (sx == 0).sum(-1)) * (total - (sy == 0).sum(-1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(den > 0, (sx * sy).sum(-1) / np.where(den > 0, den, 1.0), np.nan)
    return np.where(_undefined(x, y, min_points), np.nan, tau)


def spearman_kendall(x, y, *, min_points: int = 2) -> tuple[float, float]:
    """Spearman's rho and Kendall's tau-b of one pair of 1-D vectors (``scipy.stats``; NaN, NaN as the module
    docstring says)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if bool(_undefined(x, y, min_points)):
        return float("nan"), float("nan")
    from scipy import stats  # heavy (about a second): only the agreement tables use this function

    return float(stats.spearmanr(x, y).statistic), float(stats.kendalltau(x, y).statistic)
