"""End to end: the real DAG on the offline smoke demo (trains its own models), then consistency checks.

This is the test CI relies on to show the pipeline runs from a fresh clone: every rule, the real
package code paths, Parquet outputs, figures and the HTML report. The finished tree (fixture `demo_run`,
tests/conftest.py) is shared with the incremental-run tests and the browser test of the report.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from workflow_runs import run_demo

pytestmark = pytest.mark.slow




def test_outputs_exist_and_are_nonempty(demo_run):
    w = demo_run
    for rel in ("results/swapkl.parquet", "results/pruning.parquet", "results/pruning_agreement.parquet",
                "report.html", "results/figures/training_curves.png",
                "results/figures/gap_trajectory/pythia-demo.png", "results/figures/gap_trajectory/pythia-demo.pdf"):
        assert (w / rel).is_file() and (w / rel).stat().st_size > 0, rel
    figures = list((w / "results/figures").rglob("*.png"))
    assert len(figures) >= 10
    assert all(f.stat().st_size > 1000 for f in figures)
    assert all(f.with_suffix(".pdf").is_file() for f in figures)
    html = (w / "report.html").read_text(errors="replace")
    assert "gap" in html.lower()


def test_probe_files_agree_with_aggregate(demo_run):
    w = demo_run
    agg = pd.read_parquet(w / "results/swapkl.parquet")
    directed = agg[agg["kind"] == "directed"]
    for path in sorted((w / "results/probes").rglob("*.parquet")):
        if path.name == "representation.parquet":
            continue
        probe = pd.read_parquet(path)
        model, rev = probe["model"].iloc[0], probe["revision"].iloc[0]
        d = directed[(directed["model"] == model) & (directed["revision"] == rev)]
        for _, row in probe[probe["protocol"] != "base"].iterrows():
            m = d[(d["protocol"] == row["protocol"]) & (d["layer_i"] == row["layer_i"])
                  & ((d["layer_j"] == row["layer_j"]) | (d["layer_j"].isna() & pd.isna(row["layer_j"])))
                  & ((d["head"] == row["head"]) | (d["head"].isna() & pd.isna(row["head"])))]
            assert len(m) == 1, (path, row["protocol"], row["layer_i"], row["layer_j"], row["head"])
            assert m["kl_mean"].iloc[0] == pytest.approx(row["kl_mean"], rel=1e-12)
            # the token-weighted mean is the ratio of the per-sequence sums
            assert row["kl_mean"] == pytest.approx(np.sum(row["seq_kl_sum"]) / np.sum(row["seq_tokens"]), rel=1e-12)
            # the CI, computed by the aggregate from those sums
            assert m["kl_ci_low"].iloc[0] <= row["kl_mean"] <= m["kl_ci_high"].iloc[0]


def test_pair_rows_are_derived_correctly(demo_run):
    agg = pd.read_parquet(demo_run / "results/swapkl.parquet")
    d = agg[agg["kind"] == "directed"]
    pairs = agg[agg["kind"] == "pair"]
    assert len(pairs) > 0
    for _, p in pairs.sample(min(20, len(pairs)), random_state=0).iterrows():
        sel = d[(d["model"] == p["model"]) & (d["revision"] == p["revision"])]
        r = lambda i, j: sel[(sel["protocol"] == "replacement") & (sel["layer_i"] == i)  # noqa: E731
                             & (sel["layer_j"] == j)]["kl_mean"].iloc[0]
        inter = sel[(sel["protocol"] == "interchange") & (sel["layer_i"] == p["layer_i"])
                    & (sel["layer_j"] == p["layer_j"])]["kl_mean"].iloc[0]
        i, j = int(p["layer_i"]), int(p["layer_j"])
        assert p["d_repl_max"] == pytest.approx(max(r(i, j), r(j, i)))
        assert p["d_repl_mean"] == pytest.approx((r(i, j) + r(j, i)) / 2)
        assert p["d_inter"] == pytest.approx(inter)
        assert p["gap"] == pytest.approx(p["d_repl_max"] - inter)


def test_checkpoints_hashes_and_windows_consistent(demo_run):
    w = demo_run
    by_ckpt = {}
    for path in sorted((w / "results/probes").rglob("*.parquet")):
        prov = json.loads(pq.read_schema(path).metadata[b"swapkl"])
        by_ckpt.setdefault((path.parent.parent.name, path.parent.name), []).append(prov)
    weights = {}
    for (model, rev), provs in by_ckpt.items():
        assert len({p["weights_sha256"] for p in provs}) == 1, (model, rev)
        assert len({p["tokens_sha256"] for p in provs}) == 1, (model, rev)
        weights[(model, rev)] = provs[0]["weights_sha256"]
    # training changed the weights: no two demo checkpoints are flagged identical
    assert len(set(weights.values())) == len(weights)
    agg = pd.read_parquet(w / "results/swapkl.parquet")
    assert agg["duplicate_of"].isna().all()


def test_paper_columns_present(demo_run):
    agg = pd.read_parquet(demo_run / "results/swapkl.parquet")
    pairs = agg[agg["kind"] == "pair"]
    assert np.allclose(pairs["d_repl_fwd"], pairs["r_ij"])
    assert np.allclose(pairs["gap_fwd"], pairs["r_ij"] - pairs["d_inter"])
    summ = agg[agg["kind"] == "summary"]
    assert summ["gap_fwd_mean"].notna().all() and summ["gap_fwd_mean_ci_low"].notna().all()
    agr = pd.read_parquet(demo_run / "results/pruning_agreement.parquet")
    vs = agr[agr["reference"] == "deletion"]
    assert vs["exact_rank_misranking"].between(0, 1).all() and vs["severe_misranking"].between(0, 1).all()
    assert (vs["excluded_layers"].map(list) == vs["n_layers"].map(lambda n: [0, n - 1])).all()
    ranked = vs[vs["n_ranked"] >= 2]
    assert np.allclose(ranked["exact_rank_chance"], 1 - 1 / ranked["n_ranked"])
    assert ranked["severe_p"].between(0, 1).all() and ranked["exact_rank_p"].between(0, 1).all()


def test_scorecard_in_the_report(demo_run):
    """No paper model runs in the demo: every published number is `not run`, and the table is in the report."""
    card = pd.read_parquet(demo_run / "results/paper_scorecard.parquet")
    assert len(card) >= 100 and card["status"].str.startswith("not run (").all() and card["swapkl"].isna().all()
    assert "paper_scorecard.html" in (demo_run / "report.html").read_text(errors="replace")


def test_demo_models_learned(demo_run):
    for log in sorted((demo_run / "resources/demo/models").glob("*/training_log.csv")):
        df = pd.read_csv(log).sort_values("step")
        assert df["heldout_loss"].iloc[-1] < df["heldout_loss"].iloc[0] - 0.5, log


def test_pruning_table(demo_run):
    pr = pd.read_parquet(demo_run / "results/pruning.parquet")
    assert {"interchange", "replacement_max", "bi", "sleb_iterative", "random_mean", "sleb_greedy", "cka", "taylor",
            "laco", "beam", "accuracy_iterative"} <= set(pr["guide"])
    base = pr[pr["guide"] == "base"]
    assert (base["delta_ppl_pct"].abs() < 1e-9).all()
    one = pr[(pr["budget"] == 1) & pr["feasible"].astype(bool) & ~pr["guide"].isin(["random", "random_mean"])]
    assert one["removed_layers"].map(len).eq(1).all()
    # SLEB-iterative at budget 1 removes the block whose removal costs the least calibration NLL, so its
    # probe-window KL is finite and its perplexity is a real number
    assert np.isfinite(one["ppl"]).all()


def test_the_pruning_table_gives_each_probe_guided_set_its_stability(demo_run):
    """set_stability: on every feasible interchange and deletion row a share in [0, 1], recomputed from the
    checkpoint's probe files (swapkl.pruning.stability on the files the prune job read); null on the other guides."""
    from swapkl.pruning.stability import set_stability

    pr = pd.read_parquet(demo_run / "results/pruning.parquet")
    probed = pr[pr["guide"].isin(["interchange", "deletion"]) & pr["feasible"].astype(bool)]
    assert len(probed) and probed["set_stability"].between(0, 1).all()
    assert pr[pr["guide"].isin(["bi", "sleb_iterative", "random", "base"])]["set_stability"].isna().all()
    row = probed[probed["guide"] == "interchange"].iloc[0]
    folder = demo_run / "results" / "probes" / row["model"] / row["revision"]
    probe = pd.concat([pd.read_parquet(folder / f"{p}.parquet") for p in ("interchange", "deletion")])
    assert set_stability(probe, "interchange", int(row["budget"]), row["removed_layers"], int(row["n_layers"]),
                         int(row["spacing"])) == row["set_stability"]


