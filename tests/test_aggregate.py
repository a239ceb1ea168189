"""swapkl aggregate: pair rows, pair sets, summaries, bootstrap CI, duplicates, bad inputs."""

from __future__ import annotations

import argparse
import itertools
import json
import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from probe_fixtures import probe_files, random_values, rewrite, write_checkpoint
from swapkl.probes.aggregate import aggregate, aggregate_provenance, read_aggregate, trajectory
from swapkl.probes.aggregate import AggregateJob
from swapkl.stats.bootstrap import resample_indices
from swapkl.commands import aggregate_command
from swapkl.errors import SwapKLError
from swapkl.probes.pair_statistics import checkpoint_seed

SETS = {"toy": ["adjacent", "within:2", "all"]}


def all_pairs(n):
    return list(itertools.combinations(range(n), 2))


def run(tmp_path, files, reprs=(), sets=SETS, **kw):
    out = tmp_path / "out" / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=files, repr_files=list(reprs), out=out, pair_sets=sets, **kw))
    return read_aggregate(out), out


@pytest.fixture
def toy(tmp_path):
    """One 6-block checkpoint with every pair probed, split into three probe files + repr."""
    repl, inter, dele = random_values(6, seed=3)
    paths = write_checkpoint(tmp_path / "in", n_layers=6, repl=repl, inter=inter, deletion=dele,
                             bi=list(np.linspace(0.1, 0.6, 6)), n_seqs=15, seed=1)
    return paths, repl, inter, dele


def test_pair_rows_match_direct_computation(tmp_path, toy):
    paths, repl, inter, _ = toy
    agg, _ = run(tmp_path, probe_files(paths), [paths["repr"]])
    pairs = agg[agg["kind"] == "pair"]
    assert len(pairs) == 15
    for _, r in pairs.iterrows():
        i, j = int(r["layer_i"]), int(r["layer_j"])
        a, b, c = repl[(i, j)], repl[(j, i)], inter[(i, j)]
        assert i < j and r["distance"] == j - i
        assert r["r_ij"] == a and r["r_ji"] == b and r["d_inter"] == c
        assert r["d_repl_max"] == max(a, b)
        assert r["d_repl_mean"] == pytest.approx((a + b) / 2, abs=1e-15)
        assert r["gap"] == pytest.approx(max(a, b) - c, abs=1e-15)
        assert r["ratio_ir"] == pytest.approx(c / max(a, b), rel=1e-12)
    directed = agg[agg["kind"] == "directed"]
    # 1 base + 30 replacement + 15 interchange + 6 deletion; the base row (in all 3 files) kept once
    assert directed["protocol"].value_counts().to_dict() == {
        "replacement": 30, "interchange": 15, "deletion": 6, "base": 1}
    assert (agg["kind"] == "repr").sum() == 6 + 6 + 5
    assert agg["duplicate_of"].isna().all()


def test_swap_class_boundaries_are_exact(tmp_path):
    values = [0.0, 0.0499999, 0.05, 0.0999999, 0.10, 0.3]
    expected = ["strong", "strong", "conditional", "conditional", "none", "none"]
    n = len(values) + 1
    repl, inter = {}, {}
    for k, v in enumerate(values):
        repl[(k, k + 1)], repl[(k + 1, k)] = v, v / 2  # max is v
        inter[(k, k + 1)] = v
    paths = write_checkpoint(tmp_path / "in", n_layers=n, repl=repl, inter=inter)
    agg, _ = run(tmp_path, probe_files(paths), sets={"toy": ["adjacent"]})
    pairs = agg[agg["kind"] == "pair"].sort_values("layer_i")
    assert pairs["d_repl_max"].tolist() == values
    assert pairs["class_repl"].tolist() == expected
    assert pairs["class_inter"].tolist() == expected
    # ratio is null where d_repl is 0
    assert np.isnan(pairs["ratio_ir"].iloc[0]) and pairs["ratio_ir"].iloc[1:].notna().all()


