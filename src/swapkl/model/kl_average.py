"""How per-sequence KL sums become the mean a statistic takes, without torch (the aggregates read it)."""

from __future__ import annotations

import numpy as np

from swapkl.stats.bootstrap import ratio_mean


def per_prompt_means(kl_sums, counts) -> tuple[np.ndarray, np.ndarray]:
    """``average: prompts`` in the ratio form every swapkl statistic takes: each sequence's mean KL with a
    weight of 1 (sequences that count no position, e.g. padding columns, keep weight 0)."""
    kl_sums, counts = np.asarray(kl_sums, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    has = counts > 0
    return np.where(has, kl_sums / np.where(has, counts, 1.0), 0.0), has.astype(np.float64)


def reported_kl_mean(options, kl_sums, counts) -> float:
    """The mean a probe reports under ``options`` (:class:`swapkl.model.kl_options.KLOptions`) from per-sequence
    KL sums and counted positions (NaN when nothing counts)."""
    if options.average == "tokens":
        return ratio_mean(kl_sums, counts)
    per_prompt, ones = per_prompt_means(kl_sums, counts)
    return ratio_mean(per_prompt, ones)
