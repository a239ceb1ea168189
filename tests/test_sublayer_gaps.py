"""swapkl.studies.sublayers: the protocol gap split over a block's sublayers.

The decomposition is checked on per-window sums built here against a hand computation, and a run on a tiny model
against `swapkl probe` and `swapkl aggregate` on the same windows: its block gaps must be the aggregate's pair gaps
(``d_repl_max - d_inter``), its sublayer replacement and interchange KLs the probe's rows of those protocols."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from swapkl.cli import main
from swapkl.data.data_spec import DataSpec
from swapkl.studies.sublayers.stats import GAPS_KEY as KEY, GAPS_SCHEMA as SCHEMA, decomposition
from swapkl.studies.sublayers.run import run_sublayers
from swapkl.studies.sublayers.jobs import SublayerJob
from swapkl.study import STUDIES
from tiny_models import random_tokens, tiny_model


def _sums(n_layers: int, n_windows: int, seed: int = 0):
    """Per-window KL sums of every variant the decomposition reads, and per-window tokens."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(5, 20, n_windows).astype(float)
    sums = {}
    for i in range(n_layers - 1):
        j = i + 1
        for protocol in ("replacement", "attention_replacement", "mlp_replacement"):
            sums[f"{protocol}:{i}:{j}"] = rng.uniform(0, 2, n_windows) * tokens
            sums[f"{protocol}:{j}:{i}"] = rng.uniform(0, 2, n_windows) * tokens
        for protocol in ("interchange", "attention_interchange", "mlp_interchange"):
            sums[f"{protocol}:{i}:{j}"] = rng.uniform(0, 1, n_windows) * tokens
    for i in range(n_layers):
        for protocol in ("deletion", "attention_deletion", "mlp_deletion"):
            sums[f"{protocol}:{i}:"] = rng.uniform(0, 3, n_windows) * tokens
    return sums, tokens


def test_each_gap_and_the_interaction_are_the_hand_computed_means():
    sums, tokens = _sums(4, 30)
    params = {"attention": 400, "mlp": 800, "block": 1300}
    rows = pd.DataFrame(decomposition(sums, tokens, "adjacent", 4, params=params, n_boot=200, seed=3))
    mean = lambda key: sums[key].sum() / tokens.sum()  # noqa: E731
    for i in range(3):
        j = i + 1
        gap = {}
        for part, prefix in (("block", ""), ("attention", "attention_"), ("mlp", "mlp_")):
            d_repl = max(mean(f"{prefix}replacement:{i}:{j}"), mean(f"{prefix}replacement:{j}:{i}"))
            gap[part] = d_repl - mean(f"{prefix}interchange:{i}:{j}")
            row = rows[(rows["kind"] == "gap") & (rows["part"] == part) & (rows["layer_i"] == i)].iloc[0]
            assert row["value"] == pytest.approx(gap[part], rel=1e-12) and row["d_repl"] == pytest.approx(d_repl)
            assert row["ci_low"] <= row["value"] <= row["ci_high"]
        inter = rows[(rows["kind"] == "interaction") & (rows["layer_i"] == i)].iloc[0]
        assert inter["value"] == pytest.approx(gap["block"] - gap["attention"] - gap["mlp"], rel=1e-9)
    per = rows[(rows["kind"] == "deletion_per_mparam") & (rows["part"] == "mlp") & (rows["layer_i"] == 2)].iloc[0]
    assert per["value"] == pytest.approx(mean("mlp_deletion:2:") / 800 * 1e6) and per["params"] == 800
    means = {part: np.mean([rows[(rows["kind"] == "gap") & (rows["part"] == part) & (rows["layer_i"] == i)]
                            ["value"].iloc[0] for i in range(3)]) for part in ("block", "attention", "mlp")}
    summary = rows[rows["layer_i"].isna()].set_index(["kind", "part"])["value"]
    for part, value in means.items():
        assert summary[("mean_gap", part)] == pytest.approx(value, rel=1e-12)
    assert summary[("share", "mlp")] == pytest.approx(means["mlp"] / means["block"], rel=1e-12)
    assert summary[("mlp_minus_attention", "mlp")] == pytest.approx(means["mlp"] - means["attention"], rel=1e-12)
    assert summary[("mean_interaction", "block")] == pytest.approx(
        means["block"] - means["attention"] - means["mlp"], rel=1e-9)
    assert len(rows) == 3 * 4 + 4 * 3 * 2 + 7
    assert set(rows["n_windows"]) == {30} and set(rows["n_tokens"]) == {int(tokens.sum())}


