"""Accuracy-based relevance figures: cosine similarity vs relevance, and per-task z-scores.

Sign convention of "Rethinking Layer Relevance": the x axis is the block's mean cosine similarity
between input and output (``1 - BI``); a block that cosine calls redundant (high similarity) should
have low relevance, so agreement shows as a *negative* Pearson R.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator
from scipy.stats import pearsonr, rankdata

from swapkl.errors import SwapKLError
from swapkl.figures.select import as_frame, rows
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure

#: the metric each task contributes to the figures (acc_norm stays in the table)
PLOT_METRICS = ("acc", "next_token_acc")


def read_relevance(path) -> pd.DataFrame:
    return pd.read_parquet(path)


def relevance_of(rel: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    sel = rel[(rel["model"] == model) & (rel["revision"] == revision) & rel["metric"].isin(PLOT_METRICS)]
    if sel.empty:
        raise SwapKLError(f"relevance table has no acc / next_token_acc rows for {model} {revision}")
    return sel.sort_values(["task", "layer"]).reset_index(drop=True)


def cosine_similarity(agg: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    """Per block: ``layer`` and ``cos`` = 1 - BI (mean over valid tokens)."""
    r = rows(agg, "repr", model, revision)
    r = r[(r["metric"] == "bi") & (r["width"] == 1)][["layer_i", "value"]]
    if r.empty:
        raise SwapKLError(f"aggregate has no BI rows for {model} {revision}")
    return pd.DataFrame({"layer": r["layer_i"].astype(np.int64), "cos": 1.0 - r["value"].astype(float)})


def misranking(cos: np.ndarray, relevance: np.ndarray) -> tuple[float, float]:
    """Share of blocks, first and last excluded, whose rank by redundancy (cosine, descending) differs from
    their rank by irrelevance (relevance, ascending), and the mean absolute rank offset among them."""
    if len(cos) < 3:
        return float("nan"), float("nan")
    r_cos = rankdata(-cos, method="min")
    r_rel = rankdata(relevance, method="min")
    inner = slice(1, len(cos) - 1)
    off = np.abs(r_cos[inner] - r_rel[inner])
    return float((off != 0).mean()), float(off.mean())


def plot_cosine_vs_relevance(rel, agg, out_png, out_pdf, *, model: str, revision: str) -> None:
    """One panel per task: each block's cosine similarity vs its AccRel, with Pearson R."""
    rel = relevance_of(rel if isinstance(rel, pd.DataFrame) else read_relevance(rel), model, revision)
    cos = cosine_similarity(as_frame(agg), model, revision)
    tasks = list(dict.fromkeys(rel["task"]))
    with figure_style():
        fig = new_figure(3.5 * len(tasks) + 0.6, 3.6)
        axes = np.atleast_1d(fig.subplots(1, len(tasks), squeeze=False)[0])
        for ax, task in zip(axes, tasks):
            m = rel[rel["task"] == task].merge(cos, on="layer")
            ok = m["relevance"].notna().to_numpy()
            x, y = m["cos"].to_numpy(float), m["relevance"].to_numpy(float)
            title = f"{task} ({m['metric'].iloc[0]})"
            if ok.sum() >= 3 and np.ptp(x[ok]) > 0 and np.ptp(y[ok]) > 0:
                r = pearsonr(x[ok], y[ok]).statistic
                miss, offset = misranking(x[ok], y[ok])
                title += f"\nPearson R = {r:+.2f}; misranked {100 * miss:.0f}%, mean |rank offset| {offset:.1f}"
            elif not ok.any():
                title += "\nAccRel undefined: base model not above chance"
            ax.scatter(x[ok], y[ok], s=16, color="#333333", zorder=3)
            for xi, yi, lab in zip(x[ok], y[ok], m["layer"][ok]):
                ax.annotate(str(lab), (xi, yi), xytext=(3, 2), textcoords="offset points", fontsize=6)
            ax.axhline(0.0, color="#999999", linewidth=0.8)
            ax.set_xlabel("cos(h_in, h_out) = 1 \u2212 BI (unitless)")
            if ax is axes[0]:
                ax.set_ylabel("AccRel (unitless; 1 = deletion drops to chance)")
            ax.set_title(title, fontsize=8)
        fig.suptitle(f"{model} @ {revision}: cosine similarity vs accuracy-based relevance per block")
        add_note(fig, "AccRel = 1 \u2212 max(acc without block \u2212 chance, 0) / max(acc \u2212 chance, 0); "
                      "negative R = cosine and accuracy agree (paper's convention); misranking: first and "
                      "last blocks excluded")
        save_figure(fig, out_png, out_pdf)


def zscores(rel: pd.DataFrame) -> pd.DataFrame:
    """Tasks x blocks: each task's relevance standardised over blocks (NaN where undefined)."""
    wide = rel.pivot_table(index="task", columns="layer", values="relevance", dropna=False)
    mean = wide.mean(axis=1)
    std = wide.std(axis=1, ddof=0).replace(0.0, np.nan)
    return wide.sub(mean, axis=0).div(std, axis=0)


def plot_relevance_zscores(rel, out_png, out_pdf, *, model: str, revision: str) -> None:
    """Heatmap of per-task z-scores of AccRel: does a block's importance depend on the task?"""
    rel = relevance_of(rel if isinstance(rel, pd.DataFrame) else read_relevance(rel), model, revision)
    z = zscores(rel)
    with figure_style():
        fig = new_figure(4.5 + 0.35 * z.shape[1], 2.0 + 0.4 * z.shape[0])
        ax = fig.subplots()
        lim = float(np.nanmax(np.abs(z.to_numpy()))) if np.isfinite(z.to_numpy()).any() else 1.0
        im = ax.imshow(z.to_numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        ax.set_xticks(range(z.shape[1]), [str(c) for c in z.columns])
        ax.set_yticks(range(z.shape[0]), list(z.index))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("block (layer index)")
        ax.grid(False)
        fig.colorbar(im, ax=ax, label="z-score within task (SD)")
        ax.set_title(f"{model} @ {revision}: AccRel z-scores per task", fontsize=9)
        add_note(fig, "z-score of each block's AccRel over the blocks of one task; blank: AccRel undefined "
                      "(base model not above chance) or equal for every block")
        save_figure(fig, out_png, out_pdf)
