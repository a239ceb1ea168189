"""The position-encoding ablation (results/pe_ablation.parquet): I/R ratio against pair distance, one line per
encoding, one panel per depth, beside the paper's 152M 16-layer medians."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from swapkl.figures.palette import GREY, PE_COLOURS
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.tables.schemas import PE_ABLATION_SCHEMA, read_frame

PE_ORDER = ("rope", "learned", "alibi")
ABLATION_LABELS = {"rope": "rotary (GPT-NeoX)", "learned": "learned table (GPT-2)", "alibi": "ALiBi (BLOOM)"}
#: the paper's from-scratch 152M, 16-layer models at 2B tokens (Garcia 2026, appendix "Controlled PE ablation"):
#: median I/R ratio by pair distance
PAPER_152M_MEDIAN = {"rope": {1: 0.346, 2: 0.798, 3: 1.163}, "learned": {1: 0.563, 2: 1.025, 3: 1.236}}


def plot_pe_ablation(table, out_png, out_pdf) -> None:
    """Median (solid, filled) and mean (dotted, open) I/R ratio d_inter / d_repl_max over the pairs at each
    distance, per position encoding; one panel per depth; the paper's 152M medians as grey-edged diamonds."""
    df = table if isinstance(table, pd.DataFrame) else read_frame(table, PE_ABLATION_SCHEMA, "pe_ablation")
    depths = sorted(int(d) for d in df["n_layers"].unique())
    with figure_style():
        fig = new_figure(3.6 * len(depths) + 2.6, 4.2)
        axes = np.atleast_1d(fig.subplots(1, len(depths), sharey=True, squeeze=False)[0])
        for ax, depth in zip(axes, depths):
            sub = df[df["n_layers"] == depth]
            encodings = [e for e in PE_ORDER if e in set(sub["position_encoding"])]
            for k, pe in enumerate(encodings):
                rows = sub[sub["position_encoding"] == pe].sort_values("distance")
                x = rows["distance"].to_numpy(dtype=float) + (k - (len(encodings) - 1) / 2) * 0.06
                colour = PE_COLOURS[pe]
                ax.plot(x, rows["ratio_ir_median"].to_numpy(dtype=float), "-o", color=colour,
                        label=f"{ABLATION_LABELS[pe]}, median")
                ax.plot(x, rows["ratio_ir_mean"].to_numpy(dtype=float), ":o", color=colour, markerfacecolor="white",
                        label=f"{ABLATION_LABELS[pe]}, mean")
            for pe, points in PAPER_152M_MEDIAN.items():
                ax.scatter(list(points), list(points.values()), marker="D", s=30, facecolor=PE_COLOURS[pe],
                           edgecolor=GREY, linewidths=1.2, alpha=0.45, zorder=4,
                           label=f"paper 152M, 16 blocks: {ABLATION_LABELS[pe].split(' (')[0]}, median")
            ax.axhline(1.0, color=GREY, linestyle="--", linewidth=1.0)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel("pair distance |i \u2212 j| (blocks)")
            ax.set_title(f"{depth} blocks")
        axes[0].set_ylabel("I/R ratio d_inter / d_repl")
        axes[0].set_ylim(bottom=0)
        fig.legend(*axes[0].get_legend_handles_labels(), title="position encoding", frameon=False,
                   loc="outside right center", fontsize=7)
        fit_title(fig, "Position-encoding ablation: models trained from scratch")
        add_note(fig, "same width, seed, data and schedule for every encoding; ratio < 1: swapping two blocks "
                      "disturbs the output less than running one block's weights in the other's place. "
                      "Diamonds: the paper's much larger, longer-trained models, for orientation only")
        save_figure(fig, out_png, out_pdf)


