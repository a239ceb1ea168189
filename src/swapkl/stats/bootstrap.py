"""Percentile bootstrap over sequences for token-weighted means.

Every statistic in swapkl is a ratio ``sum_s x_s / sum_s n_s`` over sequences s (x_s is
a per-sequence sum over valid positions, n_s the number of valid positions), so one
resampling of sequence indices serves every variant of a checkpoint and the CIs of
different variants are paired.
"""

from __future__ import annotations

import numpy as np


def resample_indices(n_seqs: int, n_boot: int, seed: int) -> np.ndarray:
    """``[n_boot, n_seqs]`` indices drawn with replacement, deterministic given ``seed``."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_seqs, size=(n_boot, n_seqs))


def ratio_mean(sums: np.ndarray, counts: np.ndarray) -> float:
    total = float(np.sum(counts))
    return float(np.sum(sums) / total) if total > 0 else float("nan")


def ratio_resamples(sums: np.ndarray, counts: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``sum(sums)/sum(counts)`` under each resampling of ``idx`` (NaN where a resample has no count): paired
    across quantities resampled with the same ``idx``."""
    sums = np.asarray(sums, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[idx].sum(axis=1) / counts[idx].sum(axis=1)


def ratio_ci(sums: np.ndarray, counts: np.ndarray, idx: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile CI of ``sum(sums)/sum(counts)`` under the resamplings ``idx``."""
    if idx.shape[0] == 0 or np.sum(counts) == 0:
        return float("nan"), float("nan")
    return percentile_ci(ratio_resamples(sums, counts, idx), level)


def percentile_ci(stats: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap CI at ``level``: the (1-level)/2 and (1+level)/2 quantiles (numpy's
    linear interpolation) of the finite resampled statistics; NaN, NaN when none is finite. The one
    implementation of the CI that every swapkl table reports."""
    stats = np.asarray(stats, dtype=np.float64)
    stats = stats[np.isfinite(stats)]
    if stats.size == 0:
        return float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def boot_log_ppl(nll_sum, tokens, idx: np.ndarray) -> np.ndarray:
    """Mean NLL (log PPL) under each resampling of windows ``idx`` [n_boot, W]."""
    nll_sum = np.asarray(nll_sum, dtype=np.float64)
    tokens = np.asarray(tokens, dtype=np.float64)
    return nll_sum[idx].sum(1) / tokens[idx].sum(1)


class AgainstBase:
    """The one paired bootstrap against a base model: evaluation windows resampled by
    ``resample_indices(n_windows, n_boot, seed)``, the same resamples for the base and every model compared with
    it, so each resampled increase is the model's and the base's perplexity on the same windows.

    ``base_nll_sum`` and ``tokens`` are the base model's per-window NLL sums and token counts."""

    def __init__(self, base_nll_sum, tokens, n_boot: int, seed: int):
        self.tokens = np.asarray(tokens, dtype=np.float64)
        self.idx = resample_indices(len(self.tokens), n_boot, seed)
        self.base = boot_log_ppl(base_nll_sum, self.tokens, self.idx)

    def log_ppl(self, nll_sum) -> np.ndarray:
        """A model's mean NLL (log perplexity) under each resampling."""
        return boot_log_ppl(nll_sum, self.tokens, self.idx)

    def increase(self, nll_sum) -> np.ndarray:
        """A model's relative perplexity increase over the base, ``exp(log_ppl - base_log_ppl) - 1``, under each
        resampling."""
        return np.expm1(self.log_ppl(nll_sum) - self.base)