def test_pair_set_membership_and_counts(tmp_path, toy):
    paths, *_ = toy
    agg, _ = run(tmp_path, probe_files(paths))
    pairs = agg[agg["kind"] == "pair"]
    dist = (pairs["layer_j"] - pairs["layer_i"]).to_numpy(dtype=int)
    assert pairs["in_adjacent"].to_numpy(dtype=bool).tolist() == (dist == 1).tolist()
    assert pairs["in_within_2"].to_numpy(dtype=bool).tolist() == (dist <= 2).tolist()
    assert pairs["in_all"].to_numpy(dtype=bool).all()
    summ = agg[agg["kind"] == "summary"].set_index("pair_set")
    assert list(summ.index) == ["adjacent", "within:2", "all"]  # configured order
    assert summ["n_pairs"].to_dict() == {"adjacent": 5, "within:2": 9, "all": 15}


def test_summary_equals_numpy(tmp_path, toy):
    paths, repl, inter, _ = toy
    agg, _ = run(tmp_path, probe_files(paths), n_boot=200)
    summ = agg[agg["kind"] == "summary"].set_index("pair_set")
    for name, k in (("adjacent", 1), ("within:2", 2), ("all", 5)):
        ps = [(i, j) for i, j in all_pairs(6) if j - i <= k]
        d_max = np.array([max(repl[(i, j)], repl[(j, i)]) for i, j in ps])
        d_int = np.array([inter[p] for p in ps])
        gap = d_max - d_int
        s = summ.loc[name]
        assert s["gap_mean"] == pytest.approx(gap.mean(), rel=1e-12)
        assert s["gap_median"] == pytest.approx(np.median(gap), rel=1e-12)
        assert s["gap_p75"] == pytest.approx(np.percentile(gap, 75), rel=1e-12)
        assert s["gap_max"] == pytest.approx(gap.max(), rel=1e-12)
        assert s["gap_min"] == pytest.approx(gap.min(), rel=1e-12)
        assert s["d_repl_max_mean"] == pytest.approx(d_max.mean(), rel=1e-12)
        assert s["d_inter_mean"] == pytest.approx(d_int.mean(), rel=1e-12)
        assert s["ratio_ir_median"] == pytest.approx(np.median(d_int / d_max), rel=1e-12)
        assert s["frac_inter_le_repl"] == pytest.approx(np.mean(d_int <= d_max))
        assert s["n_strong_repl"] == (d_max < 0.05).sum()
        assert s["n_strong_inter"] == (d_int < 0.05).sum()
        assert s["n_boot"] == 200 and s["n_seqs"] == 15


def test_one_direction_gap_matches_direct_computation(tmp_path, toy):
    """The paper's Pythia trajectory used r(i<-j) for i < j only: d_repl_fwd, gap_fwd and their summaries."""
    paths, repl, inter, _ = toy
    agg, _ = run(tmp_path, probe_files(paths), n_boot=50)
    pairs = agg[agg["kind"] == "pair"]
    for _, r in pairs.iterrows():
        i, j = int(r["layer_i"]), int(r["layer_j"])
        assert r["d_repl_fwd"] == repl[(i, j)]
        assert r["gap_fwd"] == pytest.approx(repl[(i, j)] - inter[(i, j)], abs=1e-15)
        assert r["ratio_ir_fwd"] == pytest.approx(inter[(i, j)] / repl[(i, j)], rel=1e-12)
    summ = agg[agg["kind"] == "summary"].set_index("pair_set")
    for name, k in (("adjacent", 1), ("within:2", 2), ("all", 5)):
        ps = [(i, j) for i, j in all_pairs(6) if j - i <= k]
        fwd = np.array([repl[p] for p in ps])
        d_max = np.array([max(repl[(i, j)], repl[(j, i)]) for i, j in ps])
        d_int = np.array([inter[p] for p in ps])
        s = summ.loc[name]
        for prefix, d in (("gap_fwd", fwd), ("gap", d_max)):
            gap = d - d_int
            assert s[f"{prefix}_mean"] == pytest.approx(gap.mean(), rel=1e-12)
            assert s[f"{prefix}_median"] == pytest.approx(np.median(gap), rel=1e-12)
            assert s[f"{prefix}_p75"] == pytest.approx(np.percentile(gap, 75), rel=1e-12)
            assert s[f"{prefix}_max"] == pytest.approx(gap.max(), rel=1e-12)
            assert s[f"{prefix}_min"] == pytest.approx(gap.min(), rel=1e-12)
            share = gap.max() / gap.sum() if gap.sum() > 0 else np.nan
            assert s[f"{prefix}_max_share"] == pytest.approx(share, rel=1e-12, nan_ok=True)
        assert s["d_repl_fwd_mean"] == pytest.approx(fwd.mean(), rel=1e-12)
        assert s["ratio_ir_fwd_mean"] == pytest.approx(np.mean(d_int / fwd), rel=1e-12)
        assert s["ratio_ir_fwd_median"] == pytest.approx(np.median(d_int / fwd), rel=1e-12)
        assert s["ratio_ir_mean"] == pytest.approx(np.mean(d_int / d_max), rel=1e-12)
        # the max of both directions is never below the forward one
        assert s["gap_mean"] >= s["gap_fwd_mean"]


