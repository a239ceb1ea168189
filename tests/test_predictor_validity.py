"""Predictor validity: single-block removal costs against the stock forward with that block dropped from its
block list, and the score-cost correlation against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

import naive_reference as ref
from swapkl.model.engine import ProbeEngine
from swapkl.pruning.perplexity import sliding_windows
from swapkl.studies.predictor_validity import single_layer_costs, validity
from tiny_models import tiny_model

L = 4


def _stock_ppl(model, ew, order) -> float:
    """exp(mean NLL of the scored next tokens), computed from the stock forward's logits in float64."""
    ids = torch.from_numpy(ew.input_ids)
    mask = torch.from_numpy(ew.attention_mask)
    lq = torch.log_softmax(ref.logits(model, ids, mask, order).double(), -1)
    nxt = ids[:, 1:]
    nll = -lq[:, :-1].gather(-1, nxt.unsqueeze(-1)).squeeze(-1)
    scored = torch.from_numpy(ew.score_mask)[:, :-1]
    return float(torch.exp(nll[scored].mean()))


@pytest.mark.parametrize("arch", ["llama", "opt"])
def test_single_layer_costs_match_the_stock_forward_without_the_block(arch):
    model = tiny_model(arch, n_layers=L)
    ids = np.random.default_rng(3).integers(0, 97, 50)
    ew = sliding_windows(ids, window=16, stride=8)
    base_ppl, costs = single_layer_costs(ProbeEngine(model), ew, batch_size=2)
    want_base = _stock_ppl(model, ew, ref.base_order(L))
    # float32 forward on both sides; perplexity = exp(mean NLL): relative error ~ |NLL error| ~ 1e-6
    assert base_ppl == pytest.approx(want_base, rel=1e-5)
    for k in range(L):
        want = _stock_ppl(model, ew, ref.deletion_order(k, L))
        assert costs.loc[k, "ppl"] == pytest.approx(want, rel=1e-5)
        assert costs.loc[k, "delta_ppl_pct"] == pytest.approx(100 * (want / want_base - 1), rel=1e-4, abs=1e-6)


def test_validity_is_the_spearman_of_score_and_the_cheaper_blocks_cost():
    rng = np.random.default_rng(0)
    costs = pd.DataFrame({"layer": range(6), "delta_ppl_pct": rng.uniform(0, 50, 6)})
    pairs = pd.DataFrame([(i, j) for i in range(6) for j in range(i + 1, 6) if j - i <= 2], columns=["layer_i", "layer_j"])
    pairs["d_repl_max"] = rng.uniform(0, 1, len(pairs))
    pairs["d_inter"] = rng.uniform(0, 1, len(pairs))
    pair_rows, summary = validity(costs, pairs)
    cost = [min(costs["delta_ppl_pct"][i], costs["delta_ppl_pct"][j]) for i, j in zip(pairs["layer_i"], pairs["layer_j"])]
    assert pair_rows["cost"].tolist() == pytest.approx(cost)
    s = summary.set_index("protocol")
    assert s.loc["replacement", "spearman"] == pytest.approx(stats.spearmanr(pairs["d_repl_max"], cost).statistic)
    assert s.loc["interchange", "spearman"] == pytest.approx(stats.spearmanr(pairs["d_inter"], cost).statistic)
    assert s.loc["interchange", "n_pairs"] == len(pairs)
