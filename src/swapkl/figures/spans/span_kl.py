"""The span experiments of one checkpoint: KL against span width per variant, beside one interchange and one
replacement (the checkpoint's median adjacent d_inter and d_repl)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from swapkl.errors import SwapKLError
from swapkl.figures.style import (INTERCHANGE_COLOUR, REPLACEMENT_COLOUR, add_note, figure_style, new_figure,
                                  save_figure)
from swapkl.figures.palette import GREEN, GREY, ORANGE, PURPLE, SKY
from swapkl.tables.schemas import SPANS_SCHEMA, read_frame

#: colour and marker of each variant (looped parallel: one line per loop count, same colour)
STYLE = {"skip": (GREY, "s"), "reverse": (ORANGE, "v"), "shuffle": (GREEN, "^"), "repeat": (PURPLE, "D"),
         "parallel": (SKY, "o"), "looped_parallel": (SKY, "x")}
LOOP_MARKERS = ("x", "+", "1", "*", "P")


def span_lines(df: pd.DataFrame, model: str, revision: str) -> dict[str, pd.DataFrame]:
    """``{label: rows sorted by width}`` of one checkpoint, one entry per variant (and loop count)."""
    d = df[(df["model"] == model) & (df["revision"] == revision) & (df["variant"] != "base")]
    if d.empty:
        raise SwapKLError(f"the span table has no rows for {model} {revision}")
    out = {}
    for kind in STYLE:
        v = d[d["variant"] == kind]
        for loops, grp in (v.groupby("loops") if kind == "looped_parallel" else [(None, v)]):
            if len(grp):
                label = kind.replace("_", " ") + ("" if loops is None else f" ×{int(loops)}")
                out[label] = grp.sort_values("width")
    return out


def plot_spans(spans: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str, revision: str) -> None:
    """KL(p_base || p_variant) against the width of the middle span [s, L-s), one line per variant, with CIs
    and the mean adjacent interchange and replacement KL as reference lines."""
    df = spans if isinstance(spans, pd.DataFrame) else read_frame(spans, SPANS_SCHEMA, "spans")
    lines = span_lines(df, model, revision)
    first = next(iter(lines.values())).iloc[0]
    with figure_style():
        fig = new_figure(8.4, 4.6)
        ax = fig.subplots()
        for k, (label, grp) in enumerate(lines.items()):
            colour, marker = STYLE[grp["variant"].iloc[0]]
            if grp["variant"].iloc[0] == "looped_parallel":  # one marker per loop count
                marker = LOOP_MARKERS[k % len(LOOP_MARKERS)]
            y = grp["kl_mean"].to_numpy(float)
            err = np.abs(np.vstack([y - grp["kl_ci_low"].to_numpy(float), grp["kl_ci_high"].to_numpy(float) - y]))
            ls = ":" if grp["variant"].iloc[0] == "looped_parallel" else "-"
            ax.errorbar(grp["width"], y, yerr=np.nan_to_num(err), color=colour, marker=marker, ls=ls, capsize=2,
                        label=label)
        for name, colour, what in (("d_inter_adjacent", INTERCHANGE_COLOUR, "one adjacent interchange (median d_inter)"),
                                   ("d_repl_adjacent", REPLACEMENT_COLOUR, "one adjacent replacement (median d_repl)")):
            if np.isfinite(first[name]) and first[name] > 0:
                ax.axhline(first[name], color=colour, ls="--", lw=1.0, label=what)
        if (df.loc[df["variant"] != "base", "kl_mean"] > 0).all():
            ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(f"span width L − 2s (blocks; the span is [s, {int(first['n_layers'])} − s))")
        ax.set_ylabel("KL(p_base ‖ p_variant) (nats/token)")
        ax.set_title(f"{model} @ {revision}: middle-span experiments")
        ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the lines
        add_note(fig, f"Token-weighted KL over {int(first['n_seqs'])} probe windows, 95% bootstrap CIs over windows. "
                      "Repeat runs the middle block at every slot of the span; parallel averages the span's updates "
                      "of one shared input.")
        save_figure(fig, out_png, out_pdf)


