"""``results/spans.parquet``: every checkpoint's span rows (:mod:`swapkl.studies.spans`) with their intervals and references.

Added to each row of a per-checkpoint file (:data:`swapkl.tables.schemas.SPANS_SCHEMA`):

* ``kl_ci_low``, ``kl_ci_high`` -- the 95% percentile bootstrap CI of the token-weighted KL over windows
  (:func:`swapkl.stats.bootstrap.ratio_ci`; one set of window resamples per checkpoint, shared by its variants);
* ``delta_ppl_pct`` -- ``100 (exp(nll_variant - nll_base) - 1)``, the variant's perplexity change on the
  probe windows relative to the base row of the same file;
* ``d_inter_adjacent``, ``d_repl_adjacent`` -- the median over adjacent pairs (i, i+1) of the checkpoint's
  ``d_inter`` and ``d_repl_max`` from the aggregate's pair rows (their one definition is
  :mod:`swapkl.probes.pair_statistics`): the scale of one interchange and one replacement on the same windows,
  which one outlying pair (often the first) does not set, as it would set a mean.

A span file must come from the weights and windows of the probes behind the aggregate's numbers.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl.probes.aggregate import probe_provenance
from swapkl.stats.bootstrap import ratio_ci, resample_indices
from swapkl.studies.covariate_stats import SAME_INPUTS
from swapkl.errors import SwapKLError
from swapkl.tables.schemas import SPANS_FILE_SCHEMA, SPANS_SCHEMA, read_table
from swapkl.probes.aggregate import read_aggregate
from swapkl.options import require_int
from swapkl.tables.parquet_io import check_writable, write_parquet

log = logging.getLogger(__name__)


def _references(aggregate_path: str) -> pd.DataFrame:
    agg = read_aggregate(aggregate_path)
    adj = agg[(agg["kind"] == "pair") & (agg["distance"] == 1)]
    return adj.groupby(["model", "revision"]).agg(d_inter_adjacent=("d_inter", "median"),
                                                  d_repl_adjacent=("d_repl_max", "median"))


def _checkpoint_rows(df: pd.DataFrame, path: str, n_boot: int, seed: int) -> pd.DataFrame:
    base = df[df["variant"] == "base"]
    if len(base) != 1:
        raise SwapKLError(f"{path}: a span file needs exactly one base row, found {len(base)}")
    idx = resample_indices(int(base["n_seqs"].iloc[0]), n_boot, seed)
    cis = [ratio_ci(np.asarray(k, float), np.asarray(t, float), idx) for k, t in zip(df["seq_kl_sum"], df["seq_tokens"])]
    out = df.copy()
    out["kl_ci_low"] = [c[0] for c in cis]
    out["kl_ci_high"] = [c[1] for c in cis]
    out["delta_ppl_pct"] = 100.0 * np.expm1(out["nll_mean"].to_numpy(float) - float(base["nll_mean"].iloc[0]))
    return out


def span_results(span_files, aggregate_path: str, *, n_boot: int, seed: int) -> tuple[pd.DataFrame, list[dict]]:
    """The rows of every span file with the columns of the module docstring, and the files' provenance."""
    refs = _references(aggregate_path)
    probes = probe_provenance(aggregate_path)
    parts, inputs = [], []
    for path in span_files:
        table, prov = read_table(path, SPANS_FILE_SCHEMA, "spans", nonempty=True)
        df = table.to_pandas()
        for model, revision in df[["model", "revision"]].drop_duplicates().itertuples(index=False):
            probe = probes.get((model, revision))
            if probe is None or (model, revision) not in refs.index:
                raise SwapKLError(f"{path}: checkpoint {model} {revision} has no adjacent pairs in the aggregate "
                                  f"{aggregate_path}")
            for name in SAME_INPUTS:
                if prov.get(name) != probe.get(name):
                    raise SwapKLError(f"{path}: {name} differs from the probes of {model} {revision}; spans and "
                                      "probes measured on different weights or windows cannot be compared")
            rows = _checkpoint_rows(df[(df["model"] == model) & (df["revision"] == revision)], path, n_boot, seed)
            ref = refs.loc[(model, revision)]
            parts.append(rows.assign(d_inter_adjacent=float(ref["d_inter_adjacent"]),
                                     d_repl_adjacent=float(ref["d_repl_adjacent"]), n_boot=int(n_boot)))
        inputs.append({"file": str(path), "provenance": prov})
    if not parts:
        raise SwapKLError("no span file given")
    out = pd.concat(parts, ignore_index=True)
    keys = ["model", "revision", "variant", "start", "loops"]
    if out.duplicated(keys).any():
        d = out[out.duplicated(keys)].iloc[0]
        raise SwapKLError(f"span variant {d.variant} at start {d.start} of {d.model} {d.revision} is in two files")
    return out, inputs


def aggregate_spans(span_files, aggregate_path: str, out: str, *, n_boot: int, seed: int) -> None:
    """Write ``out`` (:data:`swapkl.tables.schemas.SPANS_SCHEMA`) from the per-checkpoint span files."""
    require_int("n_boot (bootstrap resamples)", n_boot, 0)
    require_int("bootstrap seed", seed, 0)
    check_writable(out)
    table, inputs = span_results(list(span_files), str(aggregate_path), n_boot=n_boot, seed=seed)
    prov = {"kind": "spans", "aggregate": str(aggregate_path), "inputs": inputs, "n_boot": int(n_boot),
            "seed": int(seed)}
    write_parquet(pa.Table.from_pandas(table, schema=SPANS_SCHEMA, preserve_index=False), out, prov)
    log.info("spans: %d rows of %d file(s) -> %s", len(table), len(inputs), out)
