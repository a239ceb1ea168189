"""Seed families: the config expansion (pure function) and the across-seed statistics, against direct
numpy/scipy computations.

Tolerances: every statistic here is a handful of float64 sums of at most a few hundred terms of size
O(1); both sides compute the same real number by different float64 operation orders, so they agree to a
few hundred ulps at most: rtol 1e-12 (≈ 4500 ulps of 2.2e-16) leaves a wide margin, while any wrong
formula (ddof, tie correction, a missing seed) changes the result at the 1e-2 level or more.
"""

from __future__ import annotations

import hashlib

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from swapkl.tables import provenance
from swapkl.errors import SwapKLError
from swapkl.tables.parquet_io import write_parquet
from swapkl.figures.seeds.band import plot_seed_band
from swapkl.stats.seed_families import SeedFamilyError, expand_seed_families
from swapkl.studies.seeds import kendall_w, mean_pairwise_spearman, read_seeds, seed_statistics, write_seed_statistics

RTOL = 1e-12


# ----------------------------------------------------------------------------------------- expansion


def _hub_entry(**seeds):
    return {"source": "EleutherAI/pythia-160m", "revisions": ["step0", "step1000"], "trajectory": True,
            "relevance": {"enabled": True}, "prune": {"enabled": False},
            "seeds": {"name": "{model}-seed{seed}", "family": None, "revisions": None, "varies": "both",
                      "seed": 1234, "source": "EleutherAI/pythia-160m-seed{seed}", "values": [1, 2], **seeds}}


def test_expansion_names_sources_and_seeds():
    # the sections a member gets switched off (the config passes those of the studies kept in folders)
    models, families = expand_seed_families({"pythia-160m": _hub_entry(), "other": {"local": "x", "revisions": ["main"]}},
                                            entry_only=("relevance",))
    assert list(models) == ["pythia-160m", "pythia-160m-seed1", "pythia-160m-seed2", "other"]
    assert "seeds" not in models["pythia-160m"] and models["pythia-160m"]["source"] == "EleutherAI/pythia-160m"
    assert models["pythia-160m-seed2"]["source"] == "EleutherAI/pythia-160m-seed2"
    assert models["pythia-160m-seed2"]["revisions"] == ["step0", "step1000"]
    assert models["pythia-160m"]["relevance"]["enabled"] and not models["pythia-160m-seed1"]["relevance"]["enabled"]
    assert families == {"pythia-160m": {"varies": "both", "members": {
        "pythia-160m": 1234, "pythia-160m-seed1": 1, "pythia-160m-seed2": 2}}}


def test_expansion_of_a_demo_family_and_member_revisions():
    entry = {"demo": {"arch": "gpt_neox", "seed": 0}, "revisions": ["step0", "step50", "step200"],
             "seeds": {"name": "{model}-s{seed}", "family": "demo-family", "revisions": ["step0", "step200"],
                       "varies": "both", "seed": None, "values": [5]}}
    models, families = expand_seed_families({"pythia-demo": entry})
    assert models["pythia-demo-s5"]["demo"] == {"arch": "gpt_neox", "seed": 5}
    assert models["pythia-demo"]["demo"]["seed"] == 0  # the entry is not changed by its members
    assert models["pythia-demo-s5"]["revisions"] == ["step0", "step200"]
    assert families["demo-family"]["members"] == {"pythia-demo": 0, "pythia-demo-s5": 5}


@pytest.mark.parametrize("seeds, field", [
    ({"seed": None}, "models.pythia-160m.seeds.seed"),
    ({"source": None}, "models.pythia-160m.seeds.source"),
    ({"source": "EleutherAI/pythia-160m-seed"}, "models.pythia-160m.seeds.source"),
    ({"source": "EleutherAI/pythia-{size}-seed{seed}"}, "models.pythia-160m.seeds.source"),
    ({"name": "{model}"}, "models.pythia-160m.seeds.name"),
    ({"name": "{model}/{seed}"}, "models.pythia-160m.seeds.name"),
    ({"values": [1, 1234]}, "models.pythia-160m.seeds.values"),
    ({"name": "other{seed}"}, "models.pythia-160m.seeds.name"),  # other1 collides with the model other1
])
def test_expansion_errors_name_the_field(seeds, field):
    with pytest.raises(SeedFamilyError) as err:
        expand_seed_families({"pythia-160m": _hub_entry(**seeds), "other1": {"local": "x", "revisions": ["main"]}})
    assert str(err.value).startswith(field + ":") and "\n" not in str(err.value)


