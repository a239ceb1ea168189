"""Aggregate probe Parquets into one dataset, ``results/swapkl.parquet``.

:func:`aggregate` reads every probe file (one per checkpoint and rule) and representation file,
validates them (see :mod:`swapkl.probes.aggregate_inputs`), derives pair statistics
(:mod:`swapkl.probes.pair_statistics`), flags duplicate revisions (:mod:`swapkl.hub.duplicate_revisions`) and
writes a single Parquet file atomically.

Output schema: one long table; the column ``kind`` says which columns a row fills, every other
column is null there.

Every row:
    kind (string: "directed" | "pair" | "summary" | "repr"), model, revision (string),
    step (int64, null when the revision is not ``stepN``), n_layers (int64),
    duplicate_of (string: the earlier revision of the same model with identical weights_sha256,
    null otherwise; such revisions are kept but excluded from trajectory statistics and plots).

kind="directed" -- every measured variant as probed (replacement in both directions,
interchange, deletion, base, averaging in both directions, head interchange per head unit),
without the per-sequence lists:
    protocol, layer_i, layer_j, kl_mean, nll_mean, n_seqs, n_tokens, head (same meaning as in the
    probe files), and kl_ci_low, kl_ci_high, nll_ci_low, nll_ci_high: 95% percentile bootstrap CIs
    computed here from the per-sequence sums (:mod:`swapkl.stats.intervals`; ``n_boot`` resamplings of the
    sequences with ``seed``, one per checkpoint shared by its directed and repr rows; the base row's
    KL CI is 0).

kind="pair" -- one per (model, revision, i<j) probed by both protocols:
    layer_i, layer_j (i < j), distance (j - i), r_ij = r(i<-j) and r_ji = r(j<-i) (nats),
    d_repl_max, d_repl_mean, d_inter, gap (= d_repl_max - d_inter), ratio_ir
    (= d_inter / d_repl_max, null when d_repl_max is 0), the one-direction variant of the paper's
    Pythia trajectory d_repl_fwd (= r_ij), gap_fwd (= d_repl_fwd - d_inter) and ratio_ir_fwd
    (= d_inter / d_repl_fwd), class_repl (of d_repl_max) and
    class_inter (of d_inter): "strong" (< 0.05), "conditional" (< 0.10) or "none";
    one boolean column per pair set named in ``pair_sets`` for any model, ``in_<name>`` with
    non-alphanumerics turned into "_" ("adjacent" -> in_adjacent, "within:3" -> in_within_3,
    "all" -> in_all); membership is geometric (|i-j| = 1, |i-j| <= K, any) and is filled for
    every pair row, also of models whose config does not use that set.

kind="summary" -- one per (model, revision, pair set configured for that model):
    pair_set (its name), n_pairs, gap_mean, gap_median, gap_p75 (linear-interpolated 75th
    percentile), gap_max, gap_min, gap_mean_ci_low / gap_mean_ci_high (95% percentile bootstrap
    CI of the mean gap: sequences resampled n_boot times, every pair's d_repl and d_inter
    recomputed from the per-sequence sums, then averaged), gap_max_share (the largest pair's gap
    over the summed gap: how much of the mean one pair carries), d_repl_max_mean, ratio_ir_mean,
    ratio_ir_median; the same statistics of the one-direction gap (gap_fwd_mean, gap_fwd_median,
    gap_fwd_p75, gap_fwd_max, gap_fwd_min, gap_fwd_mean_ci_low, gap_fwd_mean_ci_high,
    gap_fwd_max_share, d_repl_fwd_mean, ratio_ir_fwd_mean, ratio_ir_fwd_median); d_inter_mean,
    frac_inter_le_repl (share of pairs with d_inter <= d_repl_max),
    n_strong_repl, n_strong_inter, n_boot, n_seqs, n_tokens (tokens of the base row, else of the
    first variant). Every pair of a configured set must have been probed, else SwapKLError.

kind="repr" -- the representation baselines as probed:
    metric ("bi" | "angular" | "angular_last"), layer_i (start block), width, value, n_seqs,
    n_tokens, and ci_low, ci_high bootstrapped like the directed rows'.

Rows are sorted by kind (in the order above), model, step, revision, then protocol / layers /
pair set / metric. Parquet metadata key ``b"swapkl"`` holds a JSON object with the settings
(pair_sets, n_boot, seed, thresholds), the duplicate revisions, and ``inputs``: for each input
file its path, role and provenance as read from that file.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl import __version__
from swapkl.errors import SwapKLError
from swapkl.probes.table_jobs import AggregateJob
from swapkl.hub.absence import split_absent
from swapkl.hub.duplicate_revisions import Checkpoint, find_duplicates, revision_order
from swapkl.probes.aggregate_checkpoint import checkpoint_rows, group_checkpoints
from swapkl.probes.aggregate_inputs import ProbeInput, ReprInput, read_probe_file, read_repr_file
from swapkl.probes.pair_statistics import CONDITIONAL_BELOW, STRONG_BELOW, pair_set_column
from swapkl.probes.pairs import parse_pair_set
from swapkl.probes.protocols import protocol_names
from swapkl.tables.file_checks import require_distinct, same_file
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.provenance import COMPARABLE_ACROSS_REVISIONS, check_comparable, checkpoints, input_sha256
from swapkl.tables.provenance import read as read_provenance
from swapkl.tables.schemas import aggregate_schema, read_table

log = logging.getLogger(__name__)

KINDS = ("directed", "pair", "summary", "repr")


def output_schema(set_names: list[str]) -> pa.Schema:
    """Arrow schema of the aggregate for the given pair-set names (their ``in_*`` columns)."""
    return aggregate_schema([pair_set_column(s) for s in set_names])


def _sorted(df: pd.DataFrame, set_order: list[str]) -> pd.DataFrame:
    keys = pd.DataFrame({
        "k": df["kind"].map({k: n for n, k in enumerate(KINDS)}),
        "m": df["model"],
        "s0": df["step"].isna(),
        "s": df["step"].fillna(0).astype("int64"),
        "r": df["revision"],
        "p": df["protocol"].map({p: n for n, p in enumerate(("base", *protocol_names()))}).fillna(-1),
        "ps": df["pair_set"].map({p: n for n, p in enumerate(set_order)}).fillna(-1),
        "me": df["metric"].astype("string").fillna(""),
        "w": df["width"].fillna(-1).astype("int64"),
        "i": df["layer_i"].fillna(-1).astype("int64"),
        "j": df["layer_j"].fillna(-1).astype("int64"),
        "h": df["head"].fillna(-1).astype("int64"),
    })
    order = keys.sort_values(list(keys.columns), kind="mergesort").index
    return df.loc[order].reset_index(drop=True)


def _to_table(df: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    cols = []
    for f in schema:
        if f.name in df.columns:
            vals = df[f.name].astype(object).where(df[f.name].notna(), None).tolist()
        else:
            vals = [None] * len(df)
        if pa.types.is_floating(f.type):
            vals = [None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v) for v in vals]
        elif pa.types.is_integer(f.type):
            vals = [None if v is None else int(v) for v in vals]
        elif pa.types.is_boolean(f.type):
            vals = [None if v is None else bool(v) for v in vals]
        else:
            vals = [None if v is None else str(v) for v in vals]
        cols.append(pa.array(vals, type=f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def _validate_args(inputs, pair_sets, n_boot, seed) -> None:
    if not inputs:
        raise SwapKLError("aggregate: no probe files given")
    if not isinstance(n_boot, (int, np.integer)) or isinstance(n_boot, bool) or n_boot < 1:
        raise SwapKLError(f"aggregate: n_boot must be an integer >= 1, got {n_boot!r}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise SwapKLError(f"aggregate: seed must be an integer >= 0, got {seed!r}")
    for model, sets in pair_sets.items():
        if isinstance(sets, str):
            raise SwapKLError(f"aggregate: pair sets of {model} must be a list, got {sets!r}")
        for s in sets:
            try:
                parse_pair_set(s)
            except SwapKLError as e:
                raise SwapKLError(f"aggregate: {model}: {e}") from None
        if len(set(sets)) != len(sets):
            raise SwapKLError(f"aggregate: {model}: a pair set is listed twice in {list(sets)}")


def aggregate(job: AggregateJob) -> None:
    """Aggregate probe and representation Parquets into one Parquet file at ``out``: an :class:`AggregateJob`
    (``aggregate(job)``).

    ``pair_sets`` maps each model name (the ``model`` column) to the pair sets summarised for it
    ("adjacent", "within:K", "all"). ``n_boot`` resamples with ``seed`` give the CI of the mean gap.
    See the module docstring for the output schema.
    """
    job = AggregateJob.checked(job)
    probe_files, repr_files, out = list(job.probe_files), list(job.repr_files or ()), job.out
    pair_sets, n_boot, seed = job.pair_sets, job.n_boot, job.seed
    # markers of seed-family members' revisions that the hub lacks: skipped, and listed in the provenance
    probe_files, absent = split_absent(probe_files)
    repr_files, absent_repr = split_absent(repr_files)
    absent += [r for r in absent_repr if r not in absent]
    _validate_args(probe_files, pair_sets, n_boot, seed)  # before any file is read
    require_distinct({"`out`": str(out)}, [("`probe_files`", f) for f in probe_files] + [("`repr_files`", f) for f in repr_files])
    check_writable(str(out))
    seen: list[str] = []
    for f in probe_files + repr_files:
        twin = next((g for g in seen if same_file(f, g)), None)  # also through a symbolic link or another spelling
        if twin is not None:
            raise SwapKLError(f"{f}: given twice as an input" + ("" if twin == f else f" (it is {twin})"))
        seen.append(f)
    probes = [read_probe_file(f) for f in probe_files]
    reprs = [read_repr_file(f) for f in repr_files]
    df, all_sets, dups = aggregate_rows(probes, reprs, pair_sets, n_boot=n_boot, seed=seed)
    provenance = {
        "kind": "aggregate",
        "swapkl_version": __version__,
        "input_sha256": input_sha256([x.path for x in (*probes, *reprs)]),
        **settings(pair_sets, n_boot, seed, dups),
        "inputs": [{"file": x.path, "role": role, "model": x.model, "revision": x.revision,
                    "provenance": x.provenance}
                   for role, items in (("probe", probes), ("repr", reprs)) for x in items],
        "checkpoints": checkpoints([x.provenance for x in probes + reprs]),
        "absent": absent,
    }
    write_parquet(aggregate_table(df, all_sets), str(out), provenance)
    log.info("aggregate: %d checkpoints, %d rows -> %s", len({(x.model, x.revision) for x in probes}), len(df), out)


def aggregate_rows(probes: list[ProbeInput], reprs: list[ReprInput], pair_sets: dict, *, n_boot: int = 1000,
                   seed: int = 0) -> tuple[pd.DataFrame, list[str], dict]:
    """The aggregate's rows (sorted, the schema's columns) of validated probe and representation tables (from
    files or in memory), every pair set named for any model, and the duplicate revision of each checkpoint."""
    _validate_args(probes, pair_sets, n_boot, seed)
    groups = group_checkpoints(probes, reprs)
    per_model: dict[str, dict] = {}
    for item in probes:  # a training trajectory compares revisions: same windows, same dtype
        check_comparable(per_model.setdefault(item.model, {}), item.path, item.provenance,
                         f"model {item.model} (revisions are compared along training)", COMPARABLE_ACROSS_REVISIONS)
    for ck in groups.values():
        if ck.model not in pair_sets:
            raise SwapKLError(f"{ck.first}: model {ck.model!r} has no pair sets configured "
                              f"(configured: {', '.join(sorted(pair_sets)) or 'none'})")
    all_sets: list[str] = []
    for m in sorted(pair_sets):
        for s in pair_sets[m]:
            if s not in all_sets:
                all_sets.append(s)
    dups = find_duplicates([Checkpoint(ck.model, ck.revision, ck.step, ck.sha, ck.config_sha)
                            for ck in groups.values()])
    parts: list[pd.DataFrame] = []
    ordered = sorted(groups.values(), key=lambda c: (c.model, revision_order(c.step, c.revision)))
    for ck in ordered:
        rows = checkpoint_rows(ck, list(pair_sets[ck.model]), all_sets,
                                dups[(ck.model, ck.revision)], n_boot, seed)
        parts.extend(rows.values())
    df = pd.concat([p for p in parts if len(p)], ignore_index=True)
    df = df.reindex(columns=[f.name for f in output_schema(all_sets)])
    return _sorted(df, all_sets), all_sets, dups


def aggregate_table(rows: pd.DataFrame, all_sets: list[str]) -> pa.Table:
    """:func:`aggregate_rows`' rows as the Arrow table the aggregate file holds."""
    return _to_table(rows, output_schema(all_sets))


