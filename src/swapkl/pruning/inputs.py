"""The inputs of a pruning run: probe and representation files, data sources, budgets."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from swapkl.tables import provenance
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.tables.schemas import PROBE_SCHEMA, read_table
from swapkl.pruning.feasible import max_budget


def read_probe_inputs(paths: Sequence) -> tuple[pd.DataFrame, list[dict]]:
    """All probe rows of one checkpoint and each file's provenance."""
    if not paths:
        raise SwapKLError("no probe file given")
    frames, provs, seen = [], [], {}
    for p in paths:
        table, prov = read_table(p, PROBE_SCHEMA, "probe")
        df = table.to_pandas()
        provenance.check_comparable(seen, str(p), prov, "the pruned checkpoint")
        frames.append(df)
        provs.append(prov)
    probe = pd.concat(frames, ignore_index=True)
    n = sorted(set(int(v) for v in probe["n_layers"]))
    if len(n) != 1:
        raise SwapKLError(f"probe files {list(map(str, paths))} disagree on n_layers: {n}")
    return probe, provs


def probe_data_spec(provs: list[dict]) -> DataSpec:
    specs = [p.get("data_spec") for p in provs]
    if any(s is None for s in specs):
        raise SwapKLError("a probe file records no data_spec in its provenance; pass probe_data explicitly")
    first = specs[0]
    if any(s != first for s in specs[1:]):
        raise SwapKLError("the probe files were measured on different windows; pass probe files of one probe run")
    return DataSpec(**first)


def check_disjoint(eval_spec: EvalSpec, other: DataSpec, role: str) -> None:
    """The evaluation text must not be the source of the calibration / probe windows."""
    if eval_spec.source_key() == other.source_key():
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
    top = max_budget(n_layers, spacing)
    if out[-1] > top:
        raise SwapKLError(
            f"budget {out[-1]} is infeasible: with spacing {spacing} at most {top} of {n_layers} layers can be removed"
        )
    return out
