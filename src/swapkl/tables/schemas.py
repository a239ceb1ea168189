"""Every table swapkl writes: its schema, and the one Parquet reader (no torch: the figures use it).

Per-checkpoint tables written by the GPU jobs hold measurements and the per-sequence (per-window)
sums behind them, never a bootstrap statistic: confidence intervals depend on the resampling
settings (``probe.n_boot``, the seed), so they are computed downstream (:mod:`swapkl.stats.intervals`)
by the aggregation steps, and changing those settings never repeats a GPU job.

* :data:`PROBE_SCHEMA`: one row per variant of one probe run (``swapkl probe``);
* :data:`REPR_SCHEMA`: the representation baselines (BI, angular distances) of one probe run;
* :data:`PRUNING_RUN_SCHEMA`: one row per guide x budget [x random draw] of one pruning run
  (``swapkl prune``); :data:`PRUNING_SCHEMA` = the same plus the CI columns
  (:data:`PRUNING_CI_COLUMNS`), the published ``results/pruning.parquet``;
* :data:`AGREEMENT_SCHEMA`: the guides' agreement statistics (:mod:`swapkl.stats.agreement`);
* :func:`aggregate_schema`: ``results/swapkl.parquet`` (:mod:`swapkl.probes.aggregate`);
* :data:`RELEVANCE_SCHEMA`, :data:`RELEVANCE_STATS_COLUMNS`: the accuracy-relevance tables
  (:mod:`swapkl.relevance.accrel`, :mod:`swapkl.relevance.relevance_stats`).

:func:`read_table` reads any of them: the file must exist, be Parquet, carry swapkl provenance and
hold every column of the schema with a type that casts to it (extra columns are dropped; columns
in :data:`APPENDED` read as null from files written before them); anything else is a SwapKLError
that starts with the file's path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from swapkl.tables import provenance
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_regular_file

_IDENTITY = [("model", pa.string()), ("revision", pa.string()), ("step", pa.int64())]

#: per-sequence sums of a probe row: KL and NLL summed over each window's scored positions, and the counts
SEQ_COLUMNS = ("seq_kl_sum", "seq_tokens", "seq_nll_sum", "seq_nll_tokens")
#: one row per measured variant (and the base model) of one probe run; the means are token-weighted
PROBE_SCHEMA = pa.schema([
    *_IDENTITY, ("protocol", pa.string()),
    ("layer_i", pa.int64()), ("layer_j", pa.int64()), ("n_layers", pa.int64()),
    ("kl_mean", pa.float64()), ("nll_mean", pa.float64()), ("n_seqs", pa.int64()), ("n_tokens", pa.int64()),
    ("seq_kl_sum", pa.list_(pa.float64())), ("seq_tokens", pa.list_(pa.int64())),
    ("seq_nll_sum", pa.list_(pa.float64())), ("seq_nll_tokens", pa.list_(pa.int64())),
    ("head", pa.int64()),
])
#: one row per (metric, start block, width): the value is sum(seq_value_sum) / sum(seq_count)
REPR_SCHEMA = pa.schema([
    *_IDENTITY, ("metric", pa.string()),
    ("layer_i", pa.int64()), ("width", pa.int64()), ("n_layers", pa.int64()),
    ("value", pa.float64()), ("n_seqs", pa.int64()), ("n_tokens", pa.int64()),
    ("seq_value_sum", pa.list_(pa.float64())), ("seq_count", pa.list_(pa.int64())),
])

#: the bootstrap CIs of the pruning table, computed by the aggregation (swapkl.stats.intervals.pruning_intervals)
PRUNING_CI_COLUMNS = ("ppl_ci_low", "ppl_ci_high", "delta_ppl_pct_ci_low", "delta_ppl_pct_ci_high",
                      "kl_ci_low", "kl_ci_high")
#: one row per (checkpoint, guide, budget[, random draw]) of a pruning run (see swapkl.pruning.prune)
PRUNING_SCHEMA = pa.schema([
    *_IDENTITY, ("n_layers", pa.int64()),
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
    # per probe window: KL(p_base || p_pruned) summed over its tokens, and the token counts
    ("probe_kl_sum", pa.list_(pa.float64())), ("probe_tokens", pa.list_(pa.int64())),
    # the share of probe-window resamples on which the guide picks the same blocks (swapkl.pruning.stability)
    ("set_stability", pa.float64()),
])
#: covariate columns of a pair (definitions in swapkl.probes.covariates), in table order
COVARIATE_COLUMNS = ("rel_update_i", "rel_update_j", "rel_update_mean", "rel_update_absdiff", "update_cos",
                     "commutator", "weight_dist", "attn_entropy_i", "attn_entropy_j", "attn_entropy_mean",
                     "attn_entropy_absdiff")
_COVARIATE_KEYS = [("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
                   ("layer_i", pa.int64()), ("layer_j", pa.int64()), ("distance", pa.int64())]
#: one row per pair of one checkpoint, as the covariates job writes it (swapkl.probes.covariates)
COVARIATE_FILE_SCHEMA = pa.schema([*_COVARIATE_KEYS, *[(c, pa.float64()) for c in COVARIATE_COLUMNS],
                                   ("n_seqs", pa.int64()), ("n_tokens", pa.int64())])
#: results/covariates.parquet: the covariate rows with the pair's gaps from the aggregate (swapkl.studies.covariate_stats)
COVARIATES_SCHEMA = pa.schema([*COVARIATE_FILE_SCHEMA, ("duplicate_of", pa.string()),
                               ("gap", pa.float64()), ("gap_fwd", pa.float64()),
                               ("family", pa.string()), ("seed", pa.int64())])  # null outside seed families
#: results/covariate_correlations.parquet: Spearman correlation of a covariate with a gap in one group of rows
COVARIATE_CORRELATIONS_SCHEMA = pa.schema([
    ("scope", pa.string()), ("group", pa.string()), ("model", pa.string()), ("revision", pa.string()),
    ("covariate", pa.string()), ("target", pa.string()), ("n_pairs", pa.int64()), ("spearman", pa.float64()),
    ("ci_low", pa.float64()), ("ci_high", pa.float64()), ("n_boot", pa.int64()), ("resampled", pa.string()),
])

#: one row per span variant (and the base model) of one checkpoint (swapkl.studies.spans); span columns null on the base row
SPANS_FILE_SCHEMA = pa.schema([
    *_IDENTITY, ("n_layers", pa.int64()), ("variant", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
    ("width", pa.int64()), ("loops", pa.int64()), ("order", pa.list_(pa.int64())), ("seed", pa.int64()),
    ("middle", pa.int64()), ("kl_mean", pa.float64()), ("nll_mean", pa.float64()), ("n_seqs", pa.int64()),
    ("n_tokens", pa.int64()), ("seq_kl_sum", pa.list_(pa.float64())), ("seq_tokens", pa.list_(pa.int64())),
    ("seq_nll_sum", pa.list_(pa.float64())), ("seq_nll_tokens", pa.list_(pa.int64())),
])
#: results/spans.parquet: the span rows with bootstrap CIs, delta perplexity and the checkpoint's mean adjacent
#: interchange and replacement KL (swapkl.studies.spans.stats)
SPANS_SCHEMA = pa.schema([
    *SPANS_FILE_SCHEMA, ("kl_ci_low", pa.float64()), ("kl_ci_high", pa.float64()), ("delta_ppl_pct", pa.float64()),
    ("d_inter_adjacent", pa.float64()), ("d_repl_adjacent", pa.float64()), ("n_boot", pa.int64()),
])

#: what one pruning run writes: the pruning table without its CIs
PRUNING_RUN_SCHEMA = pa.schema([f for f in PRUNING_SCHEMA if f.name not in PRUNING_CI_COLUMNS])

#: chance level and permutation p-value of the exact-rank and severe misranking rates (swapkl.stats.agreement)
RANK_CHANCE_COLUMNS = ("exact_rank_chance", "exact_rank_p", "severe_chance", "severe_p")
AGREEMENT_SCHEMA = pa.schema([
    *_IDENTITY, ("n_layers", pa.int64()),
    ("guide", pa.string()), ("reference", pa.string()), ("n_compared", pa.int64()),
    ("spearman", pa.float64()), ("kendall", pa.float64()),
    ("misranking_rate", pa.float64()), ("n_pairs", pa.int64()),
    ("excluded_layers", pa.list_(pa.int64())), ("n_ranked", pa.int64()),
    ("exact_rank_misranking", pa.float64()), ("severe_misranking", pa.float64()), ("severe_offset", pa.int64()),
    ("pearson", pa.float64()), ("pearson_paper_sign", pa.float64()),
    ("layers", pa.list_(pa.int64())), ("guide_rank", pa.list_(pa.int64())), ("reference_rank", pa.list_(pa.int64())),
    # appended: chance levels and permutation p-values of the two rates (swapkl.stats.agreement.rank_chance)
    *[(c, pa.float64()) for c in RANK_CHANCE_COLUMNS],
    # appended: Pearson's r over every block, the boundary ones included (pearson: blocks 1..L-2)
    ("pearson_all_blocks", pa.float64()), ("pearson_all_blocks_paper_sign", pa.float64()),
])

#: results/relevance_stats.parquet (swapkl.relevance.relevance_stats)
RELEVANCE_STATS_COLUMNS = ["model", "revision", "task", "metric", "reference", "n_layers", "excluded_layers",
                           "n_ranked", "exact_rank_misranking", "severe_misranking", "severe_offset",
                           "exact_rank_chance", "exact_rank_p", "severe_chance", "severe_p", "pearson",
                           "pearson_paper_sign", "pearson_all_blocks", "pearson_all_blocks_paper_sign", "layers", "guide_rank", "reference_rank", "n_tasks", "n_blocks",
                           "mean_spread_relevance", "heterogeneity_q", "heterogeneity_df", "heterogeneity_p",
                           # appended: how much R rests on outlying blocks (swapkl.stats.agreement.pearson_robustness)
                           "pearson_p", "outlying_layers", "n_without_outliers", "pearson_without_outliers",
                           "pearson_without_outliers_paper_sign", "pearson_without_outliers_p"]

# results/swapkl.parquet: one long table, the column `kind` says which columns a row fills (swapkl.probes.aggregate)
AGGREGATE_COMMON = [("kind", pa.string()), *_IDENTITY, ("n_layers", pa.int64()), ("duplicate_of", pa.string())]
AGGREGATE_DIRECTED = [
    ("protocol", pa.string()), ("layer_i", pa.int64()), ("layer_j", pa.int64()),
    ("kl_mean", pa.float64()), ("kl_ci_low", pa.float64()), ("kl_ci_high", pa.float64()),
    ("nll_mean", pa.float64()), ("nll_ci_low", pa.float64()), ("nll_ci_high", pa.float64()),
    ("n_seqs", pa.int64()), ("n_tokens", pa.int64()), ("head", pa.int64())]
AGGREGATE_PAIR = [
    ("distance", pa.int64()), ("r_ij", pa.float64()), ("r_ji", pa.float64()),
    ("d_repl_max", pa.float64()), ("d_repl_mean", pa.float64()), ("d_inter", pa.float64()),
    ("gap", pa.float64()), ("ratio_ir", pa.float64()), ("d_repl_fwd", pa.float64()),
    ("gap_fwd", pa.float64()), ("ratio_ir_fwd", pa.float64()), ("class_repl", pa.string()),
    ("class_inter", pa.string())]
_GAP_STATS = [f"{g}_{stat}" for g in ("gap", "gap_fwd")
              for stat in ("mean", "median", "p75", "max", "min", "mean_ci_low", "mean_ci_high", "max_share")]
AGGREGATE_SUMMARY = [
    ("pair_set", pa.string()), ("n_pairs", pa.int64()), *[(name, pa.float64()) for name in _GAP_STATS],
    ("d_repl_max_mean", pa.float64()), ("ratio_ir_mean", pa.float64()), ("ratio_ir_median", pa.float64()),
    ("d_repl_fwd_mean", pa.float64()), ("ratio_ir_fwd_mean", pa.float64()), ("ratio_ir_fwd_median", pa.float64()),
    ("d_inter_mean", pa.float64()), ("frac_inter_le_repl", pa.float64()), ("n_strong_repl", pa.int64()),
    ("n_strong_inter", pa.int64()), ("n_boot", pa.int64())]
AGGREGATE_REPR = [("metric", pa.string()), ("width", pa.int64()), ("value", pa.float64()),
                  ("ci_low", pa.float64()), ("ci_high", pa.float64())]


#: the columns of swapkl.studies.optimal_search.run.run_optimal_search's table (one row per budget and method)
OPTIMAL_SEARCH_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("n_layers", pa.int64()), ("budget", pa.int64()),
    ("method", pa.string()), ("removed_layers", pa.list_(pa.int64())), ("cost", pa.float64()),
    ("base_cost", pa.float64()), ("gap_to_best", pa.float64()), ("n_evals", pa.int64()),
    ("n_enumeration", pa.int64()), ("bound", pa.float64()), ("monotone_violations", pa.int64()),
    ("certified", pa.bool_()), ("objective", pa.string()),
])
#: the snowball construction's per-block table (swapkl.relevance.snowball_table)
SNOWBALL_SCHEMA = pa.schema([
    ("block", pa.int64()), ("bi", pa.float64()), ("bi_rank", pa.int64()), ("critical", pa.bool_()),
    ("accuracy", pa.float64()), ("accuracy_without_block", pa.float64()), ("acc_rel", pa.float64()),
    ("eps", pa.float64()), ("task", pa.string()), ("n_docs", pa.int64()), ("random_baseline", pa.float64()),
])


def aggregate_schema(member_columns: Sequence[str]) -> pa.Schema:
    """Arrow schema of ``results/swapkl.parquet`` with the boolean pair-set columns ``member_columns``."""
    member = [(c, pa.bool_()) for c in member_columns]
    return pa.schema(AGGREGATE_COMMON + AGGREGATE_DIRECTED + AGGREGATE_PAIR + member + AGGREGATE_SUMMARY
                     + AGGREGATE_REPR)


#: results/seeds.parquet (swapkl.studies.seeds): one long table, the column ``kind`` (member, family, pruning,
#: decomposition) says which columns a row fills
SEED_GAPS = ("gap", "gap_fwd")
SEED_RANKED = ("gap", "gap_fwd", "d_repl_max", "d_inter")
SEED_MEMBER_STATS = ("gap_mean", "gap_fwd_mean", "d_repl_max_mean", "d_repl_fwd_mean", "d_inter_mean")
SEEDS_SCHEMA = pa.schema(
    [("kind", pa.string()), ("family", pa.string()), ("pair_set", pa.string()), ("revision", pa.string()),
     ("step", pa.int64()),
     ("seed", pa.int64()), ("model", pa.string()), ("n_pairs", pa.int64()),
     *[(c, pa.float64()) for c in SEED_MEMBER_STATS],
     ("n_seeds", pa.int64()), ("seeds", pa.list_(pa.int64())), ("absent_seeds", pa.list_(pa.int64())),
     *[(f"{q}_seed_{s}", pa.float64()) for q in SEED_GAPS for s in ("mean", "sd", "min", "max")],
     *[(f"{s}_{q}", pa.float64()) for q in SEED_RANKED for s in ("spearman", "kendall_w")],
     ("guide", pa.string()), ("budget", pa.int64()), ("layer", pa.int64()), ("n_chosen", pa.int64()),
     ("share_chosen", pa.float64()),
     ("data_family", pa.string()), ("init_family", pa.string()), ("quantity", pa.string()),
     ("var_data", pa.float64()), ("var_init", pa.float64()), ("n_data", pa.int64()), ("n_init", pa.int64()),
     ("share_data", pa.float64()), ("share_init", pa.float64()),
     ("share_data_ci_low", pa.float64()), ("share_data_ci_high", pa.float64())])

#: columns appended to a schema after files were written without them: read as null
APPENDED = frozenset({"n_evals", "merged_layers", "fixed_set", "head", "set_stability", "exact_rank_chance", "exact_rank_p",
                      "severe_chance", "severe_p", "share_data_ci_low", "share_data_ci_high", "heterogeneity_q",
                      "heterogeneity_df", "heterogeneity_p", "absent_seeds"})

#: one row per (checkpoint, task, metric, scored model) of a relevance run (see swapkl.relevance.accrel). A
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

#: results/pe_ablation.parquet (swapkl.studies.pe_ablation): one row per trained model (position encoding,
#: depth) and pair distance; the I/R statistics are the aggregate's summary statistics of those pairs
PE_ABLATION_SCHEMA = pa.schema([
    ("position_encoding", pa.string()), ("n_layers", pa.int64()), ("distance", pa.int64()),
    ("model", pa.string()), ("revision", pa.string()), ("architecture", pa.string()), ("n_params", pa.int64()),
    ("n_pairs", pa.int64()), ("n_ratio", pa.int64()), ("ratio_ir_mean", pa.float64()),
    ("ratio_ir_median", pa.float64()), ("gap_mean", pa.float64()), ("d_repl_max_mean", pa.float64()),
    ("d_inter_mean", pa.float64()),
])
#: one row per (checkpoint, calibration, method, budget, evaluated task, metric) of task-calibrated pruning
#: (swapkl.studies.task_pruning; results/seed003_pruning.parquet): ``calibration`` names the calibration set
#: (a task's own name = calibrated on that task's calibration split), ``calibration_kind`` is task, mix or lm;
#: ``method`` original (budget 0, nothing removed) or a guide; ``accuracy`` is lm-eval's metric on the task's
#: evaluation ``split``, pooled over the documents of its subtasks.
TASK_PRUNING_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("calibration", pa.string()),
    ("calibration_kind", pa.string()), ("calibration_split", pa.string()), ("n_calibration_docs", pa.int64()),
    ("method", pa.string()), ("budget", pa.int64()), ("n_layers", pa.int64()),
    ("removed_layers", pa.list_(pa.int64())), ("task", pa.string()), ("split", pa.string()),
    ("metric", pa.string()), ("accuracy", pa.float64()), ("n_docs", pa.int64()),
])
#: columns of results/seed003_tables.parquet (swapkl.relevance.task_tables.summary_rows; accuracy in percent)
SEED003_TABLES_COLUMNS = ["model", "revision", "table", "calibration", "method", "budget", "task", "metric",
                          "accuracy"]


def read_table(path, schema: pa.Schema | Sequence[str], what: str, *, nonempty: bool = False,
               appended=APPENDED) -> tuple[pa.Table, dict]:
    """The table at ``path`` and the file's provenance.

    ``schema`` a :class:`pyarrow.Schema`: the table is cast to it (its columns, in its order); a list of
    column names: the file must hold them, every column is returned as stored. Columns named in ``appended``
    may be missing (read as null). ``nonempty``: a file without rows is an error.
    """
    path = str(path)
    if not os.path.lexists(path):
        raise SwapKLError(f"{path}: {what} file not found")
    require_regular_file(path, f"{what} file")  # a FIFO, device or directory is refused before pyarrow sees it
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise SwapKLError(f"{path}: not a readable Parquet file ({first})") from None
    prov = provenance.read(path)
    names = schema.names if isinstance(schema, pa.Schema) else list(schema)
    missing = [c for c in names if c not in table.column_names and c not in appended]
    if missing:
        raise SwapKLError(f"{path}: {what} file lacks column(s) {', '.join(missing)}")
    if nonempty and table.num_rows == 0:
        raise SwapKLError(f"{path}: {what} file has no rows")
    if not isinstance(schema, pa.Schema):
        return table, prov
    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        col = table.column(field.name)
        try:
            columns.append(col if col.type == field.type else col.cast(field.type))
        except (pa.ArrowException, ValueError):
            raise SwapKLError(f"{path}: column {field.name} has type {col.type}, expected {field.type}") from None
    return pa.Table.from_arrays(columns, schema=schema), prov


def read_concatenated(inputs: Sequence[str], schema: pa.Schema, what: str, key: Sequence[str]) -> tuple[pa.Table, dict]:
    """The per-checkpoint files ``inputs`` as one table, refused when two rows share ``key`` (the same file
    given twice, or two jobs of one checkpoint), and the provenance an aggregate of them carries."""
    if not inputs:
        raise SwapKLError(f"no {what} file to aggregate")
    tables, provs = (list(x) for x in zip(*(read_table(path, schema, what) for path in inputs)))
    table = pa.concat_tables(tables)
    if table.select(list(key)).to_pandas().duplicated().any():
        raise SwapKLError(f"{what} files overlap: rows with the same {', '.join(key)} appear twice")
    return table, provenance.software_versions() | {"inputs": provs, "checkpoints": provenance.checkpoints(provs),
                                                    "input_sha256": provenance.input_sha256(inputs)}


def read_frame(path, schema: pa.Schema | Sequence[str], what: str) -> pd.DataFrame:
    """:func:`read_table` as a DataFrame (without the provenance)."""
    return read_table(path, schema, what)[0].to_pandas()


def read_seeds(path) -> pd.DataFrame:
    """The seeds table (swapkl.studies.seeds) as a DataFrame (every column of :data:`SEEDS_SCHEMA`)."""
    return read_table(path, SEEDS_SCHEMA, "seeds")[0].to_pandas()


def read_pruning(path) -> pd.DataFrame:
    """A pruning table with its confidence intervals: a per-checkpoint file (``swapkl prune``'s output, which
    has none yet) is refused with the command that adds them."""
    table, _ = read_table(path, [c for c in PRUNING_SCHEMA.names if c not in PRUNING_CI_COLUMNS], "pruning")
    if not set(PRUNING_CI_COLUMNS) & set(table.column_names):
        raise SwapKLError(f"{path}: pruning file has no confidence intervals (a per-checkpoint `swapkl prune` "
                          "output?); combine the per-checkpoint files with `swapkl aggregate-pruning` first")
    return read_frame(path, PRUNING_SCHEMA, "pruning")


def read_agreement(path) -> pd.DataFrame:
    return read_frame(path, AGREEMENT_SCHEMA, "agreement")


def read_covariate_correlations(path) -> pd.DataFrame:
    return read_frame(path, COVARIATE_CORRELATIONS_SCHEMA, "covariate correlations")


def read_relevance(path, *, pruned_sets: bool = False) -> pd.DataFrame:
    """The relevance table: its single-block rows (:func:`single_block`), all rows with ``pruned_sets``."""
    df = read_table(path, RELEVANCE_SCHEMA, "relevance", appended=RELEVANCE_APPENDED)[0].to_pandas()
    return df if pruned_sets else single_block(df)


def single_block(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of single-block deletions (``layer`` set), with ``layer`` as int64; pruned-set rows dropped."""
    if "layer" not in df.columns:
        raise SwapKLError("relevance table lacks the column 'layer'")
    out = df[df["layer"].notna()]
    return out.astype({"layer": "int64"}).reset_index(drop=True)


