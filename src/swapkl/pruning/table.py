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
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from swapkl import provenance
from swapkl.agreement import AGREEMENT_SCHEMA
from swapkl.errors import SwapKLError
from swapkl.guides import guide_names
from swapkl.parquet_io import write_parquet

log = logging.getLogger(__name__)

PRUNING_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
    ("guide", pa.string()), ("budget", pa.int64()), ("random_draw", pa.int64()),
    ("removed_layers", pa.list_(pa.int64())), ("feasible", pa.bool_()),
    ("ppl", pa.float64()), ("ppl_ci_low", pa.float64()), ("ppl_ci_high", pa.float64()),
    ("base_ppl", pa.float64()),
    ("delta_ppl_pct", pa.float64()), ("delta_ppl_pct_ci_low", pa.float64()), ("delta_ppl_pct_ci_high", pa.float64()),
    ("kl_mean", pa.float64()), ("kl_ci_low", pa.float64()), ("kl_ci_high", pa.float64()),
    ("n_draws", pa.int64()), ("delta_ppl_pct_sd", pa.float64()),
    ("delta_ppl_pct_min", pa.float64()), ("delta_ppl_pct_max", pa.float64()),
    ("spacing", pa.int64()), ("eval_split", pa.string()), ("calibration_split", pa.string()),
    ("probe_split", pa.string()), ("eval_window", pa.int64()), ("eval_stride", pa.int64()),
    ("eval_max_words", pa.int64()), ("n_eval_windows", pa.int64()), ("n_eval_tokens", pa.int64()),
    ("n_probe_seqs", pa.int64()), ("n_probe_tokens", pa.int64()),
    ("window_nll_sum", pa.list_(pa.float64())), ("window_tokens", pa.list_(pa.int64())),
    ("n_evals", pa.int64()), ("merged_layers", pa.list_(pa.int64())),
])


#: optional columns appended to the schema later (null where a file predates them)
_APPENDED = ("n_evals", "merged_layers")


def _read_rows(path, schema: pa.Schema, what: str) -> tuple[pa.Table, dict]:
    path = str(path)
    if not os.path.isfile(path):
        raise SwapKLError(f"{what} file {path!r} does not exist")
    try:
        table = pq.read_table(path)
    except Exception as e:
        raise SwapKLError(f"{what} file {path!r} is not a readable Parquet file: {e}") from e
    for name in _APPENDED:
        if schema.get_field_index(name) >= 0 and name not in table.column_names:
            # files written before the column existed: the column is null for every guide they hold
            table = table.append_column(schema.field(name), pa.nulls(table.num_rows, schema.field(name).type))
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise SwapKLError(f"{what} file {path!r} lacks columns {missing}")
    try:
        table = table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SwapKLError(f"{what} file {path!r} has columns of the wrong type: {e}") from e
    return table, provenance.read(path)


def _concat(paths: Sequence, schema: pa.Schema, what: str) -> tuple[pa.Table, list[dict]]:
    tables, provs, seen = [], [], {}
    for p in paths:
        t, prov = _read_rows(p, schema, what)
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
    table, provs = _concat(inputs, PRUNING_SCHEMA, "pruning")
    df = table.to_pandas()
    order = guide_names()
    unknown = sorted(set(df["guide"]) - set(order))
    if unknown:
        raise SwapKLError(f"pruning files hold unknown guides {unknown}")
    df["_g"] = df["guide"].map(order.index)
    df["_d"] = df["random_draw"].astype("float64").fillna(-1)
    df = _sort(df, ["_g", "budget", "_d"]).drop(columns=["_g", "_d"])
    prov = dict(provenance.software_versions(), inputs=provs)
    write_parquet(pa.Table.from_pandas(df, schema=PRUNING_SCHEMA, preserve_index=False), out, prov)
    if agreement_out is not None:
        at, aprovs = _concat(agreement_inputs, AGREEMENT_SCHEMA, "agreement")
        adf = _sort(at.to_pandas(), ["guide", "reference"])
        write_parquet(pa.Table.from_pandas(adf, schema=AGREEMENT_SCHEMA, preserve_index=False), agreement_out,
                      dict(provenance.software_versions(), inputs=aprovs))
    log.info("wrote %s (%d rows from %d files)", out, len(df), len(provs))
    return df


def read_pruning(path) -> pd.DataFrame:
    return _read_rows(path, PRUNING_SCHEMA, "pruning")[0].to_pandas()


def read_agreement(path) -> pd.DataFrame:
    return _read_rows(path, AGREEMENT_SCHEMA, "agreement")[0].to_pandas()
