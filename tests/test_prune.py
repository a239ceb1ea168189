"""run_pruning end to end on a tiny model, checked against independent computations; aggregation,
agreement statistics, the I/R ratio, the CLI and the figures."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from scipy import stats

from swapkl.tables import provenance
from swapkl.stats.agreement import compare, misranking, rank_confusion, rank_statistics
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.pruning.perplexity import first_words
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.pruning.prune import run_pruning
from swapkl.pruning.prune_jobs import PruneJob
from swapkl.pruning.table import aggregate_pruning
from swapkl.pruning.table import AggregatePruningJob
from swapkl.pruning.cost_ratio import ir_ratios
from swapkl.tables.schemas import AGREEMENT_SCHEMA, PRUNING_CI_COLUMNS, PRUNING_RUN_SCHEMA, PRUNING_SCHEMA, read_pruning
from test_perplexity import TEXT, char_tokenizer, hf_recipe_nll, save_tiny, stock_drop
from tiny_models import random_tokens

N_LAYERS = 6
WINDOW, STRIDE, MAX_WORDS = 16, 8, 40
N_BOOT = 200


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("prune")
    model = save_tiny(d / "model", "llama", n_layers=N_LAYERS, seed=5)
    np.save(d / "probe.npy", random_tokens(33, 6, 12, seed=21).numpy())
    np.save(d / "calib.npy", random_tokens(33, 5, 12, seed=22).numpy())
    (d / "eval.txt").write_text(TEXT)
    probe_out, repr_out = d / "probe.parquet", d / "repr.parquet"
    run_probe(ProbeJob(model=str(d / "model"), out=str(probe_out), pairs="all",
                       data=DataSpec(tokens=str(d / "probe.npy")),
                       device="cpu", repr_out=str(repr_out), metadata={"revision": "step100"}))
    kw = dict(budgets=[1, 2], spacing=1, eval_data=dict(text_file=str(d / "eval.txt"), window=WINDOW, stride=STRIDE,
                                                        max_words=MAX_WORDS),
              calib_data=DataSpec(tokens=str(d / "calib.npy")), n_random=3, seed=0, device="cpu",
              batch_size=4, metadata={"model": "tiny", "revision": "step100", "config_sha256": "abc"})
    out, agr = d / "pruning.parquet", d / "agreement.parquet"
    run_pruning(PruneJob(model=str(d / "model"), probe_files=[probe_out], repr_file=str(repr_out), out=str(out),
                         agreement_out=str(agr), **kw))
    return dict(dir=d, model=model, probe=probe_out, repr=repr_out, out=out, agreement=agr, kw=kw,
                table=published(out))


def published(path, n_boot: int = N_BOOT) -> pd.DataFrame:
    """The pruning run's file as ``aggregate_pruning`` publishes it (with the bootstrap CIs)."""
    out = path.with_name(path.stem + ".published.parquet")
    aggregate_pruning(AggregatePruningJob(inputs=[path], out=str(out), n_boot=n_boot))
    return read_pruning(out)


def _row(df, guide, budget, draw=None):
    r = df[(df["guide"] == guide) & (df["budget"] == budget)]
    if draw is not None:
        r = r[r["random_draw"] == draw]
    assert len(r) == 1, (guide, budget, draw)
    return r.iloc[0]


def test_output_has_documented_columns_and_rows(setup):
    assert pq.read_schema(setup["out"]).names == PRUNING_RUN_SCHEMA.names  # no CI: the aggregate adds them
    df = setup["table"]
    guides = {"base", "interchange", "replacement_max", "replacement_mean", "deletion", "anti_interchange", "bi",
              "angular", "sleb_iterative", "sleb_greedy", "accuracy_iterative", "cka", "taylor", "laco", "laco_paper", "beam", "sleb_matched",
              "random", "random_mean"}
    assert set(df["guide"]) == guides
    assert len(df) == 1 + 16 * 2 + 3 * 2 + 2
    assert (df["model"] == "tiny").all() and (df["revision"] == "step100").all() and (df["step"] == 100).all()
    assert df["eval_split"].str.startswith("text_file:").all()
    assert df["calibration_split"].str.startswith("tokens:").all() and df["probe_split"].str.contains("probe.npy").all()
    prov = provenance.read(str(setup["out"]))
    assert prov["eval_split"] == df["eval_split"].iloc[0] and prov["config_sha256"] == "abc"
    assert prov["calibration_split"] == df["calibration_split"].iloc[0]
    for _, r in df[df["feasible"] & ~df["guide"].isin(["random_mean", "sleb_matched"])].iterrows():
        assert len(r["removed_layers"]) == r["budget"]
        assert (r["merged_layers"] is None) == (r["guide"] not in ("laco", "laco_paper"))
        assert r["ppl_ci_low"] <= r["ppl"] <= r["ppl_ci_high"]
        assert r["delta_ppl_pct"] == pytest.approx(100 * (r["ppl"] / r["base_ppl"] - 1))