@pytest.mark.parametrize("seeds, field", [
    ({"seed": 7}, "models.pythia-demo.seeds.seed"),  # the demo's own seed is demo.seed (0)
    ({"source": "x/y{seed}"}, "models.pythia-demo.seeds.source"),
    ({"values": [0, 1]}, "models.pythia-demo.seeds.values"),
])
def test_demo_family_errors_name_the_field(seeds, field):
    entry = {"demo": {"arch": "gpt_neox", "seed": 0}, "revisions": ["step0"],
             "seeds": {"name": "{model}-seed{seed}", "family": None, "revisions": None, "varies": "both",
                       "seed": None, "values": [1], **seeds}}
    with pytest.raises(SeedFamilyError) as err:
        expand_seed_families({"pythia-demo": entry})
    assert str(err.value).startswith(field + ":") and "\n" not in str(err.value)


# ----------------------------------------------------------------------------------------- rank statistics


def _direct_mean_spearman(x):
    return np.mean([stats.spearmanr(x[a], x[b]).statistic for a, b in combinations(range(len(x)), 2)])


@pytest.mark.parametrize("m, n, tied", [(2, 5, False), (4, 23, False), (10, 66, True), (3, 11, True)])
def test_mean_pairwise_spearman_matches_scipy(m, n, tied):
    rng = np.random.default_rng(m * 100 + n)
    x = rng.normal(size=(m, n))
    if tied:
        x = np.round(x, 0)  # many ties: average ranks
    assert mean_pairwise_spearman(x) == pytest.approx(_direct_mean_spearman(x), rel=RTOL)


@pytest.mark.parametrize("m, n, tied", [(2, 5, False), (4, 23, False), (10, 66, True), (3, 11, True)])
def test_kendall_w_matches_friedman(m, n, tied):
    """W = chi2_F / (m (n - 1)) with Friedman's tie-corrected statistic (raters = blocks, items = treatments)."""
    rng = np.random.default_rng(m * 7 + n)
    x = rng.normal(size=(m, n)) + np.linspace(0, 2, n)  # some agreement between raters
    if tied:
        x = np.round(x, 0)
    chi2 = stats.friedmanchisquare(*x.T).statistic
    assert kendall_w(x) == pytest.approx(chi2 / (m * (n - 1)), rel=RTOL)
    if not tied:  # without ties the mean pairwise Spearman is (m W - 1) / (m - 1)
        assert mean_pairwise_spearman(x) == pytest.approx((m * kendall_w(x) - 1) / (m - 1), rel=RTOL)


def test_rank_statistics_undefined_cases_are_nan():
    assert np.isnan(kendall_w(np.ones((3, 4))))
    assert np.isnan(mean_pairwise_spearman(np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])))
    assert np.isnan(kendall_w(np.array([[1.0, 2.0, 3.0]])))


# ----------------------------------------------------------------------------------------- the seeds table


FAMILIES = {
    "fam": {"varies": "both", "members": {"fam": 1234, "fam-seed1": 1, "fam-seed2": 2}},
    "dat": {"varies": "data", "members": {"dat1": 1, "dat2": 2, "dat3": 3}},
    "wei": {"varies": "init", "members": {"wei1": 1, "wei2": 2, "wei3": 3}},
}
N_LAYERS = 6