def test_relevance_table_and_figures(demo_run):
    rel = pd.read_parquet(demo_run / "results/relevance.parquet")
    assert {"model", "revision", "task", "layer", "accuracy", "base_accuracy", "random_baseline",
            "relevance"} <= set(rel.columns)
    assert set(rel["task"]) == {"demo_next_word", "demo_continuation", "lm"}
    assert set(rel["model"]) == {"pythia-demo", "llama-demo", "qwen3-demo"}
    singles = rel[rel["layer"].notna()]
    for (model, revision), g in singles.groupby(["model", "revision"]):
        n_layers = g["layer"].nunique()
        assert len(g) == n_layers * 5  # two metrics per multiple-choice task, one for the LM text
        for stem in ("relevance_cosine", "relevance_zscores", "relevance_confusion"):
            png = demo_run / f"results/figures/{stem}/{model}/{revision}.png"
            assert png.stat().st_size > 1000 and png.with_suffix(".pdf").is_file()
    # every scored checkpoint is pruned too in the smoke run: each guide's pruned model at each budget is scored,
    # on every task and metric
    pruning = pd.read_parquet(demo_run / "results/pruning.parquet")
    chosen = pruning[pruning["feasible"] & pruning["removed_layers"].map(lambda r: r is not None and len(r) > 0)]
    def keys(df):  # budget and random_draw are float where the column holds nulls
        return sorted((r.model, r.revision, r.guide, int(r.budget), None if pd.isna(r.random_draw) else int(r.random_draw),
                       None if pd.isna(r.fixed_set) else r.fixed_set) for r in df.itertuples())

    pruned = rel[rel["layer"].isna()]
    for (task, metric), g in pruned.groupby(["task", "metric"]):
        assert keys(g) == keys(chosen), (task, metric)
    assert pruned.groupby(["task", "metric"]).ngroups == 5
    stats = pd.read_parquet(demo_run / "results/relevance_stats.parquet")
    plotted = rel[rel["metric"].isin(["acc", "next_token_acc"])]
    assert sorted(map(tuple, stats[["model", "revision", "task"]].to_numpy())) == \
        sorted(map(tuple, plotted[["model", "revision", "task"]].drop_duplicates().to_numpy()))
    assert (stats["reference"] == "bi").all()