def _independent_interchange_selection(probe: pd.DataFrame, n: int, *, spacing: int = 1, max_distance: int = 99,
                                       region=(0, 99)) -> list[int]:
    """Scores over partners within ``max_distance``; equal scores (the best pair's two layers) ordered
    by their single-block deletion KL, then by index; candidates in ``region`` only."""
    inter = probe[probe["protocol"] == "interchange"]
    dele = {int(i): v for i, v in zip(probe.loc[probe["protocol"] == "deletion", "layer_i"],
                                      probe.loc[probe["protocol"] == "deletion", "kl_mean"])}
    s = {}
    for i, j, v in zip(inter["layer_i"], inter["layer_j"], inter["kl_mean"]):
        if abs(int(i) - int(j)) > max_distance:
            continue
        for layer in (int(i), int(j)):
            s[layer] = min(s.get(layer, np.inf), v)
    chosen = []
    for layer in sorted(s, key=lambda k: (s[k], dele[k], k)):
        if region[0] <= layer < region[1] and all(abs(layer - c) > spacing for c in chosen):
            chosen.append(layer)
    return sorted(chosen[:n])


def test_paper_selection_settings(setup, tmp_path):
    """Spacing 0, adjacent scoring partners, a clustered region, fixed sets and an unspaced random
    baseline, each against a direct computation; fixed sets cost exactly what a guide's same set costs."""
    from swapkl.pruning.selection_options import SelectionOptions

    base = setup["table"]
    probe = pd.read_parquet(setup["probe"])
    inter2 = list(_row(base, "interchange", 2)["removed_layers"])
    options = SelectionOptions(score_pairs="adjacent", clustered_region=(2, 5), random_spacing=0,
                               fixed_sets={"paper": [[3], inter2, [1, 2, 4], [5]]})
    kw = dict(setup["kw"], spacing=0, budgets=[1, 2, 3], n_random=20)
    out = tmp_path / "paper.parquet"
    run_pruning(PruneJob(model=str(setup["dir"] / "model"), probe_files=[setup["probe"]], repr_file=str(setup["repr"]),
                         out=str(out), selection=options, **kw))
    df = published(out)
    for n in (1, 2, 3):
        assert list(_row(df, "interchange", n)["removed_layers"]) == _independent_interchange_selection(
            probe, n, spacing=0, max_distance=1)
        assert list(_row(df, "interchange_clustered", n)["removed_layers"]) == _independent_interchange_selection(
            probe, n, spacing=0, max_distance=1, region=(2, 5))
    fixed = df[df["guide"] == "fixed"]
    # two sets of size 1 under one name: both kept, told apart by random_draw (their index within the size)
    assert fixed["fixed_set"].tolist() == ["paper"] * 4 and fixed["budget"].tolist() == [1, 1, 2, 3]
    assert [list(v) for v in fixed["removed_layers"]] == [[3], [5], inter2, [1, 2, 4]]
    assert fixed["random_draw"].tolist()[:2] == [0, 1] and fixed["random_draw"].isna().tolist()[2:] == [True, True]
    same = fixed[fixed["budget"] == 2].iloc[0]
    guide = _row(base, "interchange", 2)
    for col in ("ppl", "delta_ppl_pct", "kl_mean", "ppl_ci_low", "ppl_ci_high"):
        assert same[col] == guide[col]
    # unspaced random draws: some draw at budget 3 has two adjacent layers (20 draws over the C(4,3) = 4 interior sets)
    draws = [list(r) for r in df.loc[(df["guide"] == "random") & (df["budget"] == 3), "removed_layers"]]
    assert any(min(b - a for a, b in zip(d, d[1:])) == 1 for d in draws)
    # interior draws by default: never the first or the last block
    every = [b for r in df.loc[df["guide"] == "random", "removed_layers"] for b in r]
    assert min(every) >= 1 and max(every) <= N_LAYERS - 2
    assert provenance.read(str(out))["selection"] == options.as_dict()
    from swapkl.figures.pruning.cost import plot_delta_ppl

    plot_delta_ppl(df, "tiny", "step100", tmp_path / "cost.png", tmp_path / "cost.pdf")  # draws the fixed set too
    assert (tmp_path / "cost.png").read_bytes()[:4] == b"\x89PNG"


