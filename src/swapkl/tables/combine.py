"""The workflow's combine steps: per-checkpoint tables -> one study table, with each input's provenance.

They only read and write tables, so their jobs start without torch or the model code; the stages that write the
per-checkpoint tables are in their packages (:mod:`swapkl.relevance.accrel`, :mod:`swapkl.relevance.downstream`,
:mod:`swapkl.recovery.recovery_table`, :mod:`swapkl.studies.optimal_search`).
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from swapkl.errors import SwapKLError
from swapkl.tables import provenance
from swapkl.tables.file_checks import require_distinct
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import DECISIONS_KEY, DECISIONS_SCHEMA, DOWNSTREAM_KEY, DOWNSTREAM_SCHEMA, OPTIMAL_SEARCH_SCHEMA, RELEVANCE_APPENDED, \
    RELEVANCE_KEY, RELEVANCE_SCHEMA, read_concatenated, read_table


def aggregate_relevance(inputs: list[str], out: str) -> None:
    """Concatenate per-checkpoint relevance files into one table (provenance: each input's, in order).

    Rows are sorted by model, revision, task, metric, then the single-block rows by layer and the
    pruned-set rows after them by guide, fixed set, budget and random draw."""
    require_distinct({"`out`": out}, [("`inputs`", p) for p in inputs])
    tables, provs = [], []
    for path in inputs:
        table, prov = read_table(path, RELEVANCE_SCHEMA, "relevance", appended=RELEVANCE_APPENDED)
        tables.append(table)
        provs.append(prov)
    if not tables:
        raise SwapKLError("no relevance file to aggregate")
    table = pa.concat_tables(tables)
    if table.to_pandas()[RELEVANCE_KEY].duplicated().any():
        raise SwapKLError("relevance files overlap: the same model, revision, task and scored model appear twice")
    order = ["model", "revision", "task", "metric", "layer", "guide", "fixed_set", "budget", "random_draw"]
    table = table.sort_by([(c, "ascending") for c in order])  # nulls last: pruned-set rows after the blocks
    write_parquet(table, out, provenance.software_versions() | {"inputs": provs,
                                                                 "checkpoints": provenance.checkpoints(provs),
                                                                 "input_sha256": provenance.input_sha256(inputs)})


def aggregate_downstream(inputs: list[str], out: str) -> None:
    """Concatenate per-checkpoint downstream files into one table (provenance: each input's, in order)."""
    require_distinct({"`out`": out}, [("`inputs`", p) for p in inputs])
    table, prov = read_concatenated(inputs, DOWNSTREAM_SCHEMA, "downstream", DOWNSTREAM_KEY)
    write_parquet(table, out, prov)


def aggregate_decisions(inputs: list[str], out: str) -> None:
    """Concatenate per-checkpoint decisions tables of sequential probes into one (provenance: each input's)."""
    require_distinct({"`out`": out}, [("`inputs`", p) for p in inputs])
    check_writable(out)
    table, prov = read_concatenated(inputs, DECISIONS_SCHEMA, "decisions", DECISIONS_KEY)
    write_parquet(table, out, prov)


def concat_tables(inputs: list[str], out: str) -> pd.DataFrame:
    """One table from per-checkpoint tables swapkl wrote (their provenance kept as ``inputs``)."""
    if not inputs:
        raise SwapKLError(f"{out}: no per-checkpoint table to concatenate (no model of the config runs the stage "
                          "that writes them)")
    provs = [provenance.read(path) for path in inputs]
    df = pd.concat([pd.read_parquet(path) for path in inputs], ignore_index=True)
    write_parquet(df, out, dict(provenance.software_versions(), inputs=provs))
    return df


def combine_optimal_search(files, out: str) -> None:
    """The per-checkpoint optimal-search tables as one (refused where two hold the same model, budget and
    method), with each input's provenance."""
    check_writable(out)
    table, prov = read_concatenated(list(files), OPTIMAL_SEARCH_SCHEMA, "optimal search",
                                    ("model", "revision", "budget", "method"))
    write_parquet(table, out, prov)
