"""The Wilson interval of an accuracy against scipy's own (binomtest(...).proportion_ci(method="wilson"))."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from swapkl.stats.proportions import wilson_interval


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (86, 100), (100, 100), (36, 100), (1, 7)])
def test_wilson_interval_matches_scipy(k, n):
    lo, hi = wilson_interval(k / n, n)
    ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert (float(lo), float(hi)) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_elementwise():
    lo, hi = wilson_interval(np.array([0.5, 0.9]), np.array([100, 1000]))
    assert lo.shape == (2,) and (lo < [0.5, 0.9]).all() and (hi > [0.5, 0.9]).all() and hi[1] - lo[1] < hi[0] - lo[0]
