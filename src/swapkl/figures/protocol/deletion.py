"""Deletion KL per block vs ShortGPT block influence (BI): does cosine similarity rank blocks
the way their effect on the output does?"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter
from scipy.stats import rankdata

from swapkl.errors import SwapKLError
from swapkl.stats.rank_correlation import spearman_kendall
from swapkl.probes.aggregate import rows
from swapkl.figures.select import as_frame
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.figures.palette import BLUE, GREY, VERMILLION


def deletion_and_bi(agg: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    """Per block: ``layer``, ``deletion_kl`` (nats) and ``bi``, each with its 95% interval (``*_low``, ``*_high``:
    the aggregate's bootstrap over windows); only blocks with both."""
    d = rows(agg, "directed", model, revision)
    d = d[d["protocol"] == "deletion"][["layer_i", "kl_mean", "kl_ci_low", "kl_ci_high"]]
    r = rows(agg, "repr", model, revision)
    r = r[(r["metric"] == "bi") & (r["width"] == 1)][["layer_i", "value", "ci_low", "ci_high"]]
    if d.empty or r.empty:
        missing = "deletion rows" if d.empty else "BI rows"
        raise SwapKLError(f"aggregate has no {missing} for {model} {revision}")
    m = d.merge(r, on="layer_i").rename(columns={
        "layer_i": "layer", "kl_mean": "deletion_kl", "kl_ci_low": "deletion_kl_low", "kl_ci_high": "deletion_kl_high",
        "value": "bi", "ci_low": "bi_low", "ci_high": "bi_high"})
    m["layer"] = m["layer"].astype(np.int64)
    return m.sort_values("layer").reset_index(drop=True)


def _depth_axis(ax, layer, values, low, high, style: str, colour: str, label: str) -> str:
    """One quantity along depth on its own axis, with its 95% interval as a band: logarithmic whenever every value
    is positive (the same scale on every checkpoint, whatever its range), else linear. Returns the scale's name."""
    ax.plot(layer, values, style, color=colour, label=label)
    if np.isfinite(low).all() and np.isfinite(high).all():
        ax.fill_between(layer, low, high, color=colour, alpha=0.2, linewidth=0)
    ax.set_ylabel(label)
    scale = "log" if (values > 0).all() else "linear"
    ax.set_yscale(scale)
    if scale == "log":  # labels at 1, 2 and 5 per decade on a short axis, at the decades on a long one: none overlap
        low, high = ax.get_ylim()
        subs = (1.0,) if np.log10(high / low) > 2 else (1.0, 2.0, 5.0)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return scale


def plot_deletion_vs_bi(agg: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str, revision: str) -> None:
    """Left: deletion KL (top) and BI (bottom) along depth, each on its own axis (log whenever positive), so that
    any agreement between them is not an artefact of two scales on one panel. Right: each block's rank by BI vs
    its rank by deletion KL, with the Spearman rank correlation in the legend."""
    agg = as_frame(agg)
    m = deletion_and_bi(agg, model, revision)
    rho, _ = spearman_kendall(m["bi"], m["deletion_kl"], min_points=3)
    layer = m["layer"].to_numpy()
    kl = m["deletion_kl"].to_numpy(dtype=float)
    bi = m["bi"].to_numpy(dtype=float)
    with figure_style():
        fig = new_figure(10.0, 5.0)
        axes = fig.subplot_mosaic([["kl", "rank"], ["bi", "rank"]], width_ratios=[1.5, 1])
        top, bottom, right = axes["kl"], axes["bi"], axes["rank"]
        top.sharex(bottom)
        band = {name: (m[f"{name}_low"].to_numpy(dtype=float), m[f"{name}_high"].to_numpy(dtype=float))
                for name in ("deletion_kl", "bi")}
        scales = {"deletion KL": _depth_axis(top, layer, kl, *band["deletion_kl"], "-o", VERMILLION,
                                             "deletion KL (nats)"),
                  "BI": _depth_axis(bottom, layer, bi, *band["bi"], "--s", BLUE, "BI = 1 \u2212 cos(h_in, h_out)")}
        top.set_title("Along depth, one axis each")
        top.tick_params(axis="x", labelbottom=False)
        bottom.set_xlabel("block (layer index)")

        rank_bi = rankdata(-bi, method="average")
        rank_kl = rankdata(-kl, method="average")
        n = len(m)
        right.plot([1, n], [1, n], "--", color=GREY, linewidth=1.0, label="same rank")
        right.scatter(rank_bi, rank_kl, color="#333333", s=16, zorder=3,
                      label=f"all {n} blocks (Spearman \u03c1 = {rho:+.2f})")
        for x, y, lab in zip(rank_bi, rank_kl, layer):
            right.annotate(str(lab), (x, y), xytext=(3, 2), textcoords="offset points", fontsize=6,
                           color="#555555")
        right.set_xlabel("rank by BI (1 = largest BI)")
        right.set_ylabel("rank by deletion KL (1 = largest KL)")
        for axis in (right.xaxis, right.yaxis):
            axis.set_major_locator(MaxNLocator(integer=True))
        right.set_xlim(0, n + 1)
        right.set_ylim(n + 1, 0)
        right.set_aspect("equal", adjustable="box")
        right.legend(frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1,
                     borderaxespad=0.2)
        linear = [name for name, scale in scales.items() if scale == "linear"]
        fit_title(fig, f"{model} @ {revision}: block importance from cosine similarity (BI) vs from "
                     "output change (deletion KL)")
        n_seqs, n_tokens = rows(agg, "directed", model, revision)[["n_seqs", "n_tokens"]].iloc[0]
        add_note(fig, f"BI averaged over valid tokens (residual stream before/after the block); deletion: "
                      f"block skipped, KL averaged over {int(n_tokens)} tokens of {int(n_seqs)} sequences; "
                      "KL(p_base \u2016 p_without block); bands: 95% bootstrap intervals over the windows; right: "
                      "point labels are block indices, \u03c1 > 0 means both rank blocks alike, over every block (the "
                      "rank-confusion figure leaves the first and last blocks out, so its \u03c1 differs); left: "
                      "log axes"
                      + (f" ({' and '.join(linear)} linear: a value is 0 or below)" if linear else ""))
        save_figure(fig, out_png, out_pdf)


