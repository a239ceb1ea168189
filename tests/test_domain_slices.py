"""Domain slices: the rank correlation of the pruning cost on two corpora against scipy, through the
pruning table's own schema."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from swapkl.studies.domain_slices.stats import build_domain_slices
from swapkl.errors import SwapKLError
from swapkl.studies.domain_slices.figures import plot_domain_slices
from swapkl.tables.parquet_io import write_parquet
from swapkl.tables.schemas import PRUNING_SCHEMA


def _pruning(tmp_path, rng):
    rows = []
    for model, shift in (("m", 0.0), ("m-imdb", 1.0)):
        for guide in ("interchange", "replacement", "bi"):
            for budget in (1, 2, 3):
                rows.append(dict(model=model, revision="main", guide=guide, budget=budget, feasible=True,
                                 delta_ppl_pct=float(budget * 10 + rng.normal(0, 3) + shift)))
        for draw in range(3):  # random draws: only their mean row counts
            rows.append(dict(model=model, revision="main", guide="random", budget=2, random_draw=draw,
                             feasible=True, delta_ppl_pct=float(rng.normal(80, 10))))
        rows.append(dict(model=model, revision="main", guide="random_mean", budget=2, feasible=True,
                         delta_ppl_pct=float(rng.normal(80, 5))))
        rows.append(dict(model=model, revision="main", guide="clustered", budget=3, feasible=False,
                         delta_ppl_pct=np.nan))
    df = pd.DataFrame(rows)
    table = pa.Table.from_pylist([{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()}
                                  for r in df.to_dict("records")], schema=PRUNING_SCHEMA)
    path = tmp_path / "pruning.parquet"
    write_parquet(table, str(path), {"test": 1})
    return df, path


def test_spearman_of_the_shared_configurations_is_scipys(tmp_path):
    df, path = _pruning(tmp_path, np.random.default_rng(0))
    out = tmp_path / "slices.parquet"
    build_domain_slices(path, out, [("m-imdb", "m", "main")])
    got = pq.read_table(out).to_pandas()
    summary = got[got["kind"] == "summary"].iloc[0]
    keep = df[df["random_draw"].isna() & df["feasible"].astype(bool)]
    a = keep[keep["model"] == "m"].sort_values(["guide", "budget"])["delta_ppl_pct"].to_numpy()
    b = keep[keep["model"] == "m-imdb"].sort_values(["guide", "budget"])["delta_ppl_pct"].to_numpy()
    assert summary["n_configs"] == 10 == len(a)  # 3 guides x 3 budgets + the random mean
    assert summary["spearman"] == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    plot_domain_slices(got, tmp_path / "d.png", tmp_path / "d.pdf")
    assert (tmp_path / "d.png").stat().st_size > 1000


def test_a_slice_without_shared_configurations_is_an_error(tmp_path):
    _, path = _pruning(tmp_path, np.random.default_rng(1))
    with pytest.raises(SwapKLError, match="no feasible rows for m-code main"):
        build_domain_slices(path, tmp_path / "x.parquet", [("m-code", "m", "main")])
    assert not (tmp_path / "x.parquet").exists()


def test_a_slice_must_share_its_references_weights_and_both_must_prune_its_revisions():
    """The section's config check (run with the config's other checks, before any job): the reference is another
    model that loads the same weights, and both prune every revision the slice reads (`all`: each of the model's
    own revisions, so a reference without the slice's revision fails too)."""
    from swapkl.config import ConfigError
    from swapkl.studies.domain_slices import check

    def entry(revisions, pruned="all", **extra):
        return {"revisions": revisions, "prune": {"enabled": True, "revisions": pruned}, **extra}

    slice_ = entry(["main"], same_weights_as="ref", domain_slices={"reference": "ref", "revisions": "last"})
    check("slice", slice_, {"ref": entry(["main"]), "slice": slice_})  # passes
    with pytest.raises(ConfigError, match=r"models\.slice\.domain_slices\.revisions: \['main'\] not pruned by 'ref'"):
        check("slice", slice_, {"ref": entry(["step10"]), "slice": slice_})
    with pytest.raises(ConfigError, match="not pruned by 'ref'"):
        check("slice", slice_, {"ref": entry(["main"], pruned=["other"]), "slice": slice_})
    with pytest.raises(ConfigError, match="loads other weights"):
        check("slice", {**slice_, "same_weights_as": "third"}, {"ref": entry(["main"]), "third": entry(["main"])})
    with pytest.raises(ConfigError, match=r"reference: name another model of this config \(got 'slice'\)"):
        check("slice", {**slice_, "domain_slices": {"reference": "slice", "revisions": "last"}}, {"slice": slice_})
