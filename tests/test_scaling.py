"""results/scaling.parquet against a hand computation on a synthetic aggregate, and the parameter count
against torch's own count of a saved tiny model."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from probe_fixtures import probe_files, write_checkpoint
from swapkl.probes.aggregate import aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.errors import SwapKLError
from swapkl.tables.provenance import read
from swapkl.studies.scaling.stats import build_scaling, checkpoint_facts
from tiny_models import tiny_model

# 5 blocks: adjacent pairs (0,1) (1,2) (2,3) (3,4); replacement both directions, interchange
REPL = {(0, 1): 0.30, (1, 0): 0.20, (1, 2): 0.04, (2, 1): 0.03, (2, 3): 0.07, (3, 2): 0.09,
        (3, 4): 0.02, (4, 3): 0.06}
INTER = {(0, 1): 0.15, (1, 2): 0.01, (2, 3): 0.08, (3, 4): 0.055}


def _fill(n, repl, inter, other=0.5):
    """Every pair probed (the aggregate wants both protocols on every pair); non-adjacent ones get ``other``."""
    r = {(i, j): other for i in range(n) for j in range(n) if i != j}
    r.update(repl)
    t = {(i, j): other / 2 for i in range(n) for j in range(i + 1, n)}
    t.update(inter)
    return r, t


@pytest.fixture
def sweep(tmp_path):
    r, t = _fill(5, REPL, INTER)
    files = probe_files(write_checkpoint(tmp_path / "a", model="gpt2-like", revision="main", n_layers=5,
                                         repl=r, inter=t, deletion=[0.1] * 5, seed=2, constant_seqs=True))
    r3, t3 = _fill(3, {(0, 1): 0.2, (1, 0): 0.2, (1, 2): 0.2, (2, 1): 0.2}, {(0, 1): 0.1, (1, 2): 0.3})
    files += probe_files(write_checkpoint(tmp_path / "b", model="bloom-like", revision="main", n_layers=3,
                                          repl=r3, inter=t3, deletion=[0.1] * 3, seed=3, constant_seqs=True))
    agg = tmp_path / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=files, repr_files=[], out=agg,
                           pair_sets={"gpt2-like": ["all"], "bloom-like": ["all"]}))
    dirs = {}
    for arch, name, layers in (("gpt2", "gpt2-like", 5), ("bloom", "bloom-like", 3)):
        dirs[name] = tmp_path / "ckpt" / name
        tiny_model(arch, n_layers=layers, hidden=32 if arch == "gpt2" else 64).save_pretrained(dirs[name])
    return agg, dirs


def test_rows_match_hand_computation(sweep, tmp_path):
    agg, dirs = sweep
    out = tmp_path / "scaling.parquet"
    build_scaling(agg, {m: ("main", d) for m, d in dirs.items()}, out)
    df = pq.read_table(out).to_pandas().set_index("model")
    g = df.loc["gpt2-like"]
    assert (g["architecture"], g["position_encoding"], g["n_layers"], g["n_pairs"]) == ("gpt2", "learned", 5, 4)
    # d_repl_max per adjacent pair: 0.30, 0.04, 0.09, 0.06; d_inter: 0.15, 0.01, 0.08, 0.055
    assert (g["best_i_replacement"], g["best_j_replacement"]) == (1, 2)
    assert g["best_kl_replacement"] == pytest.approx(0.04, abs=1e-12)
    assert (g["n_strong_replacement"], g["n_conditional_replacement"]) == (1, 2)  # 0.04 | 0.09, 0.06
    assert (g["best_i_interchange"], g["best_j_interchange"]) == (1, 2)
    assert g["best_kl_interchange"] == pytest.approx(0.01, abs=1e-12)
    assert (g["n_strong_interchange"], g["n_conditional_interchange"]) == (1, 2)  # 0.01 | 0.08, 0.055
    ratios = [0.15 / 0.30, 0.01 / 0.04, 0.08 / 0.09, 0.055 / 0.06]
    assert g["ratio_ir_mean"] == pytest.approx(sum(ratios) / 4, rel=1e-9)
    assert g["ratio_ir_median"] == pytest.approx((ratios[0] + ratios[2]) / 2, rel=1e-9)  # middle two, sorted
    assert g["gap_mean"] == pytest.approx((0.15 + 0.03 + 0.01 + 0.005) / 4, rel=1e-9)
    b = df.loc["bloom-like"]
    assert (b["architecture"], b["position_encoding"], b["n_pairs"]) == ("bloom", "alibi", 2)
    assert (b["best_i_interchange"], b["best_kl_interchange"]) == (0, pytest.approx(0.1))
    assert list(df.index) == sorted(df.index, key=lambda m: df.loc[m, "n_params"])  # ordered by size
    assert read(str(out))["checkpoints"]["gpt2-like"]["revision"] == "main"


def test_parameter_count_is_torchs(tmp_path):
    for arch in ("opt", "gpt_neox"):
        model = tiny_model(arch, n_layers=3)
        model.save_pretrained(tmp_path / arch)
        want = sum(p.numel() for p in model.parameters())  # shared (tied) tensors once
        facts = checkpoint_facts(tmp_path / arch)
        assert facts["n_params"] == want and facts["architecture"] == arch


def test_missing_adjacent_pairs_are_an_error(sweep, tmp_path):
    agg, dirs = sweep
    with pytest.raises(SwapKLError, match="no pair rows for gpt2-like step5"):
        build_scaling(agg, {"gpt2-like": ("step5", dirs["gpt2-like"])}, tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()