def _aggregate(rng, revisions=(("step0", 0), ("step100", 100))):
    """Pair and summary rows (pair set `within:2`) of every member, the summaries computed from the pairs."""
    pairs = [(i, j) for i in range(N_LAYERS) for j in range(i + 1, N_LAYERS) if j - i <= 2]
    rows = []
    for spec in FAMILIES.values():
        for model in spec["members"]:
            for revision, step in revisions:
                r_ij, r_ji, inter = rng.gamma(2.0, 0.1, size=(3, len(pairs)))
                d_repl = np.maximum(r_ij, r_ji)
                common = {"model": model, "revision": revision, "step": step, "n_layers": N_LAYERS,
                          "duplicate_of": None}
                for k, (i, j) in enumerate(pairs):
                    rows.append({**common, "kind": "pair", "layer_i": i, "layer_j": j, "d_repl_max": d_repl[k],
                                 "d_inter": inter[k], "gap": d_repl[k] - inter[k], "gap_fwd": r_ij[k] - inter[k],
                                 "in_within_2": True, "in_adjacent": j - i == 1})
                for name, keep in (("within:2", np.ones(len(pairs), bool)),
                                   ("adjacent", np.array([j - i == 1 for i, j in pairs]))):
                    rows.append({**common, "kind": "summary", "pair_set": name, "n_pairs": int(keep.sum()),
                                 "gap_mean": (d_repl - inter)[keep].mean(), "gap_fwd_mean": (r_ij - inter)[keep].mean(),
                                 "d_repl_max_mean": d_repl[keep].mean(), "d_repl_fwd_mean": r_ij[keep].mean(),
                                 "d_inter_mean": inter[keep].mean()})
    return pd.DataFrame(rows)


def test_family_rows_match_a_direct_computation():
    rng = np.random.default_rng(0)
    agg = _aggregate(rng)
    # a member missing at one revision: that revision's statistics use the other two seeds
    agg = agg[~((agg["model"] == "fam-seed2") & (agg["revision"] == "step100"))]
    table = seed_statistics(agg, FAMILIES)
    fam = table[(table["kind"] == "family") & (table["family"] == "fam")]
    assert len(fam) == 4  # 2 revisions x 2 pair sets
    for _, row in fam.iterrows():
        sel = agg[(agg["kind"] == "summary") & (agg["revision"] == row["revision"])
                  & (agg["pair_set"] == row["pair_set"]) & agg["model"].isin(list(FAMILIES["fam"]["members"]))]
        models = list(sel.sort_values("model")["model"])
        assert row["n_seeds"] == len(models) == (2 if row["revision"] == "step100" else 3)
        assert sorted(row["seeds"]) == sorted(FAMILIES["fam"]["members"][m] for m in models)
        for q in ("gap", "gap_fwd"):
            v = sel[f"{q}_mean"].to_numpy(float)
            assert row[f"{q}_seed_mean"] == pytest.approx(np.mean(v), rel=RTOL)
            assert row[f"{q}_seed_sd"] == pytest.approx(np.std(v, ddof=1), rel=RTOL)
            assert (row[f"{q}_seed_min"], row[f"{q}_seed_max"]) == (v.min(), v.max())
        column = "in_within_2" if row["pair_set"] == "within:2" else "in_adjacent"
        for q in ("gap", "gap_fwd", "d_repl_max", "d_inter"):
            x = np.vstack([agg[(agg["kind"] == "pair") & (agg["model"] == m) & (agg["revision"] == row["revision"])
                               & (agg[column] == True)].sort_values(["layer_i", "layer_j"])[q]  # noqa: E712
                           for m in models])
            assert row[f"spearman_{q}"] == pytest.approx(_direct_mean_spearman(x), rel=RTOL)
            assert row[f"kendall_w_{q}"] == pytest.approx(
                stats.friedmanchisquare(*x.T).statistic / (len(models) * (x.shape[1] - 1)), rel=RTOL)


