"""The scale sweep's figure (results/scaling.parquet): the protocol gap and I/R ratio against parameter count, one
dot per model, coloured by position encoding."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from swapkl.figures.labels import place_labels
from swapkl.figures.palette import GREY, PE_COLOURS
from swapkl.figures.select import table_frame
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure

#: fewer models than this show no trend with size (the figure says so)
MIN_TREND_MODELS = 3
#: parameter counts that span at least this factor get a log axis; a narrower span (the demo's models differ by
#: 1%) a linear one, where a log axis would show nothing but scientific-notation ticks
LOG_SIZE_SPAN = 10.0
#: how the legend names each position encoding
PE_LABELS = {"learned": "learned absolute (GPT-2, OPT)", "alibi": "ALiBi (BLOOM)", "rope": "rotary (RoPE)"}


def parameter_count(n: float, _position=None) -> str:
    """A parameter count as read aloud, to four significant digits: 853.6K, 1.5M, 124M, 8B."""
    for scale, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{n / scale:.4g}{unit}"
    return f"{n:.4g}"


def size_axis(ax, sizes) -> None:
    """The x axis of parameter counts ``sizes``: log where they span :data:`LOG_SIZE_SPAN` or more, linear
    otherwise, its ticks written by :func:`parameter_count` (on a log axis of under three decades also at 2 and
    5 times each power of ten, so that more than one tick is labelled)."""
    lo, hi = float(min(sizes)), float(max(sizes))
    if lo > 0 and hi / lo >= LOG_SIZE_SPAN:
        ax.set_xscale("log")
        if hi / lo < 1e3:
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(5, steps=[1, 2, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(parameter_count))


def plot_scaling(table: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """Mean protocol gap and mean I/R ratio over adjacent pairs against parameter count, one dot per model,
    coloured by position encoding."""
    df = table_frame(table)
    with figure_style():
        fig = new_figure(8.4, 3.8)
        axes = fig.subplots(1, 2)
        for ax, col, label in ((axes[0], "gap_mean", "mean gap d_repl \u2212 d_inter (nats)"),
                               (axes[1], "ratio_ir_mean", "mean I/R ratio d_inter / d_repl")):
            for pe, sub in df.groupby("position_encoding", sort=True):
                ax.scatter(sub["n_params"], sub[col], color=PE_COLOURS.get(pe, GREY), label=PE_LABELS.get(pe, pe),
                           s=28, zorder=3)
            size_axis(ax, df["n_params"])
            ax.set_xlabel("parameters" + ("" if ax.get_xscale() == "log" else " (linear axis)"))
            ax.set_ylabel(label)
        axes[1].axhline(1.0, color=GREY, linestyle="--", linewidth=1.0)
        axes[0].axhline(0.0, color=GREY, linestyle="--", linewidth=1.0)
        for ax, col in zip(axes, ("gap_mean", "ratio_ir_mean")):  # once the limits are final
            place_labels(ax, df["n_params"].to_numpy(float), df[col].to_numpy(float), list(df["model"]))
        axes[0].legend(title="position encoding", frameon=False, loc="best", fontsize=7)
        few = len(df) < MIN_TREND_MODELS
        fit_title(fig, "Protocol gap across model families and sizes (adjacent pairs)"
                     + (f"\nonly {len(df)} model{'s' if len(df) != 1 else ''}: no trend with size can be read from "
                        "this" if few else ""))
        add_note(fig, "each dot: one model at its final checkpoint; gap > 0 and I/R < 1: swapping two neighbouring "
                      "blocks disturbs the output less than overwriting one with the other"
                      + (f"; {len(df)} models, fewer than the {MIN_TREND_MODELS} a size trend needs" if few else ""))
        save_figure(fig, out_png, out_pdf)