def naive_bootstrap_mean_gap(files, pairs, n_boot, seed, direction="max"):
    """Loop-by-loop recomputation from the probe files' per-sequence lists."""
    seq = {}
    for f in files:
        t = pq.read_table(f).to_pylist()
        for r in t:
            if r["protocol"] in ("replacement", "interchange"):
                seq[(r["protocol"], r["layer_i"], r["layer_j"])] = (
                    np.array(r["seq_kl_sum"]), np.array(r["seq_tokens"], dtype=float))
    n_seqs = len(next(iter(seq.values()))[0])
    idx = resample_indices(n_seqs, n_boot, seed)
    means = []
    for b in range(n_boot):
        def kl(key):
            s, t = seq[key]
            return s[idx[b]].sum() / t[idx[b]].sum()
        def repl(i, j):
            fwd = kl(("replacement", i, j))
            return fwd if direction == "fwd" else max(fwd, kl(("replacement", j, i)))
        gaps = [repl(i, j) - kl(("interchange", i, j)) for i, j in pairs]
        means.append(np.mean(gaps))
    return np.quantile(means, [0.025, 0.975])


def test_bootstrap_ci_matches_naive_loop(tmp_path, toy):
    paths, *_ = toy
    files = probe_files(paths)
    agg, _ = run(tmp_path, files, n_boot=300, seed=7)
    summ = agg[agg["kind"] == "summary"].set_index("pair_set")
    seed = checkpoint_seed(7, "toy", "step1000")
    for name, k in (("adjacent", 1), ("all", 5)):
        ps = [(i, j) for i, j in all_pairs(6) if j - i <= k]
        lo, hi = naive_bootstrap_mean_gap(files, ps, 300, seed)
        assert summ.loc[name, "gap_mean_ci_low"] == pytest.approx(lo, rel=1e-9)
        assert summ.loc[name, "gap_mean_ci_high"] == pytest.approx(hi, rel=1e-9)
        assert lo < summ.loc[name, "gap_mean"] < hi
        lo, hi = naive_bootstrap_mean_gap(files, ps, 300, seed, direction="fwd")
        assert summ.loc[name, "gap_fwd_mean_ci_low"] == pytest.approx(lo, rel=1e-9)
        assert summ.loc[name, "gap_fwd_mean_ci_high"] == pytest.approx(hi, rel=1e-9)


