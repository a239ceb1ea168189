"""Pair statistics derived from directed replacement and interchange measurements of one checkpoint.

For a pair i < j:

* ``r_ij = r(i<-j)`` is the KL of the replacement variant where slot i runs block j, ``r_ji`` the
  reverse direction;
* ``d_repl_max = max(r_ij, r_ji)`` (the conservative score), ``d_repl_mean = (r_ij + r_ji) / 2``;
* ``d_inter`` is the KL of the interchange variant ``M_{i<->j}``;
* ``gap = d_repl_max - d_inter`` and ``ratio_ir = d_inter / d_repl_max`` (NaN when d_repl_max is 0);
* the one-direction variant the paper's Pythia trajectory measured: ``d_repl_fwd = r_ij`` (for i < j,
  slot i runs block j), ``gap_fwd = d_repl_fwd - d_inter`` and ``ratio_ir_fwd = d_inter / d_repl_fwd``;
* ``class_repl`` / ``class_inter``: swap-similarity class of d_repl_max / d_inter: ``"strong"`` if
  d < 0.05, ``"conditional"`` if 0.05 <= d < 0.10, else ``"none"``.

Bootstrap of the mean gap: one set of resampled sequence indices per checkpoint (every variant is
measured on the same sequences), each variant's KL recomputed from its per-sequence sums as
``sum(seq_kl_sum[idx]) / sum(seq_tokens[idx])``, every pair's gap recomputed, then averaged over
the pair set; the 2.5 and 97.5 percentiles of those means give the 95% CI. The same resamples give
the CI of the mean one-direction gap.

Summaries are computed for both gap definitions (``gap_*`` from d_repl_max, ``gap_fwd_*`` from
d_repl_fwd), with the same statistics; :data:`GAP_DEFINITIONS` names them for the figures.
"""

from __future__ import annotations

import re
import zlib

import numpy as np
import pandas as pd

from swapkl.stats.bootstrap import percentile_ci, resample_indices
from swapkl.probes.pairs import pairs_for, parse_pair_set

#: gap definition -> (pair column of the gap, of its replacement distance, of its I/R ratio)
GAP_DEFINITIONS = {"max": ("gap", "d_repl_max", "ratio_ir"), "fwd": ("gap_fwd", "d_repl_fwd", "ratio_ir_fwd")}

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
    out["ratio_ir"] = _ratio(d_inter, d_max)
    out["d_repl_fwd"] = r_ij
    out["gap_fwd"] = r_ij - d_inter
    out["ratio_ir_fwd"] = _ratio(d_inter, r_ij)
    out["distance"] = out["layer_j"] - out["layer_i"]
    out["class_repl"] = swap_class(out["d_repl_max"])
    out["class_inter"] = swap_class(out["d_inter"])
    out.attrs["row_index"] = idx
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def missing_pairs(pairs: pd.DataFrame, pair_set: str, n_layers: int) -> list[tuple[int, int]]:
    """Pairs of ``pair_set`` that have no pair row (not probed by both protocols)."""
    have = set(zip(pairs["layer_i"].tolist(), pairs["layer_j"].tolist()))
    return [p for p in pairs_for(pair_set, n_layers) if p not in have]


def bootstrap_gaps(seq_kl: np.ndarray, seq_tokens: np.ndarray, row_index: np.ndarray,
                   n_boot: int, seed: int) -> dict[str, np.ndarray]:
    """Per-pair gaps recomputed on resampled sequences: ``{"max": [n_boot, n_pairs] array of
    d_repl_max - d_inter, "fwd": the same for d_repl_fwd - d_inter}``.

    ``seq_kl``/``seq_tokens`` are ``[n_variants, n_seqs]``; ``row_index`` is ``pair_table``'s
    ``attrs["row_index"]``; the resampled indices come from
    :func:`swapkl.stats.bootstrap.resample_indices` with ``seed``.
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
    return {"max": np.maximum(r_ij, r_ji) - inter, "fwd": r_ij - inter}


def pair_gap_intervals(boot_gaps: np.ndarray | None, n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """The percentile CI (:data:`CI_LEVEL`) of each pair's gap from :func:`bootstrap_gaps`' resamples (``[n_boot,
    n_pairs]``); NaN without resamples."""
    if boot_gaps is None:
        return np.full(n_pairs, np.nan), np.full(n_pairs, np.nan)
    low, high = zip(*(percentile_ci(boot_gaps[:, k], CI_LEVEL) for k in range(n_pairs))) if n_pairs else ((), ())
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def _mean_ci(boot_gaps: np.ndarray | None, member: np.ndarray) -> tuple[float, float]:
    if boot_gaps is None or not member.any():
        return float("nan"), float("nan")
    return percentile_ci(boot_gaps[:, member].mean(axis=1), CI_LEVEL)


def _stat(fn, x) -> float:
    return float(fn(x)) if len(x) else float("nan")


def _gap_stats(sel: pd.DataFrame, definition: str, boot: np.ndarray | None, member: np.ndarray) -> dict:
    """Statistics of one gap definition; keys are prefixed by the gap column (``gap_`` / ``gap_fwd_``)."""
    gcol, dcol, rcol = GAP_DEFINITIONS[definition]
    gap = sel[gcol].to_numpy(dtype=np.float64)
    d_repl = sel[dcol].to_numpy(dtype=np.float64)
    ratio = sel[rcol].to_numpy(dtype=np.float64)
    ratio = ratio[np.isfinite(ratio)]
    lo, hi = _mean_ci(boot, member)
    total = gap.sum() if len(gap) else float("nan")
    return {
        f"{gcol}_mean": _stat(np.mean, gap),
        f"{gcol}_median": _stat(np.median, gap),
        f"{gcol}_p75": _stat(lambda x: np.quantile(x, 0.75), gap),
        f"{gcol}_max": _stat(np.max, gap),
        f"{gcol}_min": _stat(np.min, gap),
        f"{gcol}_mean_ci_low": lo,
        f"{gcol}_mean_ci_high": hi,
        # share of the summed (hence of the mean) gap that comes from the single largest pair
        f"{gcol}_max_share": float(gap.max() / total) if len(gap) and total > 0 else float("nan"),
        f"{dcol}_mean": _stat(np.mean, d_repl),
        f"{rcol}_mean": _stat(np.mean, ratio),
        f"{rcol}_median": _stat(np.median, ratio),
    }


def summarise_set(pairs: pd.DataFrame, member: np.ndarray, boot_gaps: dict[str, np.ndarray] | None) -> dict:
    """Summary statistics of the pairs selected by boolean ``member`` (see aggregate's docstring)."""
    sel = pairs[member]
    d_max = sel["d_repl_max"].to_numpy(dtype=np.float64)
    d_inter = sel["d_inter"].to_numpy(dtype=np.float64)
    out = {"n_pairs": len(sel)}
    for definition in GAP_DEFINITIONS:
        out.update(_gap_stats(sel, definition, None if boot_gaps is None else boot_gaps[definition], member))
    out.update({
        "d_inter_mean": _stat(np.mean, d_inter),
        "frac_inter_le_repl": _stat(np.mean, (d_inter <= d_max).astype(np.float64)),
        "n_strong_repl": int((d_max < STRONG_BELOW).sum()),
        "n_strong_inter": int((d_inter < STRONG_BELOW).sum()),
    })
    return out
