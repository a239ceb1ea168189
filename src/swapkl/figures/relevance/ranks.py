"""Accuracy-based relevance figures: cosine similarity vs relevance, per-task z-scores, and the rank confusion
matrix of relevance against cosine (BI).

Sign convention of "Rethinking Layer Relevance": the x axis is the block's mean cosine similarity
between input and output (``1 - BI``); a block that cosine calls redundant (high similarity) should
have low relevance, so agreement shows as a *negative* Pearson R.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from swapkl.tables import schemas
from swapkl.stats.agreement import pearson_robustness, rank_confusion, rank_statistics
from swapkl.errors import SwapKLError
from swapkl.figures.labels import place_labels
from swapkl.figures.select import as_frame
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.figures.palette import BLUE
from swapkl.relevance.relevance_stats import PLOT_METRICS, bi_per_block, group_tasks, zscores
from swapkl.tables.schemas import RELEVANCE_STATS_COLUMNS, read_frame


def read_relevance(path) -> pd.DataFrame:
    return schemas.read_relevance(path)


def relevance_of(rel: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    """The checkpoint's single-block rows on the plotted metrics (pruned-set rows are not per block)."""
    rel = group_tasks(schemas.single_block(rel))  # MMLU's subjects as one task, as lm-eval groups them
    sel = rel[(rel["model"] == model) & (rel["revision"] == revision) & rel["metric"].isin(PLOT_METRICS)]
    if sel.empty:
        raise SwapKLError(f"relevance table has no acc / next_token_acc rows for {model} {revision}")
    return sel.sort_values(["task", "layer"]).reset_index(drop=True)


