"""The domain-slices figure (results/domain_slices.parquet): the pruning cost on the reference text against the
second corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from swapkl.figures.guide_style import guide_look
from swapkl.figures.palette import GREY
from swapkl.figures.select import table_frame
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.pruning.guides.guide_registry import registered


def plot_domain_slices(table: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """Relative perplexity increase of every pruning configuration on the reference text against the second
    corpus, one panel per slice, with Spearman's rho."""
    df = table_frame(table)
    summaries = df[df["kind"] == "summary"].reset_index(drop=True)
    configs = df[df["kind"] == "config"]
    order = {g.name: k for k, g in enumerate(registered())}  # the pruning figures' order, looks and labels
    guides = sorted(set(configs["guide"]), key=lambda g: (order.get(g, len(order)), g))
    with figure_style():
        fig = new_figure(3.6 * len(summaries) + 2.6, 3.8)
        axes = np.atleast_1d(fig.subplots(1, len(summaries)))
        for ax, (_, s) in zip(axes, summaries.iterrows()):
            rows = configs[configs["model"] == s["model"]]
            for guide in guides:
                g = rows[rows["guide"] == guide]
                look = guide_look(guide) if guide in order else None
                ax.scatter(g["delta_ppl_pct_reference"], g["delta_ppl_pct_slice"], s=18,
                           color=look.colour if look else GREY, marker=look.marker if look else "o",
                           label=look.label if look else guide)
            ax.set_xlabel(f"\u0394PPL % on {s['reference']}'s text")
            ax.set_ylabel(f"\u0394PPL % on {s['model']}'s text")
            ax.set_title(f"{s['model']}: \u03c1 = {s['spearman']:.3f} (n = {int(s['n_configs'])})", fontsize=9)
        shown = {}  # each guide once, in the order the panels drew them
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                shown.setdefault(label, handle)
        fig.legend(list(shown.values()), list(shown), loc="outside right center", frameon=False, fontsize=6, title="guide",
                   title_fontsize=7)
        fit_title(fig, "Pruning cost on two corpora: is the ranking of removals the same?")
        add_note(fig, "each dot: one guide at one budget (random draws: their mean); the same removed blocks "
                      "evaluated on both texts")
        save_figure(fig, out_png, out_pdf)
