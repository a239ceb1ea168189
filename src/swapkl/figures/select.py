"""Access to the aggregate for plotting: load it, pick rows, fail with a clear message."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from swapkl.aggregate import read_aggregate
from swapkl.errors import SwapKLError


def as_frame(agg: pd.DataFrame | str | Path) -> pd.DataFrame:
    """The aggregate as a DataFrame (a path is read with :func:`swapkl.aggregate.read_aggregate`)."""
    return agg if isinstance(agg, pd.DataFrame) else read_aggregate(agg)


def rows(agg: pd.DataFrame, kind: str, model: str, revision: str | None = None,
         *, with_duplicates: bool = True) -> pd.DataFrame:
    """Rows of ``kind`` for ``model`` (and ``revision``); SwapKLError naming what is missing."""
    sel = agg[(agg["kind"] == kind) & (agg["model"] == model)]
    if revision is not None:
        sel = sel[sel["revision"] == revision]
    if not with_duplicates:
        sel = sel[sel["duplicate_of"].isna()]
    if sel.empty:
        models = sorted(set(agg.loc[agg["kind"] == kind, "model"].dropna()))
        what = f"{model} {revision}" if revision is not None else model
        raise SwapKLError(f"aggregate has no {kind} rows for {what} (models with {kind} rows: "
                          f"{', '.join(models) or 'none'})")
    return sel.reset_index(drop=True)


def duplicate_note(agg: pd.DataFrame, model: str) -> str:
    """'excluded duplicate revisions: step2000 (= step1000)' or ''."""
    d = agg[(agg["model"] == model) & agg["duplicate_of"].notna()][["revision", "duplicate_of"]]
    d = d.drop_duplicates()
    if d.empty:
        return ""
    items = ", ".join(f"{r} (= {o})" for r, o in zip(d["revision"], d["duplicate_of"]))
    return f"excluded duplicate revisions (same weights): {items}"
