"""The pruning table (one row per guide x budget [x random draw]): its schema, the aggregation of
per-checkpoint files into ``results/pruning.parquet`` and the readers.

Columns appended after ``window_tokens`` (null for guides they do not concern):

* ``n_evals``: calibration evaluations (models scored on the calibration windows) the guide spent
  to choose this row's blocks (search guides: SLEB, beam);
* ``merged_layers``: LaCo rows only: the slots whose block runs the weight average of itself and
  the next block; the next blocks are the ``removed_layers``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl import provenance
from swapkl.agreement import AGREEMENT_SCHEMA
from swapkl.errors import SwapKLError
from swapkl.file_checks import require_distinct
from swapkl.guides.registry import guide_names
from swapkl.parquet_io import write_parquet
from swapkl.schemas import PRUNING_SCHEMA, read_agreement, read_pruning, read_table  # noqa: F401  (public here)

log = logging.getLogger(__name__)

def _concat(paths: Sequence, schema: pa.Schema, what: str) -> tuple[pa.Table, list[dict]]:
    tables, provs, seen = [], [], {}
    for p in paths:
        t, prov = read_table(p, schema, what)
        for key in sorted(set(zip(t.column("model").to_pylist(), t.column("revision").to_pylist()))):
            if key in seen:
                raise SwapKLError(f"{what} files {seen[key]!r} and {str(p)!r} both hold {key[0]}@{key[1]}")
            seen[key] = str(p)
        tables.append(t)
        provs.append(dict(path=str(p), **{k: prov.get(k) for k in (
            "model", "revision_label", "weights_sha256", "commit", "eval_split", "calibration_split", "probe_split",
            "config_sha256")}))
    if not tables:
        raise SwapKLError(f"no {what} file given")
    return pa.concat_tables(tables), provs


def _sort(df: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    step = df["step"].astype("float64").fillna(np.inf)
    return (df.assign(_step=step).sort_values(["model", "_step", "revision", *extra], kind="stable")
              .drop(columns="_step").reset_index(drop=True))


def aggregate_pruning(inputs: Sequence, out: str, *, agreement_inputs: Sequence = (),
                      agreement_out: str | None = None) -> pd.DataFrame:
    """Concatenate per-checkpoint pruning files (and agreement files) into one table each.

    Rows are sorted by model, step (revisions without a step last), revision, guide (the order of
    the guide registry :mod:`swapkl.guides`), budget and random draw. A checkpoint present in two inputs is an error.
    """
    if bool(agreement_inputs) != (agreement_out is not None):
        raise SwapKLError("give both agreement inputs and agreement_out, or neither")
    require_distinct({"--out": out, "--agreement-out": agreement_out},
                     [("--inputs", p) for p in inputs] + [("--agreement-inputs", p) for p in agreement_inputs])
    table, provs = _concat(inputs, PRUNING_SCHEMA, "pruning")
    df = table.to_pandas()
    order = guide_names()
    unknown = sorted(set(df["guide"]) - set(order))
    if unknown:
        raise SwapKLError(f"pruning files hold unknown guides {unknown}")
    df["_g"] = df["guide"].map(order.index)
    df["_d"] = df["random_draw"].astype("float64").fillna(-1)
    df["_f"] = df["fixed_set"].fillna("")
    df = _sort(df, ["_g", "_f", "budget", "_d"]).drop(columns=["_g", "_d", "_f"])
    prov = dict(provenance.software_versions(), inputs=provs)
    write_parquet(pa.Table.from_pandas(df, schema=PRUNING_SCHEMA, preserve_index=False), out, prov)
    if agreement_out is not None:
        at, aprovs = _concat(agreement_inputs, AGREEMENT_SCHEMA, "agreement")
        adf = _sort(at.to_pandas(), ["guide", "reference"])
        write_parquet(pa.Table.from_pandas(adf, schema=AGREEMENT_SCHEMA, preserve_index=False), agreement_out,
                      dict(provenance.software_versions(), inputs=aprovs))
    log.info("wrote %s (%d rows from %d files)", out, len(df), len(provs))
    return df
