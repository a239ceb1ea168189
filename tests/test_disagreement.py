"""The disagreement map between tests: statistics against scipy, scores against hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from swapkl.stats.bootstrap import resample_indices
from swapkl.probes.disagreement import Scores, add_block_minimum, add_pair_tests, agreement_table


def _random_scores(n_items=9, n_windows=12, seed=0):
    rng = np.random.default_rng(seed)
    den = rng.integers(5, 20, size=(1, n_windows)).repeat(n_items, 0).astype(float)
    a = rng.gamma(2.0, 1.0, size=(n_items, n_windows)) * den
    b = a * rng.uniform(0.2, 3.0, size=(n_items, n_windows))  # related but noisy
    s = Scores(n_windows)
    s.ratio("a", "block", list(range(n_items)), a, den)
    s.ratio("b", "block", list(range(n_items)), b, den)
    return s, a, b, den


def test_point_statistics_and_bootstrap_cis_match_scipy():
    s, a, b, den = _random_scores()
    df = agreement_table(s, {"model": "m", "revision": "r"}, n_boot=200, seed=3)
    row = df.iloc[0]
    xa, xb = a.sum(1) / den.sum(1), b.sum(1) / den.sum(1)
    assert row["spearman"] == pytest.approx(stats.spearmanr(xa, xb).statistic, abs=1e-12)
    assert row["kendall"] == pytest.approx(stats.kendalltau(xa, xb).statistic, abs=1e-12)
    idx = resample_indices(a.shape[1], 200, 3)
    rho, tau = [], []
    for r in idx:
        ra, rb = a[:, r].sum(1) / den[:, r].sum(1), b[:, r].sum(1) / den[:, r].sum(1)
        rho.append(stats.spearmanr(ra, rb).statistic)
        tau.append(stats.kendalltau(ra, rb).statistic)
    assert row["spearman_ci_low"] == pytest.approx(np.quantile(rho, 0.025), abs=1e-12)
    assert row["spearman_ci_high"] == pytest.approx(np.quantile(rho, 0.975), abs=1e-12)
    assert row["kendall_ci_low"] == pytest.approx(np.quantile(tau, 0.025), abs=1e-12)
    assert row["kendall_ci_high"] == pytest.approx(np.quantile(tau, 0.975), abs=1e-12)


def _probe_rows(n_layers=4, n_windows=5, seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_layers):
        for j in range(n_layers):
            if i != j:
                rows.append(dict(protocol="replacement", layer_i=i, layer_j=j, seq_kl_sum=rng.random(n_windows).tolist(),
                                 seq_tokens=[10] * n_windows))
    for i in range(n_layers):
        for j in range(i + 1, n_layers):
            rows.append(dict(protocol="interchange", layer_i=i, layer_j=j, seq_kl_sum=rng.random(n_windows).tolist(),
                             seq_tokens=[10] * n_windows))
    return pd.DataFrame(rows)


def test_pair_scores_follow_their_definitions():
    rows = _probe_rows()
    s = Scores(5)
    add_pair_tests(s, rows, "")
    add_block_minimum(s, "replacement_max", 4)
    point = np.arange(5)[None, :]
    kl = {(r.layer_i, r.layer_j, r.protocol): sum(r.seq_kl_sum) / 50 for r in rows.itertuples()}
    level, pairs, fn = s.tests["replacement_max"]
    got = fn(point)[0]
    for k, (i, j) in enumerate(pairs):
        assert got[k] == pytest.approx(max(kl[(i, j, "replacement")], kl[(j, i, "replacement")]))
    fwd = s.tests["replacement_fwd"][2](point)[0]
    assert fwd[pairs.index((1, 3))] == pytest.approx(kl[(1, 3, "replacement")])
    blocks = s.tests["replacement_max_block"][2](point)[0]
    want = min(max(kl[(2, j, "replacement")], kl[(j, 2, "replacement")]) for j in (0, 1, 3))
    assert blocks[2] == pytest.approx(want)


def test_tests_of_different_levels_are_not_compared():
    rows = _probe_rows()
    s = Scores(5)
    add_pair_tests(s, rows, "")
    add_block_minimum(s, "interchange", 4)
    df = agreement_table(s, {"model": "m", "revision": "r"}, n_boot=20, seed=0)
    pair_tests = {"replacement_max", "replacement_fwd", "interchange"}
    for r in df.itertuples():
        assert ({r.test_a, r.test_b} <= pair_tests) == (r.level == "pair")
    assert len(df) == 3  # the three pair tests with each other; one block test alone


def test_vectorised_kendall_equals_scipy_with_ties():
    from swapkl.stats.rank_correlation import kendall

    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, size=(50, 9)).astype(float)  # many ties
    y = rng.integers(0, 3, size=(50, 9)).astype(float)
    got = kendall(x, y)
    for r in range(50):
        want = stats.kendalltau(x[r], y[r]).statistic
        assert (np.isnan(got[r]) and np.isnan(want)) or got[r] == pytest.approx(want, abs=1e-12)
