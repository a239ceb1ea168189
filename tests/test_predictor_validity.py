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
from swapkl.studies.predictor_validity.run import single_layer_costs, validity
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


def test_the_rule_job_measures_its_checkpoint_against_the_aggregates_pairs(tmp_path):
    """The study's rule job, built from a model's `predictor_validity` section and its `prune.eval` text, writes
    the stock forward's removal costs (each block dropped from the block list) and scipy's Spearman of the
    aggregate's pair scores for the checkpoint the wildcards name (not another model's rows)."""
    import dataclasses
    from types import SimpleNamespace

    from direct_config import SCHEMA
    from swapkl.config import rule_jobs
    from swapkl.config.stages import STAGES
    from test_perplexity import TEXT, save_tiny
    from test_rule_jobs import rule_params

    folder = tmp_path / "ckpt"
    model = save_tiny(folder, n_layers=L).eval()
    text = tmp_path / "eval.txt"
    text.write_text(TEXT * 3)
    evaluation = {"text_file": str(text), "window": 16, "stride": 8}
    cfg = {"models": {"m": {"source": "org/model", "revisions": ["r1", "r2"],
                            "prune": {"eval": evaluation}, "predictor_validity": {"enabled": True}}}}
    params = rule_params(cfg, SCHEMA)
    assert params.plan.stage_checkpoints("predictor_validity") == [("m", "r2")]  # `last` by default
    wildcards = SimpleNamespace(model="m", revision="r2")
    out, aggregate = tmp_path / "validity.parquet", tmp_path / "swapkl.parquet"
    pairs = [(i, j) for i in range(L) for j in range(i + 1, L)]
    rng = np.random.default_rng(5)
    scores = rng.uniform(0.01, 1, (2, len(pairs), 2))
    rows = [dict(kind="pair", model=name, revision="r2", n_layers=L, layer_i=i, layer_j=j, d_repl_max=r, d_inter=x)
            for name, s in (("m", scores[0]), ("other", scores[1])) for (i, j), (r, x) in zip(pairs, s)]
    from swapkl.tables.parquet_io import write_parquet
    write_parquet(pd.DataFrame(rows), aggregate, {})
    built = rule_jobs.build_job(params.job("predictor_validity")(wildcards), {"out": str(out),
                                                                               "aggregate": str(aggregate)})
    assert built.eval_data["text_file"] == str(text) and built.metadata["revision"] == "r2"
    STAGES["predictor_validity"].run(dataclasses.replace(built, model=str(folder), device="cpu"))

    got = pd.read_parquet(out)
    assert set(got["model"]) == {"m"} and set(got["revision"]) == {"r2"}
    from swapkl.pruning.eval_spec import EvalSpec
    from swapkl.pruning.perplexity import load_eval_windows
    from test_perplexity import char_tokenizer
    ew = load_eval_windows(EvalSpec.from_dict(evaluation), char_tokenizer())
    base = _stock_ppl(model, ew, ref.base_order(L))
    want = np.array([100 * (_stock_ppl(model, ew, ref.deletion_order(k, L)) / base - 1) for k in range(L)])
    layers = got[got["kind"] == "layer"].sort_values("layer")
    # float32 forwards on both sides: relative perplexity error ~1e-6, so the percentages agree to ~1e-4 points
    np.testing.assert_allclose(layers["delta_ppl_pct"], want, rtol=1e-4, atol=1e-4)
    assert got["base_ppl"].iloc[0] == pytest.approx(base, rel=1e-5)
    cost = [min(want[i], want[j]) for i, j in pairs]
    summary = got[got["kind"] == "summary"].set_index("protocol")
    for col, protocol, k in (("d_repl_max", "replacement", 0), ("d_inter", "interchange", 1)):
        rho = stats.spearmanr(scores[0][:, k], cost).statistic
        assert summary.loc[protocol, "spearman"] == pytest.approx(rho, abs=1e-12)
        assert summary.loc[protocol, "n_pairs"] == len(pairs)
