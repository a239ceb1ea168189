"""The covariates table and the correlation analysis against direct computations.

Spearman's rho against ``scipy.stats.spearmanr``; its CI against a loop that calls ``spearmanr`` on each
resample and takes numpy's percentiles; the table's gaps against the aggregate's own pair rows. The
only arithmetic that differs is the order of float64 sums over at most a few hundred ranks, so 1e-12
bounds it (each rank sum carries at most n * 2**-53 relative error, n <= 200).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats

from swapkl.tables import provenance as swapkl_provenance
from swapkl.probes.aggregate import aggregate, read_aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.stats.bootstrap import resample_indices
from swapkl.studies.covariate_stats import (ANALYSED, aggregate_covariates, correlations, group_seed, spearman,
                                    spearman_ci)
from swapkl.errors import SwapKLError
from swapkl.figures.seeds.covariates import plot_covariate_correlations
from swapkl.tables.schemas import COVARIATE_COLUMNS, COVARIATE_FILE_SCHEMA, read_covariate_correlations
from probe_fixtures import probe_files, provenance, random_values, write_checkpoint, write_table

TOL = 1e-12


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    for n in (3, 7, 40, 200):
        x = rng.integers(0, 5, n).astype(float)  # many ties
        y = x + rng.normal(0, 2, n)
        assert abs(spearman(x, y) - stats.spearmanr(x, y).statistic) <= TOL
    assert np.isnan(spearman(np.ones(5), np.arange(5.0)))  # no variation: undefined, not 0


def test_spearman_ci_matches_a_direct_bootstrap():
    rng = np.random.default_rng(1)
    x = rng.normal(size=30)
    y = 0.5 * x + rng.normal(size=30)
    idx = resample_indices(30, 400, seed=7)
    rho, lo, hi = spearman_ci(x, y, idx)
    boot = [stats.spearmanr(x[b], y[b]).statistic for b in idx]
    boot = np.array([r for r in boot if np.isfinite(r)])
    assert abs(rho - stats.spearmanr(x, y).statistic) <= TOL
    assert abs(lo - np.percentile(boot, 2.5)) <= TOL and abs(hi - np.percentile(boot, 97.5)) <= TOL
    assert lo < rho < hi


def _table(rng, groups: dict[str, list], n_pairs: int) -> pd.DataFrame:
    """Rows of random covariates and gaps for every combination of the group columns' values."""
    keys = list(groups)
    combos = pd.MultiIndex.from_product(list(groups.values()), names=keys).to_frame(index=False)
    df = combos.loc[combos.index.repeat(n_pairs)].reset_index(drop=True)
    for c in ("distance", *COVARIATE_COLUMNS):
        df[c] = rng.normal(size=len(df))
    df["gap"] = df["commutator"] + rng.normal(0, 0.5, len(df))
    df["gap_fwd"] = rng.normal(size=len(df))
    df["duplicate_of"] = None
    return df


def test_correlations_are_group_agnostic_and_match_a_direct_computation():
    rng = np.random.default_rng(2)
    df = _table(rng, {"family": ["f1", "f2"], "model": ["m"], "revision": ["step0", "step9"]}, n_pairs=12)
    df.loc[3, "weight_dist"] = np.nan  # a NaN covariate leaves that pair out of that covariate only
    df.loc[df.index[-12:], "duplicate_of"] = "step0"  # a duplicate revision's rows count nowhere
    got = correlations(df, n_boot=300, seed=5)
    assert set(got["scope"]) == {"checkpoint", "model", "family"}
    kept = df[df["duplicate_of"].isna()]
    for r in got.itertuples():
        keys = {"checkpoint": ["model", "revision"], "model": ["model"], "family": ["family"]}[r.scope]
        sel = kept
        for k, v in (part.split("=") for part in r.group.split(", ")):
            assert k in keys
            sel = sel[sel[k] == v]
        x, y = sel[r.covariate].to_numpy(), sel[r.target].to_numpy()
        ok = np.isfinite(x) & np.isfinite(y)
        assert r.n_pairs == ok.sum()
        assert abs(r.spearman - stats.spearmanr(x[ok], y[ok]).statistic) <= TOL
        assert r.ci_low <= r.spearman <= r.ci_high and r.n_boot == 300 and r.resampled == "pairs"
    # checkpoint scope: model and revision columns name the checkpoint; the same draws for every covariate
    one = got[(got["scope"] == "checkpoint") & (got["group"] == "model=m, revision=step9")
              & (got["covariate"] == "commutator") & (got["target"] == "gap")].iloc[0]
    sel = kept[kept["revision"] == "step9"]
    idx = resample_indices(len(sel), 300, group_seed(5, "model=m, revision=step9"))
    boot = [stats.spearmanr(sel["commutator"].to_numpy()[b], sel["gap"].to_numpy()[b]).statistic for b in idx]
    assert abs(one.ci_low - np.percentile(boot, 2.5)) <= TOL and abs(one.ci_high - np.percentile(boot, 97.5)) <= TOL
    assert one.model == "m" and one.revision == "step9" and one.spearman > 0.5
    # without a family column the family scope is simply absent
    assert set(correlations(df.drop(columns="family"), n_boot=10, seed=5)["scope"]) == {"checkpoint", "model"}
    assert set(got["covariate"]) == set(ANALYSED)


def _covariate_file(path, model, revision, pairs, n_layers, prov, rng):
    rows = [dict(model=model, revision=revision, step=int(revision[4:]), n_layers=n_layers, layer_i=i, layer_j=j,
                 distance=j - i, **{c: float(rng.normal()) for c in COVARIATE_COLUMNS}, n_seqs=12, n_tokens=120)
            for i, j in pairs]
    return write_table(path, rows, COVARIATE_FILE_SCHEMA, prov)


