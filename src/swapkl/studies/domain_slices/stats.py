"""Domain slices: the same pruning evaluated on a second corpus, ``results/domain_slices.parquet``.

A slice is a model entry (section ``domain_slices``, its ``reference``) that prunes the same weights with the same
probes and guides as its reference but measures perplexity on another text (e.g. IMDB reviews or code).
For every (guide, budget, fixed set) row that both pruning runs hold -- random draws enter through their
mean row only, infeasible rows are left out -- the table pairs the two relative perplexity increases:

Rows ``kind="config"``: model, reference, revision, guide, budget, fixed_set, delta_ppl_pct_reference,
delta_ppl_pct_slice. Row ``kind="summary"`` per slice: n_configs and spearman (Spearman's rho of the two
columns, :func:`swapkl.stats.rank_correlation.spearman`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from swapkl.tables import provenance
from swapkl.stats.rank_correlation import spearman
from swapkl.errors import SwapKLError
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import PRUNING_SCHEMA, read_table

KEYS = ["guide", "budget", "fixed_set"]


def _rows(pruning: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    sel = pruning[(pruning["model"] == model) & (pruning["revision"] == revision) & pruning["random_draw"].isna()
                  & pruning["feasible"].astype(bool)]
    if sel.empty:
        raise SwapKLError(f"domain slices: the pruning table has no feasible rows for {model} {revision}")
    return sel.assign(fixed_set=sel["fixed_set"].fillna(""))[KEYS + ["delta_ppl_pct"]]


def slice_rows(pruning: pd.DataFrame, *, model: str, reference: str, revision: str) -> pd.DataFrame:
    """The config rows and the summary row of one slice."""
    both = _rows(pruning, reference, revision).merge(_rows(pruning, model, revision), on=KEYS,
                                                     suffixes=("_reference", "_slice"))
    if len(both) < 3:
        raise SwapKLError(f"domain slices: {model} and {reference} at {revision} share {len(both)} pruning "
                          "configurations; at least 3 are needed for a rank correlation")
    both = both.sort_values(KEYS, kind="mergesort").reset_index(drop=True)
    both.insert(0, "kind", "config")
    both.insert(1, "model", model)
    both.insert(2, "reference", reference)
    both.insert(3, "revision", revision)
    rho = float(spearman(both["delta_ppl_pct_reference"].to_numpy(), both["delta_ppl_pct_slice"].to_numpy()))
    summary = {"kind": "summary", "model": model, "reference": reference, "revision": revision,
               "n_configs": len(both), "spearman": rho}
    out = pd.concat([both, pd.DataFrame([summary])], ignore_index=True)
    return out.astype({"budget": "Int64", "n_configs": "Int64"})


def build_domain_slices(pruning_path: str | Path, out: str | Path, slices) -> pd.DataFrame:
    """``slices``: (model, reference, revision) triples. Writes ``out`` (see the module docstring)."""
    if not slices:
        raise SwapKLError("domain slices: no model has an enabled `domain_slices` section")
    check_writable(str(out))
    pruning = read_table(pruning_path, PRUNING_SCHEMA, "pruning")[0].to_pandas()
    df = pd.concat([slice_rows(pruning, model=m, reference=r, revision=rev) for m, r, rev in slices],
                   ignore_index=True)
    write_parquet(df, str(out), {**provenance.software_versions(), "inputs": {"pruning": str(pruning_path)},
                                 "slices": [list(s) for s in slices]})
    return df
