"""Percentile bootstrap over sequences."""

from __future__ import annotations

import numpy as np
import pytest

from swapkl.stats.bootstrap import percentile_ci, ratio_ci, ratio_mean, resample_indices


def _data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    counts = rng.integers(5, 30, size=n).astype(float)
    sums = counts * rng.gamma(2.0, 0.1, size=n)
    return sums, counts


def test_indices_shape_range_and_determinism():
    a = resample_indices(7, 500, seed=3)
    assert a.shape == (500, 7) and a.min() >= 0 and a.max() <= 6
    assert np.array_equal(a, resample_indices(7, 500, seed=3))
    assert not np.array_equal(a, resample_indices(7, 500, seed=4))
    assert len(np.unique(a)) == 7  # with 3500 draws every sequence appears


def test_ci_contains_mean_and_is_deterministic():
    sums, counts = _data()
    mean = ratio_mean(sums, counts)
    assert mean == pytest.approx(sums.sum() / counts.sum(), rel=1e-15)
    lo, hi = ratio_ci(sums, counts, resample_indices(len(sums), 1000, seed=0))
    assert lo < mean < hi
    assert (lo, hi) == ratio_ci(sums, counts, resample_indices(len(sums), 1000, seed=0))
    lo2, hi2 = ratio_ci(sums, counts, resample_indices(len(sums), 1000, seed=1))
    assert (lo2, hi2) != (lo, hi)
    assert lo2 < mean < hi2


def test_ci_is_token_weighted_ratio_of_resampled_sums():
    """Hand-checkable: 2 sequences, 3 explicit resamplings."""
    sums = np.array([1.0, 9.0])
    counts = np.array([1.0, 3.0])
    idx = np.array([[0, 0], [1, 1], [0, 1]])
    # resampled statistics: 2/2 = 1, 18/6 = 3, 10/4 = 2.5  -> sorted [1, 2.5, 3]
    # numpy linear quantiles: q=0.025 -> position 0.05 -> 1 + 0.05*1.5 = 1.075
    #                         q=0.975 -> position 1.95 -> 2.5 + 0.95*0.5 = 2.975
    lo, hi = ratio_ci(sums, counts, idx)
    assert lo == pytest.approx(1.075)
    assert hi == pytest.approx(2.975)
    assert ratio_mean(sums, counts) == pytest.approx(2.5)  # not the mean of per-sequence means (2.0)


def test_constant_ratio_gives_a_point_interval():
    counts = np.array([3.0, 5.0, 8.0])
    lo, hi = ratio_ci(0.25 * counts, counts, resample_indices(3, 200, seed=9))
    assert lo == pytest.approx(0.25) and hi == pytest.approx(0.25)


def test_wider_level_gives_wider_interval():
    sums, counts = _data(seed=2)
    idx = resample_indices(len(sums), 1000, seed=0)
    lo95, hi95 = ratio_ci(sums, counts, idx, level=0.95)
    lo50, hi50 = ratio_ci(sums, counts, idx, level=0.50)
    assert lo95 < lo50 < hi50 < hi95


def test_no_resamples_or_no_tokens_gives_nan():
    sums, counts = _data()
    assert all(np.isnan(ratio_ci(sums, counts, resample_indices(len(sums), 0, seed=0))))
    assert all(np.isnan(ratio_ci(np.zeros(3), np.zeros(3), resample_indices(3, 10, seed=0))))
    assert np.isnan(ratio_mean(np.zeros(3), np.zeros(3)))


def test_percentile_ci_is_the_interpolated_order_statistics_of_the_finite_values():
    rng = np.random.default_rng(5)
    stats = rng.normal(size=999)
    with_gaps = np.concatenate([stats, [np.nan, np.inf, -np.inf]])
    # independent: the (n-1)*q-th order statistic, interpolated linearly between its neighbours
    s = np.sort(stats)

    def order_stat(q):
        pos = (len(s) - 1) * q
        k = int(np.floor(pos))
        return s[k] + (pos - k) * (s[k + 1] - s[k])

    lo, hi = percentile_ci(with_gaps, 0.9)
    assert lo == pytest.approx(order_stat(0.05), rel=1e-12) and hi == pytest.approx(order_stat(0.95), rel=1e-12)
    assert np.isnan(percentile_ci(np.array([np.nan, np.inf]))).all()
    assert np.isnan(percentile_ci(np.array([]))).all()


def test_ratio_ci_is_the_percentile_ci_of_the_resampled_ratios():
    sums, counts = _data()
    idx = resample_indices(len(sums), 400, seed=2)
    ratios = [sums[i].sum() / counts[i].sum() for i in idx]
    # summation order may differ (row sums vs 1-D sums): relative error ~ n * eps with n = 20 terms
    assert ratio_ci(sums, counts, idx) == pytest.approx(percentile_ci(np.array(ratios)), rel=1e-12)