def test_a_guide_choice_runs_only_those_guides_with_the_same_rows(setup, tmp_path):
    """``SelectionOptions(guides=...)``: the rows of the chosen guides (and the unpruned row, and random_mean
    with the draws) equal the full run's, and no other guide's rows are written; sleb_matched alone still gets
    the beam's evaluation counts, without the beam's rows."""
    from swapkl.pruning.selection_options import SelectionOptions

    base = setup["table"]
    out = tmp_path / "chosen.parquet"
    chosen = ("bi", "interchange", "random", "sleb_matched")
    options = SelectionOptions(guides=chosen)
    run_pruning(PruneJob(model=str(setup["dir"] / "model"), probe_files=[setup["probe"]], repr_file=str(setup["repr"]),
                         out=str(out), selection=options,
                         **setup["kw"]))
    df = pd.read_parquet(out)
    assert set(df["guide"]) == {"base", "random_mean", *chosen}
    key = ["guide", "budget", "random_draw"]
    full = base[base["guide"].isin(set(df["guide"]))].sort_values(key).reset_index(drop=True)
    mine = df.sort_values(key).reset_index(drop=True)
    for col in ("removed_layers", "n_evals", "ppl", "kl_mean", "delta_ppl_pct"):
        assert mine[col].astype(str).tolist() == full[col].astype(str).tolist(), col
    assert provenance.read(str(out))["selection"]["guides"] == list(chosen)
    with pytest.raises(SwapKLError, match="'random_mean' is a row derived from the others"):
        run_pruning(PruneJob(model=str(setup["dir"] / "model"), probe_files=[setup["probe"]],
                             repr_file=str(setup["repr"]), out=str(tmp_path / "x.parquet"),
                             selection=SelectionOptions(guides=["interchange", "random_mean"]), **setup["kw"]))
    with pytest.raises(SwapKLError, match="unknown guide 'sleb'"):
        run_pruning(PruneJob(model=str(setup["dir"] / "model"), probe_files=[setup["probe"]],
                             repr_file=str(setup["repr"]), out=str(tmp_path / "x.parquet"),
                             selection=SelectionOptions(guides=["sleb"]), **setup["kw"]))
    assert not (tmp_path / "x.parquet").exists()


def test_costs_match_independent_computation(setup):
    df = setup["table"]
    probe = pd.read_parquet(setup["probe"])
    tok = char_tokenizer()
    text = first_words([" ".join(p.split()) for p in TEXT.split("\n\n")], MAX_WORDS)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    model = setup["model"]
    base_sum, count = hf_recipe_nll(model, ids, WINDOW, STRIDE)
    assert _row(df, "base", 0)["ppl"] == pytest.approx(np.exp(base_sum / count), rel=1e-5)
    windows = torch.from_numpy(np.load(setup["dir"] / "probe.npy"))
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=windows, use_cache=False).logits.double(), -1)
    for guide in ("interchange", "bi", "sleb_iterative", "sleb_greedy", "accuracy_iterative", "cka", "taylor", "beam",
                  "laco"):
        r = _row(df, guide, 2)
        if guide == "interchange":
            assert list(r["removed_layers"]) == _independent_interchange_selection(probe, 2)
        if guide == "laco":
            pruned = _stock_merged_all(model, list(r["merged_layers"]))
            assert list(r["removed_layers"]) == [a + 1 for a in r["merged_layers"]]
        else:
            pruned = stock_drop(model, list(r["removed_layers"]))
        s, c = hf_recipe_nll(pruned, ids, WINDOW, STRIDE)
        assert r["ppl"] == pytest.approx(np.exp(s / c), rel=1e-5)
        with torch.no_grad():
            lq = torch.log_softmax(pruned(input_ids=windows, use_cache=False).logits.double(), -1)
        kl = float((lp.exp() * (lp - lq)).sum(-1).mean())
        assert r["kl_mean"] == pytest.approx(kl, rel=1e-5)


def _stock_merged_all(model, merged):
    """A copy whose block a holds the average of blocks a and a + 1 for each a in ``merged``, the a + 1 dropped."""
    import copy

    m = copy.deepcopy(model)
    for a in merged:
        sa, sb = m.model.layers[a].state_dict(), m.model.layers[a + 1].state_dict()
        m.model.layers[a].load_state_dict({k: (sa[k] + sb[k]) / 2 for k in sa})
    return stock_drop(m, [a + 1 for a in merged])


