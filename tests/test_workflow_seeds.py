"""End to end: a seed family of tiny demo models through the real workflow (training, probes, pruning,
aggregate, summarise_seeds, plot_seed_band), then the seeds table against the aggregate and pruning table
it was computed from. The run makes only the tables and the seed-band figure (the per-checkpoint figures are
the demo run's business, tests/test_workflow_demo.py); which figures the whole workflow would make is read
from its summary.

Tolerances: the seeds table copies the aggregate's numbers (exact) and averages three of them in float64,
which agrees with numpy's mean and standard deviation to a few ulps (rtol 1e-12).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from workflow_runs import run_demo

pytestmark = pytest.mark.slow

CONFIG = {
    "models": {
        "tiny": {
            "demo": {"arch": "gpt_neox", "num_layers": 6, "steps": 30, "save_steps": [0, 30], "seed": 0},
            "revisions": ["step0", "step10", "step30"],
            "trajectory": True,
            "pair_sets": ["adjacent", "within:2"],
            "data": {"text_file": "resources/demo/corpus/valid.txt", "n_seqs": 6, "seq_len": 48},
            "prune": {"enabled": True, "revisions": ["step30"], "max_budget": 2, "n_random": 1,
                      "eval": {"text_file": "resources/demo/corpus/test.txt", "max_words": 600, "window": 64,
                               "stride": 32},
                      "calibration": {"text_file": "resources/demo/corpus/valid.txt", "n_seqs": 4, "seq_len": 48}},
            # the members: two more seeds at two of the three revisions
            "seeds": {"values": [3, 4], "revisions": ["step0", "step30"]},
        },
    },
    "probe": {"n_boot": 20},
    "device": "cpu",
    "demo": {"tokenizer": {"vocab_size": 400}},
}
TARGETS = ("results/swapkl.parquet", "results/pruning.parquet", "results/seeds.parquet",
           "results/figures/seeds/tiny.png")


@pytest.fixture(scope="module")
def seeds_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("seeds_run")
    config = work / "seeds.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    result = run_demo(work, config, extra=TARGETS)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return work


def test_seeds_table_matches_the_aggregate(seeds_run):
    agg = pd.read_parquet(seeds_run / "results/swapkl.parquet")
    seeds = pd.read_parquet(seeds_run / "results/seeds.parquet")
    assert (seeds_run / "results/figures/seeds/tiny.png").stat().st_size > 1000
    # members: no own figures. Every file of the default target, made or not, with the rule that makes it:
    summary = run_demo(seeds_run, seeds_run / "seeds.yaml", extra=("--summary",))
    assert summary.returncode == 0, summary.stderr[-3000:]
    figures = [line.split("\t")[0] for line in summary.stdout.splitlines() if line.startswith("results/figures/")]
    assert "results/figures/gap_trajectory/tiny.png" in figures  # the family's own seed does get them
    assert not [f for f in figures if "seed3" in f or "seed4" in f], figures
    members = {"tiny": 0, "tiny-seed3": 3, "tiny-seed4": 4}
    fam = seeds[seeds["kind"] == "family"]
    assert set(zip(fam["revision"], fam["n_seeds"])) == {("step0", 3), ("step10", 1), ("step30", 3)}
    for _, row in fam[fam["n_seeds"] == 3].iterrows():
        s = agg[(agg["kind"] == "summary") & agg["model"].isin(list(members)) & (agg["revision"] == row["revision"])
                & (agg["pair_set"] == row["pair_set"])]
        assert sorted(row["seeds"]) == [0, 3, 4]
        for q in ("gap", "gap_fwd"):
            v = s[f"{q}_mean"].to_numpy(float)
            assert row[f"{q}_seed_mean"] == pytest.approx(v.mean(), rel=1e-12)
            assert row[f"{q}_seed_sd"] == pytest.approx(v.std(ddof=1), rel=1e-12)
        column = "in_adjacent" if row["pair_set"] == "adjacent" else "in_within_2"
        x = [agg[(agg["kind"] == "pair") & (agg["model"] == m) & (agg["revision"] == row["revision"])
                 & agg[column].fillna(False)].sort_values(["layer_i", "layer_j"])["gap"].to_numpy(float)
             for m in members]
        rhos = [stats.spearmanr(x[a], x[b]).statistic for a, b in ((0, 1), (0, 2), (1, 2))]
        assert row["spearman_gap"] == pytest.approx(np.mean(rhos), rel=1e-12)


def test_pruning_choices_count_the_members_sets(seeds_run):
    pruning = pd.read_parquet(seeds_run / "results/pruning.parquet")
    seeds = pd.read_parquet(seeds_run / "results/seeds.parquet")
    rows = seeds[(seeds["kind"] == "pruning") & (seeds["guide"] == "interchange") & (seeds["budget"] == 2)]
    assert len(rows) == 6 and set(rows["n_seeds"]) == {3}
    chosen = pruning[(pruning["guide"] == "interchange") & (pruning["budget"] == 2)]
    for _, row in rows.iterrows():
        assert row["n_chosen"] == sum(row["layer"] in list(layers) for layers in chosen["removed_layers"])
