"""The scorecard rows read from the study's other tables (RoPE counterfactual, LoRA recovery, domain slices) and
from the aggregate's two replacement directions and weight-changing protocols: each table is built here (through
the modules that write the real ones where that is cheap), written to Parquet, read back through the scorecard's
registered readers and the command line, and every row's value is checked against a number computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from swapkl.cli import main
from swapkl.paper.scorecard import TABLES, build_scorecard, read_tables
from swapkl.recovery.recovery_table import COLUMNS as RECOVERY_COLUMNS
from swapkl.studies.domain_slices.stats import slice_rows
from swapkl.studies.rope_counterfactual.stats import counterfactual_table
from swapkl.tables.parquet_io import write_parquet
from swapkl.tables.schemas import PRUNING_SCHEMA, aggregate_schema


def _rope_agg() -> pd.DataFrame:
    """Adjacent pair rows of Qwen3-8B (rotary on) and Qwen3-8B-rope-off at three pairs: I/R on 0.3, 0.2, 0.4
    (mean 0.3), off 0.25, 0.1, 0.5 (mean 0.283..): two pairs' gap grows (I/R falls), one shrinks."""
    rows = []
    for model, ratios in (("Qwen3-8B", (0.3, 0.2, 0.4)), ("Qwen3-8B-rope-off", (0.25, 0.1, 0.5))):
        for i, r in zip((2, 5, 8), ratios):
            rows.append(dict(kind="pair", model=model, revision="main", layer_i=i, layer_j=i + 1, distance=1,
                             d_repl_max=1.0, d_inter=r, ratio_ir=r))
    return pd.DataFrame(rows)


def _recovery() -> pd.DataFrame:
    def row(phase, layers, net):
        return dict(model="Qwen3-8B-paper", revision="main", guide="fixed", budget=len(layers), removed_layers=layers,
                    phase=phase, ppl=20.0, delta_ppl_pct=1.0, kl=0.1, task_accuracy=None, task_relevance=None,
                    net_recovery=net, steps=200, seed=0, checkpoint="x", delta_ppl_pct_ci_low=0.5,
                    delta_ppl_pct_ci_high=1.5, net_recovery_ci_low=net - 0.1, net_recovery_ci_high=net + 0.1,
                    window_nll_sum=[60.0], window_tokens=[20])
    rows = [row("base", [], float("nan")), row("pruned", [17], float("nan")), row("healed", [17], 0.6),
            row("healed", [15, 17], 0.9), row("healed", [15, 17, 20], 0.30)]
    return pd.DataFrame(rows, columns=list(RECOVERY_COLUMNS))


def _slices() -> pd.DataFrame:
    """Qwen3-8B-imdb against Qwen3-8B on four shared configurations whose costs rank identically (rho 1), and
    pythia-1.4b-imdb against pythia-1.4b where the order of two of four flips: ranks (1,2,3,4) vs (2,1,3,4),
    rho = 1 - 6 * 2 / (4 * 15) = 0.8."""
    def rows(model, costs):
        return [dict(model=model, revision="r", guide=g, budget=b, fixed_set=None, random_draw=None, feasible=True,
                     delta_ppl_pct=c) for (g, b), c in zip((("interchange", 1), ("interchange", 2), ("bi", 1),
                                                            ("bi", 2)), costs)]
    pruning = pd.DataFrame(rows("Qwen3-8B", (1, 2, 3, 4)) + rows("Qwen3-8B-imdb", (10, 20, 30, 40))
                           + rows("pythia-1.4b", (1, 2, 3, 4)) + rows("pythia-1.4b-imdb", (2, 1, 3, 4)))
    pruning = pruning.reindex(columns=PRUNING_SCHEMA.names)
    return pd.concat([slice_rows(pruning, model="Qwen3-8B-imdb", reference="Qwen3-8B", revision="r"),
                      slice_rows(pruning, model="pythia-1.4b-imdb", reference="pythia-1.4b", revision="r")],
                     ignore_index=True)


#: Qwen3-8B-paper adjacent pairs: the two replacement directions r_ij, r_ji; max, mean and max/min by hand
_DIRECTIONS = [(0.1, 0.2), (0.3, 0.3), (0.5, 0.1), (0.2, 0.25), (0.4, 0.2)]
_MAX, _MEAN = [0.2, 0.3, 0.5, 0.25, 0.4], [0.15, 0.3, 0.3, 0.225, 0.3]


def _aggregate() -> pd.DataFrame:
    rows = [dict(kind="pair", model="Qwen3-8B-paper", revision="main", layer_i=i, layer_j=i + 1, r_ij=a, r_ji=b,
                 d_repl_max=mx, d_repl_mean=mn, in_adjacent=True)
            for i, ((a, b), mx, mn) in enumerate(zip(_DIRECTIONS, _MAX, _MEAN), start=1)]
    rows.append(dict(kind="pair", model="Qwen3-8B-paper", revision="main", layer_i=1, layer_j=3, r_ij=0.01,
                     r_ji=1.0, d_repl_max=1.0, d_repl_mean=0.505, in_adjacent=False))  # not adjacent: left out
    rows += [dict(kind="directed", model="GPT-2-Medium-paper-merge", revision="main", protocol="averaging_paper",
                  layer_i=i, layer_j=i + 1, kl_mean=kl) for i, kl in ((4, 1.9), (5, 7.0))]
    head_kl = [0.001] * 14 + [0.0005, 0.0047]  # min 0.0005, max 0.0047, mean 0.0192 / 16 = 0.0012
    rows += [dict(kind="directed", model="GPT-2-Medium-paper-heads", revision="main", protocol="head_interchange_paper",
                  layer_i=4, layer_j=5, head=h, kl_mean=kl) for h, kl in enumerate(head_kl)]
    rows += [dict(kind="directed", model="GPT-2-Medium-paper-heads", revision="main", protocol="head_interchange_paper",
                  layer_i=14, layer_j=15, head=0, kl_mean=0.5)]  # another pair: not in pair (4, 5)'s numbers
    return pd.DataFrame(rows).reindex(columns=aggregate_schema(["in_adjacent"]).names)