def test_each_pair_row_has_its_gaps_bootstrap_ci(tmp_path, toy):
    """Pair rows carry the 95% CI of their own gap (issue 50: the API's pair rows had none), recomputed here loop
    by loop from the probe files' per-sequence sums with the aggregate's resamples."""
    paths, *_ = toy
    files = probe_files(paths)
    agg, _ = run(tmp_path, files, n_boot=200, seed=3)
    pairs = agg[agg["kind"] == "pair"].set_index(["layer_i", "layer_j"])
    seed = checkpoint_seed(3, "toy", "step1000")
    for i, j in ((0, 1), (2, 3), (1, 5)):
        lo, hi = naive_bootstrap_mean_gap(files, [(i, j)], 200, seed)
        assert pairs.loc[(i, j), "ci_low"] == pytest.approx(lo, rel=1e-9)
        assert pairs.loc[(i, j), "ci_high"] == pytest.approx(hi, rel=1e-9)
    assert pairs["ci_low"].notna().all() and (pairs["ci_low"] <= pairs["ci_high"]).all()


def test_bootstrap_ci_deterministic_and_seeded(tmp_path, toy):
    paths, *_ = toy
    a, _ = run(tmp_path / "a", probe_files(paths), n_boot=100, seed=0)
    b, _ = run(tmp_path / "b", probe_files(paths), n_boot=100, seed=0)
    c, _ = run(tmp_path / "c", probe_files(paths), n_boot=100, seed=1)
    cols = ["gap_mean_ci_low", "gap_mean_ci_high"]
    sa, sb, sc = (x[x["kind"] == "summary"][cols].to_numpy(dtype=float) for x in (a, b, c))
    assert np.array_equal(sa, sb)
    assert not np.array_equal(sa, sc)
    means = a[a["kind"] == "summary"]["gap_mean"].to_numpy(dtype=float)
    assert (sa[:, 0] < means).all() and (means < sa[:, 1]).all()


def test_bootstrap_ci_collapses_without_sequence_variation(tmp_path):
    """All sequences alike: every resample gives the point estimate, so the CI has zero width."""
    repl, inter, _ = random_values(4, seed=5)
    paths = write_checkpoint(tmp_path / "in", n_layers=4, repl=repl, inter=inter, constant_seqs=True)
    agg, _ = run(tmp_path, probe_files(paths), sets={"toy": ["all"]}, n_boot=50)
    s = agg[agg["kind"] == "summary"].iloc[0]
    assert s["gap_mean_ci_low"] == pytest.approx(s["gap_mean"], rel=1e-9)
    assert s["gap_mean_ci_high"] == pytest.approx(s["gap_mean"], rel=1e-9)


def test_checkpoint_ci_independent_of_other_checkpoints(tmp_path):
    files = []
    for k, rev in enumerate(["step0", "step10"]):
        repl, inter, _ = random_values(4, seed=k)
        files.append(probe_files(write_checkpoint(tmp_path / "in", revision=rev, n_layers=4, repl=repl,
                                                  inter=inter, seed=k)))
    one, _ = run(tmp_path / "one", files[0], sets={"toy": ["all"]}, n_boot=80)
    both, _ = run(tmp_path / "both", files[0] + files[1], sets={"toy": ["all"]}, n_boot=80)
    pick = lambda a: a[(a["kind"] == "summary") & (a["revision"] == "step0")]["gap_mean_ci_low"].iloc[0]  # noqa: E731
    assert pick(one) == pick(both)


def test_duplicate_revisions_flagged_and_excluded(tmp_path, caplog):
    files, reprs = [], []
    for k, rev in enumerate(["step0", "step1000", "step2000", "step3000"]):
        repl, inter, dele = random_values(4, seed=k)
        sha = "a" * 64 if rev in ("step1000", "step3000") else None
        p = write_checkpoint(tmp_path / "in", revision=rev, n_layers=4, repl=repl, inter=inter, deletion=dele,
                             bi=[0.1, 0.2, 0.3, 0.4], seed=k, weights_sha256=sha)
        files += probe_files(p)
        reprs.append(p["repr"])
    with caplog.at_level(logging.WARNING, logger="swapkl"):
        agg, out = run(tmp_path, files[::-1], reprs[::-1], sets={"toy": ["adjacent"]}, n_boot=20)
    dup = agg[agg["revision"] == "step3000"]
    assert set(dup["kind"]) == {"directed", "pair", "summary", "repr"}
    assert (dup["duplicate_of"] == "step1000").all()
    assert agg[agg["revision"] != "step3000"]["duplicate_of"].isna().all()
    assert any("step3000" in r.getMessage() and "step1000" in r.getMessage() for r in caplog.records)
    t = trajectory(agg, "toy")
    assert t["revision"].tolist() == ["step0", "step1000", "step2000"]
    prov = aggregate_provenance(out)
    assert prov["duplicates"] == [{"model": "toy", "revision": "step3000", "duplicate_of": "step1000"}]