def cosine_similarity(agg: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    """Per block: ``layer`` and ``cos`` = 1 - BI (mean over valid tokens)."""
    bi = bi_per_block(agg, model, revision)
    return pd.DataFrame({"layer": bi.index, "cos": 1.0 - bi.to_numpy()})


def _inner_range(v: np.ndarray) -> tuple[float, float]:
    """Axis limits around the finite values ``v`` with a 12% margin (a span of 0.02 at least)."""
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    pad = max(0.12 * (hi - lo), 0.005)
    return lo - pad, hi + pad


def plot_cosine_vs_relevance(rel, agg, out_png, out_pdf, *, model: str, revision: str) -> None:
    """One panel per task: each block's cosine similarity vs its AccRel, with Pearson R.

    The axes span the blocks that R and the ranks use (the first and last block are left out of both, as the
    paper does); a boundary block outside that range is listed in the panel instead of stretching the axes.
    """
    rel = relevance_of(rel if isinstance(rel, pd.DataFrame) else read_relevance(rel), model, revision)
    cos = cosine_similarity(as_frame(agg), model, revision)
    tasks = list(dict.fromkeys(rel["task"]))
    n_layers = int(cos["layer"].max()) + 1
    boundary = {0, n_layers - 1} if n_layers > 2 else set()
    with figure_style():
        fig = new_figure(4.2 * len(tasks) + 0.6, 4.2)
        axes = np.atleast_1d(fig.subplots(1, len(tasks), squeeze=False)[0])
        to_label = []
        for ax, task in zip(axes, tasks):
            m = rel[rel["task"] == task].merge(cos, on="layer")
            ok = m["relevance"].notna().to_numpy()
            x, y = m["cos"].to_numpy(float), m["relevance"].to_numpy(float)
            layer = m["layer"].to_numpy()
            title = f"{task} ({m['metric'].iloc[0]})"
            st = rank_statistics(y, 1.0 - x)  # relevance vs BI, both low = safe to remove; boundary layers out
            robust = pearson_robustness(y, 1.0 - x, st["layers"])
            far = np.isin(layer, robust["outlying_layers"])
            if np.isfinite(st["pearson"]):
                title += f"\nPearson R = {st['pearson_paper_sign']:+.2f} (permutation p = {robust['pearson_p']:.3f})"
                if robust["outlying_layers"]:
                    title += (f"\nwithout outlying {', '.join(map(str, robust['outlying_layers']))}: "
                              f"{robust['pearson_without_outliers_paper_sign']:+.2f} "
                              f"(p = {robust['pearson_without_outliers_p']:.3f})")
                title += (
                          f"\nrank differs {100 * st['exact_rank_misranking']:.0f}% "
                          f"(chance {100 * st['exact_rank_chance']:.0f}%)"
                          f"\nsevere {100 * st['severe_misranking']:.0f}% (chance {100 * st['severe_chance']:.0f}%)")
            elif not ok.any():
                title += "\nAccRel undefined: base model not above chance"
            inner = ok & ~np.isin(layer, list(boundary))
            xlim, ylim = _inner_range(x[inner]), _inner_range(np.r_[y[inner], 0.0])
            shown = ok & (x >= xlim[0]) & (x <= xlim[1]) & (y >= ylim[0]) & (y <= ylim[1])
            ax.scatter(x[shown & inner & ~far], y[shown & inner & ~far], s=16, color="#333333", zorder=3,
                       label="blocks in R")
            if (shown & far).any():
                ax.scatter(x[shown & far], y[shown & far], s=30, marker="^", color="#d55e00", zorder=3,
                           label="outlying block (in R, left out of the second R)")
            edge = shown & ~inner
            if edge.any():
                ax.scatter(x[edge], y[edge], s=18, facecolors="none", edgecolors="#333333", zorder=3,
                           label="boundary block (not in R)")
            outside = [f"{int(k)} (cos {xi:.3f}, AccRel {yi:.2f})" for k, xi, yi, o in zip(layer, x, y, ok & ~shown) if o]
            ax.set_xlim(*xlim)
            ax.set_ylim(*ylim)
            ax.axhline(0.0, color="#999999", linewidth=0.8)
            ax.set_xlabel("cos(h_in, h_out) = 1 \u2212 BI (unitless)"
                          + ("\nblocks off the axes: " + "\n".join(outside) if outside else ""), fontsize=8)
            if ax is axes[0]:
                ax.set_ylabel("AccRel (unitless; 1 = deletion drops to chance)")
            ax.set_title(title, fontsize=8)
            to_label.append((ax, x[shown], y[shown], layer[shown]))
        fit_title(fig, f"{model} @ {revision}: cosine similarity vs accuracy-based relevance per block")
        add_note(fig, "AccRel = 1 \u2212 max(acc without block \u2212 chance, 0) / max(acc \u2212 chance, 0); "
                      "negative R = cosine and accuracy agree (paper's convention); R and ranks over the blocks "
                      "without the first and last (open circles), and the axes span those blocks; orange triangles: "
                      "outlying blocks, outside Tukey's fences (1.5 IQR beyond the quartiles) on either score; p: "
                      "one-sided permutation test of agreement; "
                      "severe: rank offset "
                      "\u2265 \u2308m/4\u2309; labels: block index (blocks drawn on top of each other share one "
                      "label)", width=0.85)
        for ax, xs, ys, ls in to_label:
            place_labels(ax, xs, ys, ls)
        save_figure(fig, out_png, out_pdf)


def plot_relevance_zscores(rel, out_png, out_pdf, *, model: str, revision: str) -> None:
    """Heatmap of per-task z-scores of AccRel: does a block's importance depend on the task? The colour scale
    spans the inner blocks (the first and last left out, as R and the ranks leave them out): a boundary block
    far from the rest (block 0 of the demo) would otherwise take the whole scale and leave the others pale.
    Cells beyond the scale saturate and show their value."""
    rel = relevance_of(rel if isinstance(rel, pd.DataFrame) else read_relevance(rel), model, revision)
    z = zscores(rel.pivot_table(index="task", columns="layer", values="relevance", dropna=False))
    values = z.to_numpy(dtype=float)
    layers = np.asarray(z.columns, dtype=int)
    inner = values[:, (layers > layers.min()) & (layers < layers.max())] if len(layers) > 2 else values
    finite = inner[np.isfinite(inner)]
    lim = float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0
    beyond = np.isfinite(values) & (np.abs(values) > lim * (1 + 1e-9))
    with figure_style():
        fig = new_figure(4.5 + 0.35 * z.shape[1], 2.0 + 0.4 * z.shape[0])
        ax = fig.subplots()
        im = ax.imshow(values, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        for i, j in zip(*np.nonzero(beyond)):
            ax.text(j, i, f"{values[i, j]:+.1f}".replace("-", "\u2212"), ha="center", va="center", fontsize=7,
                    color="white")
        ax.set_xticks(range(z.shape[1]), [str(c) for c in z.columns])
        ax.set_yticks(range(z.shape[0]), list(z.index))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("block (layer index)")
        ax.grid(False)
        fig.colorbar(im, ax=ax, label="z-score within task (SD)", extend="both" if beyond.any() else "neither")
        ax.set_title(f"{model} @ {revision}: AccRel z-scores per task", fontsize=9)
        off = sorted({int(layers[j]) for j in np.nonzero(beyond)[1]})
        add_note(fig, "z-score of each block's AccRel over the blocks of one task; blank: AccRel undefined "
                      "(base model not above chance) or equal for every block; colour scale: ± the largest "
                      "|z| of the inner blocks (first and last left out)"
                      + (f"; beyond it, saturated with the value written: block{'s' if len(off) > 1 else ''} "
                         f"{', '.join(map(str, off))}" if off else ""), width=0.9)
        save_figure(fig, out_png, out_pdf)


def plot_relevance_confusion(stats: pd.DataFrame | str, out_png, out_pdf, *, model: str, revision: str) -> None:
    """One panel per task: the rank confusion matrix of AccRel (rows) against cosine / BI (columns), with the
    exact-rank and severe misranking rates of ``results/relevance_stats.parquet``."""
    st = stats if isinstance(stats, pd.DataFrame) else read_frame(stats, RELEVANCE_STATS_COLUMNS,
                                                                  "relevance statistics")
    st = st[(st["model"] == model) & (st["revision"] == revision)].sort_values("task")
    if st.empty:
        raise SwapKLError(f"relevance statistics have no rows for {model} {revision}")
    with figure_style():
        # one task (make real): wider and taller, so the square panel leaves its title and label room
        fig = new_figure(3.4 * len(st) + 0.6, 3.9) if len(st) > 1 else new_figure(5.2, 4.4)
        axes = np.atleast_1d(fig.subplots(1, len(st), squeeze=False)[0])
        for ax, (_, r) in zip(axes, st.iterrows()):
            m = len(r["guide_rank"])
            ax.set_title(f"{r['task']} ({r['metric']})", fontsize=8)
            ax.grid(False)
            if m < 2:
                ax.text(0.5, 0.5, "fewer than 2 ranked blocks\n(AccRel undefined: base model not above chance,\n"
                        "or too few blocks)", ha="center", va="center", transform=ax.transAxes, fontsize=7)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            ax.imshow(rank_confusion(r["guide_rank"], r["reference_rank"]), cmap="Greys", vmin=0, vmax=1,
                      origin="lower")
            ax.plot([-0.5, m - 0.5], [-0.5, m - 0.5], color=BLUE, lw=0.8, ls="--")
            for axis in (ax.xaxis, ax.yaxis):  # at most 8 labels: 28 ranks' labels would run together
                axis.set_major_locator(MaxNLocator(integer=True, nbins=min(m, 8)))
            ax.set_title(f"{r['task']} ({r['metric']})\nrank differs {r['exact_rank_misranking']:.0%} "
                         f"(chance {r['exact_rank_chance']:.0%}, p = {r['exact_rank_p']:.2g}),\n"
                         f"severe (offset \u2265 {int(r['severe_offset'])}) {r['severe_misranking']:.0%} "
                         f"(chance {r['severe_chance']:.0%}, p = {r['severe_p']:.2g})", fontsize=8)
            ax.set_xlabel("rank by BI = 1 \u2212 cos (0 = most redundant)")
            if ax is axes[0]:
                ax.set_ylabel("rank by AccRel\n(0 = least relevant)")  # two lines: it stays beside the square panel
        excluded = ", ".join(str(v) for v in st["excluded_layers"].iloc[0]) or "none"
        fit_title(fig, f"{model} @ {revision}: rank confusion of accuracy-based relevance against cosine (BI)")
        add_note(fig, f"Ordinal ranks over the blocks both score (ties: lower block first); boundary blocks "
                      f"excluded: {excluded}. A filled cell off the dashed diagonal is a misranked block; "
                      "severe: rank offset \u2265 \u2308m/4\u2309 of m ranked blocks.")
        save_figure(fig, out_png, out_pdf)
