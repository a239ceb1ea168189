"""Access to the aggregate for plotting: load it, pick rows, fail with a clear message."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from swapkl.probes.aggregate import read_aggregate


def as_frame(agg: pd.DataFrame | str | Path) -> pd.DataFrame:
    """The aggregate as a DataFrame (a path is read with :func:`swapkl.probes.aggregate.read_aggregate`)."""
    return agg if isinstance(agg, pd.DataFrame) else read_aggregate(agg)


def table_frame(table: pd.DataFrame | str | Path) -> pd.DataFrame:
    """A results table as a DataFrame (a path is read whole with pyarrow)."""
    return table if isinstance(table, pd.DataFrame) else pq.read_table(table).to_pandas()



def duplicate_note(agg: pd.DataFrame, model: str) -> str:
    """'excluded duplicate revisions: step2000 (= step1000)' or ''."""
    d = agg[(agg["model"] == model) & agg["duplicate_of"].notna()][["revision", "duplicate_of"]]
    d = d.drop_duplicates()
    if d.empty:
        return ""
    items = ", ".join(f"{r} (= {o})" for r, o in zip(d["revision"], d["duplicate_of"]))
    return f"excluded duplicate revisions (same weights): {items}"


def with_duplicate_note(note: str, agg: pd.DataFrame, model: str) -> str:
    """``note``, followed on a line of its own by ``model``'s :func:`duplicate_note` where it has one."""
    dup = duplicate_note(agg, model)
    return note + (f"\n{dup}" if dup else "")
