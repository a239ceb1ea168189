"""swapkl.pruning.stability: how often a guide picks the same blocks when the probe windows are resampled, against
a direct recomputation (the resamples drawn by hand, the deletion guide's rule written out)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from swapkl.pruning.stability import set_stability

T = 32  # scored tokens per window


def _probe(deletion_means, n_windows: int, seed: int, spread: float = 0.3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"protocol": "deletion", "layer_i": i, "layer_j": None, "head": None, "n_layers": len(deletion_means),
             "seq_kl_sum": (m * rng.lognormal(0, spread, n_windows) * T).tolist(),
             "seq_tokens": [T] * n_windows} for i, m in enumerate(deletion_means)]
    return pd.DataFrame(rows)


def _by_hand(probe: pd.DataFrame, n_boot: int, seed: int) -> float:
    """Budget 1 of the deletion guide: the block of lowest deletion KL. Resample k draws window floor(u * n) for
    u uniform from numpy's generator with ``seed`` (one draw per window slot), as the sequential probe's bootstrap."""
    sums = np.array([r for r in probe["seq_kl_sum"]])
    tokens = np.array(probe["seq_tokens"].iloc[0], dtype=float)
    n = sums.shape[1]
    u = np.random.default_rng(seed).random((n_boot, n))
    idx = np.floor(u * n).astype(int)
    chosen = int(np.argmin(sums.sum(1) / tokens.sum()))
    same = 0
    for k in range(n_boot):
        kl = sums[:, idx[k]].sum(1) / tokens[idx[k]].sum()
        same += int(np.argmin(kl)) == chosen
    return same / n_boot


@pytest.mark.parametrize("means,seed", [((1.0, 0.5, 0.52, 2.0), 1), ((1.0, 0.2, 0.9, 2.0), 2)])
def test_the_share_of_resamples_that_pick_the_same_block(means, seed):
    probe = _probe(means, 12, seed)
    kl = [np.sum(r) / (T * 12) for r in probe["seq_kl_sum"]]
    block = int(np.argmin(kl))
    got = set_stability(probe, "deletion", 1, [block], len(means), 1, n_boot=400, seed=10)
    assert got == _by_hand(probe, 400, 11)  # budget 1: seed + 1
    assert 0.0 < got <= 1.0


def test_two_near_tied_blocks_are_unstable_and_a_clear_one_is_stable():
    tied = _probe((1.0, 0.5, 0.5, 2.0), 8, 3)
    clear = _probe((1.0, 0.05, 0.9, 2.0), 8, 3, spread=0.1)
    choose = lambda p: int(np.argmin([np.sum(r) for r in p["seq_kl_sum"]]))  # noqa: E731
    assert set_stability(tied, "deletion", 1, [choose(tied)], 4, 1) < 0.9
    assert set_stability(clear, "deletion", 1, [choose(clear)], 4, 1) == 1.0


def test_no_stability_where_it_does_not_apply():
    probe = _probe((1.0, 0.5, 0.9, 2.0), 8, 4)
    assert math.isnan(set_stability(probe, "deletion", 1, [3], 4, 1))  # the rule on all windows picks another block
    assert math.isnan(set_stability(probe, "interchange", 1, [1], 4, 1))  # no interchange rows
    assert math.isnan(set_stability(probe, "bi", 1, [1], 4, 1))  # not a probe-guided guide
