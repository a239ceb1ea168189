"""Relevance statistics and figures: z-scores and misranking against direct computations, files written."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import zscore

from swapkl.figures.relevance import misranking, plot_cosine_vs_relevance, plot_relevance_zscores, zscores
from swapkl.relevance import acc_rel

N = 6


def _table(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for task, metric, r, base in (("a", "acc", 0.25, 0.6), ("b", "acc", 0.5, 0.8), ("lm", "next_token_acc", 0.01, 0.3),
                                  ("chance", "acc", 0.5, 0.5)):
        for layer in range(N):
            acc = float(rng.uniform(r - 0.05, base + 0.05))
            for m in (metric, "acc_norm") if metric == "acc" else (metric,):
                rows.append(dict(model="m", revision="step1", task=task, metric=m, layer=layer, accuracy=acc,
                                 base_accuracy=base, random_baseline=r, relevance=acc_rel(acc, base, r),
                                 n_items=100))
    return pd.DataFrame(rows)


def _aggregate(seed=1):
    bi = np.random.default_rng(seed).uniform(0.05, 0.6, N)
    return pd.DataFrame({"kind": "repr", "model": "m", "revision": "step1", "metric": "bi", "width": 1,
                         "layer_i": np.arange(N), "value": bi})


def test_zscores_standardise_each_task_over_blocks():
    t = _table()
    t = t[t["metric"].isin(["acc", "next_token_acc"])]
    z = zscores(t)
    for task in ("a", "b", "lm"):
        want = zscore(t[t["task"] == task].sort_values("layer")["relevance"].to_numpy())
        assert np.allclose(z.loc[task].to_numpy(), want, rtol=0, atol=1e-12)
    assert z.loc["chance"].isna().all()  # AccRel undefined at chance


def test_misranking_counts_inner_blocks_whose_ranks_differ():
    cos = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    assert misranking(cos, np.array([0.1, 0.2, 0.3, 0.4, 0.5])) == (0.0, 0.0)  # same order
    # inner blocks 1..3: ranks by redundancy 2,3,4; by irrelevance 4,3,2 -> two of three differ, offsets 2,0,2
    share, offset = misranking(cos, np.array([0.1, 0.4, 0.3, 0.2, 0.5]))
    assert share == pytest.approx(2 / 3) and offset == pytest.approx(4 / 3)
    assert all(math.isnan(x) for x in misranking(cos[:2], cos[:2]))


def test_relevance_figures_are_written(tmp_path):
    t, agg = _table(), _aggregate()
    plot_cosine_vs_relevance(t, agg, tmp_path / "c.png", tmp_path / "c.pdf", model="m", revision="step1")
    plot_relevance_zscores(t, tmp_path / "z.png", tmp_path / "z.pdf", model="m", revision="step1")
    for name in ("c.png", "c.pdf", "z.png", "z.pdf"):
        assert (tmp_path / name).stat().st_size > 1000
