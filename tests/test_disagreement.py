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


def test_rankings_of_fewer_than_min_items_are_marked_and_get_no_ci():
    from swapkl.probes.disagreement import MIN_ITEMS

    for n_items in (3, MIN_ITEMS - 1, MIN_ITEMS):
        s, a, b, den = _random_scores(n_items=n_items, seed=n_items)
        row = agreement_table(s, {"model": "m", "revision": "r"}, n_boot=100, seed=0).iloc[0]
        xa, xb = a.sum(1) / den.sum(1), b.sum(1) / den.sum(1)
        # the point estimates stay (descriptive), scipy's
        assert row["n_items"] == n_items
        assert row["spearman"] == pytest.approx(stats.spearmanr(xa, xb).statistic, abs=1e-12)
        assert row["kendall"] == pytest.approx(stats.kendalltau(xa, xb).statistic, abs=1e-12)
        cis = row[["spearman_ci_low", "spearman_ci_high", "kendall_ci_low", "kendall_ci_high"]].astype(float)
        if n_items < MIN_ITEMS:
            assert bool(row["too_few_items"]) and cis.isna().all()
        else:
            assert not row["too_few_items"] and np.isfinite(cis).all()


def _critical_abs_rho(n: int) -> float | None:
    """The smallest |rho| whose exact two-sided permutation p-value is <= 0.05 for n items (None: none is)."""
    import itertools

    perms = np.array(list(itertools.permutations(range(n))))
    rho = np.round(1 - 6 * ((perms - np.arange(n)) ** 2).sum(1) / (n * (n * n - 1)), 12)
    for c in np.unique(np.abs(rho)):
        if np.mean(np.abs(rho) >= c) <= 0.05:
            return float(c)
    return None


def test_min_items_is_where_agreement_short_of_near_perfect_becomes_testable():
    """MIN_ITEMS (module docstring): below it only |rho| > 0.75 (or nothing) is significant at two-sided 5%."""
    from swapkl.probes.disagreement import MIN_ITEMS

    crit = {n: _critical_abs_rho(n) for n in range(3, MIN_ITEMS + 1)}
    assert crit[3] is None and crit[4] is None and crit[5] == 1.0
    assert all(crit[n] > 0.75 for n in range(5, MIN_ITEMS))
    assert crit[MIN_ITEMS] < 0.75
    assert crit[7] == pytest.approx(0.7857, abs=1e-4) and crit[8] == pytest.approx(0.7381, abs=1e-4)


def test_the_map_says_which_cells_are_too_few_to_test(monkeypatch, tmp_path):
    import swapkl.studies.healed_probes.figures as fig_module

    s, *_ = _random_scores(n_items=9)
    s.tests["c"] = ("block", [0, 1, 2], lambda idx: np.tile([0.1, 0.3, 0.2], (len(idx), 1)))  # 3 items only
    df = agreement_table(s, {"model": "m", "revision": "r"}, n_boot=50, seed=0)
    assert df.set_index(["test_a", "test_b"])["too_few_items"].to_dict() == {
        ("a", "b"): False, ("a", "c"): True, ("b", "c"): True}
    texts = []
    monkeypatch.setattr(fig_module, "save_figure",
                        lambda fig, *_: texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)
                        or texts.extend(t.get_text() for t in fig.texts))
    fig_module.plot_test_agreement(df, tmp_path / "m.png", tmp_path / "m.pdf")
    assert sum(t == "n=3" for t in texts) == 4  # (a, c) and (b, c), both halves of the matrix: grey, n only
    assert any("too few to test" in " ".join(t.split()) for t in texts)  # the note wraps its lines
    assert sum(t.count("[") for t in texts if "\n" in t and "[" in t.split("\n")[-1]) == 2  # the (a, b) cells' CIs
