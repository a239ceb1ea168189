"""Figures: each writes a non-empty PNG and PDF, reruns are byte-identical, bad inputs are clear."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from probe_fixtures import probe_files, random_values, write_checkpoint
from swapkl.probes.aggregate import aggregate, read_aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.commands import figures_command
from swapkl.errors import SwapKLError
from swapkl.figures.protocol.deletion import plot_deletion_vs_bi
from swapkl.figures.protocol.trajectory import plot_gap_trajectory
from swapkl.figures.protocol.heatmaps import plot_heatmaps
from swapkl.figures.protocol.ratio import plot_ratio_by_distance
from swapkl.figures.demo.training import plot_training_curves
from swapkl.figures.protocol.deletion import deletion_and_bi
from swapkl.stats.rank_correlation import spearman_kendall
from swapkl.figures.protocol.heatmaps import kl_matrices
from swapkl.figures.stepaxis import set_step_axis

L = 6


@pytest.fixture(scope="module")
def agg_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("fig")
    files, reprs = [], []
    pairs = [(i, j) for i in range(L) for j in range(i + 1, L) if j - i <= 2]
    for k, rev in enumerate(["step0", "step1000", "step16000", "step16001"]):
        repl, inter, dele = random_values(L, seed=k, pairs=pairs)
        sha = "d" * 64 if rev in ("step16000", "step16001") else None
        p = write_checkpoint(d / "in", model="toy", revision=rev, n_layers=L, repl=repl, inter=inter,
                             deletion=dele, bi=list(np.random.default_rng(k).uniform(0.01, 0.4, L)),
                             seed=k, weights_sha256=sha)
        files += probe_files(p)
        reprs.append(p["repr"])
    out = d / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=files, repr_files=reprs, out=out, pair_sets={"toy": ["adjacent", "within:2"]},
                           n_boot=50))
    return out


@pytest.fixture(scope="module")
def training_logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    logs = {}
    for name, scale in (("demo-a", 1.0), ("demo-b", 0.7)):
        lines = ["step,heldout_loss,train_loss"]
        for s in range(0, 501, 50):
            ho = f"{3 + 4 * scale * np.exp(-s / 150):.4f}" if s % 100 == 0 else ""
            lines.append(f"{s},{ho},{2.9 + 4 * scale * np.exp(-s / 150):.4f}")
        (d / f"{name}.csv").write_text("\n".join(lines) + "\n")
        logs[name] = d / f"{name}.csv"
    return logs


def draw(kind, agg_path, training_logs, png, pdf):
    if kind == "trajectory":
        plot_gap_trajectory(agg_path, png, pdf, model="toy")
    elif kind == "trajectory_fwd":
        plot_gap_trajectory(agg_path, png, pdf, model="toy", gap="fwd")
    elif kind == "ratio":
        plot_ratio_by_distance(read_aggregate(agg_path), png, pdf, model="toy")
    elif kind == "ratio_fwd":
        plot_ratio_by_distance(read_aggregate(agg_path), png, pdf, model="toy", gap="fwd")
    elif kind == "heatmaps":
        plot_heatmaps(agg_path, png, pdf, model="toy", revision="step1000")
    elif kind == "deletion":
        plot_deletion_vs_bi(agg_path, png, pdf, model="toy", revision="step1000")
    else:
        plot_training_curves(training_logs, png, pdf)


@pytest.mark.parametrize("kind", ["trajectory", "trajectory_fwd", "ratio", "ratio_fwd", "heatmaps", "deletion", "training"])
def test_figure_written_and_byte_identical(kind, agg_path, training_logs, tmp_path):
    png, pdf = tmp_path / "a" / f"{kind}.png", tmp_path / "a" / f"{kind}.pdf"
    draw(kind, agg_path, training_logs, png, pdf)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000
    assert b"CreationDate" not in pdf.read_bytes()
    png2, pdf2 = tmp_path / "b" / f"{kind}.png", tmp_path / "b" / f"{kind}.pdf"
    draw(kind, agg_path, training_logs, png2, pdf2)
    assert png.read_bytes() == png2.read_bytes()
    assert pdf.read_bytes() == pdf2.read_bytes()
    assert sorted(p.name for p in png.parent.iterdir()) == sorted([png.name, pdf.name])  # no temp files


def test_unknown_model_or_revision(agg_path, tmp_path):
    png, pdf = tmp_path / "x.png", tmp_path / "x.pdf"
    with pytest.raises(SwapKLError, match="no summary rows for nope"):
        plot_gap_trajectory(agg_path, png, pdf, model="nope")
    with pytest.raises(SwapKLError, match="unknown gap definition 'min'"):
        plot_gap_trajectory(agg_path, png, pdf, model="toy", gap="min")
    with pytest.raises(SwapKLError, match="toy step5"):
        plot_heatmaps(agg_path, png, pdf, model="toy", revision="step5")
    assert not png.exists() and not pdf.exists()


def test_training_log_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("step,loss\n0,1.0\n")
    with pytest.raises(SwapKLError, match="lacks column.*heldout_loss") as e:
        plot_training_curves({"x": bad}, tmp_path / "t.png", tmp_path / "t.pdf")
    assert str(bad) in str(e.value)
    with pytest.raises(SwapKLError, match="not found"):
        plot_training_curves({"x": tmp_path / "gone.csv"}, tmp_path / "t.png", tmp_path / "t.pdf")


def test_heatmap_matrices(agg_path):
    agg = read_aggregate(agg_path)
    d = agg[(agg["kind"] == "directed") & (agg["revision"] == "step1000")]
    R, I = kl_matrices(d, L)
    row = d[(d["protocol"] == "replacement") & (d["layer_i"] == 3) & (d["layer_j"] == 1)]
    assert R[3, 1] == row["kl_mean"].iloc[0]  # r(3<-1): slot 3 runs block 1
    assert np.array_equal(I, I.T, equal_nan=True)
    assert np.isnan(R[0, 5]) and np.isnan(np.diag(R)).all()  # |i-j| = 5 not probed


def test_deletion_vs_bi_data_and_spearman(agg_path):
    m = deletion_and_bi(read_aggregate(agg_path), "toy", "step1000")
    assert m["layer"].tolist() == list(range(L))
    x, y = m["bi"].to_numpy(), m["deletion_kl"].to_numpy()
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))  # no ties in this data
    assert spearman_kendall(x, y, min_points=3)[0] == pytest.approx(np.corrcoef(rx, ry)[0, 1])
    assert np.isnan(spearman_kendall([1, 2], [2, 1], min_points=3)[0])


def test_step_axis_shows_step0_left_of_first_step():
    ax = Figure().subplots()
    set_step_axis(ax, [0, 1000, 16000, 143000])
    assert ax.get_xscale() == "symlog"
    x0, x1, x2 = ax.transData.transform([(0, 0), (1000, 0), (143000, 0)])[:, 0]
    assert x0 < x1 < x2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1k", "16k", "143k"]
    ax2 = Figure().subplots()
    set_step_axis(ax2, [1000, 2000, 143000])
    assert ax2.get_xscale() == "log"


def test_step_axis_is_linear_over_a_narrow_range():
    """The demo's steps 0, 100, 400: on the symlog axis 0-100 and 100-400 took about the same width; on the linear
    axis the gaps are in proportion to the steps."""
    ax = Figure().subplots()
    assert set_step_axis(ax, [0, 100, 400]) == "x: linear step axis" and ax.get_xscale() == "linear"
    x0, x1, x2 = ax.transData.transform([(0, 0), (100, 0), (400, 0)])[:, 0]
    assert (x2 - x1) == pytest.approx(3 * (x1 - x0))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "100", "400"]


def test_cli_figures(agg_path, tmp_path):
    parser = argparse.ArgumentParser()
    figures_command.add_parser(parser.add_subparsers())
    png, pdf = tmp_path / "h.png", tmp_path / "h.pdf"
    args = parser.parse_args(["figures", "heatmaps", "--aggregate", str(agg_path), "--model", "toy",
                              "--revision", "step0", "--out-png", str(png), "--out-pdf", str(pdf)])
    args.func(args)
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0
    with pytest.raises(SwapKLError, match="NAME=CSV"):
        figures_command.parse_logs(["demo.csv"])


def test_heatmap_cells_whose_interval_contains_a_threshold_are_marked():
    """A cell is marked where its KL interval contains 0.05 or 0.10 (low < t <= high), in both matrices of the
    interchange (symmetric) and only at (i, j) for replacement."""
    from swapkl.figures.protocol.heatmaps import undecided_cells

    d = pd.DataFrame([
        {"protocol": "replacement", "layer_i": 0, "layer_j": 1, "kl_ci_low": 0.04, "kl_ci_high": 0.06},  # 0.05
        {"protocol": "replacement", "layer_i": 1, "layer_j": 0, "kl_ci_low": 0.06, "kl_ci_high": 0.09},  # none
        {"protocol": "replacement", "layer_i": 1, "layer_j": 2, "kl_ci_low": 0.09, "kl_ci_high": 0.10},  # 0.10
        {"protocol": "interchange", "layer_i": 0, "layer_j": 2, "kl_ci_low": 0.2, "kl_ci_high": 0.3},  # none
        {"protocol": "interchange", "layer_i": 0, "layer_j": 1, "kl_ci_low": 0.01, "kl_ci_high": 0.2},  # both
    ])
    R, I = undecided_cells(d, 3)
    assert sorted(zip(*np.nonzero(R))) == [(0, 1), (1, 2)]
    assert sorted(zip(*np.nonzero(I))) == [(0, 1), (1, 0)]


def test_off_scale_costs_are_written_as_the_axis_reads_them():
    """The pruning-cost figure writes an off-scale perplexity change as a percentage with separators (issue 50:
    Gemma-3's random draws read "7.08e+06 ->")."""
    from swapkl.figures.pruning.cost import _value_text

    assert _value_text(7_080_000.4, "delta_ppl_pct") == "+7,080,000%"
    assert _value_text(42.25, "delta_ppl_pct") == "+42.2%"
    assert _value_text(0.012345, "kl_mean") == "0.0123"


def test_the_one_direction_gap_figure_states_how_far_it_is_from_the_max_direction_one():
    """The two gap figures can look identical; the one-direction figure says by how much they differ (issue 50)."""
    import pandas as pd

    from swapkl.figures.protocol.trajectory import direction_difference

    traj = pd.DataFrame({"gap_mean": [0.02, 0.04], "gap_fwd_mean": [0.02, 0.039]})
    assert direction_difference(traj, "gap_fwd") == ("the mean gap differs from the max-direction figure's by at "
                                                     "most 0.001 nats (2.5% of its largest value)")
    same = pd.DataFrame({"gap_mean": [0.02], "gap_fwd_mean": [0.02]})
    assert direction_difference(same, "gap_fwd") == "the mean gap equals the max-direction figure's everywhere"


def test_the_one_direction_ratio_figure_states_how_far_its_medians_are_from_the_max_direction_ones():
    """The I/R-by-distance twins can look identical too; the one-direction figure states the largest difference of
    its medians, computed here by hand from three pairs (issue 50)."""
    from swapkl.figures.protocol.ratio import ratio_by_distance, ratio_difference

    pairs = pd.DataFrame({"revision": ["s"] * 3, "distance": [1, 1, 2], "ratio_ir": [0.2, 0.4, 0.5],
                          "ratio_ir_fwd": [0.2, 0.5, 0.5]})
    stats = ratio_by_distance(pairs, "ratio_ir_fwd")
    # distance 1: median 0.35 (fwd) against 0.30 (max); distance 2: 0.5 against 0.5
    assert ratio_difference(pairs, stats) == "each median differs from the max-direction figure's by at most 0.05"
    same = pairs.assign(ratio_ir_fwd=pairs["ratio_ir"])
    assert ratio_difference(same, ratio_by_distance(same, "ratio_ir_fwd")).startswith("each median equals")


def test_a_panel_whose_values_span_more_than_a_hundredfold_gets_a_symmetric_log_axis():
    """The pruning-difference panel of make real put SmolLM2's differences (a few points) flat on zero beside
    Gemma-3's (thousands): such a spread gets a symmetric-log axis whose linear range is the power of ten at or
    below the lower quartile of the magnitudes; a narrower spread keeps its linear axis."""
    import matplotlib.pyplot as plt

    from swapkl.figures.style import symlog_if_spread

    fig, (wide, narrow) = plt.subplots(1, 2)
    assert symlog_if_spread(wide, [-3200.0, -450.0, 3.0, -5.0, 0.0, np.nan, 240.0]) == \
        "y: symmetric log, linear within \u00b11"
    assert wide.get_yscale() == "symlog"
    assert symlog_if_spread(narrow, [-0.43, 0.1, -0.04, 0.02]) == ""
    assert narrow.get_yscale() == "linear"
    plt.close(fig)
