"""The snowball construction (results/snowball.parquet): each block's block influence beside the accuracy of
the model without it, so that the block cosine calls the most removable is seen to be one the model cannot
lose (swapkl.relevance.snowball_table)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.figures.palette import BLUE, GREY, VERMILLION
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.tables.schemas import SNOWBALL_SCHEMA, read_frame


def plot_snowball(table, out_png, out_pdf) -> None:
    """Left: BI per block (the critical block in vermillion). Right: accuracy with that block removed, with
    the full model's accuracy (dashed) and chance (dotted)."""
    df = table if isinstance(table, pd.DataFrame) else read_frame(table, SNOWBALL_SCHEMA, "snowball")
    df = df.sort_values("block")
    blocks = df["block"].to_numpy(dtype=int)
    colours = [VERMILLION if c else BLUE for c in df["critical"]]
    first = df.iloc[0]
    with figure_style():
        fig = new_figure(8.0, 3.8)
        left, right = fig.subplots(1, 2, sharex=True)
        bi = df["bi"].to_numpy(dtype=float)
        left.bar(blocks, bi, color=colours)
        for x, v in zip(blocks, bi):
            left.text(x, v, f"{v:.2f}", ha="center", va="bottom", fontsize=7)
        left.set_ylim(0, 1.12 * bi.max())
        left.set_ylabel("block influence, 1 \u2212 cos(input, output)")
        left.set_title("cosine: how much the block changes its input")
        acc = 100 * df["accuracy_without_block"].to_numpy(dtype=float)
        right.bar(blocks, acc, color=colours)
        for x, v in zip(blocks, acc):
            right.text(x, v + 1, f"{v:.0f}%", ha="center", va="bottom", fontsize=7)
        right.axhline(100 * float(first["accuracy"]), color=GREY, linestyle="--", label="full model")
        right.axhline(100 * float(first["random_baseline"]), color=GREY, linestyle=":", label="chance")
        right.set_ylabel("accuracy without the block (%)")
        right.set_ylim(0, 112)
        right.set_title("accuracy when the block is removed")
        right.legend(loc="upper right", bbox_to_anchor=(1.0, -0.2), ncol=2, frameon=False, fontsize=7)
        for ax in (left, right):
            ax.set_xlabel("block")
            ax.set_xticks(blocks)
        critical = int(blocks[np.flatnonzero(df["critical"].to_numpy())[0]])
        fit_title(fig, f"Snowball construction: block {critical} has the lowest BI "
                       f"({float(first['eps']):g}) yet removing it takes accuracy to "
                       f"{100 * float(df.loc[df['critical'], 'accuracy_without_block'].iloc[0]):.0f}%")
        add_note(fig, f"hand-set 7-block LLaMA on {first['task']} ({int(first['n_docs'])} documents); vermillion: "
                      "the critical block, whose tiny update blocks 3-4 amplify; the other blocks also write large "
                      "updates in coordinates the prediction ignores, which raises their BI")
        save_figure(fig, out_png, out_pdf)