def test_search_guides_against_brute_force(setup):
    from test_sleb import brute_nll

    df = setup["table"]
    calib = np.load(setup["dir"] / "calib.npy")
    from swapkl.data.windows import Windows

    w = Windows(calib, np.ones_like(calib), "calib")
    single = {b: brute_nll(setup["model"], w, [b]) for b in range(N_LAYERS)}
    ranked = sorted(single, key=lambda b: (single[b], b))
    for n in (1, 2):
        r = _row(df, "sleb_greedy", n)
        assert list(r["removed_layers"]) == sorted(ranked[:n]) and r["n_evals"] == N_LAYERS
        assert _row(df, "sleb_iterative", n)["n_evals"] == sum(N_LAYERS - k for k in range(n))
    # beam at n = 2: the best of the pairs extending its three best seeds (all 6 layers are seeds here)
    seeds3 = sorted(single, key=lambda b: (single[b], b))[:3]
    pairs = sorted({tuple(sorted((a, b))) for a in seeds3 for b in range(N_LAYERS) if b != a})
    cost = {p: brute_nll(setup["model"], w, list(p)) for p in pairs}
    best = min(pairs, key=lambda p: (cost[p], p))
    r = _row(df, "beam", 2)
    assert tuple(r["removed_layers"]) == best and r["n_evals"] == N_LAYERS + len(pairs)
    assert _row(df, "beam", 1)["n_evals"] == N_LAYERS
    # matched-budget SLEB: iterative SLEB (brute force here) removes blocks while the beam's evaluation count at
    # n = 2 pays for the next step (6 + 5 + 4 + ... calibration evaluations)
    removed, spent = [], 0
    while spent + N_LAYERS - len(removed) <= r["n_evals"] and len(removed) < N_LAYERS - 1:
        cost = {b: brute_nll(setup["model"], w, removed + [b]) for b in range(N_LAYERS) if b not in removed}
        spent += len(cost)
        removed.append(min(cost, key=lambda b: (cost[b], b)))
    m = _row(df, "sleb_matched", 2)
    assert list(m["removed_layers"]) == sorted(removed) and m["n_evals"] == spent <= r["n_evals"]


def test_baseline_selections(setup):
    df = setup["table"]
    rep = pd.read_parquet(setup["repr"])
    bi = rep[rep["metric"] == "bi"].sort_values(["value", "layer_i"])
    assert list(_row(df, "bi", 2)["removed_layers"]) == sorted(bi["layer_i"].iloc[:2])
    ang = rep[(rep["metric"] == "angular") & (rep["width"] == 2)].sort_values(["value", "layer_i"])
    start = int(ang["layer_i"].iloc[0])
    assert list(_row(df, "angular", 2)["removed_layers"]) == [start, start + 1]
    s1, s2 = (set(_row(df, "sleb_iterative", n)["removed_layers"]) for n in (1, 2))
    assert s1 < s2  # nested
    for draw in range(3):
        removed = list(_row(df, "random", 2, draw)["removed_layers"])
        assert removed[1] - removed[0] > 1
    draws = df[(df["guide"] == "random") & (df["budget"] == 2)]
    rm = _row(df, "random_mean", 2)
    assert rm["delta_ppl_pct"] == pytest.approx(draws["delta_ppl_pct"].mean())
    assert rm["delta_ppl_pct_sd"] == pytest.approx(draws["delta_ppl_pct"].std(ddof=1))
    assert rm["n_draws"] == 3 and rm["delta_ppl_pct_min"] == pytest.approx(draws["delta_ppl_pct"].min())
    anti = list(_row(df, "anti_interchange", 1)["removed_layers"])
    inter = _row(df, "interchange", 1)["removed_layers"]
    assert anti != list(inter)


def test_agreement_table(setup):
    agr = pq.read_table(setup["agreement"])
    assert agr.schema.names == AGREEMENT_SCHEMA.names
    a = agr.to_pandas()
    assert not (a["guide"] == a["reference"]).any()
    vs = a[a["reference"] == "deletion"].set_index("guide")
    assert {"interchange", "replacement_max", "bi", "sleb_single", "angular"} <= set(vs.index)
    assert vs["misranking_rate"].between(0, 1).all()
    probe = pd.read_parquet(setup["probe"])
    dele = probe[probe["protocol"] == "deletion"].sort_values("layer_i")["kl_mean"].to_numpy()
    rep = pd.read_parquet(setup["repr"])
    bi = rep[rep["metric"] == "bi"].sort_values("layer_i")["value"].to_numpy()
    assert vs.loc["bi", "spearman"] == pytest.approx(stats.spearmanr(bi, dele).statistic)
    assert vs.loc["bi", "kendall"] == pytest.approx(stats.kendalltau(bi, dele).statistic)
    discordant = sum((bi[i] - bi[j]) * (dele[i] - dele[j]) < 0 for i in range(N_LAYERS) for j in range(i + 1, N_LAYERS))
    assert vs.loc["bi", "misranking_rate"] == pytest.approx(discordant / 15)
    inner = slice(1, N_LAYERS - 1)
    assert list(vs.loc["bi", "excluded_layers"]) == [0, N_LAYERS - 1]
    assert vs.loc["bi", "exact_rank_misranking"] == pytest.approx(
        np.mean(stats.rankdata(bi[inner], method="ordinal") != stats.rankdata(dele[inner], method="ordinal")))
    assert vs.loc["bi", "pearson"] == pytest.approx(np.corrcoef(bi[inner], dele[inner])[0, 1], rel=1e-9)


