"""swapkl.stats.agreement's account of how much a Pearson r rests on a few blocks: the permutation p-value against
scipy's permutation test (exact on few points), Fisher's interval against scipy's, Tukey's fences by hand, and
r without the outlying blocks against numpy on the remaining ones."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from swapkl.stats.agreement import fisher_interval, outlying, pearson_permutation_p, pearson_robustness


def _r(x, y):
    return float(np.corrcoef(x, y)[0, 1])


def _pearson(a, b, axis=-1):
    """Pearson's r along ``axis`` (scipy's permutation test calls it on batches of resamples)."""
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    return (a * b).sum(axis=axis) / np.sqrt((a * a).sum(axis=axis) * (b * b).sum(axis=axis))


def test_the_permutation_p_value_is_exact_on_few_points():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=6), rng.normal(size=6)
    y = y + 0.8 * x
    observed = _r(x, y)
    # by hand: every one of the 720 pairings
    want = np.mean([_r(x, y[list(p)]) >= observed - 1e-12 for p in itertools.permutations(range(6))])
    assert pearson_permutation_p(x, y) == pytest.approx(want, abs=1e-12)
    ref = stats.permutation_test((x, y), _pearson, permutation_type="pairings",
                                 alternative="greater", n_resamples=np.inf, vectorized=True)
    assert pearson_permutation_p(x, y) == pytest.approx(ref.pvalue, abs=1e-12)


def test_the_permutation_p_value_on_many_points_is_within_monte_carlo_error_of_scipys():
    rng = np.random.default_rng(5)
    x = rng.normal(size=20)
    y = 0.3 * x + rng.normal(size=20)
    got = pearson_permutation_p(x, y)
    ref = stats.permutation_test((x, y), _pearson, permutation_type="pairings",
                                 alternative="greater", n_resamples=20_000, vectorized=True,
                                 rng=np.random.default_rng(1)).pvalue
    # two Monte Carlo estimates of one p (10,000 and 20,000 draws): their difference has SD below 0.006
    assert abs(got - ref) < 0.03 and 0 < got < 1
    assert pearson_permutation_p(x, -y) > 0.5  # disagreement is not agreement


def test_undefined_cases_give_nan():
    assert np.isnan(pearson_permutation_p([1.0, 2.0], [2.0, 1.0]))
    assert np.isnan(pearson_permutation_p([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert all(np.isnan(fisher_interval(0.5, 3)))


@pytest.mark.parametrize("r, m", [(0.84, 16), (-0.68, 28), (0.1, 13)])
def test_fisher_interval_is_scipys(r, m):
    # scipy's pearsonr gives Fisher's interval of the sample's r: build a sample with exactly that r
    rng = np.random.default_rng(0)
    x = rng.normal(size=m)
    e = rng.normal(size=m)
    e -= x * (e @ (x - x.mean())) / ((x - x.mean()) @ (x - x.mean()))
    e -= e.mean()
    x -= x.mean()
    y = r * x / np.linalg.norm(x) + np.sqrt(1 - r * r) * e / np.linalg.norm(e)
    res = stats.pearsonr(x, y)
    assert res.statistic == pytest.approx(r, abs=1e-12)
    ci = res.confidence_interval(0.95)
    assert fisher_interval(r, m) == pytest.approx((ci.low, ci.high), abs=1e-10)


def test_tukey_fences_by_hand():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 30.0, -20.0])
    q1, q3 = np.percentile(x, 25), np.percentile(x, 75)
    want = (x < q1 - 1.5 * (q3 - q1)) | (x > q3 + 1.5 * (q3 - q1))
    assert outlying(x).tolist() == want.tolist() == [False] * 8 + [True, True]


def test_one_outlying_block_can_carry_the_whole_agreement():
    """Unrelated scores on 15 blocks, and one block extreme on both: r is high with it and near 0 without."""
    rng = np.random.default_rng(2)
    x, y = rng.uniform(size=18), rng.uniform(size=18)  # no uniform draw lies outside the fences
    x[5], y[5] = 12.0, 12.0
    layers = list(range(1, 17))  # the interior of 18 blocks
    got = pearson_robustness(x, y, layers)
    assert got["outlying_layers"] == [5]
    rest = [b for b in layers if b != 5]
    assert got["n_without_outliers"] == 15
    assert got["pearson_without_outliers"] == pytest.approx(_r(x[rest], y[rest]), abs=1e-12)
    assert got["pearson_without_outliers_paper_sign"] == -got["pearson_without_outliers"]
    assert got["pearson_p"] < 0.05 < got["pearson_without_outliers_p"]
    assert got["pearson_without_outliers_p"] == pearson_permutation_p(x[rest], y[rest])