def settings(pair_sets: dict, n_boot: int, seed: int, dups: dict) -> dict:
    """The aggregate's settings as its provenance records them."""
    return {
        "pair_sets": {m: list(pair_sets[m]) for m in sorted(pair_sets)},
        "n_boot": int(n_boot),
        "seed": int(seed),
        "ci_level": 0.95,
        "class_thresholds": {"strong_below": STRONG_BELOW, "conditional_below": CONDITIONAL_BELOW},
        "duplicates": [{"model": m, "revision": r, "duplicate_of": d}
                       for (m, r), d in sorted(dups.items()) if d is not None],
    }


def read_aggregate(path: str | Path) -> pd.DataFrame:
    """The aggregate as a DataFrame (nullable Int64/boolean/string dtypes)."""
    return aggregate_frame(read_table(path, ["kind"], "aggregate")[0])


def aggregate_frame(table: pa.Table) -> pd.DataFrame:
    """The aggregate's Arrow table as a DataFrame (nullable Int64/boolean/string dtypes)."""
    mapping = {pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype(), pa.string(): pd.StringDtype()}
    return table.to_pandas(types_mapper=mapping.get)


def aggregate_provenance(path: str | Path) -> dict:
    """The provenance JSON stored in an aggregate's metadata."""
    return read_provenance(str(path))


def trajectory(agg: pd.DataFrame, model: str) -> pd.DataFrame:
    """Summary rows of ``model`` along training: duplicates and revisions without a step left
    out, sorted by step (pair sets keep their configured order)."""
    s = agg[(agg["kind"] == "summary") & (agg["model"] == model)]
    s = s[s["duplicate_of"].isna() & s["step"].notna()]
    return s.sort_values("step", kind="mergesort").reset_index(drop=True)


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


def probe_provenance(aggregate_path: str) -> dict[tuple[str, str], dict]:
    """Provenance of the probe files behind each (model, revision) of the aggregate at ``aggregate_path``."""
    out = {}
    for item in read_provenance(aggregate_path).get("inputs", []):
        if item.get("role") == "probe":
            out.setdefault((item["model"], item["revision"]), item.get("provenance") or {})
    return out