def test_misranking_and_compare_units():
    assert misranking([1, 2, 3], [1, 3, 2]) == (pytest.approx(1 / 3), 3)
    assert misranking([1, 2, 3], [3, 2, 1])[0] == 1.0
    assert misranking([1, 1, 2], [1, 2, 3]) == (0.0, 2)  # the tied pair is left out
    c = compare([1, 2, np.nan, 4], [2, 4, 1, 8])
    assert c["n_compared"] == 3 and c["spearman"] == pytest.approx(1.0) and c["misranking_rate"] == 0.0


def test_exact_rank_and_severe_misranking_against_hand_computed_confusion_matrix():
    # 7 layers; the boundary layers 0 and 6 are excluded (their extreme scores must not matter)
    x = [9.0, 0.1, 0.5, 0.3, 0.2, 0.4, -9.0]
    y = [-5.0, 0.2, 0.1, 0.3, 0.5, 0.4, 7.0]
    # by hand: inner x ranks (layers 1..5) = 0 4 2 1 3, inner y ranks = 1 0 2 4 3
    expected = np.zeros((5, 5), dtype=int)
    for g, r in ((0, 1), (4, 0), (2, 2), (1, 4), (3, 3)):
        expected[g, r] = 1
    st = rank_statistics(x, y)
    assert st["excluded_layers"] == [0, 6] and st["layers"] == [1, 2, 3, 4, 5] and st["n_ranked"] == 5
    assert st["guide_rank"] == [0, 4, 2, 1, 3] and st["reference_rank"] == [1, 0, 2, 4, 3]
    assert (rank_confusion(st["guide_rank"], st["reference_rank"]) == expected).all()
    assert st["exact_rank_misranking"] == pytest.approx(3 / 5)  # 2 of 5 layers on the diagonal
    # severe: offset >= ceil(5 / 4) = 2 -> layers 2 (offset 4) and 4 (offset 3)
    assert st["severe_offset"] == 2 and st["severe_misranking"] == pytest.approx(2 / 5)
    r = np.corrcoef([0.1, 0.5, 0.3, 0.2, 0.4], [0.2, 0.1, 0.3, 0.5, 0.4])[0, 1]
    assert st["pearson"] == pytest.approx(r, rel=1e-12) and st["pearson_paper_sign"] == pytest.approx(-r, rel=1e-12)
    # over every block the boundary outliers (9 / -5 and -9 / 7) dominate r: another value, another sign here
    r_all = stats.pearsonr(x, y).statistic
    assert st["pearson_all_blocks"] == pytest.approx(r_all, rel=1e-12)
    assert st["pearson_all_blocks_paper_sign"] == pytest.approx(-r_all, rel=1e-12)
    assert abs(st["pearson_all_blocks"] - st["pearson"]) > 0.5
    full = rank_statistics(x, y, exclude_boundary=False)
    assert full["excluded_layers"] == [] and full["n_ranked"] == 7
    assert full["pearson"] == pytest.approx(r_all, rel=1e-12) and full["pearson_all_blocks"] == full["pearson"]
    # a layer one vector does not score (NaN) is left out of both
    gap = rank_statistics([1.0, 2.0, np.nan, 3.0, 5.0], [2.0, 1.0, 4.0, 3.0, 9.0])
    assert gap["pearson_all_blocks"] == pytest.approx(np.corrcoef([1, 2, 3, 5], [2, 1, 3, 9])[0, 1], rel=1e-12)
    assert gap["pearson"] == pytest.approx(np.corrcoef([2, 3], [1, 3])[0, 1], rel=1e-12)
    # identical rankings: nothing misranked; ties broken by the lower layer index in both vectors
    same = rank_statistics([0, 1, 1, 2, 0], [0, 3, 3, 5, 0])
    assert same["exact_rank_misranking"] == 0.0 and same["severe_misranking"] == 0.0
    assert same["guide_rank"] == [0, 1, 2]


def _relabel(src, dst, revision: str, step: int):
    t = pq.read_table(src)
    n = t.num_rows
    t = t.set_column(t.schema.get_field_index("revision"), "revision", pa.array([revision] * n))
    t = t.set_column(t.schema.get_field_index("step"), "step", pa.array([step] * n, pa.int64()))
    pq.write_table(t, dst)
    return dst


