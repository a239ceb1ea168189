"""Which covariates predict the protocol gap: the covariates table and its rank correlations (exploratory).

``results/covariates.parquet`` (:data:`swapkl.tables.schemas.COVARIATES_SCHEMA`) joins every per-checkpoint
covariate row (:mod:`swapkl.probes.covariates`) with the same pair's ``gap`` and ``gap_fwd`` from the aggregate's
pair rows (their one definition is :mod:`swapkl.probes.pair_statistics`; nothing is recomputed here) and its
``duplicate_of``. Every covariate row must find its pair in the aggregate, and the covariate file must
have been measured on the weights and windows the probes of that checkpoint used.

``results/covariate_correlations.parquet`` (:data:`swapkl.tables.schemas.COVARIATE_CORRELATIONS_SCHEMA`): for
every group of rows of a scope, every analysed covariate (:data:`ANALYSED`) and both gaps, Spearman's rank
correlation (average ranks for ties; Pearson's r of the ranks) over the group's pairs with a finite
covariate and gap, and its 95% percentile bootstrap CI (:func:`swapkl.stats.bootstrap.percentile_ci`): the
*pairs* (rows) of the group are resampled with replacement ``n_boot`` times
(:func:`swapkl.stats.bootstrap.resample_indices`, one set of resamples per group shared by every covariate and
both gaps, seeded from the user seed and the group's name), and Spearman's rho recomputed on each
resample (resamples where it is undefined, e.g. all ranks tied, are left out of the percentiles).

Scopes (:data:`SCOPES`; a scope is used when the table has its columns, so a later grouping column such as a
seed family only needs an entry there):

* ``checkpoint`` -- model and revision: across the pairs of one checkpoint;
* ``model`` -- model: across pairs and training steps together (the rows of one pair at different steps
  are not independent, and between-step differences count as much as within-step ones);
* ``family`` -- family: across pairs, steps and seeds, when the table has a ``family`` column.

Rows of duplicate revisions (``duplicate_of`` set) are left out of every scope. The analysis is
exploratory: many covariates and groups are tested, no correction for multiple comparisons is made, and a
CI that excludes 0 is a lead to follow, not a finding; covariates whose CI includes 0 are reported alike.
"""

from __future__ import annotations

import logging
import zlib

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl.tables import provenance
from swapkl.hub.absence import split_absent
from swapkl.probes.aggregate import probe_provenance
from swapkl.stats.rank_correlation import spearman
from swapkl.stats.bootstrap import percentile_ci, resample_indices
from swapkl.errors import SwapKLError
from swapkl.probes.pair_statistics import CI_LEVEL
from swapkl.tables.schemas import (COVARIATE_CORRELATIONS_SCHEMA, COVARIATE_FILE_SCHEMA, COVARIATES_SCHEMA,
                            read_table)
from swapkl.stats.seed_families import family_of
from swapkl.probes.aggregate import read_aggregate
from swapkl.options import require_int
from swapkl.tables.parquet_io import check_writable, write_parquet

log = logging.getLogger(__name__)

#: covariates whose correlation with the gap is reported (pair-level; per-block values enter as mean and |difference|)
ANALYSED = ("distance", "rel_update_mean", "rel_update_absdiff", "update_cos", "commutator", "weight_dist",
            "attn_entropy_mean", "attn_entropy_absdiff")
TARGETS = ("gap", "gap_fwd")
#: scope name -> the columns whose values define its groups
SCOPES = {"checkpoint": ("model", "revision"), "model": ("model",), "family": ("family",)}
RESAMPLED = "pairs"
#: columns that :func:`with_families` adds
FAMILY_COLUMNS = ("family", "seed")
#: provenance fields on which a covariate file must agree with the probes of its checkpoint
SAME_INPUTS = ("weights_sha256", "tokens_sha256")


def spearman_ci(x, y, idx: np.ndarray) -> tuple[float, float, float]:
    """rho of ``x`` vs ``y`` and its percentile CI over the resampled index rows ``idx`` [n_boot, n]."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rho = float(spearman(x, y))
    if idx.shape[0] == 0:
        return rho, float("nan"), float("nan")
    lo, hi = percentile_ci(spearman(x[idx], y[idx]), CI_LEVEL)
    return rho, lo, hi


def group_seed(seed: int, label: str) -> int:
    """Bootstrap seed of one group: the user seed and the group's name only (other groups never change it)."""
    return int(seed) * (1 << 32) + zlib.crc32(label.encode())


def _label(keys: tuple[str, ...], values: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(keys, values))


def correlations(table: pd.DataFrame, *, n_boot: int, seed: int, scopes: dict | None = None,
                 covariates=ANALYSED, targets=TARGETS) -> pd.DataFrame:
    """One row per (scope, group, covariate, target) with Spearman's rho and its bootstrap CI (see docstring)."""
    scopes = SCOPES if scopes is None else scopes
    data = table[table["duplicate_of"].isna()] if "duplicate_of" in table else table
    rows = []
    for scope, keys in scopes.items():
        if not set(keys) <= set(data.columns):
            continue
        for values, grp in data.groupby(list(keys), sort=True, dropna=True):
            values = values if isinstance(values, tuple) else (values,)
            label = _label(keys, values)
            idx_all = resample_indices(len(grp), n_boot, group_seed(seed, label))
            for cov in covariates:
                for target in targets:
                    x, y = grp[cov].to_numpy(dtype=np.float64), grp[target].to_numpy(dtype=np.float64)
                    ok = np.isfinite(x) & np.isfinite(y)
                    # resample the finite pairs only (the same draws when every pair is finite)
                    idx = idx_all if ok.all() else resample_indices(int(ok.sum()), n_boot, group_seed(seed, label + cov))
                    rho, lo, hi = spearman_ci(x[ok], y[ok], idx) if ok.sum() >= 3 else (np.nan, np.nan, np.nan)
                    rows.append({"scope": scope, "group": label, "model": grp["model"].iloc[0] if "model" in keys else None,
                                 "revision": grp["revision"].iloc[0] if "revision" in keys else None,
                                 "covariate": cov, "target": target, "n_pairs": int(ok.sum()), "spearman": rho,
                                 "ci_low": lo, "ci_high": hi, "n_boot": int(n_boot), "resampled": RESAMPLED})
    return pd.DataFrame(rows, columns=COVARIATE_CORRELATIONS_SCHEMA.names)


