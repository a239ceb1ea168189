"""Agreement between per-layer scores of different guides (all oriented: low = safe to remove).

For two score vectors over the layers that both score (finite values):

* Spearman's rho and Kendall's tau-b (``scipy.stats``; ties get average ranks / the tau-b
  correction);
* misranking rate: among the layer pairs ``(a, b)``, ``a < b``, that neither vector ties, the share
  ordered differently, i.e. with ``(x_a - x_b) * (y_a - y_b) < 0``. Against the deletion-cost
  ranking (reference ``deletion``) this is the share of layer pairs a guide orders differently
  from the single-block deletion KL.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
from scipy import stats

AGREEMENT_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
    ("guide", pa.string()), ("reference", pa.string()), ("n_compared", pa.int64()),
    ("spearman", pa.float64()), ("kendall", pa.float64()),
    ("misranking_rate", pa.float64()), ("n_pairs", pa.int64()),
])


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
                rows.append(dict(meta, guide=g, reference=r, **compare(x, y)))
    return rows
