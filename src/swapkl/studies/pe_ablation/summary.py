"""The controlled position-encoding ablation: I/R ratio by pair distance, ``results/pe_ablation.parquet``.

Architecture-matched models that differ only in position encoding (``rope``, ``learned``, ``alibi``; see
:func:`swapkl.demo.architectures.matched_config`) are trained from the same seed on the same data at a few
depths, and each is probed with replacement and interchange on every pair within ``max_distance``. Per model
and pair distance ``d = |i - j|`` (1, 2, 3 by default) the table holds the statistics the aggregate reports
for a pair set (:func:`swapkl.probes.pair_statistics.summarise_set` over the pairs of :func:`pair_table`, the
one definition of the I/R ratio ``d_inter / d_repl_max``, NaN where ``d_repl_max`` is 0):

    position_encoding, n_layers, distance, model, revision, architecture (``config.model_type``), n_params,
    n_pairs, n_ratio (pairs whose ratio is defined), ratio_ir_mean, ratio_ir_median (over those pairs),
    gap_mean (mean d_repl_max - d_inter), d_repl_max_mean, d_inter_mean.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl.errors import SwapKLError
from swapkl.probes.aggregate_inputs import read_probe_file
from swapkl.probes.pair_sets import RATIO_PROTOCOLS
from swapkl.probes.pair_statistics import pair_table, summarise_set
from swapkl.studies.scaling.stats import checkpoint_facts
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import PE_ABLATION_SCHEMA

def distance_rows(directed: pd.DataFrame, n_layers: int, max_distance: int) -> list[dict]:
    """One dict per pair distance 1..max_distance from one checkpoint's directed probe rows (columns protocol,
    layer_i, layer_j, kl_mean)."""
    pairs = pair_table(directed)
    out = []
    for distance in range(1, max_distance + 1):
        member = (pairs["distance"] == distance).to_numpy()
        if member.sum() != n_layers - distance:
            raise SwapKLError(f"{int(member.sum())} pairs at distance {distance} were probed by both protocols, "
                              f"expected {n_layers - distance} for {n_layers} blocks")
        stats = summarise_set(pairs, member, None)
        ratio = pairs.loc[member, "ratio_ir"].to_numpy(dtype=np.float64)
        out.append({"distance": distance, "n_pairs": stats["n_pairs"], "n_ratio": int(np.isfinite(ratio).sum()),
                    **{k: stats[k] for k in ("ratio_ir_mean", "ratio_ir_median", "gap_mean", "d_repl_max_mean",
                                             "d_inter_mean")}})
    return out


def model_rows(probe_file: str, checkpoint: str, *, position_encoding: str, max_distance: int) -> list[dict]:
    """The rows of one trained model from its probe file and checkpoint directory."""
    probe = read_probe_file(probe_file)
    facts = checkpoint_facts(checkpoint)
    if facts["position_encoding"] != position_encoding:
        raise SwapKLError(f"{checkpoint}: a {facts['architecture']} model encodes positions as "
                          f"{facts['position_encoding']}, not {position_encoding}")
    if probe.n_layers <= max_distance:
        raise SwapKLError(f"{probe_file}: {probe.n_layers} blocks have no pairs at distance {max_distance}")
    directed = probe.rows[probe.rows["protocol"].isin(RATIO_PROTOCOLS)]
    ident = {"position_encoding": position_encoding, "n_layers": probe.n_layers, "model": probe.model,
             "revision": probe.revision, "architecture": facts["architecture"], "n_params": facts["n_params"]}
    try:
        return [{**ident, **row} for row in distance_rows(directed, probe.n_layers, max_distance)]
    except SwapKLError as err:
        raise SwapKLError(f"{probe_file}: {err}") from None


def build_pe_ablation(models: dict, out: str | Path, *, max_distance: int = 3) -> pd.DataFrame:
    """Write ``out``. ``models``: model label -> {"position_encoding", "probe" (its probe file), "checkpoint"
    (its final checkpoint directory)}."""
    if not models:
        raise SwapKLError("pe_ablation: no trained models to summarise")
    if not isinstance(max_distance, int) or max_distance < 1:
        raise SwapKLError(f"pe_ablation: `max_distance` {max_distance!r} must be a positive integer")
    check_writable(str(out))
    rows = [row for label in sorted(models) for row in model_rows(
        models[label]["probe"], models[label]["checkpoint"], position_encoding=models[label]["position_encoding"],
        max_distance=max_distance)]
    df = pd.DataFrame(rows, columns=PE_ABLATION_SCHEMA.names)
    df = df.sort_values(["position_encoding", "n_layers", "distance"], kind="mergesort").reset_index(drop=True)
    prov = provenance.derived([m["probe"] for m in models.values()],
                              models={k: dict(v) for k, v in sorted(models.items())}, max_distance=max_distance,
                              ratio="d_inter / d_repl_max (swapkl.probes.pair_statistics.pair_table)")
    write_parquet(pa.Table.from_pandas(df, schema=PE_ABLATION_SCHEMA, preserve_index=False), str(out), prov)
    return df