def test_the_intervals_are_paired_over_one_resampling_of_the_windows():
    """A part whose sums equal the block's has the block's interval exactly (the same resampling)."""
    sums, tokens = _sums(2, 12)
    for a, b in (("0:1", "0:1"), ("1:0", "1:0")):
        sums[f"attention_replacement:{a}"] = sums[f"replacement:{b}"]
    sums["attention_interchange:0:1"] = sums["interchange:0:1"]
    rows = pd.DataFrame(decomposition(sums, tokens, "adjacent", 2, params={"attention": 1, "mlp": 1, "block": 2},
                                      n_boot=100, seed=1))
    gaps = rows[rows["kind"] == "gap"].set_index("part")
    assert tuple(gaps.loc["attention", ["value", "ci_low", "ci_high"]]) == tuple(
        gaps.loc["block", ["value", "ci_low", "ci_high"]])


@pytest.mark.parametrize("arch", ["gpt_neox", "llama"])
def test_a_run_on_a_tiny_model_agrees_with_the_probe_and_its_aggregate(arch, tmp_path):
    model = tiny_model(arch, n_layers=4)
    model.save_pretrained(tmp_path / "ckpt")
    np.save(tmp_path / "t.npy", random_tokens(97, 6, 16).numpy())
    out = tmp_path / "gaps.parquet"
    rows = pd.DataFrame(run_sublayers(SublayerJob(model=str(tmp_path / "ckpt"), out=str(out), device="cpu",
                                                  data=DataSpec(tokens=str(tmp_path / "t.npy")), n_boot=50)))
    table = pd.read_parquet(out)
    assert list(table.columns) == SCHEMA.names and not table.duplicated(KEY).any() and len(table) == len(rows)
    assert set(STUDIES["sublayers"].columns["sublayer_gaps"]) == set(SCHEMA.names)

    protocols = "replacement,interchange,attention_replacement,attention_interchange,mlp_deletion"
    assert main(["probe", "--model", str(tmp_path / "ckpt"), "--tokens", str(tmp_path / "t.npy"), "--protocols",
                 protocols, "--pairs", "adjacent", "--out", str(tmp_path / "p.parquet"), "--device", "cpu"]) == 0
    assert main(["aggregate", str(tmp_path / "p.parquet"), "--out", str(tmp_path / "agg.parquet")]) == 0
    agg = pd.read_parquet(tmp_path / "agg.parquet")
    pairs = agg[agg["kind"] == "pair"].set_index(["layer_i", "layer_j"])
    directed = agg[agg["kind"] == "directed"].set_index(["protocol", "layer_i", "layer_j"], drop=False)
    for row in table[table["kind"] == "gap"].itertuples():
        if row.part == "block":
            assert row.value == pytest.approx(pairs.loc[(row.layer_i, row.layer_j), "gap"], rel=1e-9, abs=1e-12)
        if row.part == "attention":
            inter = directed.loc[("attention_interchange", row.layer_i, row.layer_j), "kl_mean"]
            repl = max(directed.loc[("attention_replacement", row.layer_i, row.layer_j), "kl_mean"],
                       directed.loc[("attention_replacement", row.layer_j, row.layer_i), "kl_mean"])
            assert (row.d_inter, row.d_repl) == pytest.approx((inter, repl), rel=1e-9)
    deleted = table[(table["kind"] == "deletion") & (table["part"] == "mlp")]
    for row in deleted.itertuples():
        want = agg[(agg["kind"] == "directed") & (agg["protocol"] == "mlp_deletion") & (agg["layer_i"] == row.layer_i)]
        assert row.value == pytest.approx(want["kl_mean"].iloc[0], rel=1e-9)