def test_exported_pruned_models_load(demo_run):
    from transformers import AutoModelForCausalLM

    pr = pd.read_parquet(demo_run / "results/pruning.parquet")
    rows = pr[(pr["model"] == "llama-demo") & (pr["guide"] == "interchange") & pr["feasible"].astype(bool)]
    exports = demo_run / "results/exports/llama-demo/step60"
    folders = sorted(p.name for p in exports.iterdir() if not p.name.startswith("."))  # .snakemake_timestamp
    assert folders == sorted(f"interchange-n{b}" for b in rows["budget"])
    for budget, removed in zip(rows["budget"], rows["removed_layers"]):
        folder = exports / f"interchange-n{budget}"
        prov = json.loads((folder / "swapkl_export.json").read_text())
        assert prov["removed_layers"] == sorted(removed) and prov["guide"] == "interchange"
        model = AutoModelForCausalLM.from_pretrained(folder)
        assert model.config.num_hidden_layers == prov["n_layers_source"] - len(removed)


def test_rerun_is_a_noop(demo_run):
    proc = run_demo(demo_run, extra=("--dry-run",))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_the_sequential_probe_equals_the_uniform_probe_on_the_windows_it_saw(demo_run):
    """The workflow's sequential probe (pool: the probe windows, walked in default_rng(seed) order): each
    variant's per-window KL equals the uniform probe's on those windows (another batching of the same
    windows: equal up to float32 rounding), its n_seqs is its own, and results/decisions.parquet holds the
    checkpoint's decisions."""
    from swapkl.studies.sequential.probe import walk_order

    w = demo_run
    seq = pd.read_parquet(w / "results/sequential/pythia-demo/step60/probe.parquet")
    order = walk_order(8, 0)
    for protocol in ("replacement", "interchange", "deletion"):
        uniform = pd.read_parquet(w / f"results/probes/pythia-demo/step60/{protocol}.parquet")
        rows = seq[seq["protocol"] == protocol]
        assert len(rows) > 0
        for _, row in rows.iterrows():
            match = uniform[(uniform["layer_i"] == row["layer_i"])
                            & ((uniform["layer_j"] == row["layer_j"])
                               | (uniform["layer_j"].isna() & pd.isna(row["layer_j"])))].iloc[0]
            n = int(row["n_seqs"])
            assert n in (4, 6, 8) and len(row["seq_kl_sum"]) == n
            want = np.asarray(match["seq_kl_sum"])[order[:n]]
            np.testing.assert_allclose(row["seq_kl_sum"], want, rtol=1e-5, atol=1e-9)
            assert list(row["seq_tokens"]) == list(np.asarray(match["seq_tokens"])[order[:n]])
    decisions = pd.read_parquet(w / "results/decisions.parquet")
    assert (decisions["model"] == "pythia-demo").all() and (decisions["revision"] == "step60").all()
    assert set(decisions["kind"]) == {"sign", "set"} and set(decisions["state"]) <= {"holds", "undecided"}
    assert len(decisions[decisions["kind"] == "sign"]) == 5  # the adjacent pairs of 6 blocks
    assert set(decisions.loc[decisions["kind"] == "set", "subject"]) == {"interchange@1", "interchange@2"}


