"""Protocol gap along training: mean, median, p75 and max of the per-pair gap vs training step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from swapkl.aggregate import trajectory
from swapkl.errors import SwapKLError
from swapkl.figures.select import as_frame, duplicate_note, rows
from swapkl.figures.stepaxis import set_step_axis
from swapkl.figures.style import (BLUE, GREEN, ORANGE, VERMILLION, add_note, figure_style,
                                  new_figure, save_figure)
from swapkl.pairs import parse_pair_set


def pair_set_title(name: str, n_pairs) -> str:
    kind, k = parse_pair_set(name)
    desc = {"adjacent": "adjacent pairs, |i−j| = 1", "all": "all pairs"}.get(kind, f"pairs with |i−j| ≤ {k}")
    return f"{desc} (n = {int(n_pairs)})"


def plot_gap_trajectory(agg: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str) -> None:
    """Gap d_repl - d_inter vs training step for ``model``, one column per pair set.

    Top row: mean (with its 95% bootstrap CI band), median and 75th percentile of the per-pair
    gap; bottom row: the maximum. Duplicate revisions and revisions without a step are left out.
    """
    agg = as_frame(agg)
    rows(agg, "summary", model)
    traj = trajectory(agg, model)
    if traj.empty:
        raise SwapKLError(f"aggregate has no summary rows with a training step for {model} "
                          "(after leaving out duplicate revisions)")
    sets = list(dict.fromkeys(traj["pair_set"]))
    with figure_style():
        fig = new_figure(3.6 * len(sets) + 0.6, 5.0)
        axes = fig.subplots(2, len(sets), sharex=True, squeeze=False,
                            gridspec_kw={"height_ratios": [2.2, 1]})
        desc = ""
        for c, s in enumerate(sets):
            t = traj[traj["pair_set"] == s]
            x = t["step"].to_numpy(dtype=np.float64)
            top, bottom = axes[0, c], axes[1, c]
            top.fill_between(x, t["gap_mean_ci_low"].to_numpy(dtype=float),
                             t["gap_mean_ci_high"].to_numpy(dtype=float), color=BLUE, alpha=0.2,
                             linewidth=0, label="95% CI of mean")
            top.plot(x, t["gap_mean"], "-o", color=BLUE, label="mean")
            top.plot(x, t["gap_median"], "--s", color=GREEN, label="median")
            top.plot(x, t["gap_p75"], ":^", color=ORANGE, label="75th percentile")
            bottom.plot(x, t["gap_max"], "-D", color=VERMILLION, label="max")
            n = t["n_pairs"].iloc[-1]
            top.set_title(pair_set_title(s, n))
            for ax in (top, bottom):
                ax.axhline(0.0, color="black", linewidth=0.8, zorder=0)
                desc = set_step_axis(ax, x)
            bottom.set_xlabel("training step")
            if c == 0:
                top.set_ylabel("per-pair gap d_repl − d_inter (nats)")
                bottom.set_ylabel("max gap (nats)")
                top.legend(loc="best", frameon=False)
                bottom.legend(loc="best", frameon=False)
        first = traj.iloc[0]
        fig.suptitle(f"{model}: protocol gap (replacement KL − interchange KL) over training")
        note = (f"d_repl = max of the two replacement directions; KL(p_base ‖ p_variant) in nats; "
                f"{int(first['n_seqs'])} sequences, {int(first['n_tokens'])} tokens; CI: percentile "
                f"bootstrap over sequences, {int(first['n_boot'])} resamples; {desc}")
        dup = duplicate_note(agg, model)
        add_note(fig, note + (f"\n{dup}" if dup else ""))
        save_figure(fig, out_png, out_pdf)
