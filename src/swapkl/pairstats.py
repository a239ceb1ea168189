"""Pair statistics derived from directed replacement and interchange measurements of one checkpoint.

For a pair i < j:

* ``r_ij = r(i<-j)`` is the KL of the replacement variant where slot i runs block j, ``r_ji`` the
  reverse direction;
* ``d_repl_max = max(r_ij, r_ji)`` (the conservative score), ``d_repl_mean = (r_ij + r_ji) / 2``;
* ``d_inter`` is the KL of the interchange variant ``M_{i<->j}``;
* ``gap = d_repl_max - d_inter`` and ``ratio_ir = d_inter / d_repl_max`` (NaN when d_repl_max is 0);
* ``class_repl`` / ``class_inter``: swap-similarity class of d_repl_max / d_inter: ``"strong"`` if
  d < 0.05, ``"conditional"`` if 0.05 <= d < 0.10, else ``"none"``.

Bootstrap of the mean gap: one set of resampled sequence indices per checkpoint (every variant is
measured on the same sequences), each variant's KL recomputed from its per-sequence sums as
``sum(seq_kl_sum[idx]) / sum(seq_tokens[idx])``, every pair's gap recomputed, then averaged over
the pair set; the 2.5 and 97.5 percentiles of those means give the 95% CI.
"""

from __future__ import annotations

import re
import zlib

import numpy as np
import pandas as pd

from swapkl.bootstrap import percentile_ci, resample_indices
from swapkl.pairs import pairs_for, parse_pair_set

STRONG_BELOW = 0.05
CONDITIONAL_BELOW = 0.10
CI_LEVEL = 0.95


def swap_class(d) -> np.ndarray:
    """Swap-similarity class for each value of ``d`` (object array; None where d is NaN)."""
    d = np.asarray(d, dtype=np.float64)
    out = np.where(d < STRONG_BELOW, "strong", np.where(d < CONDITIONAL_BELOW, "conditional", "none"))
    out = out.astype(object)
    out[np.isnan(d)] = None
    return out


def pair_set_column(name: str) -> str:
    """Name of the boolean membership column of a pair set: ``within:3`` -> ``in_within_3``."""
    parse_pair_set(name)
    return "in_" + re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_")


def in_pair_set(name: str, i, j, n_layers: int) -> np.ndarray:
    """Whether each pair (i, j) belongs to pair set ``name`` for a model of ``n_layers`` blocks."""
    kind, k = parse_pair_set(name)
    dist = np.abs(np.asarray(j, dtype=np.int64) - np.asarray(i, dtype=np.int64))
    if kind == "all":
        return dist >= 1
    return (dist >= 1) & (dist <= min(k, n_layers - 1))


def checkpoint_seed(seed: int, model: str, revision: str) -> int:
    """Bootstrap seed of one checkpoint: depends only on the user seed and the checkpoint's name,
    so adding or removing other checkpoints never changes a checkpoint's CI."""
    tag = zlib.crc32(f"{model}\n{revision}".encode())
    return int(seed) * (1 << 32) + tag


def pair_table(directed: pd.DataFrame) -> pd.DataFrame:
    """Pair rows of one checkpoint from its directed rows (columns protocol, layer_i, layer_j,
    kl_mean). One row per i < j that has both replacement directions and the interchange.

    Also returns, in ``attrs["row_index"]``, a ``[n_pairs, 3]`` array with the positions in
    ``directed`` of r(i<-j), r(j<-i) and the interchange row (used by the bootstrap).
    """
    d = directed.reset_index(drop=True)
    proto = d["protocol"].to_numpy(dtype=object)
    li = d["layer_i"].to_numpy(dtype=object)
    lj = d["layer_j"].to_numpy(dtype=object)
    repl = {(int(li[r]), int(lj[r])): r for r in np.flatnonzero(proto == "replacement")}
    inter = {(int(li[r]), int(lj[r])): r for r in np.flatnonzero(proto == "interchange")}
    pairs = sorted(p for p in inter if p in repl and p[::-1] in repl)
    idx = np.array([[repl[p], repl[p[::-1]], inter[p]] for p in pairs], dtype=np.int64).reshape(-1, 3)
    kl = d["kl_mean"].to_numpy(dtype=np.float64)
    r_ij, r_ji, d_inter = kl[idx[:, 0]], kl[idx[:, 1]], kl[idx[:, 2]]
    d_max = np.maximum(r_ij, r_ji)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d_max > 0, d_inter / np.where(d_max > 0, d_max, 1.0), np.nan)
    out = pd.DataFrame({
        "layer_i": np.array([p[0] for p in pairs], dtype=np.int64),
        "layer_j": np.array([p[1] for p in pairs], dtype=np.int64),
        "r_ij": r_ij,
        "r_ji": r_ji,
        "d_repl_max": d_max,
        "d_repl_mean": (r_ij + r_ji) / 2.0,
        "d_inter": d_inter,
    })
    out["gap"] = out["d_repl_max"] - out["d_inter"]
    out["ratio_ir"] = ratio
    out["distance"] = out["layer_j"] - out["layer_i"]
    out["class_repl"] = swap_class(out["d_repl_max"])
    out["class_inter"] = swap_class(out["d_inter"])
    out.attrs["row_index"] = idx
    return out


