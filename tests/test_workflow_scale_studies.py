"""End to end: the three studies kept in folders that read other models' results (predictor validity, the RoPE
counterfactual, the domain slices) run through the real workflow on one tiny demo model, probed as it is, with
rotary embeddings off, and pruned again on another text; each table is checked against the tables it reads.

One model trained here (4 blocks, 30 steps) keeps the run to a few minutes; the numbers themselves are checked
against independent computations in tests/test_predictor_validity.py, tests/test_convergence_rope.py and
tests/test_domain_slices.py. This test shows that the rules hand each study the right models, revisions, files
and references.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from workflow_runs import run_demo

pytestmark = pytest.mark.slow

WINDOWS = {"text_file": "resources/demo/corpus/valid.txt", "n_seqs": 4, "seq_len": 32, "min_tokens": 8}
CALIBRATION = {"text_file": "resources/demo/corpus/valid.txt", "n_seqs": 2, "seq_len": 32}


def _prune(eval_text: str) -> dict:
    return {"enabled": True, "max_budget": 1, "n_random": 2, "calibration": CALIBRATION,
            "eval": {"text_file": eval_text, "max_words": 300, "window": 64, "stride": 32}}


CONFIG = {
    "models": {
        "neox": {"demo": {"arch": "gpt_neox", "num_layers": 4, "steps": 30, "save_steps": [0, 30]},
                 "revisions": ["step30"], "pair_sets": ["adjacent"], "data": WINDOWS,
                 "prune": _prune("resources/demo/corpus/test.txt"), "predictor_validity": {"enabled": True}},
        "neox-rope-off": {"same_weights_as": "neox", "revisions": ["step30"], "rope": "off",
                          "pair_sets": ["adjacent"], "deletion": False, "data": WINDOWS,
                          "rope_counterfactual": {"enabled": True}},
        "neox-train-text": {"same_weights_as": "neox", "revisions": ["step30"], "pair_sets": ["adjacent"],
                            "data": WINDOWS, "prune": _prune("resources/demo/corpus/train.txt"),
                            "domain_slices": {"enabled": True, "reference": "neox"}},
    },
    "device": "cpu",
    "probe": {"n_boot": 50},
}


@pytest.fixture(scope="module")
def scale_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("scale_studies")
    config = work / "scale.yaml"
    config.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    proc = run_demo(work, config)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work


def _pairs(work, model: str) -> pd.DataFrame:
    agg = pd.read_parquet(work / "results" / "swapkl.parquet")
    return agg[(agg["kind"] == "pair") & (agg["model"] == model) & (agg["revision"] == "step30")]


def test_predictor_validity_correlates_the_aggregates_pairs_with_the_removal_costs(scale_run):
    table = pd.read_parquet(scale_run / "results" / "predictor_validity.parquet")
    assert set(table["model"]) == {"neox"} and set(table["revision"]) == {"step30"}  # its last revision
    costs = table[table["kind"] == "layer"].set_index("layer")["delta_ppl_pct"]
    assert sorted(costs.index) == [0, 1, 2, 3]
    pairs = _pairs(scale_run, "neox").sort_values("layer_i")
    cheaper = [min(costs[i], costs[j]) for i, j in zip(pairs["layer_i"], pairs["layer_j"])]
    summary = table[table["kind"] == "summary"].set_index("protocol")
    for protocol, score in (("replacement", "d_repl_max"), ("interchange", "d_inter")):
        assert summary.loc[protocol, "n_pairs"] == len(pairs) == 3
        assert summary.loc[protocol, "spearman"] == pytest.approx(stats.spearmanr(pairs[score], cheaper).statistic,
                                                                  abs=1e-12)
    assert (scale_run / "results" / "figures" / "predictor_validity" / "neox" / "step30.png").stat().st_size > 1000


def test_the_rope_counterfactual_compares_the_rope_off_model_with_the_weights_it_shares(scale_run):
    table = pd.read_parquet(scale_run / "results" / "rope_counterfactual.parquet")
    assert set(zip(table["model"], table["reference"], table["revision"])) == {("neox-rope-off", "neox", "step30")}
    rows = table[table["kind"] == "pair"].sort_values("layer_i")
    on, off = _pairs(scale_run, "neox").sort_values("layer_i"), _pairs(scale_run, "neox-rope-off").sort_values("layer_i")
    np.testing.assert_array_equal(rows["ratio_ir_on"].to_numpy(), on["ratio_ir"].to_numpy())
    np.testing.assert_array_equal(rows["ratio_ir_off"].to_numpy(), off["ratio_ir"].to_numpy())
    assert not np.array_equal(on["d_inter"].to_numpy(), off["d_inter"].to_numpy())  # rotary off changes the KL
    figure = scale_run / "results" / "figures" / "rope_counterfactual" / "neox-rope-off" / "step30.png"
    assert figure.stat().st_size > 1000


def test_the_domain_slices_pair_the_same_removals_on_the_two_texts(scale_run):
    table = pd.read_parquet(scale_run / "results" / "domain_slices.parquet")
    configs = table[table["kind"] == "config"]
    assert set(zip(table["model"], table["reference"], table["revision"])) == {("neox-train-text", "neox", "step30")}
    pruning = pd.read_parquet(scale_run / "results" / "pruning.parquet")
    for model, column in (("neox", "delta_ppl_pct_reference"), ("neox-train-text", "delta_ppl_pct_slice")):
        rows = pruning[(pruning["model"] == model) & pruning["random_draw"].isna() & pruning["feasible"]]
        want = rows.set_index(["guide", "budget"])["delta_ppl_pct"]
        got = configs.set_index(["guide", "budget"])[column]
        assert len(got) >= 3 and np.allclose(got.to_numpy(), want.loc[got.index].to_numpy(), rtol=0, atol=0)
    summary = table[table["kind"] == "summary"].iloc[0]
    assert summary["spearman"] == pytest.approx(
        stats.spearmanr(configs["delta_ppl_pct_reference"], configs["delta_ppl_pct_slice"]).statistic, abs=1e-12)
    assert (scale_run / "results" / "figures" / "domain_slices.png").stat().st_size > 1000