def test_output_provenance_and_rerun_byte_identical(tmp_path, toy):
    paths, *_ = toy
    files = probe_files(paths)
    _, out = run(tmp_path, files, [paths["repr"]], n_boot=50)
    first = out.read_bytes()
    aggregate(AggregateJob(probe_files=files, repr_files=[paths["repr"]], out=out, pair_sets=SETS, n_boot=50))
    assert out.read_bytes() == first
    prov = aggregate_provenance(out)
    assert prov["n_boot"] == 50 and prov["pair_sets"] == SETS
    by_file = {x["file"]: x for x in prov["inputs"]}
    assert set(by_file) == {str(p) for p in [*files, paths["repr"]]}
    one = by_file[str(files[0])]
    assert one["role"] == "probe" and one["provenance"]["weights_sha256"]
    assert one["provenance"] == json.loads(pq.read_schema(files[0]).metadata[b"swapkl"])
    assert [p.name for p in out.parent.iterdir()] == ["swapkl.parquet"]  # no temp file left


def test_directed_values_carried_unchanged(tmp_path, toy):
    paths, *_ = toy
    agg, _ = run(tmp_path, probe_files(paths))
    src = pq.read_table(paths["interchange"]).to_pandas()
    src = src[src["protocol"] == "interchange"].sort_values(["layer_i", "layer_j"])
    got = agg[(agg["kind"] == "directed") & (agg["protocol"] == "interchange")]
    for col in ("kl_mean", "nll_mean", "n_tokens"):
        assert got[col].to_numpy(dtype=float).tolist() == src[col].to_numpy(dtype=float).tolist()


def direct_ci(sums, counts, n_boot: int, seed: int) -> tuple[float, float]:
    """The 95% percentile bootstrap CI of sum(sums)/sum(counts), written out with numpy alone."""
    sums, counts = np.asarray(sums, dtype=np.float64), np.asarray(counts, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, len(counts), size=(n_boot, len(counts)))
    return tuple(np.quantile(sums[idx].sum(axis=1) / counts[idx].sum(axis=1), [0.025, 0.975]))


