"""Protocol gap along training: mean, median, p75 and max of the per-pair gap vs training step, with
the relative gap, the mean and median I/R ratio and the largest pair's share of the mean gap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from swapkl.probes.aggregate import trajectory
from swapkl.errors import SwapKLError
from swapkl.probes.aggregate import rows
from swapkl.figures.select import as_frame, with_duplicate_note
from swapkl.figures.stepaxis import set_step_axis
from swapkl.figures.palette import BLUE, GREEN, ORANGE, VERMILLION
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.probes.pairs import parse_pair_set
from swapkl.probes.pair_statistics import GAP_DEFINITIONS

#: what d_repl means in each gap definition (titles and notes)
GAP_LABELS = {"max": "d_repl = max of the two replacement directions",
              "fwd": "d_repl = r(i←j) for i < j only (one direction, as the paper's Pythia trajectory)"}

#: the figure titles' account of d_repl: the two gap figures of a model must not read alike
GAP_TITLES = {"max": "replacement KL (larger of both directions) − interchange KL",
              "fwd": "replacement KL in one direction only (r(i←j),\u00a0i\u00a0<\u00a0j) − interchange KL"}


def pair_set_title(name: str, n_pairs) -> str:
    kind, k = parse_pair_set(name)
    desc = {"adjacent": "adjacent pairs, |i−j| = 1", "all": "all pairs"}.get(kind, f"pairs with |i−j| ≤ {k}")
    return f"{desc} (n = {int(n_pairs)})"


def plot_gap_trajectory(agg: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str, gap: str = "max") -> None:
    """Gap d_repl - d_inter vs training step for ``model``, one column per pair set.

    ``gap`` picks the replacement distance: ``"max"`` (both directions, columns ``gap_*``) or
    ``"fwd"`` (r(i<-j) for i < j, columns ``gap_fwd_*``). Row 1: mean (with its 95% bootstrap CI
    band), median and 75th percentile of the per-pair gap; row 2: the maximum; row 3 (dimensionless): mean and
    median I/R ratio and the relative gap of the means (mean gap / mean d_repl); row 4: the largest pair's share
    of the summed gap (a share, on its own axis: it exceeds 1 when other pairs' gaps are negative). Duplicate
    revisions and revisions without a step are left out.
    """
    if gap not in GAP_DEFINITIONS:
        raise SwapKLError(f"unknown gap definition {gap!r}: choose from {', '.join(GAP_DEFINITIONS)}")
    g, d, r = GAP_DEFINITIONS[gap]
    agg = as_frame(agg)
    rows(agg, "summary", model)
    traj = trajectory(agg, model)
    if traj.empty:
        raise SwapKLError(f"aggregate has no summary rows with a training step for {model} "
                          "(after leaving out duplicate revisions)")
    sets = list(dict.fromkeys(traj["pair_set"]))
    with figure_style():
        fig = new_figure(3.6 * len(sets) + 0.6, 8.0)
        axes = fig.subplots(4, len(sets), sharex=True, squeeze=False,
                            gridspec_kw={"height_ratios": [2.2, 1, 1.4, 1]})
        desc = ""
        for c, s in enumerate(sets):
            t = traj[traj["pair_set"] == s]
            x = t["step"].to_numpy(dtype=np.float64)
            top, middle, bottom, shares = axes[0, c], axes[1, c], axes[2, c], axes[3, c]
            top.fill_between(x, t[f"{g}_mean_ci_low"].to_numpy(dtype=float),
                             t[f"{g}_mean_ci_high"].to_numpy(dtype=float), color=BLUE, alpha=0.2,
                             linewidth=0, label="95% CI of mean")
            top.plot(x, t[f"{g}_mean"], "-o", color=BLUE, label="mean")
            top.plot(x, t[f"{g}_median"], "--s", color=GREEN, label="median")
            top.plot(x, t[f"{g}_p75"], ":^", color=ORANGE, label="75th percentile")
            middle.plot(x, t[f"{g}_max"], "-D", color=VERMILLION, label="max")
            with np.errstate(divide="ignore", invalid="ignore"):
                relative = t[f"{g}_mean"].to_numpy(dtype=float) / t[f"{d}_mean"].to_numpy(dtype=float)
            bottom.plot(x, t[f"{r}_mean"].to_numpy(dtype=float), "-o", color=BLUE, label="mean I/R")
            bottom.plot(x, t[f"{r}_median"].to_numpy(dtype=float), "--s", color=GREEN, label="median I/R")
            bottom.plot(x, relative, ":^", color=ORANGE, label="relative gap (mean gap / mean d_repl)")
            shares.plot(x, t[f"{g}_max_share"].to_numpy(dtype=float), "-.D", color=VERMILLION,
                        label="largest pair's share of the summed gap")
            shares.axhline(1.0, color="grey", linewidth=0.8, linestyle=":", zorder=0)
            drawn = np.concatenate([t[f"{r}_mean"].to_numpy(dtype=float), relative])
            finite = drawn[np.isfinite(drawn)]
            low, high = (finite.min(), finite.max()) if len(finite) else (0.0, 1.0)
            bottom.set_ylim(min(0.0, 1.1 * low), max(1.0, high) * 1.6)  # zero in view, room for the legend
            n = t["n_pairs"].iloc[-1]
            top.set_title(pair_set_title(s, n))
            for ax in (top, middle, bottom, shares):
                ax.axhline(0.0, color="black", linewidth=0.8, zorder=0)
                desc = set_step_axis(ax, x)
            shares.set_xlabel("training step")
            if c == 0:
                top.set_ylabel("per-pair gap d_repl − d_inter (nats)")
                middle.set_ylabel("max gap (nats)")
                bottom.set_ylabel("ratio (dimensionless)")
                shares.set_ylabel("largest pair's\nshare of the\nsummed gap")
                for ax in (top, middle):
                    ax.legend(loc="best", frameon=False, fontsize="small")
                bottom.legend(loc="upper center", ncol=2, frameon=False, fontsize="x-small")
        first = traj.iloc[0]
        fit_title(fig, f"{model}: protocol gap over training, {GAP_TITLES[gap]}")
        note = (f"{GAP_LABELS[gap]}; KL(p_base ‖ p_variant) in nats; "
                f"{int(first['n_seqs'])} windows, {int(first['n_tokens']):,} tokens scored; CI: percentile "
                f"bootstrap over windows, {int(first['n_boot'])} resamples; {desc}")
        if gap != "max":
            note += "; " + direction_difference(traj, g)
        add_note(fig, with_duplicate_note(note, agg, model))
        save_figure(fig, out_png, out_pdf)



def direction_difference(traj: pd.DataFrame, g: str) -> str:
    """How far this figure's mean gap is from the max-direction figure's, stated so that two figures that look
    alike are not taken for a bug (issue 50)."""
    diff = traj["gap_mean"].to_numpy(dtype=float) - traj[f"{g}_mean"].to_numpy(dtype=float)
    return twin_difference(diff, "the mean gap", " nats", float(np.abs(traj["gap_mean"]).max()))


def twin_difference(diff: np.ndarray, subject: str, unit: str = "", scale: float | None = None) -> str:
    """``subject`` against the max-direction figure's, from their differences ``diff`` (NaN where either is
    missing): the largest absolute one, with its share of ``scale`` where given."""
    diff = diff[np.isfinite(diff)]
    if not len(diff):
        return f"the max-direction figure's value of {subject} is not available"
    largest = float(np.abs(diff).max())
    if largest == 0.0:
        return f"{subject} equals the max-direction figure's everywhere"
    share = "" if scale is None else f" ({100 * largest / max(scale, 1e-300):.2g}% of its largest value)"
    return f"{subject} differs from the max-direction figure's by at most {largest:.3g}{unit}{share}"


# the gap of both replacement directions (the larger one), and of one direction (r(i<-j) for i < j), along training