def test_aggregate_ir_ratio_and_figures(setup, tmp_path):
    other = _relabel(setup["out"], tmp_path / "step0.parquet", "step0", 0)
    other_agr = _relabel(setup["agreement"], tmp_path / "step0_agr.parquet", "step0", 0)
    out, agr_out = tmp_path / "pruning.parquet", tmp_path / "agr.parquet"
    df = aggregate_pruning(AggregatePruningJob(inputs=[setup["out"], other], out=str(out),
                                               agreement_inputs=[setup["agreement"], other_agr],
                                               agreement_out=str(agr_out)))
    assert list(dict.fromkeys(df["revision"])) == ["step0", "step100"]
    assert pq.read_schema(out).names == PRUNING_SCHEMA.names and len(pd.read_parquet(agr_out)) > 0
    with pytest.raises(SwapKLError, match="both hold tiny@step100"):
        aggregate_pruning(AggregatePruningJob(inputs=[setup["out"], setup["out"]], out=str(tmp_path / "dup.parquet")))

    ir = ir_ratios(df, n_boot=100, seed=1)
    assert set(ir["budget"]) == {1, 2} and len(ir) == 4
    r = ir[(ir["revision"] == "step100") & (ir["budget"] == 2)].iloc[0]
    num = _row(df[df["revision"] == "step100"], "interchange", 2)["delta_ppl_pct"]
    den = _row(df[df["revision"] == "step100"], "replacement_max", 2)["delta_ppl_pct"]
    assert r["ir_diff"] == pytest.approx(num - den)
    assert r["ir_ratio"] == pytest.approx(num / den) if r["ratio_defined"] else np.isnan(r["ir_ratio"])

    from swapkl.figures.pruning import cost as fig
    from swapkl.figures.pruning.confusion import plot_rank_confusion

    agr = pd.read_parquet(agr_out)
    calls = {
        "delta": lambda p, q: fig.plot_delta_ppl(df, "tiny", "step100", p, q),
        "panel": lambda p, q: fig.plot_ir_panel(df, p, q, n_boot=50),
        "traj": lambda p, q: fig.plot_ir_trajectory(df, "tiny", p, q, n_boot=50),
        "agr": lambda p, q: fig.plot_agreement(agr, "tiny", "step100", p, q),
        "confusion": lambda p, q: plot_rank_confusion(agr, "tiny", "step100", p, q),
    }
    for name, call in calls.items():
        png, pdf = tmp_path / f"{name}.png", tmp_path / f"{name}.pdf"
        call(png, pdf)
        assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:4] == b"%PDF"
    first = [(tmp_path / f"delta.{e}").read_bytes() for e in ("png", "pdf")]
    calls["delta"](tmp_path / "delta.png", tmp_path / "delta.pdf")
    assert first == [(tmp_path / f"delta.{e}").read_bytes() for e in ("png", "pdf")], "figure is not deterministic"

def test_input_errors(setup, tmp_path):
    kw = dict(setup["kw"])
    d = setup["dir"]
    model, probe, rep = str(d / "model"), [setup["probe"]], str(setup["repr"])
    with pytest.raises(SwapKLError, match="calibration windows .* come from the evaluation text"):
        run_pruning(PruneJob(model=model, probe_files=probe, repr_file=rep, out=str(tmp_path / "x.parquet"),
                             **{**kw, "calib_data": DataSpec(text_file=str(d / "eval.txt"))}))
    assert not (tmp_path / "x.parquet").exists()
    # the explicit opt-in reproduces the paper's overlap and records it
    run_pruning(PruneJob(model=model, probe_files=probe, repr_file=rep, out=str(tmp_path / "overlap.parquet"),
                         allow_overlap=True,
                         **{**kw, "calib_data": DataSpec(text_file=str(d / "eval.txt"), n_seqs=2, seq_len=16,
                                                         min_tokens=4),
                            "budgets": [1], "n_random": 0}))
    assert provenance.read(str(tmp_path / "overlap.parquet"))["allow_overlap"] is True
    assert provenance.read(str(setup["out"]))["allow_overlap"] is False
    with pytest.raises(SwapKLError, match=r"budget 4 is infeasible.*spacing 1.*3 of 6 layers"):
        run_pruning(PruneJob(model=model, probe_files=probe, repr_file=rep, out=str(tmp_path / "x.parquet"),
                             **{**kw, "budgets": [4]}))
    with pytest.raises(SwapKLError, match="exceeds the model's 64 positions"):
        run_pruning(PruneJob(model=model, probe_files=probe, repr_file=rep, out=str(tmp_path / "x.parquet"),
                             **{**kw, "eval_data": {**kw["eval_data"], "window": 65, "stride": 32}}))
    other = tmp_path / "other"
    save_tiny(other, "llama", n_layers=N_LAYERS, seed=9)
    with pytest.raises(SwapKLError, match="other weights"):
        run_pruning(PruneJob(model=str(other), probe_files=probe, repr_file=rep, out=str(tmp_path / "x.parquet"), **kw))
    assert not (tmp_path / "x.parquet").exists()


