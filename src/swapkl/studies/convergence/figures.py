"""The prompt-set convergence figure (results/convergence.parquet): rank agreement and top-pair stability against
the number of prompts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from swapkl.figures.palette import cycled
from swapkl.figures.select import table_frame
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure


def plot_convergence(table: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """Rank agreement with the full prompt set and top-pair stability against the number of prompts. The axes
    run from 0 (rank agreement: from its lowest value if below 0) to 1, so that draw-to-draw noise near 1 is not
    magnified; the point at the full set (n = n_seqs), 1 by construction, is drawn hollow."""
    df = table_frame(table)
    with figure_style():
        fig = new_figure(10.0, 3.8)
        axes = fig.subplots(1, 2)
        groups = list(df.groupby(["model", "revision", "protocol"], sort=True))
        for k, ((model, revision, protocol), sub) in enumerate(groups):
            colour = cycled(k)
            label = f"{model}@{revision} {protocol}"
            # series side by side on the log axis, each its own line style: lines that coincide (rho = 1) stay
            # visible
            shift = 1.0 + 0.035 * (k - (len(groups) - 1) / 2)
            style = dict(color=colour, marker="os^Dv"[k % 5], ls=("-", "--", ":", "-.")[k % 4], markersize=4)
            sub = sub.sort_values("n")
            part = sub[sub["n"] < sub["n_seqs"]]
            full = sub[sub["n"] >= sub["n_seqs"]]
            axes[0].errorbar(part["n"] * shift, part["spearman_median"],
                             yerr=[part["spearman_median"] - part["spearman_q05"],
                                   part["spearman_q95"] - part["spearman_median"]], capsize=3, label=label, **style)
            axes[1].plot(part["n"] * shift, part["top_pair_share"], label=label, **style)
            for ax, col in ((axes[0], "spearman_median"), (axes[1], "top_pair_share")):
                ax.plot(full["n"] * shift, full[col], ls="none", marker=style["marker"], markersize=5,
                        markerfacecolor="white", markeredgecolor=colour, label="_full set")
        axes[0].set_ylabel("Spearman \u03c1 with the full-set ranking")
        axes[1].set_ylabel("share of draws finding the best pair")
        sizes = sorted(set(df["n"]))
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xticks(sizes, [str(n) for n in sizes])
            ax.minorticks_off()
            ax.set_xlabel("windows (prompts) in the subsample")
        axes[0].set_ylim(min(0.0, float(df["spearman_q05"].min()) - 0.05), 1.05)
        axes[1].set_ylim(-0.02, 1.05)
        axes[0].legend(frameon=False, fontsize=7, loc="lower right")
        fit_title(fig, "How many prompts does a stable pair ranking need?")
        lowest = df[df["n"] < df["n_seqs"]]["spearman_median"]
        add_note(fig, "subsamples drawn without replacement from the stored per-sequence sums; bars: 5-95% of draws "
                      "(within the marker where the draws agree that closely); series side by side at each n; "
                      "hollow: the full set (n = all windows), where both are 1 by construction"
                      + (f"; lowest median \u03c1 below the full set: {lowest.min():.4f}" if len(lowest) else ""))
        save_figure(fig, out_png, out_pdf)
