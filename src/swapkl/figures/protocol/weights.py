"""The weight-changing probe protocols of one checkpoint: weight averaging against replacement,
and head-level interchange against whole-block interchange."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from swapkl.errors import SwapKLError
from swapkl.probes.aggregate import rows
from swapkl.figures.select import as_frame
from swapkl.figures.style import INTERCHANGE_COLOUR, add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.figures.palette import BLUE, GREY
from swapkl.figures.palette import cycled


def averaging_vs_replacement(agg: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    """Per directed pair (i, j): ``averaging`` KL of A(i<-i+j) and ``replacement`` KL of M(i<-j)."""
    d = rows(agg, "directed", model, revision)
    cols = ["layer_i", "layer_j", "kl_mean"]
    a = d[d["protocol"] == "averaging"][cols].rename(columns={"kl_mean": "averaging"})
    r = d[d["protocol"] == "replacement"][cols].rename(columns={"kl_mean": "replacement"})
    return a.merge(r, on=["layer_i", "layer_j"]).sort_values(["layer_i", "layer_j"]).reset_index(drop=True)


def head_by_distance(agg: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    """Mean KL over pairs at each distance |i - j|: one column per head unit and ``block`` (interchange)."""
    d = rows(agg, "directed", model, revision)
    h = d[d["protocol"] == "head_interchange"].assign(distance=lambda x: x["layer_j"] - x["layer_i"])
    out = h.pivot_table(index="distance", columns="head", values="kl_mean", aggfunc="mean")
    out.columns = [f"head {int(c)}" for c in out.columns]
    b = d[d["protocol"] == "interchange"].assign(distance=lambda x: x["layer_j"] - x["layer_i"])
    if len(b):
        out["block"] = b.groupby("distance")["kl_mean"].mean()
    return out.sort_index()


def plot_weight_protocols(agg: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str, revision: str) -> None:
    """Left: averaging KL vs replacement KL per directed pair (log-log, with y = x). Right: head-level
    interchange KL by pair distance, one line per head unit, with whole-block interchange for scale."""
    agg = as_frame(agg)
    av = averaging_vs_replacement(agg, model, revision)
    hd = head_by_distance(agg, model, revision)
    if av.empty and hd.empty:
        raise SwapKLError(f"aggregate has no averaging or head_interchange rows for {model} {revision}")
    with figure_style():
        fig = new_figure(11.0, 4.4)
        left, right = fig.subplots(1, 2)
        if len(av):
            x, y = av["replacement"].to_numpy(float), av["averaging"].to_numpy(float)
            left.scatter(x, y, s=14, color=BLUE, label="directed pair (i, j)")
            pos = np.concatenate([x, y])
            pos = pos[pos > 0]
            lo, hi = pos.min() / 2, pos.max() * 2
            left.plot([lo, hi], [lo, hi], color=GREY, ls="--", lw=0.8, label="averaging = replacement")
            left.set_xscale("log")
            left.set_yscale("log")
            left.legend(frameon=False, loc="upper left")
        left.set_xlabel("replacement KL, slot i runs block j (nats/token)")
        left.set_ylabel("averaging KL, slot i runs (θ_i + θ_j)/2 (nats/token)")
        left.set_title("Weight averaging vs replacement")
        for k, col in enumerate(c for c in hd.columns if c != "block"):
            right.plot(hd.index, hd[col], "-o", ms=3, color=cycled(k, skip=(BLUE,)), label=col)
        if "block" in hd.columns:
            right.plot(hd.index, hd["block"], "--", color=INTERCHANGE_COLOUR, lw=1.5,
                       label="whole-block interchange")
        if len(hd) and (hd.to_numpy() > 0).all():
            right.set_yscale("log")
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
        right.set_xlabel("pair distance |i − j| (blocks)")
        right.set_ylabel("mean KL over pairs at that distance (nats/token)")
        right.set_title("Head-unit interchange")
        if len(hd):
            right.legend(frameon=False, fontsize="small")
        fit_title(fig, f"{model} @ {revision}: weight-changing probes")
        add_note(fig, "KL(p_base ‖ p_variant), token-weighted over the probe windows. Averaging keeps block j at "
                      "slot j; a head unit is one key/value head with the query heads that read it.")
        save_figure(fig, out_png, out_pdf)