def test_cli_prune_and_aggregate(setup, tmp_path):
    from swapkl.commands import prune_command as cmd

    parser = argparse.ArgumentParser(prog="swapkl")
    cmd.add_parser(parser.add_subparsers(dest="command", required=True))
    d = setup["dir"]
    out = tmp_path / "cli.parquet"
    args = parser.parse_args([
        "prune", "--model", str(d / "model"), "--probe", str(setup["probe"]), "--repr", str(setup["repr"]),
        "--budgets", "1", "--n-random", "1", "--device", "cpu",
        "--eval-text-file", str(d / "eval.txt"), "--eval-window", str(WINDOW), "--eval-stride", str(STRIDE),
        "--eval-max-words", str(MAX_WORDS), "--calib-tokens", str(d / "calib.npy"), "--out", str(out)])
    args.func(args)
    df = published(out)
    assert set(df["budget"]) == {0, 1}
    ref = setup["table"]
    for guide in ("interchange", "sleb_iterative", "bi"):
        assert list(_row(df, guide, 1)["removed_layers"]) == list(_row(ref, guide, 1)["removed_layers"])
        # Same windows and layers, but float32 forwards in other batch shapes may take other matmul kernels
        # (blocking, FMA) and round differently: each logit by ~gamma_d * sum|w h| (~1e-6 of its size), so the
        # mean NLL (~6 nats) by ~1e-6 nats and ppl = exp(mean NLL) by the same relative amount; 1e-5 leaves
        # a 10x margin and still catches a different window, layer or token count (>= 1e-3 here).
        assert _row(df, guide, 1)["ppl"] == pytest.approx(_row(ref, guide, 1)["ppl"], rel=1e-5)
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    plot = ["plot-pruning", "delta", "--model", str(df["model"].iloc[0]), "--revision", str(df["revision"].iloc[0]),
            "--out-png", str(png), "--out-pdf", str(pdf)]
    with pytest.raises(SwapKLError, match="no confidence intervals.*swapkl aggregate-pruning"):
        per_checkpoint = parser.parse_args([*plot, "--input", str(out)])  # prune's file, not the aggregate
        per_checkpoint.func(per_checkpoint)
    assert not png.exists() and not pdf.exists()
    agg = tmp_path / "agg.parquet"
    args = parser.parse_args(["aggregate-pruning", "--inputs", str(out), "--out", str(agg)])
    args.func(args)
    assert len(pd.read_parquet(agg)) == len(df)
    args = parser.parse_args([*plot, "--input", str(agg)])
    args.func(args)
    assert png.exists() and pdf.exists()
    # the alias draws what `swapkl figures pruning-cost` draws, byte for byte
    from swapkl import cli

    assert cli.main(["figures", "pruning-cost", "--pruning", str(agg), "--model", str(df["model"].iloc[0]),
                     "--revision", str(df["revision"].iloc[0]), "--out", str(tmp_path / "g")]) == 0
    assert (tmp_path / "g.png").read_bytes() == png.read_bytes()
    for sub in ("prune", "aggregate-pruning", "plot-pruning"):
        with pytest.raises(SystemExit):
            parser.parse_args([sub, "--help"])



def test_greedy_shortfall_gives_an_infeasible_row_not_a_crash():
    from swapkl.pruning.guides.context import GuideContext
    from swapkl.pruning.prune import select_all
    from swapkl.pruning.selection_options import SelectionOptions

    # 5 layers, spacing 1, ties by index: interchange picks 1 then 3 and blocks every other layer; budget 3 is
    # feasible ({0,2,4}). (With the default deletion tie-break layer 2 wins the tie of the pair 1<->2.)
    rows = [("interchange", i, i + 1, v) for i, v in enumerate([0.5, 0.1, 0.2, 0.3])]
    rows += [("deletion", i, None, v) for i, v in enumerate([0.1, 0.9, 0.2, 0.9, 0.3])]
    probe = pd.DataFrame(rows, columns=["protocol", "layer_i", "layer_j", "kl_mean"])
    sel, _, scores = select_all(GuideContext(probe, None, 5, [2, 3], 1, n_random=2, seed=0,
                                             options=SelectionOptions(tie_break="index")))
    assert sel[("interchange", 2, None)].removed == (1, 3) and sel[("interchange", 3, None)] is None
    default, _, _ = select_all(GuideContext(probe, None, 5, [2, 3], 1, n_random=2, seed=0))
    assert default[("interchange", 3, None)].removed == (0, 2, 4)
    assert sel[("deletion", 3, None)].removed == (0, 2, 4)
    assert set(scores) == {"interchange", "deletion"}
    # interior draws: blocks 1..3 hold 2 removals at spacing 1, so budget 3 is an infeasible row; every block: {0,2,4}
    assert all(sel[("random", 3, k)] is None for k in range(2))
    ends, _, _ = select_all(GuideContext(probe, None, 5, [2, 3], 1, n_random=2, seed=0,
                                         options=SelectionOptions(random_interior=False)))
    assert all(ends[("random", 3, k)].removed == (0, 2, 4) for k in range(2))


