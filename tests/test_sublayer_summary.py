"""swapkl.figures.sublayer_statements: a statement holds only where its interval excludes 0."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from swapkl.studies.sublayers.stats import decomposition
from swapkl.figures.sublayer_statements import sign_verdict, statements
from test_sublayer_gaps import _sums


@pytest.mark.parametrize("low,high,want", [(0.1, 0.3, "up"), (-0.3, -0.1, "down"), (-0.1, 0.2, "undecided"),
                                           (0.0, 0.2, "undecided")])
def test_sign_verdict(low, high, want):
    assert sign_verdict(low, high, "up", "down") == want


def test_statements_read_the_study_s_rows():
    sums, tokens = _sums(5, 40, seed=2)
    for i in range(4):  # MLP gaps well above the attention's in every window: the MLP carries more
        sums[f"mlp_replacement:{i}:{i + 1}"] = sums[f"mlp_replacement:{i}:{i + 1}"] + 5 * tokens
    rows = decomposition(sums, tokens, "adjacent", 5, params={"attention": 1, "mlp": 2, "block": 3}, n_boot=200)
    gaps = pd.DataFrame([dict(model="m", revision="main", step=None, n_layers=5) | r for r in rows])
    pruning = pd.DataFrame([dict(model="m", revision="main", kind="difference", guide="sublayer_deletion",
                                 versus=v, budget=1, value=x, ci_low=lo, ci_high=hi)
                            for v, x, lo, hi in (("interchange", -3.0, -5.0, -1.0), ("deletion", 1.0, -1.0, 2.0))])
    table = statements(gaps, pruning).set_index("claim")
    assert table.loc["mlp_minus_attention", "verdict"] == "mlp"
    assert table.loc["share:mlp", "estimate"] == pytest.approx(
        gaps[(gaps["kind"] == "share") & (gaps["part"] == "mlp")]["value"].iloc[0])
    assert table.loc["sublayer_deletion-interchange@1", "verdict"] == "sublayer cheaper"
    assert table.loc["sublayer_deletion-deletion@1", "verdict"] == "undecided"
    assert np.isfinite(table["low"]).all()


def test_no_share_of_a_mean_gap_that_may_be_zero():
    rows = [dict(kind=k, part=p, value=v, ci_low=lo, ci_high=hi)
            for k, p, v, lo, hi in (("mean_gap", "block", 0.01, -0.02, 0.04), ("share", "attention", 3.0, -9, 9),
                                    ("share", "mlp", -2.0, -9, 9), ("mlp_minus_attention", "mlp", 0.1, 0.05, 0.2),
                                    ("mean_interaction", "block", 0.0, -0.1, 0.1))]
    gaps = pd.DataFrame([dict(model="m", revision="main", step=None, layer_i=None) | r for r in rows])
    table = statements(gaps).set_index("claim")
    assert set(table.loc[["share:attention", "share:mlp"], "verdict"]) == {"undefined"}
    assert table.loc["mean_interaction", "verdict"] == "undecided"


def _summary_rows(model: str, revision: str, diff: tuple[float, float, float]) -> list[dict]:
    base = dict(model=model, revision=revision, step=None, layer_i=None, layer_j=None, n_windows=7, n_tokens=448)
    return [base | dict(kind=k, part=p, value=v, ci_low=lo, ci_high=hi)
            for k, p, v, lo, hi in (("mean_gap", "block", 0.5, 0.2, 0.8), ("share", "attention", 0.3, 0.1, 0.5),
                                    ("share", "mlp", 0.6, 0.4, 0.8), ("mlp_minus_attention", "mlp", *diff),
                                    ("mean_interaction", "block", 0.0, -0.1, 0.1))]


def test_the_answer_section_compares_the_cheapest_sets_with_their_paired_interval(tmp_path):
    """The page's section at the page's revision: the MLP-minus-attention verdict with its interval, and per budget the
    block set and the sublayer set of lowest cost with the difference row of exactly those two guides."""
    import pyarrow as pa

    from swapkl.figures.sublayer_statements import answer_section
    from swapkl.tables.parquet_io import write_parquet

    gaps = pd.DataFrame(_summary_rows("m", "main", (-0.4, -0.6, -0.2)) + _summary_rows("m", "old", (0.4, 0.2, 0.6)))
    cost = dict(model="m", revision="main", kind="cost", versus=None, feasible=True, n_windows=9, n_tokens=1000,
                ci_low=0.0, ci_high=0.0)
    rows = [cost | dict(guide=g, budget=1, removed=r, value=v)
            for g, r, v in (("interchange", ["3"], 20.0), ("deletion", ["2"], 12.0), ("replacement_max", ["4"], 30.0),
                            ("sublayer_deletion", ["2.mlp", "5.attention"], 15.0),
                            ("sublayer_interchange", ["3.mlp", "5.attention"], 9.0))]
    diff = dict(model="m", revision="main", kind="difference", feasible=True, n_windows=9, n_tokens=1000, removed=None)
    rows += [diff | dict(guide=g, versus=v, budget=1, value=x, ci_low=lo, ci_high=hi)
             for g, v, x, lo, hi in (("sublayer_interchange", "deletion", -3.0, -5.5, -0.5),
                                     ("sublayer_interchange", "interchange", -11.0, -14.0, -8.0),
                                     ("sublayer_deletion", "deletion", 3.0, -1.0, 7.0))]
    write_parquet(pa.Table.from_pandas(pd.DataFrame(rows)), str(tmp_path / "pruning.parquet"), {"kind": "test"})
    write_parquet(pa.Table.from_pandas(gaps), str(tmp_path / "gaps.parquet"), {"kind": "test"})
    tables = {"sublayer_gaps": str(tmp_path / "gaps.parquet"), "sublayer_pruning": str(tmp_path / "pruning.parquet")}
    text = answer_section(tables, "m", "main")
    assert ("On 7 windows (448 scored tokens), the attention sublayers carry more of the protocol gap than the MLP "
            "sublayers (MLP minus attention mean gap -0.4 nats/token, 95% interval -0.6 to -0.2)") in text
    assert "on 1000 held-out tokens (9 windows)" in text
    row = ("<tr><td>1</td><td>deletion: 2</td><td>12</td><td>sublayer_interchange: 3.mlp, 5.attention</td><td>9</td>"
           "<td>-3</td><td>-5.5 to -0.5</td><td>the sublayers cost less</td></tr>")
    assert row in text
    same = pd.DataFrame(rows).assign(removed=lambda f: [["2"] if g == "sublayer_interchange" else r
                                                       for g, r in zip(f["guide"], f["removed"])])
    write_parquet(pa.Table.from_pandas(same), str(tmp_path / "same.parquet"), {"kind": "test"})
    assert "<td>the same blocks removed</td>" in answer_section(tables | {"sublayer_pruning": str(tmp_path / "same.parquet")},
                                                               "m", "main")
    assert "the MLP sublayers carry more" in answer_section(tables, "m", "old")  # its own revision's rows
    assert answer_section(tables, "m", "step9") == "" and answer_section(tables, "other", "main") == ""
