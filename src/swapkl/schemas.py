"""Table schemas and the one Parquet reader of the tables swapkl writes (no torch: the figures use it).

:func:`read_table` reads a swapkl Parquet file as ``schema``: it must exist, be Parquet, and hold every
column of ``schema`` with a type that casts to it (extra columns are dropped); anything else is a
SwapKLError naming the file.
"""

from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from swapkl import provenance
from swapkl.agreement import AGREEMENT_SCHEMA
from swapkl.errors import SwapKLError

#: one row per (checkpoint, guide, budget[, random draw]) of a pruning run (see swapkl.prune)
PRUNING_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
    ("guide", pa.string()), ("budget", pa.int64()), ("random_draw", pa.int64()), ("fixed_set", pa.string()),
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
    # appended later (swapkl.pruning.table): null for guides they do not concern and in older files
    ("n_evals", pa.int64()), ("merged_layers", pa.list_(pa.int64())),
])
#: covariate columns of a pair (definitions in swapkl.covariates), in table order
COVARIATE_COLUMNS = ("rel_update_i", "rel_update_j", "rel_update_mean", "rel_update_absdiff", "update_cos",
                     "commutator", "weight_dist", "attn_entropy_i", "attn_entropy_j", "attn_entropy_mean",
                     "attn_entropy_absdiff")
_COVARIATE_KEYS = [("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
                   ("layer_i", pa.int64()), ("layer_j", pa.int64()), ("distance", pa.int64())]
#: one row per pair of one checkpoint, as the covariates job writes it (swapkl.covariates)
COVARIATE_FILE_SCHEMA = pa.schema([*_COVARIATE_KEYS, *[(c, pa.float64()) for c in COVARIATE_COLUMNS],
                                   ("n_seqs", pa.int64()), ("n_tokens", pa.int64())])
#: results/covariates.parquet: the covariate rows with the pair's gaps from the aggregate (swapkl.covariate_stats)
COVARIATES_SCHEMA = pa.schema([*COVARIATE_FILE_SCHEMA, ("duplicate_of", pa.string()),
                               ("gap", pa.float64()), ("gap_fwd", pa.float64()),
                               ("family", pa.string()), ("seed", pa.int64())])  # null outside seed families
#: results/covariate_correlations.parquet: Spearman correlation of a covariate with a gap in one group of rows
COVARIATE_CORRELATIONS_SCHEMA = pa.schema([
    ("scope", pa.string()), ("group", pa.string()), ("model", pa.string()), ("revision", pa.string()),
    ("covariate", pa.string()), ("target", pa.string()), ("n_pairs", pa.int64()), ("spearman", pa.float64()),
    ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("n_boot", pa.int64()), ("resampled", pa.string()),
])
#: columns appended to a schema after files were written without them: read as null
APPENDED = frozenset({"n_evals", "merged_layers", "fixed_set"})

#: one row per (checkpoint, task, metric, scored model) of a relevance run (see swapkl.relevance). A
#: single-block row has ``layer`` = the deleted block and null ``guide``; a pruned-set row (a pruning
#: guide's choice at a budget, from the checkpoint's pruning table) has null ``layer`` and the pruning
#: table's ``guide``, ``budget``, ``random_draw``, ``fixed_set``, ``removed_layers``, ``merged_layers``.
#: ``removed_layers`` is ``[layer]`` on single-block rows; ``relevance`` is AccRel of the scored model.
RELEVANCE_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("task", pa.string()), ("metric", pa.string()),
    ("layer", pa.int64()), ("accuracy", pa.float64()), ("base_accuracy", pa.float64()),
    ("random_baseline", pa.float64()), ("relevance", pa.float64()), ("n_items", pa.int64()),
    ("guide", pa.string()), ("budget", pa.int64()), ("random_draw", pa.int64()), ("fixed_set", pa.string()),
    ("removed_layers", pa.list_(pa.int64())), ("merged_layers", pa.list_(pa.int64())),
])
#: relevance columns after ``n_items``, added with the pruned-set rows: null in files written before
RELEVANCE_APPENDED = frozenset(RELEVANCE_SCHEMA.names[RELEVANCE_SCHEMA.get_field_index("guide"):])
#: what identifies a relevance row
RELEVANCE_KEY = ["model", "revision", "task", "metric", "layer", "guide", "budget", "random_draw", "fixed_set"]


def open_table(path, columns, what: str) -> pa.Table:
    """The Parquet file at ``path``, which must exist, be readable and hold ``columns``."""
    path = str(path)
    if not os.path.isfile(path):
        raise SwapKLError(f"{what} file {path!r} does not exist")
    try:
        table = pq.read_table(path)
    except Exception as e:
        raise SwapKLError(f"{what} file {path!r} is not a readable Parquet file: {e}") from e
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise SwapKLError(f"{what} file {path!r} lacks columns {missing}")
    return table


def read_table(path, schema: pa.Schema, what: str, appended=APPENDED) -> tuple[pa.Table, dict]:
    """The table at ``path`` cast to ``schema`` (columns in its order), and the file's provenance; columns
    named in ``appended`` may be missing (read as null)."""
    table = open_table(path, [n for n in schema.names if n not in appended], what)
    for name in appended:
        if schema.get_field_index(name) >= 0 and name not in table.column_names:
            table = table.append_column(schema.field(name), pa.nulls(table.num_rows, schema.field(name).type))
    try:
        table = table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SwapKLError(f"{what} file {str(path)!r} has columns of the wrong type: {e}") from e
    return table, provenance.read(str(path))


def read_pruning(path) -> pd.DataFrame:
    return read_table(path, PRUNING_SCHEMA, "pruning")[0].to_pandas()


def read_agreement(path) -> pd.DataFrame:
    return read_table(path, AGREEMENT_SCHEMA, "agreement")[0].to_pandas()


def read_covariate_correlations(path) -> pd.DataFrame:
    return read_table(path, COVARIATE_CORRELATIONS_SCHEMA, "covariate correlations")[0].to_pandas()


def read_relevance(path, *, pruned_sets: bool = False) -> pd.DataFrame:
    """The relevance table: its single-block rows (:func:`single_block`), all rows with ``pruned_sets``."""
    df = read_table(path, RELEVANCE_SCHEMA, "relevance", RELEVANCE_APPENDED)[0].to_pandas()
    return df if pruned_sets else single_block(df)


def single_block(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of single-block deletions (``layer`` set), with ``layer`` as int64; pruned-set rows dropped."""
    if "layer" not in df.columns:
        raise SwapKLError("relevance table lacks the column 'layer'")
    out = df[df["layer"].notna()]
    return out.astype({"layer": "int64"}).reset_index(drop=True)