def test_confidence_intervals_are_computed_from_the_per_sequence_sums(tmp_path, toy):
    """The probe files hold no CI: the aggregate bootstraps every directed and repr row from the stored
    per-sequence sums, one resampling of the sequences per checkpoint (seed as given).

    Tolerance: swapkl and the direct computation add the same float64 values (at most 15 per resample) in
    the same order, so they agree to the last bits; 1e-12 relative covers a reordered sum (15 * 2**-53)."""
    paths, *_ = toy
    agg, _ = run(tmp_path, probe_files(paths), [paths["repr"]], n_boot=300, seed=7)
    assert "kl_ci_low" not in pq.read_schema(paths["interchange"]).names
    directed = agg[agg["kind"] == "directed"]
    for path in probe_files(paths):
        for _, r in pq.read_table(path).to_pandas().iterrows():
            got = directed[(directed["protocol"] == r["protocol"]) & (directed["layer_i"].astype(float).fillna(-1)
                            == (-1 if r["layer_i"] is None or np.isnan(r["layer_i"]) else r["layer_i"]))
                           & (directed["layer_j"].astype(float).fillna(-1)
                              == (-1 if r["layer_j"] is None or np.isnan(r["layer_j"]) else r["layer_j"]))]
            assert len(got) == 1
            got = got.iloc[0]
            kl = (0.0, 0.0) if r["protocol"] == "base" else direct_ci(r["seq_kl_sum"], r["seq_tokens"], 300, 7)
            assert (got["kl_ci_low"], got["kl_ci_high"]) == pytest.approx(kl, rel=1e-12, abs=0)
            nll = direct_ci(r["seq_nll_sum"], r["seq_nll_tokens"], 300, 7)
            assert (got["nll_ci_low"], got["nll_ci_high"]) == pytest.approx(nll, rel=1e-12, abs=0)
            assert got["kl_ci_low"] <= got["kl_mean"] <= got["kl_ci_high"]
    rep_rows = agg[agg["kind"] == "repr"]
    src = pq.read_table(paths["repr"]).to_pandas()
    assert len(rep_rows) == len(src) and "ci_low" not in src.columns
    for _, r in src.iterrows():
        got = rep_rows[(rep_rows["metric"] == r["metric"]) & (rep_rows["layer_i"] == r["layer_i"])
                       & (rep_rows["width"] == r["width"])].iloc[0]
        ci = direct_ci(r["seq_value_sum"], r["seq_count"], 300, 7)
        assert (got["ci_low"], got["ci_high"]) == pytest.approx(ci, rel=1e-12, abs=0)
    # another seed, other intervals: the seed is the aggregate's to choose
    other, _ = run(tmp_path / "b", probe_files(paths), [paths["repr"]], n_boot=300, seed=8)
    assert not np.array_equal(other[other["kind"] == "directed"]["kl_ci_low"].to_numpy(dtype=float),
                              directed["kl_ci_low"].to_numpy(dtype=float))


# --- bad inputs: one-line SwapKLError naming the culprit, no output written ---------------------

def expect_error(tmp_path, files, match, reprs=(), sets=SETS, **kw):
    out = tmp_path / "out" / "swapkl.parquet"
    with pytest.raises(SwapKLError, match=match) as e:
        aggregate(AggregateJob(probe_files=files, repr_files=list(reprs), out=out, pair_sets=sets, **kw))
    assert "\n" not in str(e.value)
    assert not out.exists()
    return str(e.value)


def test_missing_column_names_file(tmp_path, toy):
    paths, *_ = toy
    bad = rewrite(paths["interchange"], lambda t: t.drop_columns(["seq_nll_sum"]))
    msg = expect_error(tmp_path, probe_files(paths), "lacks column")
    assert str(bad) in msg and "seq_nll_sum" in msg


def test_mixed_n_layers_within_file(tmp_path, toy):
    paths, *_ = toy

    def change(t):
        n = t.column("n_layers").to_numpy().copy()
        n[-1] = 7
        return t.set_column(t.schema.get_field_index("n_layers"), "n_layers", pa.array(n))
    rewrite(paths["deletion"], change)
    msg = expect_error(tmp_path, probe_files(paths), "mixed n_layers")
    assert str(paths["deletion"]) in msg


def test_mixed_n_layers_across_files_of_a_checkpoint(tmp_path):
    repl, inter, _ = random_values(4, seed=0)
    a = write_checkpoint(tmp_path / "a", n_layers=4, repl=repl, inter={})
    b = write_checkpoint(tmp_path / "b", n_layers=5, repl={}, inter=inter)
    msg = expect_error(tmp_path, [a["replacement"], b["interchange"]], "mixed n_layers")
    assert str(b["interchange"]) in msg


def test_empty_inputs(tmp_path, toy):
    paths, *_ = toy
    expect_error(tmp_path, [], "no probe files")
    rewrite(paths["replacement"], lambda t: t.slice(0, 0))
    msg = expect_error(tmp_path, probe_files(paths), "no rows")
    assert str(paths["replacement"]) in msg


def test_unreadable_or_missing_files(tmp_path, toy):
    paths, *_ = toy
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    assert str(junk) in expect_error(tmp_path, [junk], "not a readable Parquet")
    gone = tmp_path / "gone.parquet"
    assert str(gone) in expect_error(tmp_path, [gone], "not found")


