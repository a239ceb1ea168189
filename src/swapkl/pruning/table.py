"""The pruning table (one row per guide x budget [x random draw]): the aggregation of per-checkpoint
files (:data:`~swapkl.tables.schemas.PRUNING_RUN_SCHEMA`) into ``results/pruning.parquet``
(:data:`~swapkl.tables.schemas.PRUNING_SCHEMA`), which adds the bootstrap CIs
(:func:`swapkl.stats.intervals.pruning_intervals`).

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

from swapkl.tables import provenance
from swapkl.hub.absence import split_absent
from swapkl.errors import SwapKLError
from swapkl.pruning.prune_jobs import AggregatePruningJob
from swapkl.tables.file_checks import require_distinct
from swapkl.pruning.guides.guide_registry import guide_names
from swapkl.stats.intervals import pruning_intervals
from swapkl.options import require_int
from swapkl.tables.parquet_io import write_parquet
from swapkl.tables.schemas import AGREEMENT_SCHEMA, PRUNING_RUN_SCHEMA, PRUNING_SCHEMA, read_table

log = logging.getLogger(__name__)


def _with_intervals(n_boot: int):
    """Adds the CIs to one pruning file, resampled with the seed its run recorded (that of its random draws)."""
    def finish(table: pa.Table, prov: dict, path: str) -> pa.Table:
        seed = prov.get("seed")
        if not isinstance(seed, int) or seed < 0:
            raise SwapKLError(f"{path}: the provenance records no bootstrap seed (a pruning file of swapkl prune?)")
        return pruning_intervals(table, n_boot, seed, path)
    return finish


def _concat(paths: Sequence, schema: pa.Schema, what: str, finish=None) -> tuple[pa.Table, list[dict]]:
    tables, provs, seen = [], [], {}
    for p in paths:
        t, prov = read_table(p, schema, what)
        if finish is not None:
            t = finish(t, prov, str(p))
        for key in sorted(set(zip(t.column("model").to_pylist(), t.column("revision").to_pylist()))):
            if key in seen:
                raise SwapKLError(f"{what} files {seen[key]!r} and {str(p)!r} both hold {key[0]}@{key[1]}")
            seen[key] = str(p)
        tables.append(t)
        provs.append(dict(path=str(p), **{k: prov.get(k) for k in (
            "model", "revision_label", "weights_sha256", "commit", "seed", "eval_split", "calibration_split",
            "probe_split", "config_sha256")}, checkpoints=provenance.checkpoints([prov])))
    if not tables:
        raise SwapKLError(f"no {what} file given")
    return pa.concat_tables(tables), provs


def _sort(df: pd.DataFrame, extra: list[str]) -> pd.DataFrame:
    step = df["step"].astype("float64").fillna(np.inf)
    return (df.assign(_step=step).sort_values(["model", "_step", "revision", *extra], kind="stable")
              .drop(columns="_step").reset_index(drop=True))


def aggregate_pruning(job: AggregatePruningJob) -> pd.DataFrame:
    """Concatenate per-checkpoint pruning files (and agreement files) into one table each, adding the 95%
    bootstrap CIs (``n_boot`` resamples of the windows, seeded with each run's recorded ``seed``): an
    :class:`AggregatePruningJob` (``aggregate_pruning(job)``).

    Rows are sorted by model, step (revisions without a step last), revision, guide (the order of
    the guide registry :mod:`swapkl.pruning.guides`), budget and random draw. A checkpoint present in two inputs is an error.
    """
    job = AggregatePruningJob.checked(job)
    inputs, out, agreement_inputs = list(job.inputs), job.out, list(job.agreement_inputs)
    agreement_out, n_boot = job.agreement_out, job.n_boot
    require_int("n_boot (bootstrap resamples)", n_boot, 1)
    if bool(agreement_inputs) != (agreement_out is not None):
        raise SwapKLError("give both agreement inputs and agreement_out, or neither")
    require_distinct({"`out`": out, "`agreement_out`": agreement_out},
                     [("`inputs`", p) for p in inputs] + [("`agreement_inputs`", p) for p in agreement_inputs])
    # markers of seed-family members' revisions that the hub lacks: skipped, and listed in the provenance
    inputs, absent = split_absent(inputs)
    agreement_inputs, absent_agreement = split_absent(agreement_inputs)
    table, provs = _concat(inputs, PRUNING_RUN_SCHEMA, "pruning", _with_intervals(n_boot))
    df = table.to_pandas()
    order = guide_names()
    unknown = sorted(set(df["guide"]) - set(order))
    if unknown:
        raise SwapKLError(f"pruning files hold unknown guides {unknown}")
    df["_g"] = df["guide"].map(order.index)
    df["_d"] = df["random_draw"].astype("float64").fillna(-1)
    df["_f"] = df["fixed_set"].fillna("")
    df = _sort(df, ["_g", "_f", "budget", "_d"]).drop(columns=["_g", "_d", "_f"])
    prov = dict(provenance.software_versions(), inputs=provs, n_boot=int(n_boot), ci_level=0.95,
                checkpoints=provenance.checkpoints(provs), input_sha256=provenance.input_sha256(inputs), absent=absent)
    write_parquet(pa.Table.from_pandas(df, schema=PRUNING_SCHEMA, preserve_index=False), out, prov)
    if agreement_out is not None:
        at, aprovs = _concat(agreement_inputs, AGREEMENT_SCHEMA, "agreement")
        adf = _sort(at.to_pandas(), ["guide", "reference"])
        write_parquet(pa.Table.from_pandas(adf, schema=AGREEMENT_SCHEMA, preserve_index=False), agreement_out,
                      dict(provenance.software_versions(), inputs=aprovs, checkpoints=provenance.checkpoints(aprovs),
                           input_sha256=provenance.input_sha256(agreement_inputs), absent=absent_agreement))
    log.info("wrote %s (%d rows from %d files)", out, len(df), len(provs))
    return df
