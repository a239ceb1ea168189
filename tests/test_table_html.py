"""A results table as an HTML page for the report: its rows (nullable integers as integers, lists as lists), a
row limit that says where the rest is, its columns and its provenance."""

from __future__ import annotations

import io

import pandas as pd
import pyarrow as pa
import pytest

from swapkl.errors import SwapKLError
from swapkl.tables.parquet_io import write_parquet
from swapkl.tables.table_html import write_table_html


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.parquet"
    write_parquet(pa.table({"layer": pa.array([3, None, 5], pa.int64()), "kl": [0.5, 0.25, None],
                            "ranks": pa.array([[0, 1], [], [2]], pa.list_(pa.int64()))}), str(path), {"kind": "t"})
    return path


def test_rows_columns_and_provenance(table, tmp_path):
    out = tmp_path / "t.html"
    write_table_html(table, out, title="results/t.parquet")
    text = out.read_text().replace("&quot;", '"')
    shown = pd.read_html(io.StringIO(text))[0]
    assert shown["layer"].tolist()[0] == 3 and shown["layer"].tolist()[2] == 5  # not 3.0: integers stay integers
    assert shown["kl"].tolist()[:2] == [0.5, 0.25] and shown["ranks"].tolist()[0] == "0, 1"
    assert "swapkl_source_sha256" in text and '"kind": "t"' in text and "int64" in text
    assert 'dtype_backend="numpy_nullable"' in text


def test_long_tables_are_cut_with_a_note(table, tmp_path):
    out = tmp_path / "t.html"
    write_table_html(table, out, max_rows=2)
    assert len(pd.read_html(io.StringIO(out.read_text()))[0]) == 2
    assert "First 2 of 3 rows" in out.read_text()
    with pytest.raises(SwapKLError, match="max_rows"):
        write_table_html(table, out, max_rows=0)


def test_floats_are_rounded_for_display_and_integers_are_not(tmp_path):
    """Four significant digits (positional from 1e-4 to 1e6, else an exponent), in cells and in lists; integers
    and booleans as they are. The expected strings are written out by hand."""
    from swapkl.tables.table_html import display_number

    cases = {196.252035097: "196.3", 0.000123456: "0.0001235", 1.23e-7: "1.230e-07", 0.5: "0.5", 1.0: "1",
             12345.678: "12350", 2.5e7: "2.500e+07", -0.01234567: "-0.01235", 0.0: "0", float("nan"): ""}
    assert {v: display_number(v) for v in cases} == cases
    assert display_number(7) == "7" and display_number(True) == "True"
    path = tmp_path / "r.parquet"
    write_parquet(pa.table({"kl": [196.252035097], "n": pa.array([123456789], pa.int64()),
                            "sums": pa.array([[0.123456789, 2.0]], pa.list_(pa.float64()))}), str(path), {"kind": "r"})
    write_table_html(path, tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text()
    assert "<td>196.3</td>" in text and "<td>123456789</td>" in text and "<td>0.1235, 2</td>" in text
    assert "196.25" not in text.split("<h3>Provenance")[0]


def test_a_table_of_kinds_shows_summaries_and_pairs_first(tmp_path):
    """results/swapkl.parquet holds thousands of directed rows before its pairs and summaries; the page shows the
    answer first: one table per kind in the order summary, pair, repr, directed (then any other kind), each
    kind's rows as in the file, cut at ``max_rows`` with a note, and only the columns its rows fill."""
    path = tmp_path / "a.parquet"
    kinds = ["directed"] * 6 + ["pair", "summary", "pair", "repr", "other"]
    gap = [None] * 6 + [0.5, None, 0.25, None, None]
    kl = [0.1] * 6 + [None, None, None, None, None]
    write_parquet(pa.table({"kind": kinds, "row": list(range(11)), "gap": pa.array(gap, pa.float64()),
                            "kl_mean": pa.array(kl, pa.float64())}), str(path), {"kind": "t"})
    out = tmp_path / "a.html"
    write_table_html(path, out, max_rows=4)
    text = out.read_text()
    summary, pair, repr_, directed, other = pd.read_html(io.StringIO(text))[:5]
    assert summary["row"].tolist() == [7] and pair["row"].tolist() == [6, 8] and repr_["row"].tolist() == [9]
    assert directed["row"].tolist() == [0, 1, 2, 3] and other["row"].tolist() == [10]
    assert list(pair.columns) == ["kind", "row", "gap"] and list(directed.columns) == ["kind", "row", "kl_mean"]
    assert list(summary.columns) == ["kind", "row"]
    assert "first 4 of 6 rows; 1 column it leaves empty is not shown" in text
    assert text.index("kind = summary") < text.index("kind = pair") < text.index("kind = repr") \
        < text.index("kind = directed") < text.index("kind = other")
