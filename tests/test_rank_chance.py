"""Chance levels and permutation p-values of the rank-confusion rates (by enumeration, simulation and a
hand computation), the F interval of the data/init share, MMLU grouped as one task, and Cochran's Q."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from swapkl.stats.agreement import rank_chance, rank_statistics
from swapkl.relevance.tasks import acc_rel
from swapkl.relevance.relevance_stats import group_tasks, task_dependence
from swapkl.studies.seeds import share_interval


def _rates(perm, k):
    off = np.abs(np.asarray(perm) - np.arange(len(perm)))
    return float(np.mean(off != 0)), float(np.mean(off >= k))


@pytest.mark.parametrize("m", [4, 5, 6])
def test_chance_levels_by_enumeration(m):
    k = math.ceil(m / 4)
    rates = np.array([_rates(p, k) for p in itertools.permutations(range(m))])
    got = rank_chance(m, k, 0.0, 0.0)
    assert got["exact_rank_chance"] == pytest.approx(rates[:, 0].mean(), abs=1e-12)
    assert got["severe_chance"] == pytest.approx(rates[:, 1].mean(), abs=1e-12)


def test_chance_levels_by_simulation_for_22_layers():
    """m = 22 (24 layers, boundary out), k = 6: severe chance 16*17/484 = 56.2%; 20,000 simulated permutations,
    tolerance 5 standard errors of the mean rate."""
    m, k = 22, 6
    rng = np.random.default_rng(123)
    sims = np.array([_rates(rng.permutation(m), k) for _ in range(20000)])
    got = rank_chance(m, k, 0.0, 0.0)
    for col, key in ((0, "exact_rank_chance"), (1, "severe_chance")):
        se = sims[:, col].std() / np.sqrt(len(sims))
        assert abs(got[key] - sims[:, col].mean()) < 5 * se
    assert got["severe_chance"] == pytest.approx(0.5619834710743802)


def test_p_values_against_a_hand_computation():
    """m = 5, ranks (0..4) vs (1, 0, 2, 3, 4): 2 of 5 off the diagonal (rate 0.4), none off by k = 2.
    Exact rank: P(at least 3 fixed points of a random 5-permutation) = (C(5,3) * 1 + 0 + 1) / 120 = 11/120
    (3 fixed points: the other two swapped; 4 fixed points impossible; 5: identity).
    Severe: permutations with no |pi(i) - i| >= 2 are the compositions of adjacent transpositions on
    disjoint pairs: Fibonacci(6) = 8 of 120."""
    st = rank_statistics(np.array([9, 1, 0, 2, 3, 4, 9.5]), np.array([9, 0, 1, 2, 3, 4, 9.5]))
    assert st["exact_rank_misranking"] == pytest.approx(0.4) and st["severe_misranking"] == 0.0
    assert st["exact_rank_p"] == pytest.approx(11 / 120)
    assert st["severe_p"] == pytest.approx(8 / 120)
    assert st["exact_rank_chance"] == pytest.approx(0.8) and st["severe_chance"] == pytest.approx(3 * 4 / 25)


def test_large_m_exact_rank_p_matches_the_rencontres_distribution():
    """m = 12 (Monte Carlo null): P(F >= f) from the rencontres numbers C(m, j) * D(m - j) / m!."""
    m, f = 12, 2
    derange = [1, 0]
    for n in range(2, m + 1):
        derange.append((n - 1) * (derange[-1] + derange[-2]))
    tail = sum(math.comb(m, j) * derange[m - j] for j in range(f, m + 1)) / math.factorial(m)
    got = rank_chance(m, 3, 1 - f / m, 1.0)
    se = math.sqrt(tail * (1 - tail) / 10_000)
    assert abs(got["exact_rank_p"] - tail) < 5 * se + 1e-4
    assert got["severe_p"] == pytest.approx(1.0)


def test_share_interval_from_the_f_pivot():
    """Equal sample variances, 3 + 3 seeds: ratio 1, F_{0.975}(2, 2) = 39 -> 1/40 .. 39/40."""
    low, high = share_interval(2.0, 2.0, 3, 3)
    assert low == pytest.approx(1 / 40, rel=1e-6) and high == pytest.approx(39 / 40, rel=1e-6)
    # coverage under equal true variances by simulation: the interval holds the true 0.5 about 95% of the time
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(4000):
        v = rng.normal(size=(2, 3)).var(axis=1, ddof=1)
        lo, hi = share_interval(v[0], v[1], 3, 3)
        hits += lo <= 0.5 <= hi
    assert abs(hits / 4000 - 0.95) < 5 * math.sqrt(0.95 * 0.05 / 4000)
    assert np.isnan(share_interval(0.0, 1.0, 3, 3)[0])


def _rows(task, layer, acc, base, r, n):
    return dict(model="m", revision="r", task=task, metric="acc", layer=layer, accuracy=acc, base_accuracy=base,
                random_baseline=r, relevance=acc_rel(acc, base, r), n_items=n)


def test_mmlu_subjects_count_as_one_item_weighted_task():
    rows = [_rows("mmlu_a", 0, 0.5, 0.6, 0.25, 100), _rows("mmlu_b", 0, 0.3, 0.4, 0.25, 300),
            _rows("arc_easy", 0, 0.6, 0.7, 0.25, 50)]
    g = group_tasks(pd.DataFrame(rows))
    assert sorted(g["task"]) == ["arc_easy", "mmlu"]
    mm = g[g["task"] == "mmlu"].iloc[0]
    acc, base = (0.5 * 100 + 0.3 * 300) / 400, (0.6 * 100 + 0.4 * 300) / 400
    assert mm["accuracy"] == pytest.approx(acc) and mm["base_accuracy"] == pytest.approx(base)
    assert mm["n_items"] == 400 and mm["relevance"] == pytest.approx(acc_rel(acc, base, 0.25))


def test_cochran_q_against_a_hand_computation():
    """Two tasks, two blocks: Q = sum over blocks of w1 w2 / (w1 + w2) (rel1 - rel2)^2, df 2."""
    spec = [("a", 0.25, 0.65, 200, [0.55, 0.40]), ("b", 0.5, 0.9, 400, [0.85, 0.6])]
    long = pd.DataFrame([_rows(t, layer, acc, base, r, n) for t, r, base, n, accs in spec
                         for layer, acc in enumerate(accs)])
    got = task_dependence(long)
    q = 0.0
    for layer in range(2):
        vals = []
        for t, r, base, n, accs in spec:
            p = (accs[layer] * n + 0.5) / (n + 1)
            vals.append((acc_rel(accs[layer], base, r), (base - r) ** 2 * n / (p * (1 - p))))
        (x1, w1), (x2, w2) = vals
        q += w1 * w2 / (w1 + w2) * (x1 - x2) ** 2
    assert got["heterogeneity_q"] == pytest.approx(q, rel=1e-12) and got["heterogeneity_df"] == 2
    assert got["heterogeneity_p"] == pytest.approx(stats.chi2.sf(q, 2), rel=1e-12)
    assert got["n_tasks"] == 2 and got["n_blocks"] == 2
