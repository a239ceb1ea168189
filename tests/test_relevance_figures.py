"""Relevance statistics (results/relevance_stats.parquet) and figures against direct computations on a small
hand-made table: z-scores, Pearson R in the paper's sign, exact-rank and severe misranking, Cochran's Q
task-dependence test; figures written."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, rankdata, zscore

from swapkl.errors import SwapKLError
from swapkl.figures.relevance.ranks import plot_cosine_vs_relevance, plot_relevance_confusion, plot_relevance_zscores
from swapkl.relevance.tasks import acc_rel
from swapkl.relevance.relevance_stats import relevance_statistics, zscores
from swapkl.tables.schemas import RELEVANCE_STATS_COLUMNS as COLUMNS

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
    z = zscores(t.pivot_table(index="task", columns="layer", values="relevance", dropna=False))
    for task in ("a", "b", "lm"):
        want = zscore(t[t["task"] == task].sort_values("layer")["relevance"].to_numpy())
        assert np.allclose(z.loc[task].to_numpy(), want, rtol=0, atol=1e-12)
    assert z.loc["chance"].isna().all()  # AccRel undefined at chance


def test_relevance_statistics_against_direct_computations():
    t, agg = _table(), _aggregate()
    st = relevance_statistics(t, agg)
    assert list(st.columns) == COLUMNS
    assert sorted(st["task"]) == ["a", "b", "chance", "lm"] and set(st["metric"]) == {"acc", "next_token_acc"}
    bi = agg.sort_values("layer_i")["value"].to_numpy()
    inner = slice(1, N - 1)  # boundary blocks excluded
    m = N - 2
    spreads = []
    for task in ("a", "b", "lm"):
        r = st.set_index("task").loc[task]
        rel = t[(t["task"] == task) & t["metric"].isin(["acc", "next_token_acc"])].sort_values("layer")
        rel = rel["relevance"].to_numpy()
        # the paper's R: cosine similarity (1 - BI) against relevance
        assert r["pearson_paper_sign"] == pytest.approx(np.corrcoef(1 - bi[inner], rel[inner])[0, 1], abs=1e-12)
        assert r["pearson_all_blocks_paper_sign"] == pytest.approx(np.corrcoef(1 - bi, rel)[0, 1], abs=1e-12)
        rank_rel = rankdata(rel[inner], method="ordinal")
        rank_bi = rankdata(bi[inner], method="ordinal")
        assert r["exact_rank_misranking"] == pytest.approx(np.mean(rank_rel != rank_bi))
        assert r["severe_misranking"] == pytest.approx(np.mean(np.abs(rank_rel - rank_bi) >= math.ceil(m / 4)))
        assert list(r["excluded_layers"]) == [0, N - 1] and r["n_ranked"] == m
        spreads.append(zscore(rel))
    chance = st.set_index("task").loc["chance"]
    assert chance["n_ranked"] == 0 and math.isnan(chance["pearson"])
    # task dependence: descriptive per-block SD of z-scores across the three defined tasks, and Cochran's Q
    # with binomial variances written from the definition (w = n (base - r)^2 / (p (1 - p)))
    spread = np.std(np.array(spreads), axis=0)
    rel_t, w_t = [], []
    for task in ("a", "b", "lm"):
        g = t[(t["task"] == task) & t["metric"].isin(["acc", "next_token_acc"])].sort_values("layer")
        p = (np.clip(g["accuracy"].to_numpy(), 0, 1) * 100 + 0.5) / 101  # the fixture draws accuracies < 0
        rel_t.append(g["relevance"].to_numpy())
        w_t.append(100 * (g["base_accuracy"].to_numpy() - g["random_baseline"].to_numpy()) ** 2 / (p * (1 - p)))
    rel_t, w_t = np.array(rel_t), np.array(w_t)
    mean = (w_t * rel_t).sum(0) / w_t.sum(0)
    q = float((w_t * (rel_t - mean) ** 2).sum())
    for _, r in st.iterrows():
        assert r["n_tasks"] == 3 and r["n_blocks"] == N
        assert r["mean_spread_relevance"] == pytest.approx(spread.mean())
        assert r["heterogeneity_q"] == pytest.approx(q, rel=1e-10) and r["heterogeneity_df"] == 2 * N
        assert r["heterogeneity_p"] == pytest.approx(chi2.sf(q, 2 * N), rel=1e-8)


def test_task_dependence_is_undefined_with_one_task():
    t = _table()
    st = relevance_statistics(t[t["task"].isin(["a", "chance"])], _aggregate())
    assert (st["n_tasks"] == 1).all() and st["heterogeneity_p"].isna().all()


def test_relevance_figures_are_written(tmp_path):
    t, agg = _table(), _aggregate()
    plot_cosine_vs_relevance(t, agg, tmp_path / "c.png", tmp_path / "c.pdf", model="m", revision="step1")
    plot_relevance_zscores(t, tmp_path / "z.png", tmp_path / "z.pdf", model="m", revision="step1")
    plot_relevance_confusion(relevance_statistics(t, agg), tmp_path / "k.png", tmp_path / "k.pdf", model="m",
                             revision="step1")
    for name in ("c.png", "c.pdf", "z.png", "z.pdf", "k.png", "k.pdf"):
        assert (tmp_path / name).stat().st_size > 1000


def test_pruned_set_rows_leave_the_statistics_and_figures_unchanged(tmp_path):
    """The aggregate of an older relevance file (no pruned-set columns) and one with pruned-set rows holds both;
    the statistics and figures read its single-block rows only, so they equal those of the single-block table."""
    import pyarrow as pa

    from swapkl.tables.parquet_io import write_parquet
    from swapkl.tables.combine import aggregate_relevance
    from swapkl.tables.schemas import RELEVANCE_SCHEMA, read_relevance

    t, agg = _table(), _aggregate()
    old = t.assign(model="old")
    write_parquet(old, str(tmp_path / "old.parquet"), {})
    pruned = [dict(model="m", revision="step1", task="a", metric="acc", layer=None, accuracy=0.3, base_accuracy=0.6,
                   random_baseline=0.25, relevance=acc_rel(0.3, 0.6, 0.25), n_items=100, guide=g, budget=2,
                   removed_layers=[1, 3]) for g in ("interchange", "bi")]
    singles = [r | {"removed_layers": [r["layer"]]} for r in t.to_dict("records")]
    write_parquet(pa.Table.from_pylist(singles + pruned, schema=RELEVANCE_SCHEMA), str(tmp_path / "new.parquet"), {})
    out = tmp_path / "relevance.parquet"
    aggregate_relevance([str(tmp_path / "old.parquet"), str(tmp_path / "new.parquet")], str(out))
    full = read_relevance(out, pruned_sets=True)
    assert len(full) == 2 * len(t) + 2 and full["layer"].isna().sum() == 2
    assert full.loc[full["model"] == "old", "guide"].isna().all()
    assert sorted(full.loc[full["layer"].isna(), "guide"]) == ["bi", "interchange"]
    single = read_relevance(out)
    assert len(single) == 2 * len(t) and single["layer"].dtype == "int64"
    st = relevance_statistics(full, pd.concat([agg, agg.assign(model="old")]))
    want = relevance_statistics(t, agg)
    pd.testing.assert_frame_equal(st[st["model"] == "m"].reset_index(drop=True), want)
    plot_relevance_zscores(full, tmp_path / "z.png", tmp_path / "z.pdf", model="m", revision="step1")
    plot_cosine_vs_relevance(full, agg, tmp_path / "c.png", tmp_path / "c.pdf", model="m", revision="step1")
    with pytest.raises(SwapKLError, match="overlap"):
        aggregate_relevance([str(tmp_path / "new.parquet"), str(tmp_path / "new.parquet")], str(tmp_path / "x.parquet"))
