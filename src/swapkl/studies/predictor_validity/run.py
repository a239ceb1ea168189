"""Predictor validity: does a pair's swap score predict what removing one of its blocks costs?

For every block k the relative perplexity increase of removing k alone, ``delta_ppl_pct(k)``, is measured
on held-out text (sliding windows, :mod:`swapkl.pruning.perplexity`). A pair (i, j) is cheap to prune when the
cheaper of its two blocks is, so its cost is ``min(delta_ppl_pct(i), delta_ppl_pct(j))`` (the paper's
target). Per protocol (replacement: d_repl_max, interchange: d_inter) the table gives Spearman's rho of
score and cost over the probed pairs.

A checkpoint's table (``results/predictor_validity/<model>/<revision>.parquet``, gathered into
``results/predictor_validity.parquet``) has rows ``kind="layer"`` (layer, ppl, delta_ppl_pct), ``kind="pair"``
(layer_i, layer_j, d_repl_max, d_inter, cost) and ``kind="summary"`` (protocol, n_pairs, spearman), with model,
revision and base_ppl on every row. This module runs it (torch); :mod:`swapkl.studies.predictor_validity` declares
the study.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.tables import provenance
from swapkl.stats.rank_correlation import spearman
from swapkl.probes.aggregate import read_aggregate, rows
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.model.loading import load_model
from swapkl.model.variant import removal_variant
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.pruning.perplexity import EvalWindows, load_eval_windows, perplexity, window_nll
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.studies.predictor_validity.jobs import PredictorValidityJob

SCORES = {"replacement": "d_repl_max", "interchange": "d_inter"}


def single_layer_costs(engine: ProbeEngine, ew: EvalWindows, *, batch_size: int = 8,
                       device: str = "cpu") -> tuple[float, pd.DataFrame]:
    """Base perplexity and, per block, the perplexity and relative increase with that block removed."""
    n = engine.n_layers
    base, tokens, outs = window_nll(engine, ew, [removal_variant([k], n) for k in range(n)], batch_size=batch_size,
                                    device=device)
    base_ppl = perplexity(base, tokens)
    ppl = np.array([perplexity(o, tokens) for o in outs])
    return base_ppl, pd.DataFrame({"layer": np.arange(n), "ppl": ppl, "delta_ppl_pct": 100 * (ppl / base_ppl - 1)})


def validity(costs: pd.DataFrame, pairs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pair rows (score columns and cost) and one summary row per protocol."""
    delta = costs.set_index("layer")["delta_ppl_pct"]
    p = pairs[["layer_i", "layer_j", *SCORES.values()]].astype({"layer_i": int, "layer_j": int}).copy()
    p["cost"] = np.minimum(delta.loc[p["layer_i"]].to_numpy(), delta.loc[p["layer_j"]].to_numpy())
    summary = []
    for protocol, col in SCORES.items():
        x = p[col].to_numpy(dtype=float)
        ok = np.isfinite(x)
        rho = float(spearman(x[ok], p["cost"].to_numpy()[ok], min_points=3))
        summary.append({"protocol": protocol, "n_pairs": int(ok.sum()), "spearman": rho})
    return p.reset_index(drop=True), pd.DataFrame(summary)


def run_predictor_validity(job: PredictorValidityJob) -> pd.DataFrame:
    """Measure the single-block removal costs of the job's checkpoint and correlate them with the pair scores that
    its aggregate holds for the checkpoint's labels (``job.metadata``'s ``model`` and ``revision``; without them the
    checkpoint's path and revision); write ``job.out``."""
    job = PredictorValidityJob.checked(job)
    spec = EvalSpec.from_dict(job.eval_data)
    check_writable(job.out)
    metadata = dict(job.metadata or {})
    label = metadata.pop("model", None) or job.model
    revision = metadata.pop("revision", None) or job.revision or "main"
    pairs = rows(read_aggregate(job.aggregate), "pair", label, revision)
    loaded = load_model(job.model, job.revision, dtype=job.dtype, device=job.device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code, **(job.placement or {}))
    engine = ProbeEngine(loaded.model, chunk_tokens=job.chunk_tokens)
    if int(pairs["n_layers"].iloc[0]) != engine.n_layers:
        raise SwapKLError(f"{job.model}: {engine.n_layers} blocks, but the aggregate's {label} {revision} has "
                          f"{int(pairs['n_layers'].iloc[0])}")
    ew = load_eval_windows(spec, loaded.tokenizer, engine.adapter.max_positions)
    base_ppl, costs = single_layer_costs(engine, ew, batch_size=job.batch_size, device=loaded.device)
    pair_rows, summary = validity(costs, pairs)
    df = pd.concat([costs.assign(kind="layer"), pair_rows.assign(kind="pair"), summary.assign(kind="summary")],
                   ignore_index=True).assign(model=label, revision=revision, base_ppl=base_ppl)
    df = df.astype({c: "Int64" for c in ("layer", "layer_i", "layer_j", "n_pairs")})
    write_parquet(df, job.out, provenance.build(loaded, None, eval_spec=spec.describe(), eval_sha256=ew.sha256,
                                                model=label, revision_label=revision, aggregate=str(job.aggregate),
                                                **metadata))
    return df
