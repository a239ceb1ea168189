"""swapkl.studies.sublayers.summary: a statement holds only where its interval excludes 0."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from swapkl.studies.sublayers.decompose import decomposition
from swapkl.studies.sublayers.summary import sign_verdict, statements
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
