"""Selection rules: the published static greedy and the baselines' rules, on hand-made scores."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from swapkl.errors import SwapKLError
from swapkl.pruning.selection import (
    BudgetError,
    check_budget,
    contiguous_select,
    greedy_select,
    layer_scores_from_pairs,
    lowest_select,
    max_feasible,
    pair_distances,
    random_rng,
    random_select,
    restrict_pairs,
    fixed_select,
)


def test_layer_score_is_min_over_probed_partners():
    d = {(0, 1): 0.5, (1, 2): 0.2, (2, 3): 0.9, (0, 2): 0.1}
    s = layer_scores_from_pairs(d, 5)
    np.testing.assert_allclose(s[:4], [0.1, 0.2, 0.1, 0.9])
    assert np.isnan(s[4])  # no probed partner: never a candidate


def test_published_example_adjacent_pairs():
    # 8 layers, adjacent pairs only: the best pair (5,6) gives s(5) = s(6) = 0.02; the tie goes to 5,
    # then 6 and 4 are blocked by spacing 1; next best s(1) = s(2) = 0.05 -> 1; then s(3) = 0.07
    # is accepted (|3-1| = 2 > 1, |3-5| = 2 > 1).
    d = {(0, 1): 0.30, (1, 2): 0.05, (2, 3): 0.07, (3, 4): 0.40, (4, 5): 0.60, (5, 6): 0.02, (6, 7): 0.50}
    s = layer_scores_from_pairs(d, 8)
    np.testing.assert_allclose(s, [0.30, 0.05, 0.05, 0.07, 0.40, 0.02, 0.02, 0.50])
    assert greedy_select(s, 1) == [5]
    assert greedy_select(s, 2) == [1, 5]
    assert greedy_select(s, 3) == [1, 3, 5]
    # without spacing the second-best pair's layers come in whole
    assert greedy_select(s, 3, spacing=0) == [1, 5, 6]
    # anti-guided: highest first (0.60 is not a layer score; s(7)=0.50 then s(4)=0.40 then s(0)=0.30)
    assert greedy_select(s, 3, descending=True) == [0, 4, 7]


@pytest.mark.parametrize("spacing", [0, 1, 2, 3])
def test_spacing_constraint_holds_on_random_scores(spacing):
    rng = np.random.default_rng(spacing)
    for _ in range(50):
        n_layers = int(rng.integers(4, 20))
        s = rng.uniform(size=n_layers)
        guaranteed = -(-n_layers // (2 * spacing + 1))  # each accepted layer blocks at most 2*spacing+1
        for n in range(guaranteed + 1):
            out = greedy_select(s, n, spacing)
            assert len(out) == n and out == sorted(set(out))
            assert all(b - a > spacing for a, b in zip(out, out[1:]))


def test_greedy_matches_brute_force_definition():
    # the accepted set is the first n of the scan; check against an independent formulation
    rng = np.random.default_rng(7)
    for _ in range(30):
        s = rng.uniform(size=9).round(1)  # rounding makes ties frequent
        order = sorted(range(9), key=lambda i: (s[i], i))
        acc = []
        for i in order:
            if all(abs(i - k) > 1 for k in acc):
                acc.append(i)
        for n in range(1, 4):
            assert greedy_select(s, n, 1) == sorted(acc[:n])


def test_ties_break_by_lower_index():
    s = [0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    assert greedy_select(s, 2, 1) == [0, 2]
    assert greedy_select(s, 3, 1) == [0, 2, 4]
    assert greedy_select(s, 2, 0) == [0, 1]
    assert greedy_select(s, 2, 1, descending=True) == [0, 2]
    assert lowest_select([0.3, 0.1, 0.1, 0.2], 2) == [1, 2]
    table = {(0, 2): 0.4, (1, 2): 0.2, (2, 2): 0.2}
    assert contiguous_select(table, 2, 4) == [1, 2]


def test_budget_zero_removes_nothing():
    assert greedy_select([0.3, 0.1, 0.2], 0) == []
    assert greedy_select([0.3, 0.1, 0.2], 0, descending=True) == []
    assert lowest_select([0.3, 0.1], 0) == []
    assert contiguous_select({}, 0, 4) == []
    assert random_select(5, 0, 1, random_rng(0, 0, 0)) == []


def test_budget_beyond_feasible_is_a_clear_error():
    with pytest.raises(SwapKLError, match=r"budget 4 .*spacing 1.* 3 of 6 layers"):
        greedy_select([0.1] * 6, 4, 1)
    with pytest.raises(BudgetError, match="budget 3"):
        check_budget(3, 4, 1)
    with pytest.raises(SwapKLError, match="budget must be >= 0, got -1"):
        greedy_select([0.1] * 6, -1, 1)
    assert max_feasible(6, 1) == 3 and max_feasible(7, 1) == 4 and max_feasible(7, 2) == 3


def test_greedy_scan_falling_short_names_budget_spacing_and_layers():
    # 5 layers, spacing 1: {0,2,4} is feasible, but accepting 1 and 3 first blocks everything else
    s = [0.9, 0.1, 0.8, 0.2, 0.7]
    with pytest.raises(BudgetError, match=r"budget 3 not reached.*spacing 1 over 5 layers.*accepted only 2"):
        greedy_select(s, 3, 1)


def test_contiguous_block_is_argmin_start():
    table = {(l, 2): v for l, v in enumerate([0.5, 0.3, 0.1, 0.4, 0.2])}
    table.update({(l, 1): 0.0 for l in range(6)})
    assert contiguous_select(table, 2, 6) == [2, 3]
    with pytest.raises(BudgetError):
        contiguous_select(table, 3, 6)  # no width-3 rows


def test_random_select_uniform_over_spaced_subsets():
    n_layers, n, spacing = 7, 3, 1
    valid = [c for c in itertools.combinations(range(n_layers), n) if all(b - a > spacing for a, b in zip(c, c[1:]))]
    counts = {c: 0 for c in valid}
    rng = np.random.default_rng(0)
    draws = 20000
    for _ in range(draws):
        counts[tuple(random_select(n_layers, n, spacing, rng))] += 1  # KeyError if a draw violates spacing
    freq = np.array(list(counts.values())) / draws
    assert np.all(np.abs(freq - 1 / len(valid)) < 0.02)
    # seeded per (seed, budget, draw)
    assert random_select(20, 4, 1, random_rng(3, 4, 1)) == random_select(20, 4, 1, random_rng(3, 4, 1))


def test_pair_distances_from_probe_rows():
    probe = pd.DataFrame(dict(
        protocol=["replacement", "replacement", "replacement", "interchange", "deletion"],
        layer_i=[0, 1, 1, 0, 2], layer_j=[1, 0, 2, 1, None], kl_mean=[0.2, 0.6, 0.3, 0.1, 1.0]))
    assert pair_distances(probe, "replacement_max") == {(0, 1): 0.6}  # (1,2) has one direction only
    assert pair_distances(probe, "replacement_mean") == {(0, 1): pytest.approx(0.4)}
    assert pair_distances(probe, "interchange") == {(0, 1): 0.1}
    with pytest.raises(SwapKLError, match="unknown pair guide"):
        pair_distances(probe, "averaging")


def test_ties_break_by_deletion_kl_then_index():
    # the best pair 19<->20 of the paper: both layers score 0.023; deletion KL picks 20 (index order: 19)
    s = np.full(24, 0.5)
    s[19] = s[20] = 0.023
    dele = np.full(24, 1.0)
    dele[19], dele[20] = 0.30, 0.10
    assert greedy_select(s, 1, 1) == [19]
    assert greedy_select(s, 1, 1, tiebreak=dele) == [20]
    # equal deletion KL (or none) falls back to the lower index; NaN deletion KL comes last
    assert greedy_select([0.1, 0.1, 0.5], 1, 0, tiebreak=[0.2, 0.2, 0.0]) == [0]
    assert greedy_select([0.1, 0.1, 0.5], 1, 0, tiebreak=[np.nan, 0.2, 0.0]) == [1]


def test_region_restricts_candidates():
    s = [0.0, 0.1, 0.5, 0.2, 0.3, 0.4, 0.05]
    assert greedy_select(s, 2, 1, region=(2, 6)) == [3, 5]
    assert greedy_select(s, 2, 0, region=(2, 6)) == [3, 4]
    with pytest.raises(BudgetError, match="budget 3 not reached"):
        greedy_select(s, 3, 1, region=(2, 6))
    with pytest.raises(SwapKLError, match=r"region \[5, 9\]"):
        greedy_select(s, 1, 1, region=(5, 9))


def test_scoring_partners_restricted_to_a_pair_set():
    d = {(0, 1): 0.5, (1, 2): 0.4, (0, 2): 0.1, (2, 3): 0.3, (1, 3): 0.05}
    adj = restrict_pairs(d, "adjacent", 4)
    assert adj == {(0, 1): 0.5, (1, 2): 0.4, (2, 3): 0.3}
    np.testing.assert_allclose(layer_scores_from_pairs(adj, 4), [0.5, 0.4, 0.3, 0.3])
    assert restrict_pairs(d, None, 4) == d
    with pytest.raises(SwapKLError, match="needs pair 0,3"):
        restrict_pairs(d, "all", 4)


def test_fixed_sets_checked():
    assert fixed_select([20, 16, 17], 24, "paper") == [16, 17, 20]
    with pytest.raises(SwapKLError, match="fixed set paper"):
        fixed_select([3, 3], 24, "paper")
    with pytest.raises(SwapKLError, match="fixed set paper"):
        fixed_select([24], 24, "paper")
