"""swapkl.tables.answer_page: the report's opening page per model, on a pruning table built here by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from swapkl.errors import SwapKLError
from swapkl.tables.answer_page import answer_html, answer_table


def _row(revision, guide, budget, removed, cost, low, high, **extra):
    return dict(model="m", revision=revision, guide=guide, budget=budget, removed_layers=removed, feasible=True,
                fixed_set=None, random_draw=None, delta_ppl_pct=cost, delta_ppl_pct_ci_low=low,
                delta_ppl_pct_ci_high=high, n_probe_seqs=6, n_probe_tokens=384, n_eval_tokens=1554,
                n_eval_windows=13, **extra)


def pruning_table() -> pd.DataFrame:
    rows = [
        # step100, budget 1: every guide removes block 3 (one verdict for all)
        *[_row("step100", g, 1, [3], 5.0, 4.0, 6.0) for g in ("interchange", "replacement_max", "deletion", "bi")],
        # budget 2: interchange cheapest, its interval clear of every other set's
        _row("step100", "interchange", 2, [3, 5], 10.0, 8.0, 12.0),
        _row("step100", "replacement_max", 2, [1, 3], 30.0, 20.0, 40.0),
        _row("step100", "deletion", 2, [1, 3], 30.0, 20.0, 40.0),
        _row("step100", "bi", 2, [3, 6], 25.0, 13.0, 35.0),
        # budget 3: bi lowest, but its interval overlaps interchange's
        _row("step100", "interchange", 3, [1, 3, 5], 50.0, 40.0, 60.0),
        _row("step100", "replacement_max", 3, [0, 1, 3], 90.0, 70.0, 110.0),
        _row("step100", "deletion", 3, [0, 1, 3], 90.0, 70.0, 110.0),
        _row("step100", "bi", 3, [3, 5, 6], 45.0, 35.0, 55.0),
        # an earlier revision, a random draw and another model: none of them on the page
        _row("step10", "interchange", 1, [0], 1.0, 0.5, 1.5),
        {**_row("step100", "random", 1, [2], 0.1, 0.0, 0.2), "random_draw": 0},
        {**_row("step100", "interchange", 1, [2], 0.1, 0.0, 0.2), "model": "other"},
    ]
    return pd.DataFrame(rows)


def decisions_table() -> pd.DataFrame:
    return pd.DataFrame([
        dict(model="m", revision="step100", kind="set", subject="interchange@1", state="holds", answer="3",
             estimate=0.99, low=np.nan, high=np.nan, windows=64, look=4, confidence=0.95),
        dict(model="m", revision="step100", kind="set", subject="interchange@2", state="undecided", answer="3,6",
             estimate=0.9, low=np.nan, high=np.nan, windows=128, look=8, confidence=0.95),
        dict(model="m", revision="step10", kind="set", subject="interchange@3", state="holds", answer="0,1,2",
             estimate=1.0, low=np.nan, high=np.nan, windows=16, look=1, confidence=0.95),
        dict(model="m", revision="step100", kind="sign", subject="0-1", state="holds", answer="+",
             estimate=0.3, low=0.1, high=0.5, windows=16, look=1, confidence=0.95),
    ])


def test_the_last_revision_and_the_verdicts_at_each_budget():
    revision, table = answer_table(pruning_table(), None, "m")
    assert revision == "step100"
    assert list(table["budget"]) == [1] * 4 + [2] * 4 + [3] * 4
    assert list(table["guide"][:4]) == ["interchange", "replacement_max", "deletion", "bi"]
    verdict = {(r.budget, r.guide): r.verdict for r in table.itertuples()}
    assert {verdict[(1, g)] for g in ("interchange", "replacement_max", "deletion", "bi")} == {
        "every guide removed these"}
    assert verdict[(2, "interchange")] == "cheapest"  # 12 < 13, the lowest other lower bound
    assert [verdict[(2, g)] for g in ("replacement_max", "deletion", "bi")] == ["", "", ""]
    assert verdict[(3, "bi")] == "cheapest, not decided"  # 55 > 40, interchange's lower bound
    assert verdict[(3, "interchange")] == ""
    row = table[(table["budget"] == 2) & (table["guide"] == "interchange")].iloc[0]
    assert (row["removed"], row["delta_ppl_pct"], row["ci_low"], row["ci_high"]) == ("3,5", 10.0, 8.0, 12.0)
    assert (table["windowed_set"] == "").all() and table["stability"].isna().all()


def test_the_sequential_set_decisions_of_the_same_revision_join_their_guide_and_budget():
    _, table = answer_table(pruning_table(), decisions_table(), "m")
    got = {(r.budget, r.guide): (r.windowed_set, r.stability, r.set_state, r.set_windows)
           for r in table.itertuples() if r.windowed_set}
    assert got == {(1, "interchange"): ("3", 0.99, "holds", 64), (2, "interchange"): ("3,6", 0.9, "undecided", 128)}
    assert math.isnan(table[(table["budget"] == 3) & (table["guide"] == "interchange")]["stability"].iloc[0])


def test_the_page_says_what_the_costs_rest_on_and_marks_a_set_the_larger_sample_changes(tmp_path):
    png = tmp_path / "f.png"
    png.write_bytes(b"\x89PNG fake")
    page = answer_html(pruning_table(), decisions_table(), "m", [(str(png), "the pruning cost")])
    assert "6 probe windows (384 scored tokens)" in page and "1554 held-out tokens (13 windows)" in page
    assert "<td><b>3,6</b></td>" in page  # interchange at 2 removed 3,5; the sequential probe picks 3,6
    assert "<td>3</td><td>0.99</td><td>holds</td>" in page  # the same set: not marked
    assert page.count("<img") == 1 and "<figcaption>the pruning cost</figcaption>" in page


def _section(tables, model, revision):
    """A study's answer-page section (tests/test_answer_page.py): says what it was given."""
    return f"<h2>section of {model}@{revision} from {tables['t']}</h2>"


