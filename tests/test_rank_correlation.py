"""The one Spearman/Kendall of swapkl (swapkl.stats.rank_correlation) and the one paired bootstrap against the
base (swapkl.stats.bootstrap.AgainstBase), against scipy and direct loops written here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from swapkl.stats.agreement import compare
from swapkl.stats.bootstrap import AgainstBase
from swapkl.stats.rank_correlation import average_ranks, spearman, spearman_kendall


def _average_ranks(v: list[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of their positions (a direct loop)."""
    return [sum(1 for w in v if w < x) + (sum(1 for w in v if w == x) + 1) / 2 for x in v]


def _pearson(a: list[float], b: list[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return num / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


def _cases(seed: int = 0):
    rng = np.random.default_rng(seed)
    for k in range(60):
        n = int(rng.integers(3, 25))
        x, y = rng.normal(size=n), rng.normal(size=n)
        if k % 3 == 0:  # ties
            x, y = np.round(x, 0), np.round(y, 1)
        if k % 7 == 0:
            y = x + 0.01 * rng.normal(size=n)
        yield x, y


def test_both_computations_equal_scipy_and_a_direct_loop():
    for x, y in _cases():
        want = _pearson(_average_ranks(list(x)), _average_ranks(list(y)))
        rho, tau = spearman_kendall(x, y)
        assert rho == pytest.approx(want, abs=1e-12) and float(spearman(x, y)) == pytest.approx(want, abs=1e-12)
        assert rho == float(stats.spearmanr(x, y).statistic)  # bit for bit: the agreement tables do not move
        assert tau == float(stats.kendalltau(x, y).statistic)



@pytest.mark.parametrize("shape", [(7,), (1,), (4, 9), (3, 2, 6), (0,), (2, 0)])
def test_average_ranks_are_scipys_bit_for_bit(shape):
    rng = np.random.default_rng(sum(shape) + len(shape))
    for trial in range(20):
        x = rng.normal(size=shape)
        if trial % 2:  # ties, within and across rows
            x = np.round(x, 0)
        if trial % 5 == 4 and x.size:  # a NaN in one row: that row ranks all NaN
            x.reshape(-1, shape[-1])[0, 0] = np.nan
        got, want = average_ranks(x), stats.rankdata(x, axis=-1)
        assert got.shape == want.shape and got.dtype == np.float64
        np.testing.assert_array_equal(got, want)


def test_rows_are_independent_pairs():
    cases = [(x[:5], y[:5]) for x, y in _cases(1) if len(x) >= 5]
    x, y = np.array([c[0] for c in cases]), np.array([c[1] for c in cases])
    got = spearman(x, y)
    for k, (a, b) in enumerate(cases):
        assert got[k] == float(spearman(a, b))


@pytest.mark.parametrize("x, y, min_points", [
    ([1.0], [2.0], 2),  # one point
    ([], [], 2),
    ([1.0, 2.0], [3.0, 1.0], 3),  # fewer than the caller's minimum
    ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], 2),  # a constant input
    ([1.0, 2.0, 3.0], [5.0, 5.0, 5.0], 2),
    ([1.0, np.nan, 3.0], [1.0, 2.0, 3.0], 2),  # NaN propagates
])
def test_one_nan_rule(x, y, min_points):
    assert np.isnan(spearman(x, y, min_points=min_points))
    rho, tau = spearman_kendall(x, y, min_points=min_points)
    assert np.isnan(rho) and np.isnan(tau)


def test_defined_at_the_minimum():
    assert float(spearman([1.0, 2.0], [3.0, 1.0])) == -1.0
    assert spearman_kendall([1.0, 2.0, 3.0], [1.0, 3.0, 2.0], min_points=3)[0] == 0.5


def test_rows_with_a_constant_row_give_nan_only_there():
    got = spearman(np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]]), np.array([[1.0, 3.0, 2.0], [1.0, 2.0, 3.0]]))
    assert got[0] == 0.5 and np.isnan(got[1])


def test_compare_drops_unscored_layers_then_applies_the_rule():
    c = compare([1.0, np.nan, 2.0, 3.0], [3.0, 9.0, 2.0, 1.0])
    assert c["n_compared"] == 3 and c["spearman"] == -1.0 and c["kendall"] == -1.0
    assert np.isnan(compare([1.0, np.nan], [2.0, 3.0])["spearman"])


def test_against_base_resamples_the_same_windows_for_base_and_model():
    rng = np.random.default_rng(3)
    tokens = rng.integers(5, 20, size=11).astype(float)
    base = rng.uniform(1, 3, size=11) * tokens
    model = base * rng.uniform(1.0, 1.5, size=11)
    paired = AgainstBase(base, tokens, 40, 7)
    draws = np.random.default_rng(7).integers(0, 11, size=(40, 11))  # resample_indices' draw, written out
    got = paired.increase(model)
    for b in range(40):
        w = draws[b]
        want = math.exp(model[w].sum() / tokens[w].sum()) / math.exp(base[w].sum() / tokens[w].sum()) - 1
        assert got[b] == pytest.approx(want, rel=1e-12)
        assert paired.log_ppl(model)[b] == pytest.approx(model[w].sum() / tokens[w].sum(), rel=1e-14)
    assert np.all(paired.increase(base) == 0.0)
