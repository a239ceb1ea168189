"""The reproduction scorecard (``results/paper_scorecard.parquet``): one row per published number.

The registry (``published.yaml`` in this package, data only) lists every number of the two papers that
swapkl reproduces, with the config entry whose results hold the counterpart and how to compute it from the
result tables (the file's header defines the spec). :func:`build_scorecard` computes each counterpart from
whichever tables exist and compares it with the published value:

* ``status`` = ``reproduced`` when ``|swapkl - published| <= max(abs, rel * |published|)`` (the entry's
  tolerance, else its unit's default), ``differs`` otherwise; ``not run (needs <what>)`` when the tables hold
  no row of that entry (the model was not run: on the offline demo every row); ``not run (no counterpart:
  <reason>)`` for numbers swapkl has no computation for; ``not run (infeasible in swapkl)`` when the row
  exists but holds no value (an infeasible budget);
* ``rel_diff`` = ``(swapkl - published) / |published|`` (null when either is missing or published is 0);
* ``setting`` = the config entry, table, filters and column that produce ``swapkl``;
* ``chance`` and ``p_value``: for misranking rates, the rate's chance level and permutation p-value
  (:func:`swapkl.stats.agreement.rank_chance`), aggregated like the rate.
"""

from __future__ import annotations

import hashlib
import html
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from swapkl.errors import SwapKLError
from swapkl.paper.published import registry_path
from swapkl.tables.atomic import replaced_on_success
from swapkl.tables.file_checks import replaceable
from swapkl.probes.aggregate import read_aggregate
from swapkl.stats.rank_correlation import spearman
from swapkl.tables.schemas import (RELEVANCE_STATS_COLUMNS, SEED003_TABLES_COLUMNS, read_agreement, read_downstream,
                                    read_frame, read_pruning)
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet

COLUMNS = ["source", "quantity", "model", "published", "swapkl", "rel_diff", "setting", "status", "tolerance",
           "chance", "p_value"]


def with_directions(df: pd.DataFrame) -> pd.DataFrame:
    """The aggregate with each pair's two replacement directions compared: ``d_repl_min`` (the smaller of
    ``r_ij`` and ``r_ji``) and ``repl_asymmetry`` (``d_repl_max / max(d_repl_min, 1e-12)``, the paper's max/min
    ratio of the two directions); null on rows without both directions."""
    df = df.copy()
    if {"r_ij", "r_ji", "d_repl_max"} <= set(df.columns):
        both = df[["r_ij", "r_ji"]].astype("float64")
        df["d_repl_min"] = both.min(axis=1, skipna=False)
        df["repl_asymmetry"] = df["d_repl_max"].astype("float64") / df["d_repl_min"].clip(lower=1e-12)
    return df


def _recovery(path) -> pd.DataFrame:
    """The recovery table, ``removed_layers`` as text ("15,17,20") so that a ``where`` filter can name a set."""
    df = read_frame(path, ["model", "revision", "guide", "budget", "removed_layers", "phase", "net_recovery"],
                    "recovery")
    return df.assign(removed_layers=df["removed_layers"].map(lambda v: ",".join(str(int(b)) for b in v)))


#: every result table the scorecard reads: its name in the registry (and the keyword of write_scorecard and the
#: rule's input) -> the reader of one file. One line per table; a table given as several files is their rows.
TABLES = {
    "pruning": read_pruning,
    "aggregate": lambda p: with_directions(read_aggregate(p)),
    "agreement": read_agreement,
    "relevance_stats": lambda p: read_frame(p, RELEVANCE_STATS_COLUMNS, "relevance statistics"),
    "rope_counterfactual": lambda p: read_frame(p, ["kind", "model", "reference", "revision"], "RoPE table"),
    "recovery": _recovery,
    "domain_slices": lambda p: read_frame(p, ["kind", "model", "reference", "revision"], "domain slices"),
    "downstream": read_downstream,
    "seed003_tables": lambda p: read_frame(p, SEED003_TABLES_COLUMNS, "task-pruning tables"),
}
AGGS = ("one", "mean", "median", "min", "max", "count_below", "quantile", "spearman")
_ENTRY_KEYS = {"source", "quantity", "model", "needs", "published", "unit", "tolerance", "compute", "reason"}
_SPEC_KEYS = {"table", "where", "column", "agg", "threshold", "q", "against", "scale", "chance", "p_value"}