def test_a_studys_section_is_called_with_the_pages_model_and_revision(tmp_path):
    """Study.answer: the page calls each section function with its tables, model and revision, and puts what it
    returns after the answer table and before the figures."""
    png = tmp_path / "f.png"
    png.write_bytes(b"\x89PNG fake")
    page = answer_html(pruning_table(), None, "m", [(str(png), "cap")],
                       sections=[("test_answer_page:_section", {"t": "x.parquet"})])
    revision = answer_table(pruning_table(), None, "m")[0]
    assert f"<h2>section of m@{revision} from x.parquet</h2>" in page
    assert page.index("</table>") < page.index("<h2>section") < page.index("<img")


def test_a_model_without_pruning_rows_is_refused_by_name():
    with pytest.raises(SwapKLError, match="no row of model 'absent'"):
        answer_table(pruning_table(), None, "absent")


def test_each_probe_guided_set_shows_its_stability_on_resampled_probe_windows(tmp_path):
    """The pruning table's set_stability, per guide and budget, in the page's own column; empty for the guides that
    do not read the probe (bi) and for tables written before the column."""
    table = pruning_table()
    table["set_stability"] = [0.57 if (g, b) == ("interchange", 2) else (np.nan if g == "bi" else 1.0)
                              for g, b in zip(table["guide"], table["budget"])]
    _, rows = answer_table(table, None, "m")
    got = rows.set_index(["guide", "budget"])["probe_stability"]
    assert got[("interchange", 2)] == 0.57 and got[("deletion", 3)] == 1.0 and math.isnan(got[("bi", 2)])
    page = answer_html(table, None, "m")
    assert "<th>same set on resampled probe windows</th>" in page
    assert "<td>2</td><td>interchange</td><td>3,5</td><td>10</td><td>8 to 12</td><td>cheapest</td><td>57%</td>" in page
    assert math.isnan(answer_table(pruning_table(), None, "m")[1]["probe_stability"].iloc[0])
