"""The RoPE counterfactual's figure (results/rope_counterfactual.parquet): each adjacent pair's I/R ratio with rotary
embeddings on and off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.palette import BLUE, GREY, ORANGE
from swapkl.figures.select import table_frame
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure


def plot_rope_counterfactual(table: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str,
                             revision: str) -> None:
    """Per-pair I/R ratio of ``model`` at ``revision`` with rotary embeddings on and off (paired dots), with the
    sign test in the note."""
    df = table_frame(table)
    df = df[(df["model"] == model) & (df["revision"] == revision)]
    if df.empty:
        raise SwapKLError(f"the RoPE counterfactual table has no rows for {model} {revision}")
    pairs, summary = df[df["kind"] == "pair"], df[df["kind"] == "summary"].iloc[0]
    with figure_style():
        fig = new_figure(6.4, 4.0)
        ax = fig.subplots()
        x = np.arange(len(pairs))
        for k, (_, r) in enumerate(pairs.iterrows()):
            ax.plot([k, k], [r["ratio_ir_on"], r["ratio_ir_off"]], color=GREY, linewidth=0.8)
        ax.scatter(x, pairs["ratio_ir_on"], color=BLUE, label="RoPE on", zorder=3, s=22)
        ax.scatter(x, pairs["ratio_ir_off"], color=ORANGE, label="RoPE off (cos = 1, sin = 0)", zorder=3, s=22)
        ax.set_xticks(x, [f"{int(i)}\u2013{int(j)}" for i, j in zip(pairs["layer_i"], pairs["layer_j"])], rotation=90,
                      fontsize=6)
        ax.axhline(1.0, color=GREY, linestyle="--", linewidth=1.0)
        ax.set_xlabel("adjacent pair")
        ax.set_ylabel("I/R ratio d_inter / d_repl")
        ax.set_title(f"{model}@{revision}: the protocol gap without rotary position information")
        ax.legend(frameon=False, loc="best")
        add_note(fig, f"mean I/R {summary['ratio_ir_mean_on']:.3f} (on) vs {summary['ratio_ir_mean_off']:.3f} (off); "
                      f"gap larger without RoPE on {int(summary['n_larger_gap'])} of {int(summary['n_pairs'])} pairs, "
                      f"exact sign test p = {summary['sign_test_p']:.3g} (two-sided)")
        save_figure(fig, out_png, out_pdf)
