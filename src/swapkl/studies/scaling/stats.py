"""The scale sweep: one row per model, from the aggregate's adjacent pairs, ``results/scaling.parquet``.

Columns, per model (at the revision named for it; adjacent pairs |i-j| = 1 only):

    model, revision, architecture (``config.model_type``), position_encoding ("learned" | "alibi" |
    "rope", from the architecture's adapter), n_params (every tensor of the checkpoint's safetensors
    files, tied weights once), n_layers, n_pairs;
    per protocol P in (replacement, interchange): best_i_P, best_j_P (the pair with the lowest KL),
    best_kl_P (its KL: d_repl_max for replacement, the larger of the two directions; d_inter for
    interchange), n_strong_P (KL < 0.05) and n_conditional_P (0.05 <= KL < 0.10; the paper's
    cumulative "COND" count is n_strong_P + n_conditional_P);
    ratio_ir_mean, ratio_ir_median (d_inter / d_repl_max over pairs where it is defined), gap_mean
    (mean of d_repl_max - d_inter).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
from safetensors import safe_open

from swapkl.tables import provenance
from swapkl.adapters import ADAPTERS
from swapkl.probes.aggregate import aggregate_provenance, read_aggregate, rows
from swapkl.errors import SwapKLError
from swapkl.probes.pair_statistics import CONDITIONAL_BELOW, STRONG_BELOW
from swapkl.tables.parquet_io import check_writable, write_parquet

PROTOCOL_KL = {"replacement": ("d_repl_max", "class_repl"), "interchange": ("d_inter", "class_inter")}


def checkpoint_facts(path: str | Path) -> dict:
    """Architecture, position encoding and parameter count of a checkpoint directory (config.json and the
    safetensors headers; no weights are read)."""
    path = Path(path)
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise SwapKLError(f"{path}: no config.json (not a Hugging Face checkpoint directory)")
    model_type = json.loads(cfg_file.read_text()).get("model_type")
    if model_type not in ADAPTERS:
        raise SwapKLError(f"{path}: architecture {model_type!r} has no swapkl adapter")
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise SwapKLError(f"{path}: no .safetensors weight files to count parameters from")
    n = 0
    for f in files:
        with safe_open(str(f), framework="pt") as st:
            n += sum(int(np.prod(st.get_slice(k).get_shape(), dtype=np.int64)) for k in st.keys())
    return {"architecture": model_type, "position_encoding": ADAPTERS[model_type].position_encoding,
            "n_params": n}


def _protocol_columns(pairs: pd.DataFrame, protocol: str) -> dict:
    kl_col, class_col = PROTOCOL_KL[protocol]
    kl = pairs[kl_col].to_numpy(dtype=float, na_value=np.nan)
    best = int(np.nanargmin(kl))
    classes = pairs[class_col].astype(str)
    return {f"best_i_{protocol}": int(pairs["layer_i"].iloc[best]),
            f"best_j_{protocol}": int(pairs["layer_j"].iloc[best]),
            f"best_kl_{protocol}": float(kl[best]),
            f"n_strong_{protocol}": int((classes == "strong").sum()),
            f"n_conditional_{protocol}": int((classes == "conditional").sum())}


def scaling_row(agg: pd.DataFrame, model: str, revision: str, facts: dict) -> dict:
    """The row of one model from its adjacent pair rows in the aggregate."""
    pairs = rows(agg, "pair", model, revision)
    pairs = pairs[pairs["distance"] == 1].sort_values(["layer_i", "layer_j"]).reset_index(drop=True)
    n_layers = int(pairs["n_layers"].iloc[0]) if len(pairs) else 0
    if len(pairs) != n_layers - 1:
        raise SwapKLError(f"{model} {revision}: {len(pairs)} adjacent pairs in the aggregate, expected "
                          f"{max(n_layers - 1, 0)} (probe it with pair_sets including adjacent)")
    ratio = pairs["ratio_ir"].to_numpy(dtype=float, na_value=np.nan)
    ratio = ratio[np.isfinite(ratio)]
    row = {"model": model, "revision": revision, **facts, "n_layers": n_layers, "n_pairs": len(pairs)}
    for protocol in PROTOCOL_KL:
        row.update(_protocol_columns(pairs, protocol))
    row.update(ratio_ir_mean=float(ratio.mean()) if len(ratio) else np.nan,
               ratio_ir_median=float(np.median(ratio)) if len(ratio) else np.nan,
               gap_mean=float(pairs["gap"].to_numpy(dtype=float).mean()))
    return row


def build_scaling(aggregate: str | Path, checkpoints: dict[str, tuple[str, str]], out: str | Path) -> pd.DataFrame:
    """Write ``out``: one row per model of ``checkpoints`` (model -> (revision, checkpoint directory)),
    ordered by parameter count."""
    if not checkpoints:
        raise SwapKLError("scaling: no model is marked for the scale sweep")
    check_writable(str(out))
    agg = read_aggregate(aggregate)
    facts = {m: checkpoint_facts(d) for m, (_, d) in checkpoints.items()}
    df = pd.DataFrame([scaling_row(agg, m, rev, facts[m]) for m, (rev, _) in checkpoints.items()])
    df = df.sort_values(["n_params", "model"], kind="mergesort").reset_index(drop=True)
    prov = {**provenance.software_versions(), "inputs": {"aggregate": str(aggregate)},
            "aggregate_provenance_sha256": _sha(aggregate_provenance(aggregate)),
            "checkpoints": {m: {"revision": r, "path": str(d)} for m, (r, d) in checkpoints.items()},
            "pairs": "adjacent", "thresholds": {"strong": STRONG_BELOW, "conditional": CONDITIONAL_BELOW}}
    write_parquet(df, str(out), prov)
    return df


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()
