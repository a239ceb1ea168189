"""swapkl.studies.findings: each interval against scipy's t-interval over windows (with equal scored tokens per
window a token-weighted ratio is the mean of the windows' values, so the linearised interval is exactly the
one-sample t-interval), the verdicts at their boundaries, and the claim rows of a small synthetic run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from swapkl.studies.findings import (HOLDS, SAME, UNDECIDED, findings, mean_gap_interval, nll_difference,
                                     pruning_findings, rank_findings, relevance_r_findings)

T = 50.0  # scored tokens per window


def _directed(rng, n_layers=4, n_windows=10, gap=0.3):
    rows = []
    for i in range(n_layers - 1):
        for protocol, a, b, mean in (("replacement", i, i + 1, 1.0), ("replacement", i + 1, i, 0.8),
                                     ("interchange", i, i + 1, 1.0 - gap)):
            kl = mean * rng.lognormal(0, 0.4, n_windows)
            rows.append({"model": "m", "revision": "r", "step": None, "kind": "directed", "protocol": protocol,
                         "layer_i": a if protocol == "replacement" else i, "layer_j": b if protocol == "replacement"
                         else i + 1, "seq_kl_sum": kl * T, "seq_tokens": np.full(n_windows, T)})
    rows.append({"model": "m", "revision": "r", "step": None, "kind": "directed", "protocol": "base",
                 "layer_i": None, "layer_j": None, "seq_kl_sum": np.zeros(n_windows),
                 "seq_tokens": np.full(n_windows, T)})  # as the aggregate holds it: the base row too
    return pd.DataFrame(rows)


def test_the_mean_gap_interval_is_the_t_interval_of_the_windows_mean_gaps():
    directed = _directed(np.random.default_rng(0))
    kl = {(r.protocol, r.layer_i, r.layer_j): np.asarray(r.seq_kl_sum) / T for r in directed.itertuples()}
    per_window = []
    for i in range(3):
        f, r, inter = kl[("replacement", i, i + 1)], kl[("replacement", i + 1, i)], kl[("interchange", i, i + 1)]
        per_window.append((f if f.mean() >= r.mean() else r) - inter)
    want = np.mean(per_window, axis=0)
    est, lo, hi, n = mean_gap_interval(directed)
    ci = stats.ttest_1samp(want, 0).confidence_interval(0.95)
    assert n == 10 and est == pytest.approx(want.mean()) and (lo, hi) == pytest.approx((ci.low, ci.high))
    fwd = np.mean([kl[("replacement", i, i + 1)] - kl[("interchange", i, i + 1)] for i in range(3)], axis=0)
    est, lo, hi, _ = mean_gap_interval(directed, one_direction=True)
    ci = stats.ttest_1samp(fwd, 0).confidence_interval(0.95)
    assert est == pytest.approx(fwd.mean()) and (lo, hi) == pytest.approx((ci.low, ci.high))


def _pruned(guide, budget, removed, nll):
    return {"model": "m", "revision": "r", "guide": guide, "budget": budget, "feasible": True,
            "removed_layers": removed, "window_nll_sum": nll * T, "window_tokens": np.full(len(nll), T)}


def test_guide_comparisons_are_paired_over_windows():
    rng = np.random.default_rng(1)
    base = rng.lognormal(1, 0.3, 12)
    rows = pd.DataFrame([_pruned("interchange", 1, [2], base), _pruned("deletion", 1, [2], base),
                         _pruned("interchange", 2, [2, 3], base + 0.2), _pruned("deletion", 2, [1, 2], base + 0.25),
                         _pruned("bi", 2, [0, 2], base + 0.2 + rng.normal(0, 0.5, 12))])
    est, lo, hi, n = nll_difference(rows.iloc[2], rows.iloc[4])
    ci = stats.ttest_rel(base + 0.2, rows.iloc[4]["window_nll_sum"] / T).confidence_interval(0.95)
    assert n == 12 and (lo, hi) == pytest.approx((ci.low, ci.high))
    got = {r["claim"]: r["verdict"] for r in pruning_findings("m", rows)}
    assert got == {"cheaper:interchange:deletion:1": SAME, "cheaper:interchange:deletion:2": HOLDS,
                   "cheaper:interchange:bi:2": UNDECIDED}


def test_rank_claims_follow_the_permutation_p_value():
    stats_rows = pd.DataFrame([{"severe_misranking": 0.14, "severe_chance": 0.59, "severe_p": 0.001,
                                "exact_rank_misranking": 0.86, "exact_rank_chance": 0.96, "exact_rank_p": 0.13}])
    got = {r["claim"]: r["verdict"] for r in rank_findings("m", stats_rows, "deletion")}
    assert got == {"bi_severe_below_chance:deletion": HOLDS, "bi_exact_below_chance:deletion": UNDECIDED}


def test_r_claims_with_and_without_outlying_blocks():
    """Agreement follows the permutation p-value; "stronger than Pythia's -0.46" needs the whole Fisher interval
    of the paper-sign R (swapkl's r negated) below -0.46, over 16 and over 13 blocks."""
    row = pd.Series({"pearson": 0.84, "pearson_p": 0.001, "n_ranked": 16, "outlying_layers": [1, 3, 5],
                     "pearson_without_outliers": -0.54, "pearson_without_outliers_p": 0.98, "n_without_outliers": 13})
    got = {r["claim"]: r for r in relevance_r_findings("m", row)}
    assert {c: r["verdict"] for c, r in got.items()} == {
        "bi_relevance_r_agrees:pearson": HOLDS, "r_stronger_than_paper:pythia:pearson": HOLDS,
        "bi_relevance_r_agrees:pearson_without_outliers": UNDECIDED,
        "r_stronger_than_paper:pythia:pearson_without_outliers": UNDECIDED}
    z = np.arctanh(0.84)
    half = stats.norm.ppf(0.975) / np.sqrt(13)
    strong = got["r_stronger_than_paper:pythia:pearson"]
    assert (strong["low"], strong["high"]) == pytest.approx((-np.tanh(z + half), -np.tanh(z - half)), abs=1e-12)
    assert strong["estimate"] == -0.84 and "1, 3, 5 left out" in got[
        "bi_relevance_r_agrees:pearson_without_outliers"]["statement"]
    # an interval that reaches past -0.46 is undecided, however negative its centre
    weak = relevance_r_findings("m", pd.Series({**row.to_dict(), "n_ranked": 6}))[1]
    assert weak["estimate"] == -0.84 and weak["high"] > -0.46 and weak["verdict"] == UNDECIDED


def test_the_table_of_a_run():
    directed = _directed(np.random.default_rng(2), gap=0.4)
    table = findings(directed)
    assert list(table["claim"]) == ["gap_adjacent", "gap_adjacent_fwd", "fwd_gap_differs:pythia-410m",
                                    "fwd_gap_differs:pythia-1.4b"]
    assert (table["verdict"][:2] == HOLDS).all()
    est, lo, hi, _ = mean_gap_interval(directed, one_direction=True)
    assert list(table["verdict"][2:]) == [UNDECIDED if lo <= v <= hi else HOLDS for v in (0.263, 0.403)]
    none = findings(_directed(np.random.default_rng(3), gap=0.0))
    assert none.set_index("claim").loc["gap_adjacent_fwd", "verdict"] == UNDECIDED


def test_what_to_remove_gives_the_cost_interval_and_the_stability():
    """Interchange on a 4-block model whose pair 1-2 is far the closest: budget 1 removes block 1 (the pair's lower
    block's tie broken by deletion KL, here lower for block 1), stable on every resample; its perplexity interval
    is scipy's paired t-interval of the per-window NLL, exponentiated."""
    from swapkl.studies.findings import removal_summary

    rng = np.random.default_rng(4)
    n = 8
    rows = []
    for i, j, mean in ((0, 1, 1.0), (1, 2, 0.1), (2, 3, 1.2)):
        rows.append({"model": "m", "revision": "r", "step": 1, "n_layers": 4, "protocol": "interchange",
                     "layer_i": i, "layer_j": j, "seq_kl_sum": mean * rng.lognormal(0, 0.2, n) * T,
                     "seq_tokens": np.full(n, T)})
    for i, mean in enumerate((2.0, 0.5, 0.9, 3.0)):
        rows.append({"model": "m", "revision": "r", "step": 1, "n_layers": 4, "protocol": "deletion", "layer_i": i,
                     "layer_j": None, "seq_kl_sum": mean * rng.lognormal(0, 0.2, n) * T, "seq_tokens": np.full(n, T)})
    base = rng.lognormal(1, 0.2, 10)
    pruned = base + rng.normal(0.3, 0.1, 10)
    pruning = pd.DataFrame([dict(_pruned("base", 0, [], base), spacing=1),
                            dict(_pruned("interchange", 1, [1], pruned), spacing=1)])
    got = removal_summary(pd.DataFrame(rows), pruning, n_boot=200).iloc[0]
    ci = stats.ttest_rel(pruned, base).confidence_interval(0.95)
    assert got["removed"] == "1" and got["stability"] == 1.0 and got["eval_windows"] == 10
    assert got["ppl_increase_pct"] == pytest.approx(100 * np.expm1(np.mean(pruned - base)))
    assert (got["ppl_increase_low"], got["ppl_increase_high"]) == pytest.approx(
        (100 * np.expm1(ci.low), 100 * np.expm1(ci.high)))
