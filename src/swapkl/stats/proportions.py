"""Confidence intervals of a proportion (an accuracy over n scored items)."""

from __future__ import annotations

import numpy as np

#: the normal quantile of a two-sided 95% interval
Z95 = 1.959963984540054


def wilson_interval(p, n, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of the proportion ``p`` (a fraction, 0..1) observed on ``n`` items: (low, high),
    elementwise. It stays inside [0, 1] and keeps its coverage near 0 and 1, where the normal interval does not."""
    p, n = np.asarray(p, dtype=np.float64), np.asarray(n, dtype=np.float64)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half
