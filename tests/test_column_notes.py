"""Every column of every results table has a meaning on its HTML page (swapkl.tables.column_notes), and the
derived meanings name the right base column."""

from __future__ import annotations

import io

import pandas as pd
import pyarrow as pa
import pytest

import swapkl.tables.schemas as schemas
from swapkl.paper.scorecard import COLUMNS as SCORECARD_COLUMNS
from swapkl.probes.disagreement import COLUMNS as DISAGREEMENT_COLUMNS
from swapkl.recovery.recovery_table import COLUMNS as RECOVERY_COLUMNS
from swapkl.tables.column_notes import describe
from swapkl.tables.parquet_io import write_parquet
from swapkl.tables.table_html import write_table_html


def _every_table_column():
    for name in dir(schemas):
        value = getattr(schemas, name)
        if isinstance(value, pa.Schema):
            yield from ((name, c) for c in value.names)
    yield from (("aggregate", c) for c in schemas.aggregate_schema(["in_adjacent", "in_within_3"]).names)
    for what, columns in (("scorecard", SCORECARD_COLUMNS), ("recovery", RECOVERY_COLUMNS),
                          ("disagreement", DISAGREEMENT_COLUMNS), ("relevance_stats", schemas.RELEVANCE_STATS_COLUMNS)):
        yield from ((what, c) for c in columns)


def test_every_schema_column_has_a_meaning():
    missing = sorted({f"{table}.{column}" for table, column in _every_table_column() if not describe(column)})
    assert not missing, missing


@pytest.mark.parametrize("column, table, words", [
    ("gap_mean_ci_low", None, "lower end of the 95% bootstrap CI of gap_mean"),
    ("kl_ci_high", None, "upper end of the 95% bootstrap CI of kl_mean"),
    ("in_within_3", None, "pair set within_3"),
    ("gap_seed_sd", "seeds", "standard deviation over seeds (ddof 1) of gap_mean"),
    ("gap_mean", "seeds", "member rows"),
    ("gap_mean", "swapkl", "mean over the pairs of gap"),
    ("delta_ppl_pct_max", "pruning", "random_mean: highest"),
])
def test_derived_and_per_table_meanings(column, table, words):
    assert words in describe(column, table)


def test_the_table_page_lists_each_column_with_its_meaning(tmp_path):
    path = tmp_path / "t.parquet"
    write_parquet(pa.table({"model": ["m"], "d_inter": [0.5], "gap_fwd_mean_ci_low": [0.1]}), str(path), {"kind": "t"})
    write_table_html(path, tmp_path / "t.html", table="swapkl")
    columns = pd.read_html(io.StringIO((tmp_path / "t.html").read_text()))[1]
    assert list(columns.columns) == ["column", "type", "meaning"]
    assert dict(zip(columns["column"], columns["meaning"])) == {
        "model": describe("model"), "d_inter": describe("d_inter"),
        "gap_fwd_mean_ci_low": "lower end of the 95% bootstrap CI of gap_fwd_mean"}


def test_a_name_that_differs_between_tables_gets_each_tables_meaning():
    assert describe("method", "jacobian").startswith("how the spectral norm")
    assert describe("method", "seed003_tables").startswith("pruning method")
    assert describe("method", "optimal_search").startswith("search method")