def test_missing_provenance(tmp_path, toy):
    paths, *_ = toy
    rewrite(paths["replacement"], lambda t: t.replace_schema_metadata({b"other": b"x"}))
    msg = expect_error(tmp_path, probe_files(paths), "no swapkl provenance")
    assert str(paths["replacement"]) in msg


def test_weight_hash_conflict_within_checkpoint(tmp_path):
    repl, inter, _ = random_values(4, seed=0)
    a = write_checkpoint(tmp_path / "a", n_layers=4, repl=repl, inter={}, weights_sha256="a" * 64)
    b = write_checkpoint(tmp_path / "b", n_layers=4, repl={}, inter=inter, weights_sha256="b" * 64)
    msg = expect_error(tmp_path, [a["replacement"], b["interchange"]], "weights_sha256 differs")
    assert str(b["interchange"]) in msg


def test_seq_lists_must_match_kl_mean(tmp_path, toy):
    paths, *_ = toy

    def change(t):
        kl = pc.multiply(t.column("kl_mean"), 1.5)
        return t.set_column(t.schema.get_field_index("kl_mean"), "kl_mean", kl)
    rewrite(paths["interchange"], change)
    msg = expect_error(tmp_path, probe_files(paths), "sum\\(seq_kl_sum\\)")
    assert str(paths["interchange"]) in msg


def test_incomplete_pair_set_and_unknown_model(tmp_path):
    repl, inter, _ = random_values(5, seed=0, pairs=[(0, 1), (1, 2), (2, 3), (3, 4)])
    paths = write_checkpoint(tmp_path / "in", n_layers=5, repl=repl, inter=inter)
    msg = expect_error(tmp_path, probe_files(paths), "pair set within:2", sets={"toy": ["within:2"]})
    assert "0,2" in msg
    expect_error(tmp_path, probe_files(paths), "no pair sets configured", sets={"other": ["adjacent"]})
    expect_error(tmp_path, probe_files(paths), "unknown pair set", sets={"toy": ["nearby"]})
    expect_error(tmp_path, probe_files(paths), "n_boot", sets={"toy": ["adjacent"]}, n_boot=0)


def test_variant_in_two_files(tmp_path):
    repl, inter, _ = random_values(4, seed=0)
    a = write_checkpoint(tmp_path / "a", n_layers=4, repl=repl, inter=inter)
    b = write_checkpoint(tmp_path / "b", n_layers=4, repl=repl, inter={})
    msg = expect_error(tmp_path, [a["replacement"], a["interchange"], b["replacement"]], "is also in")
    assert str(a["replacement"]) in msg and str(b["replacement"]) in msg


def test_cli_aggregate(tmp_path, toy):
    paths, *_ = toy
    parser = argparse.ArgumentParser()
    aggregate_command.add_parser(parser.add_subparsers())
    out = tmp_path / "cli.parquet"
    args = parser.parse_args(["aggregate", "--probe", *map(str, probe_files(paths)), "--repr", str(paths["repr"]),
                              "--pair-sets", "toy=adjacent,all", "--bootstrap", "30", "--out", str(out)])
    args.func(args)
    agg = read_aggregate(out)
    assert agg[agg["kind"] == "summary"]["pair_set"].tolist() == ["adjacent", "all"]
    with pytest.raises(SwapKLError, match="MODEL=SET"):
        aggregate_command.parse_pair_sets(["adjacent"])