def test_pruning_refuses_probe_files_of_another_config(setup, tmp_path):
    """Same weights, edited config.json: the probe scores describe another function, so pruning refuses."""
    import json
    import shutil

    d = setup["dir"]
    edited = tmp_path / "edited"
    shutil.copytree(d / "model", edited)
    cfg = json.loads((edited / "config.json").read_text())
    cfg["rms_norm_eps"] = 0.5
    (edited / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "x.parquet"
    with pytest.raises(SwapKLError) as e:
        run_pruning(PruneJob(model=str(edited), probe_files=[setup["probe"]], repr_file=str(setup["repr"]),
                             out=str(out), **setup["kw"]))
    assert str(e.value) == f"the probe files were measured under another config.json than that of '{edited}'"
    assert not out.exists()


def _direct_percentiles(stats) -> tuple[float, float]:
    return tuple(np.quantile(stats[np.isfinite(stats)], [0.025, 0.975]))


def test_pruning_intervals_are_a_direct_bootstrap_of_the_stored_window_sums(setup, tmp_path):
    """The pruning run stores per-window sums and no CI; aggregate_pruning resamples the evaluation windows and
    the probe windows with the run's seed (written out here with numpy alone), paired with the base row.

    Tolerance: the same float64 sums of the same values in the same order (at most a few dozen windows), so
    agreement to the last bits; 1e-12 relative covers a reordered summation."""
    seed = setup["kw"]["seed"]
    assert provenance.read(str(setup["out"]))["seed"] == seed and "n_boot" not in provenance.read(str(setup["out"]))
    df = setup["table"]
    base = _row(df, "base", 0)
    tok = np.asarray(base["window_tokens"], dtype=np.float64)
    ptok = np.asarray(base["probe_tokens"], dtype=np.float64)
    e_idx = np.random.default_rng(seed).integers(0, len(tok), size=(N_BOOT, len(tok)))
    p_idx = np.random.default_rng(seed).integers(0, len(ptok), size=(N_BOOT, len(ptok)))
    log_ppl = lambda nll: np.asarray(nll, dtype=np.float64)[e_idx].sum(1) / tok[e_idx].sum(1)  # noqa: E731
    base_boot = log_ppl(base["window_nll_sum"])
    checked = 0
    for _, r in df.iterrows():
        if r["window_nll_sum"] is None:  # infeasible rows and the mean of the random draws
            assert np.isnan([r[c] for c in ("ppl_ci_low", "delta_ppl_pct_ci_high", "kl_ci_low")]).all()
            continue
        boot = log_ppl(r["window_nll_sum"])
        kl = np.asarray(r["probe_kl_sum"], dtype=np.float64)[p_idx].sum(1) / ptok[p_idx].sum(1)
        expected = {"ppl": _direct_percentiles(np.exp(boot)),
                    "delta_ppl_pct": _direct_percentiles(100.0 * np.expm1(boot - base_boot)),
                    "kl": (0.0, 0.0) if r["guide"] == "base" else _direct_percentiles(kl)}
        for name, (lo, hi) in expected.items():
            assert (r[f"{name}_ci_low"], r[f"{name}_ci_high"]) == pytest.approx((lo, hi), rel=1e-12, abs=1e-300)
        assert r["kl_mean"] == pytest.approx(r["probe_kl_sum"].sum() / ptok.sum(), rel=1e-12)
        checked += 1
    assert checked > 30
    # more resamples: other intervals, every other column as it was
    more = published(setup["out"], n_boot=N_BOOT + 1)
    ci = list(PRUNING_CI_COLUMNS)
    pd.testing.assert_frame_equal(more.drop(columns=ci), df.drop(columns=ci))
    assert not more[ci].fillna(0).equals(df[ci].fillna(0))
