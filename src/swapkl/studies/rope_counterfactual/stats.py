"""The RoPE counterfactual table, ``results/rope_counterfactual.parquet``: per checkpoint of a ``rope: off`` model
its section chooses, per adjacent pair, d_repl_max, d_inter and I/R with rotary embeddings on (the reference
model) and off (the same weights probed with ``rope: off``), and one summary row with the paired sign test.

Rows ``kind="pair"``: model, reference, revision, layer_i, layer_j, d_repl_on, d_inter_on, ratio_ir_on, d_repl_off,
d_inter_off, ratio_ir_off, ratio_delta (off - on; negative: the gap grows without RoPE).
Row ``kind="summary"``: n_pairs, ratio_ir_mean_on, ratio_ir_mean_off, ratio_delta_mean, n_larger_gap
(ratio_delta < 0), n_smaller_gap (> 0), n_ties, sign_test_p (exact two-sided binomial test of
n_larger_gap among the non-tied pairs against 1/2), sign_test_p_larger (one-sided: the gap grows).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from swapkl.tables import provenance
from swapkl.probes.aggregate import aggregate_provenance, read_aggregate, rows
from swapkl.errors import SwapKLError
from swapkl.tables.parquet_io import check_writable, write_parquet


def sign_test(n_plus: int, n_minus: int) -> tuple[float, float]:
    """Exact sign test: (two-sided p, one-sided p for "plus is more frequent") under Binomial(n, 1/2)."""
    n = n_plus + n_minus
    if n == 0:
        return float("nan"), float("nan")
    tail = lambda k0: sum(math.comb(n, k) for k in range(k0, n + 1)) / 2 ** n  # noqa: E731  P(X >= k0)
    one_sided = tail(n_plus)
    two_sided = min(1.0, 2 * tail(max(n_plus, n_minus)))
    return two_sided, one_sided


def _adjacent(agg: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    p = rows(agg, "pair", model, revision)
    p = p[p["distance"] == 1]
    return p.set_index(["layer_i", "layer_j"])[["d_repl_max", "d_inter", "ratio_ir"]].astype(float)


def counterfactual_table(agg: pd.DataFrame, *, model_on: str, model_off: str, revision: str,
                         pairs: list[tuple[int, int]] | None = None) -> pd.DataFrame:
    """Pair rows and the summary row (see the module docstring); ``pairs`` restricts to those adjacent pairs."""
    on, off = _adjacent(agg, model_on, revision), _adjacent(agg, model_off, revision)
    keys = on.index.intersection(off.index) if pairs is None else pd.MultiIndex.from_tuples(
        [tuple(p) for p in pairs], names=["layer_i", "layer_j"])
    missing = [k for k in keys if k not in on.index or k not in off.index]
    if missing or len(keys) == 0:
        raise SwapKLError(f"rope counterfactual {model_off} vs {model_on} at {revision}: adjacent pairs "
                          f"{missing or 'all'} not probed by both")
    on, off = on.loc[keys], off.loc[keys]
    df = pd.DataFrame({"kind": "pair", "model": model_off, "reference": model_on, "revision": revision,
                       "layer_i": [k[0] for k in keys], "layer_j": [k[1] for k in keys],
                       "d_repl_on": on["d_repl_max"].to_numpy(), "d_inter_on": on["d_inter"].to_numpy(),
                       "ratio_ir_on": on["ratio_ir"].to_numpy(), "d_repl_off": off["d_repl_max"].to_numpy(),
                       "d_inter_off": off["d_inter"].to_numpy(), "ratio_ir_off": off["ratio_ir"].to_numpy()})
    df["ratio_delta"] = df["ratio_ir_off"] - df["ratio_ir_on"]
    delta = df["ratio_delta"].to_numpy()
    larger, smaller = int((delta < 0).sum()), int((delta > 0).sum())
    p2, p1 = sign_test(larger, smaller)
    summary = {"kind": "summary", "model": model_off, "reference": model_on, "revision": revision,
               "n_pairs": len(df), "ratio_ir_mean_on": float(np.nanmean(df["ratio_ir_on"])),
               "ratio_ir_mean_off": float(np.nanmean(df["ratio_ir_off"])),
               "ratio_delta_mean": float(np.nanmean(delta)), "n_larger_gap": larger, "n_smaller_gap": smaller,
               "n_ties": len(df) - larger - smaller, "sign_test_p": p2, "sign_test_p_larger": p1}
    out = pd.concat([df, pd.DataFrame([summary])], ignore_index=True)
    ints = ("layer_i", "layer_j", "n_pairs", "n_larger_gap", "n_smaller_gap", "n_ties")
    return out.astype({c: "Int64" for c in ints})  # nullable: pair rows have no counts, the summary no layers


def check_inputs(inputs: list[dict], *, model_on: str, model_off: str, revision: str) -> None:
    """The two models' probes (the aggregate's input provenance) share weights and tokens and differ in rope."""
    seen = {}
    for item in inputs:
        if item["revision"] == revision and item["model"] in (model_on, model_off) and item["role"] == "probe":
            prov = item["provenance"]
            seen.setdefault(item["model"], set()).add((prov.get("weights_sha256"), prov.get("tokens_sha256"),
                                                       prov.get("rope", "on")))
    for model, want in ((model_on, "on"), (model_off, "off")):
        if len(seen.get(model, ())) != 1 or next(iter(seen[model]))[2] != want:
            raise SwapKLError(f"rope counterfactual: the probes of {model} {revision} are not all rope {want}")
    if next(iter(seen[model_on]))[:2] != next(iter(seen[model_off]))[:2]:
        raise SwapKLError(f"rope counterfactual: {model_off} and {model_on} at {revision} were not probed on the "
                          "same weights and tokens")


def build_counterfactual(aggregate: str | Path, out: str | Path, comparisons) -> pd.DataFrame:
    """``comparisons``: (rope-off model, its rotary-on reference, revision, adjacent pairs or None: all of them)
    tuples, each a block of rows (see the module docstring). Writes ``out``."""
    if not comparisons:
        raise SwapKLError("rope counterfactual: no model has an enabled `rope_counterfactual` section")
    check_writable(str(out))
    inputs, agg = aggregate_provenance(aggregate)["inputs"], read_aggregate(aggregate)
    frames = []
    for model_off, model_on, revision, pairs in comparisons:
        check_inputs(inputs, model_on=model_on, model_off=model_off, revision=revision)
        frames.append(counterfactual_table(agg, model_on=model_on, model_off=model_off, revision=revision,
                                           pairs=pairs))
    df = pd.concat(frames, ignore_index=True)
    write_parquet(df, str(out), {**provenance.software_versions(), "inputs": {"aggregate": str(aggregate)},
                                 "comparisons": [[m, r, rev, pairs or "adjacent"]
                                                 for m, r, rev, pairs in comparisons]})
    return df
