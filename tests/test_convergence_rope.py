"""Prompt-set convergence against scipy's Spearman and a direct per-draw computation; the RoPE
counterfactual's sign test against scipy.stats.binomtest and its table against a hand computation."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats

from probe_fixtures import probe_files, write_checkpoint
from swapkl.probes.aggregate import aggregate, read_aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.errors import SwapKLError
from swapkl.studies.convergence.stats import build_convergence, convergence_rows
from swapkl.studies.convergence.figures import plot_convergence
from swapkl.studies.rope_counterfactual.figures import plot_rope_counterfactual
from swapkl.studies.rope_counterfactual.stats import counterfactual_table, sign_test


@pytest.mark.parametrize("plus,minus", [(10, 2), (2, 10), (6, 6), (0, 5), (12, 0), (1, 0)])
def test_sign_test_is_scipys_binomial_test(plus, minus):
    two, one = sign_test(plus, minus)
    n = plus + minus
    assert two == pytest.approx(stats.binomtest(plus, n, 0.5).pvalue, rel=1e-12)
    assert one == pytest.approx(stats.binomtest(plus, n, 0.5, alternative="greater").pvalue, rel=1e-12)


def test_convergence_matches_scipy_per_draw():
    rng = np.random.default_rng(0)
    n_pairs, n_seqs = 7, 40
    tokens = rng.integers(5, 15, n_seqs).astype(float)
    kl = rng.gamma(2.0, 0.05, (n_pairs, 2, n_seqs)) * tokens  # per-sequence sums, two directions
    rows = convergence_rows(kl, tokens, sizes=(10, 20), draws=30, seed=4)
    assert [r["n"] for r in rows] == [10, 20, 40]
    full = np.array([max(kl[p, d].sum() / tokens.sum() for d in range(2)) for p in range(n_pairs)])
    # the same draws, recomputed one by one from their definition
    draw_rng = np.random.default_rng(4)
    for r in rows:
        rhos, tops, best_kl = [], [], []
        for _ in range(30):
            idx = draw_rng.choice(n_seqs, size=r["n"], replace=False)
            sub = np.array([max(kl[p, d, idx].sum() / tokens[idx].sum() for d in range(2)) for p in range(n_pairs)])
            rhos.append(stats.spearmanr(sub, full).statistic)
            tops.append(int(np.argmin(sub)) == int(np.argmin(full)))
            best_kl.append(sub[int(np.argmin(full))])
        assert r["spearman_median"] == pytest.approx(np.median(rhos), abs=1e-12)
        assert r["spearman_q05"] == pytest.approx(np.quantile(rhos, 0.05), abs=1e-12)
        assert r["top_pair_share"] == pytest.approx(np.mean(tops))
        lo, hi = np.quantile(best_kl, [0.025, 0.975])
        assert r["top_kl_rel_width"] == pytest.approx((hi - lo) / full.min(), rel=1e-9)
    assert rows[-1]["spearman_median"] == pytest.approx(1.0) and rows[-1]["top_kl_rel_width"] < 1e-12


def _values(n, seed):
    rng = np.random.default_rng(seed)
    repl = {(i, j): float(rng.uniform(0.05, 0.5)) for i, j in itertools.permutations(range(n), 2)}
    inter = {(i, j): float(rng.uniform(0.01, 0.3)) for i, j in itertools.combinations(range(n), 2)}
    return repl, inter


def test_counterfactual_table_and_files(tmp_path):
    n = 5
    r_on, i_on = _values(n, 1)
    r_off, i_off = _values(n, 2)
    files_on = probe_files(write_checkpoint(tmp_path / "on", model="m", revision="main", n_layers=n, repl=r_on,
                                            inter=i_on, deletion=[0.1] * n, seed=1, n_seqs=30))
    files_off = probe_files(write_checkpoint(tmp_path / "off", model="m-off", revision="main", n_layers=n,
                                             repl=r_off, inter=i_off, deletion=[0.1] * n, seed=2,
                                             weights_sha256="w" * 64))
    agg_path = tmp_path / "agg.parquet"
    aggregate(AggregateJob(probe_files=files_on + files_off, repr_files=[], out=agg_path,
                           pair_sets={"m": ["all"], "m-off": ["adjacent"]}))
    df = counterfactual_table(read_aggregate(agg_path), model_on="m", model_off="m-off", revision="main")
    pairs, summary = df[df["kind"] == "pair"], df[df["kind"] == "summary"].iloc[0]
    assert [(int(a), int(b)) for a, b in zip(pairs["layer_i"], pairs["layer_j"])] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    ratio = lambda r, i, a, b: i[(a, b)] / max(r[(a, b)], r[(b, a)])  # noqa: E731
    deltas = [ratio(r_off, i_off, a, a + 1) - ratio(r_on, i_on, a, a + 1) for a in range(4)]
    assert pairs["ratio_delta"].to_numpy() == pytest.approx(deltas, rel=1e-9)
    larger = sum(d < 0 for d in deltas)
    assert summary["n_larger_gap"] == larger and summary["n_smaller_gap"] == 4 - larger
    assert summary["sign_test_p"] == pytest.approx(stats.binomtest(larger, 4).pvalue)
    # one table holds every rope-off model's rows: the figure of a checkpoint draws that checkpoint's alone
    other = df.assign(model="m-off-2", ratio_ir_off=df["ratio_ir_off"] + 1)
    plot_rope_counterfactual(pd.concat([df, other], ignore_index=True), tmp_path / "r.png", tmp_path / "r.pdf",
                             model="m-off", revision="main")
    alone = tmp_path / "alone.png"
    plot_rope_counterfactual(df, alone, tmp_path / "alone.pdf", model="m-off", revision="main")
    assert (tmp_path / "r.png").read_bytes() == alone.read_bytes()
    with pytest.raises(SwapKLError, match="no rows for m-off step1"):
        plot_rope_counterfactual(df, tmp_path / "x.png", tmp_path / "x.pdf", model="m-off", revision="step1")
    # convergence on the same probe files, through the file reader
    out = tmp_path / "conv.parquet"
    build_convergence({("m", "main"): files_on}, out, sizes=(10, 20), draws=5)
    conv = pq.read_table(out).to_pandas()
    assert sorted(set(conv["protocol"])) == ["interchange", "replacement"] and list(conv["n"][:3]) == [10, 20, 30]
    plot_convergence(conv, tmp_path / "c.png", tmp_path / "c.pdf")
    assert (tmp_path / "c.png").stat().st_size > 0
