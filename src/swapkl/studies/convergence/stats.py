"""Prompt-set convergence from stored per-sequence sums (no forward pass), ``results/convergence.parquet``.

For a checkpoint's replacement and interchange probe files, every pair's score is recomputed on random
subsets of N sequences (drawn without replacement, ``draws`` times per N): d_repl_max (the larger
direction) for replacement, d_inter for interchange, each a token-weighted mean ``sum KL / sum tokens``
over the subset. One row per (model, revision, protocol, N):

    n (sequences), n_seqs (of the full set), draws, n_pairs, spearman_median, spearman_q05, spearman_q95
    (Spearman's rho of the subset's pair scores with the full set's, over draws), top_pair_share (share of
    draws whose lowest-KL pair is the full set's), top_kl (the full set's best KL), top_kl_rel_width
    (width of the 2.5-97.5% range of that pair's KL over draws, relative to top_kl).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from swapkl.tables import provenance
from swapkl.stats.rank_correlation import spearman
from swapkl.probes.aggregate_inputs import read_probe_file
from swapkl.errors import SwapKLError
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.progress import track

DEFAULT_SIZES = (10, 20, 50, 100, 200, 500, 1000)


def pair_sums(probe_files) -> dict[str, tuple[list[tuple[int, int]], np.ndarray, np.ndarray]]:
    """protocol -> (pairs i<j, per-sequence KL sums ``[pairs, (directions,) seqs]``, tokens ``[seqs]``)."""
    out = {}
    for path in probe_files:
        p = read_probe_file(path)
        rows = p.rows.reset_index(drop=True)
        tokens = p.seq_tokens[0].astype(np.float64)
        for protocol in ("replacement", "interchange"):
            sel = rows.index[rows["protocol"] == protocol].to_numpy()
            if len(sel) == 0:
                continue
            key = {(int(rows.loc[k, "layer_i"]), int(rows.loc[k, "layer_j"])): k for k in sel}
            pairs = sorted({(min(i, j), max(i, j)) for i, j in key})
            if protocol == "replacement":
                missing = [(i, j) for i, j in pairs if (i, j) not in key or (j, i) not in key]
                if missing:
                    raise SwapKLError(f"{path}: replacement pairs {missing[:3]} lack one direction")
                kl = np.stack([p.seq_kl[[key[(i, j)], key[(j, i)]]] for i, j in pairs])
            else:
                kl = np.stack([p.seq_kl[key[pr]] for pr in pairs])
            out[protocol] = (pairs, kl.astype(np.float64), tokens)
    if not out:
        raise SwapKLError("convergence: the probe files hold no replacement or interchange rows")
    return out


def scores(kl: np.ndarray, tokens: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Pair scores on the sequences ``idx`` (``[draws, n]`` or ``[n]``): token-weighted mean KL, the larger
    direction for replacement (``kl`` with a directions axis)."""
    t = tokens[idx].sum(-1)
    s = kl[..., idx].sum(-1) / t  # [pairs, (dirs,) draws]
    return s.max(axis=1) if kl.ndim == 3 else s


def convergence_rows(kl: np.ndarray, tokens: np.ndarray, sizes, draws: int, seed: int) -> list[dict]:
    n_seqs = kl.shape[-1]
    full = scores(kl, tokens, np.arange(n_seqs))
    best = int(np.argmin(full))
    rng = np.random.default_rng(seed)
    out = []
    for n in [s for s in sizes if s < n_seqs] + [n_seqs]:
        idx = np.stack([rng.choice(n_seqs, size=n, replace=False) for _ in range(draws)])
        sub = scores(kl, tokens, idx).T  # [draws, pairs]
        rho = spearman(sub, np.broadcast_to(full, sub.shape))
        lo, hi = np.quantile(sub[:, best], [0.025, 0.975])
        out.append({"n": n, "n_seqs": n_seqs, "draws": draws, "n_pairs": len(full),
                    "spearman_median": float(np.nanmedian(rho)), "spearman_q05": float(np.nanquantile(rho, 0.05)),
                    "spearman_q95": float(np.nanquantile(rho, 0.95)),
                    "top_pair_share": float((sub.argmin(axis=1) == best).mean()),
                    "top_kl": float(full[best]), "top_kl_rel_width": float((hi - lo) / full[best])})
    return out


def build_convergence(checkpoints: dict[tuple[str, str], list[str]], out: str | Path, *, sizes=DEFAULT_SIZES,
                      draws: int = 50, seed: int = 0) -> pd.DataFrame:
    """``checkpoints``: (model, revision) -> its probe files. Writes ``out`` (see the module docstring)."""
    if draws < 2:
        raise SwapKLError(f"convergence: draws must be >= 2, not {draws}")
    if not checkpoints:
        raise SwapKLError("convergence: no checkpoint is marked for the prompt-set convergence")
    check_writable(str(out))
    rows = []
    for (model, revision), files in track(list(checkpoints.items()), "convergence", "checkpoint"):
        for protocol, (pairs, kl, tokens) in pair_sums(files).items():
            for r in convergence_rows(kl, tokens, sizes, draws, seed):
                rows.append({"model": model, "revision": revision, "protocol": protocol, **r})
    df = pd.DataFrame(rows)
    write_parquet(df, str(out), {**provenance.software_versions(), "sizes": list(sizes), "draws": draws,
                                 "seed": seed, "inputs": {f"{m}@{r}": list(map(str, f))
                                                          for (m, r), f in checkpoints.items()}})
    return df