def missing_pairs(pairs: pd.DataFrame, pair_set: str, n_layers: int) -> list[tuple[int, int]]:
    """Pairs of ``pair_set`` that have no pair row (not probed by both protocols)."""
    have = set(zip(pairs["layer_i"].tolist(), pairs["layer_j"].tolist()))
    return [p for p in pairs_for(pair_set, n_layers) if p not in have]


def bootstrap_gaps(seq_kl: np.ndarray, seq_tokens: np.ndarray, row_index: np.ndarray,
                   n_boot: int, seed: int) -> np.ndarray:
    """``[n_boot, n_pairs]`` per-pair gaps recomputed on resampled sequences.

    ``seq_kl``/``seq_tokens`` are ``[n_variants, n_seqs]``; ``row_index`` is ``pair_table``'s
    ``attrs["row_index"]``; the resampled indices come from
    :func:`swapkl.bootstrap.resample_indices` with ``seed``.
    """
    n_seqs = seq_kl.shape[1]
    idx = resample_indices(n_seqs, n_boot, seed)
    # counts[b, s]: how often sequence s is drawn in resample b
    flat = (idx + np.arange(n_boot, dtype=np.int64)[:, None] * n_seqs).ravel()
    counts = np.bincount(flat, minlength=n_boot * n_seqs).reshape(n_boot, n_seqs).astype(np.float64)
    used = np.unique(row_index.ravel())
    pos = np.searchsorted(used, row_index)
    num = counts @ seq_kl[used].T
    den = counts @ seq_tokens[used].T
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = num / den
    r_ij, r_ji, inter = kl[:, pos[:, 0]], kl[:, pos[:, 1]], kl[:, pos[:, 2]]
    return np.maximum(r_ij, r_ji) - inter


def summarise_set(pairs: pd.DataFrame, member: np.ndarray, boot_gaps: np.ndarray | None) -> dict:
    """Summary statistics of the pairs selected by boolean ``member`` (see aggregate's docstring)."""
    sel = pairs[member]
    gap = sel["gap"].to_numpy(dtype=np.float64)
    d_max = sel["d_repl_max"].to_numpy(dtype=np.float64)
    d_inter = sel["d_inter"].to_numpy(dtype=np.float64)
    ratio = sel["ratio_ir"].to_numpy(dtype=np.float64)
    n = len(sel)
    ci_low = ci_high = float("nan")
    if boot_gaps is not None and n:
        ci_low, ci_high = percentile_ci(boot_gaps[:, member].mean(axis=1), CI_LEVEL)

    def stat(fn, x):
        return float(fn(x)) if len(x) else float("nan")

    finite_ratio = ratio[np.isfinite(ratio)]
    return {
        "n_pairs": n,
        "gap_mean": stat(np.mean, gap),
        "gap_median": stat(np.median, gap),
        "gap_p75": stat(lambda x: np.quantile(x, 0.75), gap),
        "gap_max": stat(np.max, gap),
        "gap_min": stat(np.min, gap),
        "gap_mean_ci_low": ci_low,
        "gap_mean_ci_high": ci_high,
        "d_repl_max_mean": stat(np.mean, d_max),
        "d_inter_mean": stat(np.mean, d_inter),
        "ratio_ir_median": stat(np.median, finite_ratio),
        "frac_inter_le_repl": stat(np.mean, (d_inter <= d_max).astype(np.float64)),
        "n_strong_repl": int((d_max < STRONG_BELOW).sum()),
        "n_strong_inter": int((d_inter < STRONG_BELOW).sum()),
    }