def test_decomposition_matches_sample_variances():
    rng = np.random.default_rng(1)
    agg = _aggregate(rng)
    table = seed_statistics(agg, FAMILIES)
    dec = table[table["kind"] == "decomposition"]
    assert len(dec) == 2 * 2 * 2  # revisions x pair sets x (gap, gap_fwd)
    for _, row in dec.iterrows():
        def var(models):
            s = agg[(agg["kind"] == "summary") & agg["model"].isin(models) & (agg["revision"] == row["revision"])
                    & (agg["pair_set"] == row["pair_set"])]
            return np.var(s[f"{row['quantity']}_mean"].to_numpy(float), ddof=1)
        v_d, v_i = var(["dat1", "dat2", "dat3"]), var(["wei1", "wei2", "wei3"])
        assert (row["data_family"], row["init_family"]) == ("dat", "wei")
        assert row["var_data"] == pytest.approx(v_d, rel=RTOL) and row["var_init"] == pytest.approx(v_i, rel=RTOL)
        assert row["share_data"] == pytest.approx(v_d / (v_d + v_i), rel=RTOL)


def test_pruning_choice_counts():
    rng = np.random.default_rng(2)
    agg = _aggregate(rng)
    members = list(FAMILIES["fam"]["members"])
    sets = {m: sorted(rng.choice(N_LAYERS, size=2, replace=False).tolist()) for m in members}
    pruning = pd.DataFrame(
        [{"model": m, "revision": "step100", "step": 100, "n_layers": N_LAYERS, "guide": "interchange", "budget": 2,
          "random_draw": None, "fixed_set": None, "feasible": True, "removed_layers": sets[m]} for m in members]
        + [{"model": "fam", "revision": "step100", "step": 100, "n_layers": N_LAYERS, "guide": "random", "budget": 2,
            "random_draw": 0, "fixed_set": None, "feasible": True, "removed_layers": [0, 1]},
           {"model": "fam", "revision": "step100", "step": 100, "n_layers": N_LAYERS, "guide": "random_mean",
            "budget": 2, "random_draw": None, "fixed_set": None, "feasible": True, "removed_layers": None},
           {"model": "fam", "revision": "step100", "step": 100, "n_layers": N_LAYERS, "guide": "fixed", "budget": 2,
            "random_draw": None, "fixed_set": "mine", "feasible": True, "removed_layers": [2, 3]}])
    table = seed_statistics(agg, FAMILIES, pruning)
    rows = table[table["kind"] == "pruning"]
    assert set(rows["guide"]) == {"interchange"} and len(rows) == N_LAYERS
    for _, row in rows.iterrows():
        expected = sum(row["layer"] in sets[m] for m in members)
        assert (row["n_chosen"], row["n_seeds"]) == (expected, 3)
        assert row["share_chosen"] == pytest.approx(expected / 3, rel=RTOL)


def test_written_table_round_trips_and_no_member_is_an_error(tmp_path):
    rng = np.random.default_rng(3)
    agg = _aggregate(rng)
    path = tmp_path / "swapkl.parquet"
    write_parquet(agg.assign(step=agg["step"].astype("Int64")), str(path), {"test": "an aggregate table"})
    out = tmp_path / "seeds.parquet"
    df = write_seed_statistics(path, out, families=FAMILIES)
    back = read_seeds(out)
    assert len(back) == len(df) and set(back["kind"]) == {"member", "family", "decomposition"}
    prov = provenance.read(str(out))  # the input's hash and the code that wrote it
    assert prov["input_sha256"] == {str(path): hashlib.sha256(path.read_bytes()).hexdigest()}
    assert prov["swapkl_source_sha256"] == provenance.source_sha256()
    plot_seed_band(out, tmp_path / "band.png", tmp_path / "band.pdf", family="fam")
    assert (tmp_path / "band.png").stat().st_size > 1000 and (tmp_path / "band.pdf").is_file()
    with pytest.raises(SwapKLError, match="no step with two or more seeds of nope"):
        plot_seed_band(out, tmp_path / "x.png", tmp_path / "x.pdf", family="nope")
    with pytest.raises(SwapKLError, match="no summary rows of any seed family member"):
        seed_statistics(agg, {"x": {"varies": "both", "members": {"nope": 1}}})