def test_engine_output_aggregates_and_identical_weights_are_duplicates(tmp_path):
    """Real probe files from swapkl.probes.probe on a tiny model: the same weights probed under two
    revision names give the same weights_sha256, so the later one is flagged."""
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from tiny_models import random_tokens, tiny_model

    tiny_model("gpt_neox", n_layers=4).save_pretrained(tmp_path / "model")
    np.save(tmp_path / "tok.npy", random_tokens(97, 6, 12).numpy())
    files, reprs = [], []
    for rev in ("step200", "step100"):
        p, r = tmp_path / f"{rev}.parquet", tmp_path / f"{rev}_repr.parquet"
        run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(p), pairs="all",
                           data=DataSpec(tokens=str(tmp_path / "tok.npy")),
                           device="cpu", repr_out=str(r), metadata={"model": "tiny", "revision": rev}))
        files.append(p)
        reprs.append(r)
    agg, _ = run(tmp_path, files, reprs, sets={"tiny": ["adjacent", "all"]}, n_boot=50)
    summ = agg[agg["kind"] == "summary"]
    assert summ["n_pairs"].tolist() == [3, 6, 3, 6]
    assert (summ["gap_mean_ci_low"] <= summ["gap_mean"]).all() and (summ["gap_mean"] <= summ["gap_mean_ci_high"]).all()
    assert set(agg.loc[agg["revision"] == "step200", "duplicate_of"]) == {"step100"}
    assert agg.loc[agg["revision"] == "step100", "duplicate_of"].isna().all()
    assert set(agg.loc[agg["kind"] == "repr", "metric"]) == {"bi", "angular", "angular_last"}


def test_same_weights_under_another_config_are_not_duplicates(tmp_path):
    """Two revisions with byte-identical weights but different config.json (layer_norm_eps) compute
    different functions: neither is marked as a duplicate of the other."""
    import json
    import shutil

    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from tiny_models import random_tokens, tiny_model

    tiny_model("gpt_neox", n_layers=3).save_pretrained(tmp_path / "step100")
    shutil.copytree(tmp_path / "step100", tmp_path / "step200")
    cfg = json.loads((tmp_path / "step200" / "config.json").read_text())
    cfg["layer_norm_eps"] = 0.5
    (tmp_path / "step200" / "config.json").write_text(json.dumps(cfg))
    np.save(tmp_path / "tok.npy", random_tokens(97, 4, 12).numpy())
    files = []
    for rev in ("step100", "step200"):
        p = tmp_path / f"{rev}.parquet"
        run_probe(ProbeJob(model=str(tmp_path / rev), out=str(p), data=DataSpec(tokens=str(tmp_path / "tok.npy")),
                           device="cpu",
                           metadata={"model": "tiny", "revision": rev}))
        files.append(p)
    agg, _ = run(tmp_path, files, [], sets={"tiny": ["adjacent"]}, n_boot=10)
    assert agg["duplicate_of"].isna().all()
    kl = agg[(agg["kind"] == "directed") & (agg["protocol"] == "deletion")].groupby("revision")["kl_mean"].sum()
    assert kl["step100"] != kl["step200"]  # the edit does change the numbers


def test_the_command_line_takes_files_as_arguments_and_the_recorded_pair_set(tmp_path, capsys):
    """`swapkl aggregate p.parquet --out a.parquet`: the probe file as an argument, and the pair set it was
    measured on (its provenance) as the default of --pair-sets (issue 50)."""
    from swapkl import cli
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from tiny_models import random_tokens, tiny_model

    tiny_model("gpt_neox", n_layers=4).save_pretrained(tmp_path / "model")
    np.save(tmp_path / "tok.npy", random_tokens(97, 6, 12).numpy())
    probe = tmp_path / "p.parquet"
    run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(probe), pairs="within:2",
                       protocols=("replacement", "interchange"),
                       data=DataSpec(tokens=str(tmp_path / "tok.npy")), device="cpu", metadata={"model": "tiny"}))
    assert cli.main(["aggregate", str(probe), "--bootstrap", "20", "--out", str(tmp_path / "a.parquet")]) == 0
    agg = read_aggregate(tmp_path / "a.parquet")
    assert agg[agg["kind"] == "summary"]["pair_set"].tolist() == ["within:2"]
    assert cli.main(["aggregate", "--out", str(tmp_path / "b.parquet")]) == 2
    assert "give the probe files to aggregate" in capsys.readouterr().err