def test_aggregate_joins_the_aggregate_gaps(tmp_path):
    rng = np.random.default_rng(3)
    pairs = [(0, 1), (1, 2), (2, 3), (0, 2), (1, 3)]
    probes, covs = [], []
    for k, rev in enumerate(("step0", "step5")):
        repl, inter, dele = random_values(4, seed=k, pairs=pairs)
        probes += probe_files(write_checkpoint(tmp_path / "in", revision=rev, n_layers=4, repl=repl, inter=inter,
                                               deletion=dele))
        covs.append(_covariate_file(tmp_path / "cov" / f"{rev}.parquet", "toy", rev, pairs, 4,
                                    provenance("toy", rev), rng))
    agg_path = tmp_path / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=probes, repr_files=[], out=agg_path, pair_sets={"toy": ["within:2"]}, n_boot=20))
    out, corr_out = tmp_path / "covariates.parquet", tmp_path / "corr.parquet"
    aggregate_covariates(covs, agg_path, out, corr_out, n_boot=50, seed=0)
    for written in (out, corr_out):  # the code that wrote it and the sha256 of every input
        prov = swapkl_provenance.read(str(written))
        assert prov["input_sha256"] == {str(f): hashlib.sha256(Path(f).read_bytes()).hexdigest()
                                        for f in [*covs, agg_path]}
        assert prov["swapkl_source_sha256"] == swapkl_provenance.source_sha256()
    got = pd.read_parquet(out)
    agg = read_aggregate(agg_path)
    want = agg[agg["kind"] == "pair"].set_index(["revision", "layer_i", "layer_j"])
    assert len(got) == 10
    for r in got.itertuples():
        w = want.loc[(r.revision, r.layer_i, r.layer_j)]
        assert r.gap == w["gap"] and r.gap_fwd == w["gap_fwd"]
    corr = read_covariate_correlations(corr_out)
    assert set(corr["scope"]) == {"checkpoint", "model"} and (corr[corr["scope"] == "model"]["n_pairs"] == 10).all()
    plot_covariate_correlations(corr_out, tmp_path / "fig.png", tmp_path / "fig.pdf")
    assert (tmp_path / "fig.png").read_bytes().startswith(b"\x89PNG") and (tmp_path / "fig.pdf").stat().st_size > 0

    # a covariate file measured on other weights than the probes of its checkpoint is refused
    bad = _covariate_file(tmp_path / "bad.parquet", "toy", "step5", pairs, 4,
                          provenance("toy", "step5", weights_sha256="f" * 64), rng)
    with pytest.raises(SwapKLError, match="weights_sha256 differs"):
        aggregate_covariates([covs[0], bad], agg_path, tmp_path / "x.parquet", tmp_path / "y.parquet", n_boot=5, seed=0)
    # a pair the probes did not measure has no gap: refused, nothing written
    extra = _covariate_file(tmp_path / "extra.parquet", "toy", "step5", [(0, 3)], 4, provenance("toy", "step5"), rng)
    with pytest.raises(SwapKLError, match=r"no gap for pair \(0, 3\)"):
        aggregate_covariates([extra], agg_path, tmp_path / "x.parquet", tmp_path / "y.parquet", n_boot=5, seed=0)
    assert not (tmp_path / "x.parquet").exists() and not (tmp_path / "y.parquet").exists()
    assert pq.read_table(out).num_rows == 10


def test_seed_families_label_the_rows_and_pool_their_members(tmp_path):
    """With the workflow's families, rows carry family and seed (null outside), and the family scope's rho is
    Spearman's over the members' pooled pairs (scipy), the non-member left out."""
    rng = np.random.default_rng(4)
    pairs = [(0, 1), (1, 2), (2, 3), (0, 2), (1, 3)]
    probes, covs = [], []
    for model in ("a", "a-seed1", "other"):
        repl, inter, dele = random_values(4, seed=len(probes), pairs=pairs)
        probes += probe_files(write_checkpoint(tmp_path / "in" / model, model=model, revision="step3", n_layers=4,
                                               repl=repl, inter=inter, deletion=dele))
        covs.append(_covariate_file(tmp_path / "cov" / f"{model}.parquet", model, "step3", pairs, 4,
                                    provenance(model, "step3"), rng))
    agg_path = tmp_path / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=probes, repr_files=[], out=agg_path,
                           pair_sets={m: ["within:2"] for m in ("a", "a-seed1", "other")}, n_boot=20))
    families = {"a": {"varies": "both", "members": {"a": 1234, "a-seed1": 1}}}
    out, corr_out = tmp_path / "covariates.parquet", tmp_path / "corr.parquet"
    aggregate_covariates(covs, agg_path, out, corr_out, n_boot=30, seed=0, families=families)
    got = pd.read_parquet(out)
    labels = got.drop_duplicates("model").set_index("model")[["family", "seed"]]
    assert list(labels.loc["a"]) == ["a", 1234] and list(labels.loc["a-seed1"]) == ["a", 1]
    assert labels.loc["other"].isna().all()
    corr = read_covariate_correlations(corr_out)
    fam = corr[(corr["scope"] == "family") & (corr["covariate"] == "commutator") & (corr["target"] == "gap")]
    assert list(fam["group"]) == ["family=a"] and int(fam["n_pairs"].iloc[0]) == 10
    members = got[got["family"] == "a"]
    assert fam["spearman"].iloc[0] == pytest.approx(stats.spearmanr(members["commutator"], members["gap"])[0],
                                                    abs=1e-12)
    plot_covariate_correlations(corr_out, tmp_path / "fig.png", tmp_path / "fig.pdf", families=families)
    assert (tmp_path / "fig.png").read_bytes().startswith(b"\x89PNG")