def load_registry(path: str | Path | None = None) -> tuple[list[dict], dict]:
    """The registry's entries and unit tolerances, checked: a malformed entry is an error naming it."""
    path = Path(path) if path is not None else registry_path()
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise SwapKLError(f"cannot read the published-numbers registry {str(path)!r}: {e}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list) or not isinstance(doc.get("tolerances"), dict):
        raise SwapKLError(f"{path}: the registry needs `tolerances` (a mapping) and `entries` (a list)")
    tolerances = doc["tolerances"]
    for k, e in enumerate(doc["entries"]):
        where = f"{path}: entry {k + 1} ({e.get('quantity', '?') if isinstance(e, dict) else e!r})"
        if not isinstance(e, dict) or set(e) - _ENTRY_KEYS:
            raise SwapKLError(f"{where}: unknown keys {sorted(set(e) - _ENTRY_KEYS) if isinstance(e, dict) else ''}")
        for key in ("source", "quantity", "model", "needs", "published", "unit"):
            if key not in e:
                raise SwapKLError(f"{where}: missing `{key}`")
        if e["unit"] not in tolerances:
            raise SwapKLError(f"{where}: unit {e['unit']!r} has no default tolerance")
        if not isinstance(e["published"], (int, float)):
            raise SwapKLError(f"{where}: `published` must be a number")
        if e.get("compute") is None:
            if not e.get("reason"):
                raise SwapKLError(f"{where}: an entry without `compute` needs a `reason`")
        else:
            _check_spec(e["compute"], where)
    return doc["entries"], tolerances


def _check_spec(spec, where: str) -> None:
    if isinstance(spec, dict) and set(spec) == {"ratio"}:
        if not isinstance(spec["ratio"], list) or len(spec["ratio"]) != 2:
            raise SwapKLError(f"{where}: `ratio` takes two specs")
        for s in spec["ratio"]:
            _check_spec(s, where)
        return
    if not isinstance(spec, dict) or set(spec) - _SPEC_KEYS or "table" not in spec or "column" not in spec:
        raise SwapKLError(f"{where}: compute must be {{table, where, column[, agg]}} or {{ratio: [spec, spec]}}")
    if spec["table"] not in TABLES:
        raise SwapKLError(f"{where}: unknown table {spec['table']!r} (one of {', '.join(TABLES)})")
    if spec.get("agg", "one") not in AGGS:
        raise SwapKLError(f"{where}: unknown agg {spec['agg']!r} (one of {', '.join(AGGS)})")
    if spec.get("agg") == "count_below" and not isinstance(spec.get("threshold"), (int, float)):
        raise SwapKLError(f"{where}: count_below needs a numeric `threshold`")
    if spec.get("agg") == "quantile" and not (isinstance(spec.get("q"), (int, float)) and 0 <= spec["q"] <= 1):
        raise SwapKLError(f"{where}: quantile needs `q` between 0 and 1")
    if spec.get("agg") == "spearman" and not isinstance(spec.get("against"), str):
        raise SwapKLError(f"{where}: spearman needs `against`, the column ranked against `column`")
    if not isinstance(spec.get("scale", 1), (int, float)):
        raise SwapKLError(f"{where}: `scale` must be a number")


def read_tables(paths: dict[str, str | list[str] | None]) -> dict[str, pd.DataFrame]:
    """The result tables that exist, by name (the keys of :data:`TABLES`); a list of files is one table."""
    unknown = set(paths) - set(TABLES)
    if unknown:
        raise SwapKLError(f"unknown result tables {sorted(unknown)} (known: {', '.join(TABLES)})")
    out = {}
    for name, p in paths.items():
        files = [p] if isinstance(p, (str, Path)) else list(p or [])
        if files:
            out[name] = pd.concat([TABLES[name](f) for f in files], ignore_index=True)
    return out


def _rows(spec: dict, model: str, tables: dict[str, pd.DataFrame], where: str) -> pd.DataFrame | None:
    df = tables.get(spec["table"])
    if df is None:
        return None
    filters = {"model": model, **(spec.get("where") or {})}
    for col in [spec["column"], *filters, *(spec[k] for k in ("chance", "p_value", "against") if spec.get(k))]:
        if col not in df.columns and not col.startswith("in_"):
            raise SwapKLError(f"{where}: table {spec['table']} has no column {col!r}")
    mask = np.ones(len(df), dtype=bool)
    for col, value in filters.items():
        if col not in df.columns:  # a pair-set membership column of a set no model probed: no such pairs
            return None
        mask &= (df[col] == value).fillna(False).to_numpy(dtype=bool)
    return df[mask]


def _reduce(rows: pd.DataFrame, column: str, spec: dict, where: str) -> float:
    agg = spec.get("agg", "one")
    v = rows[column].astype("float64")
    if agg == "one":
        if len(v) != 1:
            raise SwapKLError(f"{where}: {len(v)} rows match where one was expected; add a filter or an agg")
        return float(v.iloc[0])
    if agg == "count_below":
        return float((v < spec["threshold"]).sum())
    if agg == "quantile":  # linear interpolation between order statistics (numpy's default percentile)
        return float(v.quantile(spec["q"]))
    if agg == "spearman":
        return float(spearman(v.to_numpy(), rows[spec["against"]].astype("float64").to_numpy()))
    return float(getattr(v, agg)())


def compute(spec: dict, model: str, tables: dict[str, pd.DataFrame], where: str = "entry") -> dict | None:
    """``{value, chance, p_value}`` of one spec for the config entry ``model``; None when no table row matches."""
    if "ratio" in spec:
        parts = [compute(s, model, tables, where) for s in spec["ratio"]]
        if any(p is None for p in parts):
            return None
        num, den = parts[0]["value"], parts[1]["value"]
        return dict(value=num / den if den else float("nan"), chance=None, p_value=None)
    rows = _rows(spec, model, tables, where)
    if rows is None or rows.empty:
        return None
    out = dict(value=_reduce(rows, spec["column"], spec, where) * spec.get("scale", 1), chance=None, p_value=None)
    for key in ("chance", "p_value"):
        if spec.get(key):
            out[key] = _reduce(rows, spec[key], {"agg": spec.get("agg", "one")}, where)
    return out


def describe(spec: dict | None, model: str) -> str:
    """The ``setting`` text of a spec: config entry, table, filters, column and aggregation."""
    if spec is None:
        return f"{model}: no computation"
    if "ratio" in spec:
        a, b = (describe(s, model).split(": ", 1)[1] for s in spec["ratio"])
        return f"{model}: ({a}) / ({b})"
    filters = ", ".join(f"{k}={v}" for k, v in (spec.get("where") or {}).items())
    agg = spec.get("agg", "one")
    how = {"one": "", "count_below": f", count < {spec.get('threshold')}", "quantile": f", quantile {spec.get('q')}",
           "spearman": f", Spearman against {spec.get('against')}"}.get(agg, f", {agg}")
    scale = f" x {spec['scale']}" if spec.get("scale", 1) != 1 else ""
    return f"{model}: {spec['table']} [{filters}] {spec['column']}{how}{scale}"


def _status(entry: dict, got: dict | None, tol: dict) -> tuple[str, float | None, float | None]:
    if entry.get("compute") is None:
        return f"not run (no counterpart: {entry['reason']})", None, None
    if got is None:
        return f"not run (needs {entry['needs']})", None, None
    value = got["value"]
    if not np.isfinite(value):
        return "not run (infeasible in swapkl)", None, None
    pub = float(entry["published"])
    rel = (value - pub) / abs(pub) if pub != 0 else None
    ok = abs(value - pub) <= max(float(tol.get("abs", 0.0)), float(tol.get("rel", 0.0)) * abs(pub)) + 1e-12
    return ("reproduced" if ok else "differs"), value, rel


def build_scorecard(tables: dict[str, pd.DataFrame], registry: str | Path | None = None) -> pd.DataFrame:
    """One row per registry entry (see the module docstring)."""
    entries, tolerances = load_registry(registry)
    rows = []
    for k, e in enumerate(entries):
        where = f"registry entry {k + 1} ({e['quantity']}, {e['model']})"
        tol = {**tolerances[e["unit"]], **(e.get("tolerance") or {})}
        got = None if e.get("compute") is None else compute(e["compute"], e["model"], tables, where)
        status, value, rel = _status(e, got, tol)
        rows.append(dict(source=e["source"], quantity=e["quantity"], model=e["model"], published=float(e["published"]),
                         swapkl=value, rel_diff=rel, setting=describe(e.get("compute"), e["model"]), status=status,
                         tolerance=f"max(abs {tol.get('abs', 0)}, rel {tol.get('rel', 0)})",
                         chance=None if got is None else got["chance"], p_value=None if got is None else got["p_value"]))
    return pd.DataFrame(rows, columns=COLUMNS).astype({c: "float64" for c in ("swapkl", "rel_diff", "chance",
                                                                                "p_value")})


_MARK = '<meta name="generator" content="swapkl scorecard">'


def scorecard_html(df: pd.DataFrame) -> str:
    """The scorecard as one self-contained HTML table (the report's view)."""
    def cell(v, digits=4):
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            return ""
        return f"{v:.{digits}g}" if isinstance(v, float) else html.escape(str(v))

    counts = df["status"].map(lambda s: s.split(" (")[0]).value_counts()
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = "\n".join("<tr>" + "".join(f"<td>{cell(r[c])}</td>" for c in COLUMNS) + "</tr>" for _, r in df.iterrows())
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">{_MARK}<title>Reproduction scorecard</title>"
            "<style>table{border-collapse:collapse;font:12px sans-serif}td,th{border:1px solid #ccc;padding:2px 4px}"
            "</style></head><body>\n"
            f"<p>{len(df)} published numbers: {summary}.</p>\n<table>\n<tr>{head}</tr>\n{body}\n</table>\n</body></html>\n")


def write_scorecard(out: str, *, html_out: str | None = None, registry: str | Path | None = None,
                    **paths: str | None) -> pd.DataFrame:
    """Build the scorecard from the tables in ``paths`` (those given and not None) and write ``out`` (Parquet,
    with provenance) and ``html_out``."""
    check_writable(out)
    if html_out is not None:
        replaceable(html_out, "output", lambda p: _MARK in Path(p).read_text(errors="replace")[:2000])
    reg = Path(registry) if registry is not None else registry_path()
    df = build_scorecard(read_tables(paths), reg)
    prov = provenance.software_versions() | {
        "inputs": {k: v for k, v in paths.items() if v is not None},
        "registry": str(reg), "registry_sha256": hashlib.sha256(reg.read_bytes()).hexdigest()}
    write_parquet(df, out, prov)
    if html_out is not None:
        with replaced_on_success(html_out) as tmp:
            Path(tmp).write_text(scorecard_html(df))
    return df
