"""Deletion KL per block vs ShortGPT block influence (BI): does cosine similarity rank blocks
the way their effect on the output does?"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator
from scipy.stats import rankdata

from swapkl.errors import SwapKLError
from swapkl.stats.rank_correlation import spearman_kendall
from swapkl.probes.aggregate import rows
from swapkl.figures.select import as_frame
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
from swapkl.figures.palette import BLUE, GREY, VERMILLION
from swapkl.figures.figure_registry import on_table


def deletion_and_bi(agg: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    """Per block: ``layer``, ``deletion_kl`` (nats) and ``bi``; only blocks with both."""
    d = rows(agg, "directed", model, revision)
    d = d[d["protocol"] == "deletion"][["layer_i", "kl_mean"]]
    r = rows(agg, "repr", model, revision)
    r = r[(r["metric"] == "bi") & (r["width"] == 1)][["layer_i", "value"]]
    if d.empty or r.empty:
        missing = "deletion rows" if d.empty else "BI rows"
        raise SwapKLError(f"aggregate has no {missing} for {model} {revision}")
    m = d.merge(r, on="layer_i").rename(columns={"layer_i": "layer", "kl_mean": "deletion_kl", "value": "bi"})
    m["layer"] = m["layer"].astype(np.int64)
    return m.sort_values("layer").reset_index(drop=True)


def plot_deletion_vs_bi(agg: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str, revision: str) -> None:
    """Left: deletion KL and BI along depth (two y axes). Right: each block's rank by BI vs its
    rank by deletion KL, with the Spearman rank correlation in the legend."""
    agg = as_frame(agg)
    m = deletion_and_bi(agg, model, revision)
    rho, _ = spearman_kendall(m["bi"], m["deletion_kl"], min_points=3)
    layer = m["layer"].to_numpy()
    kl = m["deletion_kl"].to_numpy(dtype=float)
    bi = m["bi"].to_numpy(dtype=float)
    log_kl = bool((kl > 0).all() and kl.max() / kl.min() > 30)
    with figure_style():
        fig = new_figure(10.0, 4.2)
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.5, 1]})
        l1 = left.plot(layer, kl, "-o", color=VERMILLION, label="deletion KL (left axis)")
        left.set_xlabel("block (layer index)")
        left.set_ylabel("deletion KL (nats)", color=VERMILLION)
        left.tick_params(axis="y", colors=VERMILLION)
        if log_kl:
            left.set_yscale("log")
        left.xaxis.set_major_locator(MaxNLocator(integer=True))
        twin = left.twinx()
        twin.grid(False)
        twin.spines["right"].set_visible(True)
        l2 = twin.plot(layer, bi, "--s", color=BLUE, label="ShortGPT BI (right axis)")
        twin.set_ylabel("block influence BI = 1 \u2212 cos(h_in, h_out)", color=BLUE)
        twin.tick_params(axis="y", colors=BLUE)
        left.legend(handles=l1 + l2, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0),
                    ncol=2, borderaxespad=0.2)

        rank_bi = rankdata(-bi, method="average")
        rank_kl = rankdata(-kl, method="average")
        n = len(m)
        right.plot([1, n], [1, n], "--", color=GREY, linewidth=1.0, label="same rank")
        right.scatter(rank_bi, rank_kl, color="#333333", s=16, zorder=3,
                      label=f"blocks (Spearman \u03c1 = {rho:+.2f}, n = {n})")
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
        fig.suptitle(f"{model} @ {revision}: block importance from cosine similarity (BI) vs from "
                     "output change (deletion KL)")
        n_seqs, n_tokens = rows(agg, "directed", model, revision)[["n_seqs", "n_tokens"]].iloc[0]
        add_note(fig, f"BI averaged over valid tokens (residual stream before/after the block); deletion: "
                      f"block skipped, KL averaged over {int(n_tokens)} tokens of {int(n_seqs)} sequences; "
                      "KL(p_base \u2016 p_without block); right: point labels are block indices, "
                      "\u03c1 > 0 means both rank blocks alike")
        save_figure(fig, out_png, out_pdf)


draw_deletion_vs_bi = on_table(plot_deletion_vs_bi, "aggregate")