def test_the_sublayer_decomposition_has_the_aggregates_block_gaps(demo_run):
    """results/sublayer_gaps.parquet (the smoke demo's step60, on the probe windows): its block gaps are the
    aggregate's pair gaps of the same windows, every adjacent pair has a block, an attention and an MLP gap and
    an interaction, and every block its deletions."""
    w = demo_run
    gaps = pd.read_parquet(w / "results/sublayer_gaps.parquet")
    agg = pd.read_parquet(w / "results/swapkl.parquet")
    pairs = agg[(agg["kind"] == "pair") & (agg["model"] == "pythia-demo") & (agg["revision"] == "step60")
                & (agg["layer_j"] == agg["layer_i"] + 1)].set_index(["layer_i", "layer_j"])
    block = gaps[(gaps["kind"] == "gap") & (gaps["part"] == "block")]
    assert len(block) == 5 and set(gaps["part"]) == {"block", "attention", "mlp"}
    for row in block.itertuples():  # another batching of the same windows: equal up to float32 rounding
        assert row.value == pytest.approx(pairs.loc[(row.layer_i, row.layer_j), "gap"], rel=1e-4, abs=1e-7)
    assert len(gaps[gaps["kind"] == "interaction"]) == 5
    assert len(gaps[gaps["kind"] == "deletion"]) == 6 * 3


def test_sublayer_pruning_agrees_with_the_pruning_stage(demo_run):
    """results/sublayer_pruning.parquet (the smoke demo's step60, budgets 1 and 2, on the pruning's evaluation
    text): its unpruned perplexity is the pruning stage's, and its deletion-guided block sets (the same deletion
    KLs of the same probe windows, the same greedy) are the pruning stage's sets at the same cost; its figure is
    drawn."""
    w = demo_run
    sub = pd.read_parquet(w / "results/sublayer_pruning.parquet")
    pruned = pd.read_parquet(w / "results/pruning.parquet")
    pruned = pruned[(pruned["model"] == "pythia-demo") & (pruned["revision"] == "step60")]
    base = pruned[pruned["guide"] == "base"]["ppl"].iloc[0]
    assert sub["base_ppl"].to_numpy() == pytest.approx(base, rel=1e-4)  # another batching of the same windows
    cost = sub[sub["kind"] == "cost"]
    assert set(cost["budget"]) == {1, 2} and len(cost) == 2 * 5 and len(sub[sub["kind"] == "difference"]) == 2 * 6
    assert (cost["removed_params"].dropna() <= cost.loc[cost["removed_params"].notna(), "param_budget"]).all()
    for n in (1, 2):
        mine = cost[(cost["guide"] == "deletion") & (cost["budget"] == n)].iloc[0]
        theirs = pruned[(pruned["guide"] == "deletion") & (pruned["budget"] == n)].iloc[0]
        assert [int(b) for b in mine["removed"]] == list(theirs["removed_layers"])
        assert mine["ppl"] == pytest.approx(theirs["ppl"], rel=1e-4)
    assert (w / "results/figures/sublayer_decomposition/pythia-demo.png").is_file()


def test_the_run_logged_its_elapsed_time_and_expected_total(demo_run):
    """The onstart handler's follower (swapkl.progress.DagProgress) wrote the whole run's progress into Snakemake's
    own log: jobs done of the total, the time elapsed and the expected total at the pace so far."""
    text = "\n".join(p.read_text() for p in (demo_run / ".snakemake" / "log").glob("*.snakemake.log"))
    found = re.findall(r"swapkl: (\d+) of (\d+) jobs done, \S+ elapsed; at this pace about \S+ in all \(ETA \S+\)",
                       text)
    assert found and all(0 < int(done) < int(total) for done, total in found)
