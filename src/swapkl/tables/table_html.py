"""A results table as a self-contained HTML page, for the Snakemake report (which cannot show Parquet): the
provenance, the columns with their types and meanings (:mod:`swapkl.tables.column_notes`), and the rows (the first ``max_rows`` of a long table, with a note
naming the Parquet file that holds all of them)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from swapkl.tables import provenance
from swapkl.tables.column_notes import describe
from swapkl.tables.atomic import write_text_atomic
from swapkl.errors import SwapKLError

STYLE = ("body{font-family:sans-serif;font-size:13px;margin:1em}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}"
         "th{background:#eee;position:sticky;top:0}pre{background:#f6f6f6;padding:.5em;overflow-x:auto}")

#: how the integer columns that hold nulls read back as integers (plain pd.read_parquet gives float64)
READ_HINT = 'pd.read_parquet(path, dtype_backend="numpy_nullable")'


#: significant digits of a float shown on the page (the Parquet file holds every digit)
DIGITS = 4


def display_number(v) -> str:
    """``v`` for display: a float to :data:`DIGITS` significant digits (positional between 1e-4 and 1e6, else with
    an exponent), other values as they are."""
    if isinstance(v, bool) or not isinstance(v, float):
        return str(v)
    if v != v:
        return ""
    if v == 0:
        return "0"
    if not 1e-4 <= abs(v) < 1e6:
        return f"{v:.{DIGITS - 1}e}"
    rounded = float(f"{v:.{DIGITS}g}")
    exponent = int(f"{rounded:e}".split("e")[1])
    text = f"{rounded:.{max(DIGITS - 1 - exponent, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _cell(v) -> str:
    if isinstance(v, (list, tuple)) or hasattr(v, "tolist") and not isinstance(v, str):
        v = list(v.tolist() if hasattr(v, "tolist") else v)
        return ", ".join(display_number(x) for x in v[:12]) + (f", ... ({len(v)} values)" if len(v) > 12 else "")
    return "" if v is None or v is pd.NA or (isinstance(v, float) and v != v) else display_number(v)


#: the order in which a table with a ``kind`` column shows its rows (results/swapkl.parquet: docs/outputs.md)
KIND_ORDER = ("summary", "pair", "repr", "directed")


def table_html(path: str | Path, *, title: str | None = None, max_rows: int = 500, table: str | None = None) -> str:
    """The HTML page of the Parquet table at ``path`` (``table``: its name under results/, which picks the
    column meanings of that table where a name means something else there). A table with a ``kind`` column is
    shown one kind at a time, in :data:`KIND_ORDER` (the answer first: results/swapkl.parquet holds thousands of
    directed rows before its pairs and summaries), each with the columns its rows fill and its first ``max_rows``
    rows."""
    path = str(path)
    prov = provenance.read(path)
    schema = pq.read_schema(path)
    df = pd.read_parquet(path, dtype_backend="numpy_nullable")
    left = "style='text-align:left'"
    cols = "".join(f"<tr><td {left}>{html.escape(f.name)}</td><td {left}>{html.escape(str(f.type))}</td>"
                   f"<td {left}>{html.escape(describe(f.name, table))}</td></tr>" for f in schema)
    if "kind" in df.columns:
        kinds = [k for k in KIND_ORDER if (df["kind"] == k).any()]
        kinds += sorted(set(df["kind"].dropna()) - set(kinds))
        links = ", ".join(f"<a href='#kind-{html.escape(str(k))}'>{html.escape(str(k))}</a>" for k in kinds)
        head = (f"<p>{len(df)} rows of {len(kinds)} kinds, shown one kind at a time: {links}. Each kind shows the "
                "columns its rows fill; every row and column is in "
                f"<code>{html.escape(path)}</code>.</p>")
        rows = "".join(_kind_section(df[df["kind"] == k], str(k), max_rows) for k in kinds)
    else:
        head = (f"<p>First {max_rows} of {len(df)} rows; every row is in <code>{html.escape(path)}</code>.</p>"
                if len(df) > max_rows else f"<p>{len(df)} rows.</p>")
        rows = _rows(df.head(max_rows))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title or path)}</title>"
            f"<style>{STYLE}</style></head><body><h2>{html.escape(title or path)}</h2>{head}"
            f"<p>Read it with <code>{html.escape(READ_HINT)}</code> so that integer columns with nulls stay "
            "integers. Numbers are shown to four significant digits; the file holds every digit. What each column "
            "means: <a href='#columns'>Columns</a>, below the rows.</p>"
            f"{rows}"
            f"<h3 id='columns'>Columns</h3><table><tr><th {left}>column</th><th {left}>type</th>"
            f"<th {left}>meaning</th></tr>{cols}"
            "</table>"
            f"<h3>Provenance</h3><pre>{html.escape(json.dumps(prov, indent=1, sort_keys=True, default=str))}</pre>"
            "</body></html>\n")


def _rows(shown: pd.DataFrame) -> str:
    body = shown.map(_cell) if hasattr(shown, "map") else shown.applymap(_cell)
    return body.to_html(index=False, escape=True, border=0)


def _kind_section(rows: pd.DataFrame, kind: str, max_rows: int) -> str:
    """One kind's rows under its heading, with only the columns they fill (a pair row has no directed KL)."""
    filled = [c for c in rows.columns if c == "kind" or rows[c].notna().any()]
    count = (f"first {max_rows} of {len(rows)} rows" if len(rows) > max_rows
             else f"{len(rows)} row{'s' if len(rows) != 1 else ''}")
    left_out = len(rows.columns) - len(filled)
    empty = (f"; {left_out} column{'s' if left_out != 1 else ''} it leaves empty "
             f"{'are' if left_out != 1 else 'is'} not shown") if left_out else ""
    return (f"<h3 id='kind-{html.escape(kind)}'>kind = {html.escape(kind)}</h3><p>{count}{empty}.</p>"
            f"{_rows(rows[filled].head(max_rows))}")


def write_table_html(path: str | Path, out: str | Path, *, title: str | None = None, max_rows: int = 500,
                     table: str | None = None) -> None:
    """Write :func:`table_html` of ``path`` to ``out`` atomically."""
    if max_rows < 1:
        raise SwapKLError(f"max_rows must be at least 1, got {max_rows}")
    write_text_atomic(Path(out), table_html(path, title=title, max_rows=max_rows, table=table))
