"""I/R ratio (d_inter / d_repl) by pair distance |i-j|, one line per checkpoint."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from swapkl.hub.duplicate_revisions import revision_order
from swapkl.errors import SwapKLError
from swapkl.probes.aggregate import rows
from swapkl.figures.select import as_frame, with_duplicate_note
from swapkl.figures.style import SEQUENTIAL_CMAP, add_note, figure_style, new_figure, save_figure
from swapkl.figures.palette import GREY
from swapkl.figures.protocol.trajectory import GAP_LABELS, twin_difference
from swapkl.probes.pair_statistics import GAP_DEFINITIONS

MAX_LEGEND = 10  # checkpoints listed in the legend; beyond that every k-th one
MAX_POINTS = 6  # up to this many checkpoints, every pair is drawn as a dot next to the median
FEW_PAIRS = 3  # a median of fewer pairs than this is drawn hollow
DODGE = 0.11  # horizontal offset between checkpoints' dots and medians (in distance units)


def ratio_by_distance(pairs: pd.DataFrame, column: str = "ratio_ir") -> pd.DataFrame:
    """Median and quartiles of ``column`` (ratio_ir or ratio_ir_fwd) per (revision, distance) over pairs
    with a finite ratio."""
    p = pairs[np.isfinite(pairs[column].to_numpy(dtype=float, na_value=np.nan))]
    g = p.groupby(["revision", "distance"], sort=False)[column]
    out = g.agg(median="median", q25=lambda x: np.quantile(x, 0.25),
                q75=lambda x: np.quantile(x, 0.75), n="size").reset_index()
    return out


def plot_ratio_by_distance(agg: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str, gap: str = "max") -> None:
    """Median I/R ratio d_inter / d_repl over the pairs at each distance |i-j|, one line per
    (non-duplicate) checkpoint of ``model``, coloured from early (dark) to late (yellow); with at
    most :data:`MAX_POINTS` checkpoints every pair is also drawn as a dot. ``gap`` picks d_repl:
    ``"max"`` (both directions) or ``"fwd"`` (r(i<-j) for i < j)."""
    if gap not in GAP_DEFINITIONS:
        raise SwapKLError(f"unknown gap definition {gap!r}: choose from {', '.join(GAP_DEFINITIONS)}")
    column = GAP_DEFINITIONS[gap][2]
    agg = as_frame(agg)
    pairs = rows(agg, "pair", model, with_duplicates=False)
    stats = ratio_by_distance(pairs, column)
    revs = pairs[["revision", "step"]].drop_duplicates()
    order = sorted(zip(revs["revision"], revs["step"]),
                   key=lambda rs: revision_order(None if pd.isna(rs[1]) else int(rs[1]), rs[0]))
    cmap = matplotlib.colormaps[SEQUENTIAL_CMAP]
    n = len(order)
    every = max(1, int(np.ceil(n / MAX_LEGEND)))
    with figure_style():
        fig = new_figure(6.4, 5.2)
        ax, ax_n = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3.2, 1]})
        for k, (rev, _) in enumerate(order):
            s = stats[stats["revision"] == rev].sort_values("distance")
            if s.empty:
                continue
            colour = cmap(0.9 * k / max(n - 1, 1))
            label = rev if (k % every == 0 or k == n - 1) else None
            shift = (k - (n - 1) / 2) * DODGE if n <= MAX_POINTS else 0.0
            x = s["distance"].to_numpy(dtype=float) + shift
            if n <= MAX_POINTS:
                p = pairs[pairs["revision"] == rev]
                ax.scatter(p["distance"].to_numpy(dtype=float) + shift,
                           p[column].to_numpy(dtype=float, na_value=np.nan), s=5, color=colour,
                           alpha=0.35, linewidths=0)
            ax.plot(x, s["median"].to_numpy(dtype=float), "-", color=colour, label=label)
            few = s["n"].to_numpy() < FEW_PAIRS  # a median of one or two pairs: hollow
            size = 3 if len(x) > 12 else 4.5
            ax.plot(x[~few], s["median"].to_numpy(dtype=float)[~few], "o", color=colour, markersize=size,
                    markeredgecolor="white", markeredgewidth=0.5)
            ax.plot(x[few], s["median"].to_numpy(dtype=float)[few], "o", color=colour, markersize=size + 1,
                    markerfacecolor="white", markeredgewidth=1.0)
        ax.axhline(1.0, color=GREY, linestyle="--", linewidth=1.0, label="d_inter = d_repl")
        counts = stats.groupby("distance")["n"].max().sort_index()
        ax_n.bar(counts.index.to_numpy(dtype=float), counts.to_numpy(), width=0.6, color=GREY)
        for d, c in counts.items():
            ax_n.annotate(str(int(c)), (d, c), xytext=(0, 1), textcoords="offset points", ha="center",
                          va="bottom", fontsize=6.5)
        ax_n.set_ylim(0, counts.max() * 1.35)
        ax_n.set_ylabel("pairs")
        ax_n.grid(False, axis="x")
        ax_n.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax_n.set_xlabel("pair distance |i \u2212 j| (blocks)")
        ax.set_ylabel("I/R ratio d_inter / d_repl (median over pairs)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{model}: interchange vs replacement by pair distance")
        fig.legend(*ax.get_legend_handles_labels(), title="checkpoint", frameon=False, loc="outside right upper",
                   ncol=2 if n > 5 else 1)
        band = ""
        if n <= MAX_POINTS:
            band = "; dots: individual pairs" + (" (shifted sideways per checkpoint)" if n > 1 else "")
        note = (f"{GAP_LABELS[gap]}; ratio < 1: swapping two blocks "
                "disturbs the output less than overwriting one with the other" + band
                + f"; bottom: pairs with a finite ratio per distance (most over the checkpoints); hollow: a median "
                  f"of fewer than {FEW_PAIRS} pairs")
        if gap != "max":
            note += "; " + ratio_difference(pairs, stats)
        add_note(fig, with_duplicate_note(note, agg, model))
        save_figure(fig, out_png, out_pdf)


def ratio_difference(pairs: pd.DataFrame, stats: pd.DataFrame) -> str:
    """How far this figure's medians are from the max-direction figure's, stated so that two figures that look
    alike are not taken for a bug."""
    both = stats.merge(ratio_by_distance(pairs, GAP_DEFINITIONS["max"][2]), on=["revision", "distance"],
                       suffixes=("", "_max"))
    return twin_difference((both["median"] - both["median_max"]).to_numpy(dtype=float), "each median")


# the I/R ratio by pair distance, replacement as the larger of both directions, and in one direction