def covariate_table(covariate_files, aggregate_path: str) -> tuple[pd.DataFrame, list[dict]]:
    """The covariate rows of every file with their pair's gaps (see docstring), and the files' provenance."""
    agg = read_aggregate(aggregate_path)
    pairs = agg[agg["kind"] == "pair"][["model", "revision", "layer_i", "layer_j", "duplicate_of", "gap", "gap_fwd"]]
    probes = probe_provenance(aggregate_path)
    parts, inputs = [], []
    for path in covariate_files:
        table, prov = read_table(path, COVARIATE_FILE_SCHEMA, "covariates")
        df = table.to_pandas()
        provenance.require_recorded(path, prov, SAME_INPUTS, "covariate file")
        for model, revision in df[["model", "revision"]].drop_duplicates().itertuples(index=False):
            probe = probes.get((model, revision))
            if probe is None:
                raise SwapKLError(f"{path}: checkpoint {model} {revision} is not in the aggregate {aggregate_path}")
            for name in SAME_INPUTS:
                if prov.get(name) != probe.get(name):
                    raise SwapKLError(f"{path}: {name} differs from the probes of {model} {revision}; covariates and "
                                      "gaps measured on different weights or windows cannot be joined")
        parts.append(df)
        inputs.append({"file": str(path), "provenance": prov})
    if not parts:
        raise SwapKLError("no covariate file given")
    cov = pd.concat(parts, ignore_index=True)
    keys = ["model", "revision", "layer_i", "layer_j"]
    if cov.duplicated(keys).any():
        dup = cov[cov.duplicated(keys)].iloc[0]
        raise SwapKLError(f"pair ({dup.layer_i}, {dup.layer_j}) of {dup.model} {dup.revision} is in two covariate files")
    for k in ("layer_i", "layer_j"):
        pairs = pairs.astype({k: "int64"})
    joined = cov.merge(pairs.astype({"model": object, "revision": object}), on=keys, how="left", indicator=True)
    missing = joined[joined["_merge"] != "both"]
    if len(missing):
        m = missing.iloc[0]
        raise SwapKLError(f"the aggregate {aggregate_path} has no gap for pair ({m.layer_i}, {m.layer_j}) of "
                          f"{m.model} {m.revision}: probe it with both protocols first")
    joined = joined.drop(columns="_merge").sort_values(["model", "step", "revision", "layer_i", "layer_j"],
                                                      kind="mergesort").reset_index(drop=True)
    return joined[[n for n in COVARIATES_SCHEMA.names if n not in FAMILY_COLUMNS]], inputs


def with_families(table: pd.DataFrame, families: dict | None) -> pd.DataFrame:
    """``table`` with each row's seed family and seed (null for models outside the families); ``families`` as
    the workflow's seed summary takes it: ``{family: {"members": {model: seed}, ...}}``."""
    member = family_of(families or {})
    out = table.copy()
    out["family"] = [member.get(m, (None, None))[0] for m in out["model"]]
    out["seed"] = pd.array([member.get(m, (None, None))[1] for m in out["model"]], dtype="Int64")
    return out


def aggregate_covariates(covariate_files, aggregate_path: str, out: str, correlations_out: str, *,
                         n_boot: int, seed: int, families: dict | None = None) -> None:
    """Write ``out`` (the covariates table) and ``correlations_out`` (their correlations with the gaps);
    with ``families``, the rows carry their seed family and seed and the family scope pools the members."""
    require_int("n_boot (bootstrap resamples)", n_boot, 0)
    require_int("bootstrap seed", seed, 0)
    for path in (out, correlations_out):
        check_writable(path)
    # markers of seed-family members' revisions that the hub lacks: skipped, and listed in the provenance
    covariate_files, absent = split_absent(covariate_files)
    table, inputs = covariate_table(covariate_files, str(aggregate_path))
    table = with_families(table, families)
    corr = correlations(table, n_boot=n_boot, seed=seed)
    prov = provenance.derived([*covariate_files, aggregate_path], kind="covariates", aggregate=str(aggregate_path),
                              inputs=inputs, absent=absent)
    write_parquet(pa.Table.from_pandas(table, schema=COVARIATES_SCHEMA, preserve_index=False), out, prov)
    write_parquet(pa.Table.from_pandas(corr, schema=COVARIATE_CORRELATIONS_SCHEMA, preserve_index=False),
                  correlations_out, prov | {"n_boot": int(n_boot), "seed": int(seed), "ci_level": CI_LEVEL,
                                            "resampled": RESAMPLED, "analysed": list(ANALYSED)})
    log.info("covariates: %d pairs -> %s; %d correlations -> %s", len(table), out, len(corr), correlations_out)
