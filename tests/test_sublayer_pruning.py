"""swapkl.studies.sublayers.stats: sublayer removal sets against block removal sets at one parameter budget.

Each set's perplexity is checked against the stock transformers forward of the model rebuilt by hand (the removed
sublayer's module wrapped to return zeros, the removed blocks taken out of the ``nn.ModuleList``) with the Hugging
Face sliding-window recipe; each set against a selection recomputed here from the decomposition's own table."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

import naive_reference as ref
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.model.sublayer_variants import sublayers_removed
from swapkl.pruning.perplexity import first_words
from swapkl.stats.bootstrap import percentile_ci, resample_indices
from swapkl.studies.sublayers import stats
from swapkl.studies.sublayers.jobs import SublayerJob
from swapkl.studies.sublayers.run import run_sublayers
from swapkl.study import STUDIES
from test_perplexity import TEXT, char_tokenizer, hf_recipe_nll, save_tiny, stock_drop
from tiny_models import random_tokens

N_LAYERS, WINDOW, STRIDE, MAX_WORDS = 5, 16, 8, 40
MODULES = {"attention": "self_attn", "mlp": "mlp"}  # the llama decoder layer's sublayer modules


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("sublayer_pruning")
    model = save_tiny(d / "model", "llama", n_layers=N_LAYERS, seed=3)  # a seed whose sets mix sublayers
    np.save(d / "probe.npy", random_tokens(33, 6, 12, seed=21).numpy())
    (d / "eval.txt").write_text(TEXT)
    job = SublayerJob(model=str(d / "model"), out=str(d / "gaps.parquet"), pruning_out=str(d / "pruning.parquet"),
                      device="cpu", data=DataSpec(tokens=str(d / "probe.npy")), n_boot=200, budgets=(1, 2),
                      spacing=1, eval_data=dict(text_file=str(d / "eval.txt"), window=WINDOW, stride=STRIDE,
                                                max_words=MAX_WORDS), metadata={"model": "tiny", "revision": "main"})
    run_sublayers(job)
    return dict(model=model, gaps=pd.read_parquet(d / "gaps.parquet"), table=pd.read_parquet(d / "pruning.parquet"),
                dir=d)


def _rebuilt(model, removed: list[str]):
    """A copy of ``model`` without the blocks and sublayers ``removed`` (labels "3", "3.attention", "3.mlp")."""
    m = copy.deepcopy(model)
    blocks = []
    for label in removed:
        block, _, part = label.partition(".")
        if part:
            layer = ref.block_list(m)[int(block)]
            setattr(layer, MODULES[part], ref.Zeroed(getattr(layer, MODULES[part])))
        else:
            blocks.append(int(block))
    return stock_drop(m, blocks)


def test_each_set_costs_what_the_model_rebuilt_by_hand_costs(run):
    table = run["table"]
    ids = char_tokenizer()(first_words([" ".join(p.split()) for p in TEXT.split("\n\n")], MAX_WORDS),
                           add_special_tokens=False)["input_ids"]
    base_sum, count = hf_recipe_nll(run["model"], ids, WINDOW, STRIDE)
    costs = table[table["kind"] == "cost"]
    assert costs["base_ppl"].to_numpy() == pytest.approx(np.exp(base_sum / count), rel=1e-5)
    assert set(costs["n_tokens"]) == {count}
    assert any("." in label for labels in costs["removed"] for label in labels)  # some sublayer sets
    for r in costs[costs["feasible"]].itertuples():
        s, c = hf_recipe_nll(_rebuilt(run["model"], list(r.removed)), ids, WINDOW, STRIDE)
        assert r.ppl == pytest.approx(np.exp(s / c), rel=1e-5), (r.guide, r.budget, list(r.removed))
        assert r.value == pytest.approx(100 * (r.ppl / r.base_ppl - 1), rel=1e-9)
        assert r.ci_low <= r.value <= r.ci_high


def _deletion(gaps, part: str, i: int) -> float:
    row = gaps[(gaps["kind"] == "deletion") & (gaps["part"] == part) & (gaps["layer_i"] == i)]
    return float(row["value"].iloc[0])


def test_the_sets_follow_the_decomposition_s_scores(run):
    gaps, table = run["gaps"], run["table"]
    params = {part: int(gaps[(gaps["kind"] == "deletion") & (gaps["part"] == part)]["params"].iloc[0])
              for part in ("attention", "mlp", "block")}
    assert params["attention"] + params["mlp"] == params["block"]
    units = [(i, p) for i in range(N_LAYERS) for p in ("attention", "mlp")]
    inter = gaps[(gaps["kind"] == "gap")]
    for n in (1, 2):
        row = table[(table["kind"] == "cost") & (table["guide"] == "sublayer_deletion") & (table["budget"] == n)]
        # by hand: cheapest deletion KL per parameter first, each taken while the parameters of n blocks allow
        left, want = n * params["block"], []
        for i, p in sorted(units, key=lambda u: _deletion(gaps, u[1], u[0]) / params[u[1]]):
            if params[p] <= left:
                want.append((i, p))
                left -= params[p]
        labels = {f"{i}.{p}" for i, p in want}
        for i in range(N_LAYERS):  # a block without both sublayers is written as the block
            if {f"{i}.attention", f"{i}.mlp"} <= labels:
                labels = (labels - {f"{i}.attention", f"{i}.mlp"}) | {str(i)}
        assert set(row["removed"].iloc[0]) == labels
        assert row["removed_params"].iloc[0] == n * params["block"] - left <= row["param_budget"].iloc[0]
        # the block interchange guide: the smallest adjacent interchange KL, greedy with no two neighbours
        block = inter[inter["part"] == "block"]
        score = [min(v for a, b, v in zip(block["layer_i"], block["layer_j"], block["d_inter"]) if i in (a, b))
                 for i in range(N_LAYERS)]
        chosen = []
        for i in sorted(range(N_LAYERS), key=lambda k: (score[k], k)):
            if len(chosen) < n and all(abs(i - k) > 1 for k in chosen):
                chosen.append(i)
        got = table[(table["kind"] == "cost") & (table["guide"] == "interchange") & (table["budget"] == n)]
        assert sorted(int(x) for x in got["removed"].iloc[0]) == sorted(chosen)


def test_differences_are_the_costs_differences(run):
    table = run["table"]
    costs = table[table["kind"] == "cost"].set_index(["guide", "budget"])
    diffs = table[table["kind"] == "difference"]
    assert len(diffs) == 2 * 3 * 2  # two sublayer guides x three block guides x two budgets
    for r in diffs.itertuples():
        assert r.value == pytest.approx(costs.loc[(r.guide, r.budget), "value"] - costs.loc[(r.versus, r.budget),
                                                                                         "value"], rel=1e-9)
    assert list(table.columns) == stats.PRUNING_SCHEMA.names
    assert set(STUDIES["sublayers"].columns["sublayer_pruning"]) == set(stats.PRUNING_SCHEMA.names)


def test_the_difference_interval_is_the_paired_bootstrap():
    rng = np.random.default_rng(0)
    tokens = rng.integers(10, 20, 9).astype(float)
    base = rng.uniform(2, 3, 9) * tokens
    nll = {("sublayer_deletion", 1): base * 1.1, ("interchange", 1): base * rng.uniform(1.0, 1.3, 9)}
    sets = {key: dict(removed=["0"], removed_params=10) for key in nll}
    rows = stats.cost_rows(sets, base, nll, tokens, params={"block": 10}, n_boot=300, seed=4)
    idx = resample_indices(9, 300, 4)
    inc = {k: 100 * (np.exp(v[idx].sum(1) / tokens[idx].sum(1) - base[idx].sum(1) / tokens[idx].sum(1)) - 1)
           for k, v in nll.items()}
    diff = next(r for r in rows if r["kind"] == "difference")
    assert (diff["ci_low"], diff["ci_high"]) == pytest.approx(
        percentile_ci(inc[("sublayer_deletion", 1)] - inc[("interchange", 1)]), rel=1e-9)


def test_the_budget_is_filled_cheapest_per_parameter_first():
    params = {"attention": 4, "mlp": 8, "block": 12}
    scores = {(0, "attention"): 1.0, (0, "mlp"): 1.0, (1, "attention"): 0.1, (1, "mlp"): 5.0,
              (2, "attention"): float("nan"), (2, "mlp"): 0.4}
    # per parameter: 1.attention 0.025, 2.mlp 0.05, 0.mlp 0.125, 0.attention 0.25, 1.mlp 0.625
    assert stats.fill_budget(scores, params, 12) == [(1, "attention"), (2, "mlp")]
    assert stats.fill_budget(scores, params, 16) == [(0, "attention"), (1, "attention"), (2, "mlp")]
    assert stats.as_removal([(0, "attention"), (0, "mlp"), (2, "mlp")]) == ((0,), ((2, "mlp"),))


def test_a_block_loses_both_sublayers_only_by_its_removal():
    v = sublayers_removed((1,), ((0, "mlp"),), 3)
    assert len(v.order) == 2 and v.order[1] == 2 and v.blocks[0][1] == ("skip", 0, "mlp")
    with pytest.raises(ValueError, match="removing the block"):
        sublayers_removed((), ((0, "mlp"), (0, "attention")), 3)
    with pytest.raises(SwapKLError, match="budgets"):
        stats.check_budgets([0, 2], 4)


def test_the_probe_windows_may_not_come_from_the_evaluation_text(run, tmp_path):
    d = run["dir"]
    job = SublayerJob(model=str(d / "model"), out=str(tmp_path / "g.parquet"), pruning_out=str(tmp_path / "p.parquet"),
                      device="cpu", data=DataSpec(text_file=str(d / "eval.txt"), n_seqs=2, seq_len=8), budgets=(1,),
                      eval_data=dict(text_file=str(d / "eval.txt"), window=WINDOW, stride=STRIDE))
    with pytest.raises(SwapKLError, match="come from the evaluation text"):
        run_sublayers(job)
    assert not any(tmp_path.iterdir())
