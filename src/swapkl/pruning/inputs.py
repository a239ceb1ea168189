"""The inputs of a pruning run: probe and representation files, data sources, budgets."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd

from swapkl import provenance
from swapkl.data import DataSpec
from swapkl.errors import SwapKLError
from swapkl.perplexity import EvalSpec
from swapkl.selection import max_feasible

PROBE_COLUMNS = ("protocol", "layer_i", "layer_j", "n_layers", "kl_mean")
REPR_COLUMNS = ("metric", "layer_i", "width", "value")


def read_table(path, columns, what: str) -> tuple[pd.DataFrame, dict]:
    path = str(path)
    if not os.path.isfile(path):
        raise SwapKLError(f"{what} file {path!r} does not exist")
    try:
        df = pd.read_parquet(path)
    except Exception as e:
        raise SwapKLError(f"{what} file {path!r} is not a readable Parquet file: {e}") from e
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SwapKLError(f"{what} file {path!r} lacks columns {missing}")
    prov = provenance.read(path)
    return df, prov


def read_probe_inputs(paths: Sequence) -> tuple[pd.DataFrame, list[dict]]:
    """All probe rows of one checkpoint and each file's provenance."""
    if not paths:
        raise SwapKLError("no probe file given")
    frames, provs = [], []
    for p in paths:
        df, prov = read_table(p, PROBE_COLUMNS, "probe")
        frames.append(df)
        provs.append(prov)
    probe = pd.concat(frames, ignore_index=True)
    n = sorted(set(int(v) for v in probe["n_layers"]))
    if len(n) != 1:
        raise SwapKLError(f"probe files {list(map(str, paths))} disagree on n_layers: {n}")
    shas = sorted({p.get("weights_sha256") for p in provs if p.get("weights_sha256")})
    if len(shas) > 1:
        raise SwapKLError(f"probe files {list(map(str, paths))} were measured on different weights")
    return probe, provs


def probe_data_spec(provs: list[dict]) -> DataSpec:
    specs = [p.get("data_spec") for p in provs]
    if any(s is None for s in specs):
        raise SwapKLError("a probe file records no data_spec in its provenance; pass probe_data explicitly")
    first = specs[0]
    if any(s != first for s in specs[1:]):
        raise SwapKLError("the probe files were measured on different windows; pass probe files of one probe run")
    return DataSpec(**first)


def _source_key(*, text_file=None, dataset=None, dataset_config=None, split=None, tokens=None):
    if text_file:
        return ("file", os.path.realpath(text_file))
    if tokens:
        return ("tokens", os.path.realpath(tokens))
    name = (dataset or "").lower()
    if "wikitext" in name and split in ("test", "validation"):
        # WikiText-2 and WikiText-103 share their validation and test articles
        return ("dataset", name, None, split)
    return ("dataset", name, dataset_config, split)


def check_disjoint(eval_spec: EvalSpec, other: DataSpec, role: str) -> None:
    """The evaluation text must not be the source of the calibration / probe windows."""
    a = _source_key(text_file=eval_spec.text_file, dataset=eval_spec.dataset,
                    dataset_config=eval_spec.dataset_config, split=eval_spec.split)
    b = _source_key(text_file=other.text_file, dataset=other.dataset, dataset_config=other.dataset_config,
                    split=other.split, tokens=other.tokens)
    if a == b:
        raise SwapKLError(
            f"the {role} windows ({other.describe()}) come from the evaluation text ({eval_spec.describe()}); "
            "use a disjoint split"
        )


def check_budgets(budgets, n_layers: int, spacing: int) -> list[int]:
    try:
        out = sorted({int(b) for b in budgets})
    except (TypeError, ValueError) as e:
        raise SwapKLError(f"budgets must be integers, got {budgets!r}") from e
    if not out:
        raise SwapKLError("no pruning budget given")
    if out[0] < 1:
        raise SwapKLError(f"budgets must be >= 1 (budget 0 is the base row), got {out[0]}")
    top = min(max_feasible(n_layers, spacing), n_layers - 1)
    if out[-1] > top:
        raise SwapKLError(
            f"budget {out[-1]} is infeasible: with spacing {spacing} at most {top} of {n_layers} layers can be removed"
        )
    return out
