"""swapkl.tables.combine.concat_tables: per-checkpoint tables into one, their provenance kept; nothing to combine is
an error that names the output, with no file left behind."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from swapkl.errors import SwapKLError
from swapkl.tables import provenance
from swapkl.tables.combine import concat_tables
from swapkl.tables.parquet_io import write_parquet


def test_tables_are_concatenated_in_order_with_each_inputs_provenance(tmp_path):
    a, b, out = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "all.parquet"
    write_parquet(pa.table({"model": ["m"], "x": [1.5]}), str(a), {"kind": "t", "revision": "step1"})
    write_parquet(pa.table({"model": ["m", "m"], "x": [2.5, 3.5]}), str(b), {"kind": "t", "revision": "step2"})
    df = concat_tables([str(a), str(b)], str(out))
    assert df["x"].tolist() == [1.5, 2.5, 3.5]
    assert pd.read_parquet(out)["x"].tolist() == [1.5, 2.5, 3.5]
    assert [p["revision"] for p in provenance.read(str(out))["inputs"]] == ["step1", "step2"]


def test_nothing_to_concatenate_names_the_output_and_writes_nothing(tmp_path):
    out = tmp_path / "recovery.parquet"
    with pytest.raises(SwapKLError, match=f"{out}: no per-checkpoint table to concatenate"):
        concat_tables([], str(out))
    assert list(tmp_path.iterdir()) == []