@pytest.fixture
def files(tmp_path):
    rope = counterfactual_table(_rope_agg(), model_on="Qwen3-8B", model_off="Qwen3-8B-rope-off", revision="main")
    other = rope.assign(model="Other-rope-off", ratio_ir_mean_off=9.0)  # a second file: another model's rows
    paths = {"rope_counterfactual": [str(tmp_path / "rope_a.parquet"), str(tmp_path / "rope_b.parquet")],
             "recovery": str(tmp_path / "recovery.parquet"), "domain_slices": str(tmp_path / "slices.parquet"),
             "aggregate": str(tmp_path / "agg.parquet")}
    for df, path in ((rope, paths["rope_counterfactual"][0]), (other, paths["rope_counterfactual"][1]),
                     (_recovery(), paths["recovery"]), (_slices(), paths["domain_slices"]),
                     (_aggregate(), paths["aggregate"])):
        write_parquet(df, path, {"test": True})
    return paths


#: (model, quantity) -> (swapkl's value by hand, status)
EXPECTED = {
    ("Qwen3-8B-rope-off", "mean I/R with RoPE removed (12 adjacent pairs)"): ((0.25 + 0.1 + 0.5) / 3, "reproduced"),
    ("Qwen3-8B-rope-off", "mean I/R with RoPE (the same 12 adjacent pairs)"): (0.3, "reproduced"),
    ("Qwen3-8B-rope-off", "pairs whose gap grows without RoPE (of 12)"): (2.0, "differs"),
    ("Qwen3-8B-paper", "net recovery %, skip-1 {17} (Qwen3-8B)"): (60.0, "reproduced"),
    ("Qwen3-8B-paper", "net recovery %, skip-3 {15,17,20} (Qwen3-8B)"): (30.0, "differs"),
    ("Qwen3-8B-imdb", "Spearman of delta PPL, IMDB vs WikiText-2 (24 configurations)"): (1.0, "reproduced"),
    ("pythia-1.4b-imdb", "Spearman of delta PPL, IMDB vs WikiText-2 (21 configurations)"): (0.8, "differs"),
    # max ranks (1,3,5,2,4), mean ranks (1,4,4,2,4) (ties share 4): centred sums 8 / sqrt(10 * 8)
    ("Qwen3-8B-paper", "Spearman, mean vs max of the two replacement directions"): (8 / math.sqrt(80), "reproduced"),
    # max/min ratios 2, 1, 5, 1.25, 2: median 2; 90th percentile at position 3.6 of the sorted 1, 1.25, 2, 2, 5
    ("Qwen3-8B-paper", "median per-pair max/min ratio of the two directions"): (2.0, "differs"),
    ("Qwen3-8B-paper", "90th percentile of the per-pair max/min ratio"): (2.0 + 0.6 * 3.0, "differs"),
    ("GPT-2-Medium-paper-merge", "post-merge KL, layers 4 and 5 averaged in both slots"): (1.9, "reproduced"),
    ("GPT-2-Medium-paper-heads", "min head KL, pair (4, 5)"): (0.0005, "reproduced"),
    ("GPT-2-Medium-paper-heads", "max head KL, pair (4, 5)"): (0.0047, "reproduced"),
    ("GPT-2-Medium-paper-heads", "mean head KL, pair (4, 5)"): (0.0012, "differs"),
}


def _check(df: pd.DataFrame) -> None:
    card = df.set_index(["model", "quantity"])
    for key, (value, status) in EXPECTED.items():
        assert card.loc[key, "swapkl"] == pytest.approx(value, rel=1e-12), key
        assert card.loc[key, "status"] == status, key
    assert card.loc[("GPT-2-Medium-paper-heads", "min head KL, pair (14, 15)"), "swapkl"] == 0.5  # its own pair
    assert card.loc[("Qwen3-8B-paper", "90th percentile of the per-pair max/min ratio"), "setting"].endswith(
        "repl_asymmetry, quantile 0.9")
    assert card.loc[("Qwen3-8B-paper", "net recovery %, skip-1 {17} (Qwen3-8B)"), "setting"].endswith("x 100")


def test_each_new_row_from_tables_read_back(files):
    tables = read_tables(files)
    assert set(tables) == set(files) and len(tables["rope_counterfactual"]) == 2 * 4  # both files' rows
    assert np.isnan(tables["aggregate"]["repl_asymmetry"].iloc[-1])  # directed rows have no directions
    _check(build_scorecard(tables))


def test_the_same_through_the_command_line(files, tmp_path):
    out = tmp_path / "card.parquet"
    args = ["scorecard", "--out", str(out), "--aggregate", files["aggregate"], "--recovery", files["recovery"],
            "--domain-slices", files["domain_slices"], "--rope-counterfactual", *files["rope_counterfactual"]]
    assert main(args) == 0
    _check(pd.read_parquet(out))


def test_every_registered_table_is_a_command_line_option():
    from swapkl.cli import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["scorecard"]
    assert set(TABLES) <= {a.dest for a in sub._actions}
