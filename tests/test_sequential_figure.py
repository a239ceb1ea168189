"""The sequential decisions figure (swapkl.studies.sequential.figures) against the decisions table it draws: each pair's
gap and interval, coloured by its verdict, the windows each took, and each set's stability and blocks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from figure_layout import captured_figures, layout_problems
from swapkl.errors import SwapKLError
from swapkl.figures.palette import BLUE, GREY, VERMILLION
from swapkl.studies.sequential.figures import plot_sequential_decisions
from swapkl.figures.style import linear_threshold


def _rgb(hex_colour: str) -> tuple:
    return tuple(int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))


def _decisions() -> pd.DataFrame:
    rows = [dict(kind="sign", subject=f"{i}-{i + 1}", state=state, answer=answer, estimate=est, low=lo, high=hi,
                 windows=w)
            for i, (state, answer, est, lo, hi, w) in enumerate([
                ("holds", "+", 0.30, 0.20, 0.40, 16), ("holds", "-", -0.8, -1.2, -0.2, 32),
                ("undecided", None, 0.01, -0.05, 0.07, 64), ("holds", "+", 2.5, 1.5, 3.5, 16)])]
    rows += [dict(kind="set", subject="interchange@1", state="holds", answer="3", estimate=0.99, low=np.nan,
                  high=np.nan, windows=48),
             dict(kind="set", subject="interchange@2", state="undecided", answer="2,3", estimate=0.80, low=np.nan,
                  high=np.nan, windows=64),
             dict(kind="halfwidth", subject="adjacent", state="undecided", answer=None, estimate=0.5, low=0.1,
                  high=0.9, windows=64)]
    frame = pd.DataFrame(rows).assign(model="m", revision="r", look=4, confidence=0.95)
    return frame.sample(frac=1.0, random_state=0)  # the figure orders what it draws itself


def test_the_figure_draws_each_decision_of_the_table(tmp_path, monkeypatch):
    table = _decisions()
    other = table.assign(model="other", estimate=9.0)  # another model's rows are not drawn
    with captured_figures(monkeypatch) as figs:
        plot_sequential_decisions(pd.concat([table, other]), "m", "r", tmp_path / "s.png", tmp_path / "s.pdf")
    fig = figs[-1]
    assert (tmp_path / "s.png").stat().st_size > 0 and (tmp_path / "s.pdf").stat().st_size > 0
    assert not layout_problems(fig)
    gaps, windows, sets = fig.axes
    # the gaps: one error bar per pair in the pairs' order, coloured by the verdict
    drawn = {}
    for container in gaps.containers:
        line = container.lines[0]
        colour = line.get_color()
        for x, y in zip(line.get_xdata(), line.get_ydata()):
            drawn[int(x)] = (float(y), colour)
    assert [drawn[k][0] for k in range(4)] == [0.30, -0.8, 0.01, 2.5]
    colours = [drawn[k][1] for k in range(4)]
    assert [c.lower() for c in colours] == [BLUE.lower(), VERMILLION.lower(), GREY.lower(), BLUE.lower()]
    bars = {int(round(seg[0, 0])): [seg[0, 1], seg[1, 1]] for c in gaps.containers
            for seg in c.lines[2][0].get_segments()}
    want = {0: (0.20, 0.40), 1: (-1.2, -0.2), 2: (-0.05, 0.07), 3: (1.5, 3.5)}
    assert bars.keys() == want.keys()
    for k, interval in want.items():  # drawn as estimate - (estimate - low): a rounding away from low
        np.testing.assert_allclose(bars[k], interval, rtol=1e-12, atol=1e-15)
    assert [p.get_height() for p in sorted(windows.patches, key=lambda p: p.get_x())] == [16, 32, 64, 16]
    assert [t.get_text() for t in windows.get_xticklabels()] == ["0-1", "1-2", "2-3", "3-4"]
    # the sets: stability in percent against the 95% line, the blocks in the labels, held ones in blue
    points = {}
    for coll in sets.collections:
        for (x, y), face in zip(coll.get_offsets(), np.broadcast_to(coll.get_facecolors(), (len(coll.get_offsets()), 4))):
            points[int(round(y))] = (float(x), tuple(np.round(face[:3], 3)))
    labels = {int(round(y)): t.get_text() for y, t in zip(sets.get_yticks(), sets.get_yticklabels())}
    assert labels == {1: "interchange, n = 1: blocks 3\n(48 windows)", 0: "interchange, n = 2: blocks 2, 3\n(64 windows)"}
    assert points[1][0] == 99.0 and points[0][0] == 80.0
    assert points[1][1] == tuple(np.round(_rgb(BLUE), 3)) and points[0][1] == tuple(np.round(_rgb(GREY), 3))
    assert [ln.get_xdata()[0] for ln in sets.get_lines()] == [95.0]
    assert "adjacent mean gap +0.5 (+0.1 to +0.9), undecided, 64 windows" in fig.get_supxlabel().replace("\n", " ")


def test_the_symmetric_log_axis_puts_most_gaps_on_its_log_part():
    assert linear_threshold(np.array([0.3, -0.8, 0.01, 2.5, 0.2])) == 0.1
    assert linear_threshold(np.array([0.004, 0.002, -0.03, 0.0])) == 0.001
    assert linear_threshold(np.array([0.0, np.nan])) == 1.0


@pytest.mark.parametrize("kinds, n_axes", [(("set",), 1), (("sign",), 2), (("halfwidth",), 1)])
def test_a_run_that_decides_one_kind_only_still_gets_its_panels(tmp_path, monkeypatch, kinds, n_axes):
    """A run with `--no-signs`, or signs alone, or a half-width decision alone: the panels of what it decided."""
    table = _decisions()
    with captured_figures(monkeypatch) as figs:
        plot_sequential_decisions(table[table["kind"].isin(kinds)], "m", "r", tmp_path / "s.png", tmp_path / "s.pdf")
    fig = figs[-1]
    assert len(fig.axes) == n_axes and not layout_problems(fig)
    if kinds == ("halfwidth",):
        (ax,) = fig.axes
        line = ax.containers[0].lines[0]
        assert list(line.get_xdata()) == [0.5]
        assert [t.get_text() for t in ax.get_yticklabels()] == ["adjacent: undecided\n(64 windows)"]


def test_a_set_without_blocks_or_stability_is_drawn_as_such(tmp_path, monkeypatch):
    """A set decision with no blocks (no feasible set) and no stability: its label says so, and the axis holds."""
    table = _decisions()
    table.loc[table["subject"] == "interchange@2", ["answer", "estimate"]] = [None, np.nan]
    with captured_figures(monkeypatch) as figs:
        plot_sequential_decisions(table[table["kind"] == "set"], "m", "r", tmp_path / "s.png", tmp_path / "s.pdf")
    (ax,) = figs[-1].axes
    assert "interchange, n = 2: blocks none\n(64 windows)" in [t.get_text() for t in ax.get_yticklabels()]
    assert ax.get_xlim() == (90.0, 101.0)


def test_a_checkpoint_without_decisions_is_an_error_and_draws_nothing(tmp_path):
    with pytest.raises(SwapKLError, match="no rows for m@other"):
        plot_sequential_decisions(_decisions(), "m", "other", tmp_path / "s.png", tmp_path / "s.pdf")
    assert not list(tmp_path.iterdir())
