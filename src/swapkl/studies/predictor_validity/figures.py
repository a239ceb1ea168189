"""The predictor-validity figure (results/predictor_validity/{model}/{revision}.parquet): each pair's swap score
against the cost of removing the cheaper of its blocks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from swapkl.figures.palette import BLUE, VERMILLION
from swapkl.figures.select import table_frame
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure


def plot_predictor_validity(table: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """Each pair's swap score against the cost of removing the cheaper of its two blocks, per protocol."""
    df = table_frame(table)
    pairs, summary = df[df["kind"] == "pair"], df[df["kind"] == "summary"].set_index("protocol")
    model, revision = df["model"].iloc[0], df["revision"].iloc[0]
    with figure_style():
        fig = new_figure(8.4, 3.6)
        axes = fig.subplots(1, 2)
        for ax, (protocol, col, colour) in zip(axes, (("replacement", "d_repl_max", VERMILLION),
                                                      ("interchange", "d_inter", BLUE))):
            ax.scatter(pairs[col], pairs["cost"], s=14, color=colour)
            ax.set_xscale("log")
            ax.set_xlabel(f"{protocol} KL of the pair (nats)")
            ax.set_ylabel("\u0394PPL % removing the cheaper block")
            s = summary.loc[protocol]
            ax.set_title(f"{protocol}: \u03c1 = {s['spearman']:.3f} (n = {int(s['n_pairs'])})", fontsize=9)
        fit_title(fig, f"{model}@{revision}: does the swap score predict the removal cost?")
        add_note(fig, f"cost: relative perplexity increase when the cheaper of the pair's two blocks is removed "
                      f"alone (base perplexity {df['base_ppl'].iloc[0]:.2f}); \u03c1: Spearman")
        save_figure(fig, out_png, out_pdf)