#: one row per (checkpoint, scored model, task) of the downstream benchmarks (swapkl.relevance.downstream), and per
#: scored model a row with ``task`` = ``average`` (the mean over its tasks). ``phase``: base, pruned (a guide's set
#: from the pruning table, scored on the engine), control (the unpruned model healed) or healed (a healed export);
#: ``score`` is ``acc_norm`` where lm-eval reports it, else ``acc`` (the paper's choice); ``retention`` = score / the
#: base model's score on the task (on ``average`` rows: the mean of the tasks' retentions).
DOWNSTREAM_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("phase", pa.string()), ("guide", pa.string()),
    ("budget", pa.int64()), ("random_draw", pa.int64()), ("fixed_set", pa.string()),
    ("removed_layers", pa.list_(pa.int64())), ("merged_layers", pa.list_(pa.int64())), ("checkpoint", pa.string()),
    ("task", pa.string()), ("kind", pa.string()), ("accuracy", pa.float64()), ("acc_norm", pa.float64()),
    ("score", pa.float64()), ("perplexity", pa.float64()), ("retention", pa.float64()), ("n", pa.int64()),
])
#: what identifies a downstream row
#: a sequential probe's decisions table (swapkl.studies.sequential.probe), one row per decision as it stands (column look)
DECISIONS_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("kind", pa.string()), ("subject", pa.string()),
    ("state", pa.string()), ("answer", pa.string()), ("estimate", pa.float64()), ("low", pa.float64()),
    ("high", pa.float64()), ("windows", pa.int64()), ("look", pa.int64()), ("confidence", pa.float64()),
])
DECISIONS_KEY = ["model", "revision", "kind", "subject"]

DOWNSTREAM_KEY = ["model", "revision", "phase", "guide", "budget", "random_draw", "fixed_set", "checkpoint", "task"]


def read_downstream(path) -> pd.DataFrame:
    return read_frame(path, DOWNSTREAM_SCHEMA, "downstream")
