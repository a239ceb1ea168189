"""Replacement (directed) and interchange (symmetric) KL matrices of one checkpoint."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

from swapkl.errors import SwapKLError
from swapkl.probes.aggregate import rows
from swapkl.figures.select import as_frame
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.probes.pair_statistics import CONDITIONAL_BELOW, STRONG_BELOW

MISSING_COLOUR = "#DDDDDD"
DIAGONAL_COLOUR = "#FFFFFF"
ZERO_COLOUR = "#CC79A7"  # KL of exactly 0 (or a rounding-negative value): below any log scale


def kl_matrices(directed: pd.DataFrame, n_layers: int) -> tuple[np.ndarray, np.ndarray]:
    """``(R, I)``: ``R[i, j] = r(i<-j)`` and the symmetric interchange matrix; NaN where not probed."""
    R = np.full((n_layers, n_layers), np.nan)
    I = np.full((n_layers, n_layers), np.nan)
    for proto, mat in (("replacement", R), ("interchange", I)):
        d = directed[directed["protocol"] == proto]
        i = d["layer_i"].to_numpy(dtype=np.int64)
        j = d["layer_j"].to_numpy(dtype=np.int64)
        v = d["kl_mean"].to_numpy(dtype=np.float64)
        mat[i, j] = v
        if proto == "interchange":
            mat[j, i] = v
    return R, I


def undecided_cells(directed: pd.DataFrame, n_layers: int) -> tuple[np.ndarray, np.ndarray]:
    """``(R, I)`` boolean matrices (as :func:`kl_matrices`): the cells whose KL confidence interval (``kl_ci_low``
    to ``kl_ci_high``) contains a swap-similarity threshold, so that their class is undecided."""
    R = np.zeros((n_layers, n_layers), dtype=bool)
    I = np.zeros((n_layers, n_layers), dtype=bool)
    for proto, mat in (("replacement", R), ("interchange", I)):
        d = directed[directed["protocol"] == proto]
        lo = d["kl_ci_low"].to_numpy(dtype=np.float64)
        hi = d["kl_ci_high"].to_numpy(dtype=np.float64)
        crosses = np.zeros(len(d), dtype=bool)
        for t in (STRONG_BELOW, CONDITIONAL_BELOW):
            crosses |= (lo < t) & (t <= hi)
        i, j = d["layer_i"].to_numpy(dtype=np.int64), d["layer_j"].to_numpy(dtype=np.int64)
        mat[i, j] = crosses
        if proto == "interchange":
            mat[j, i] = crosses
    return R, I


def two_digits(v: float, *, up: bool) -> float:
    """``v`` rounded up or down to two significant digits (colour-scale ends that read well)."""
    e = 10.0 ** (np.floor(np.log10(v)) - 1)
    return float(f"{(np.ceil(v / e) if up else np.floor(v / e)) * e:.2g}")


def colorbar_ticks(vmin: float, vmax: float) -> list[float]:
    """1-2-5 steps (decades alone over more than 3 decades) within [vmin, vmax], plus the two
    class thresholds."""
    lo, hi = int(np.floor(np.log10(vmin))), int(np.ceil(np.log10(vmax)))
    subs = (1.0,) if hi - lo > 3 else (1.0, 2.0, 5.0)
    ticks = {float(f"{m * 10.0 ** k:.12g}") for k in range(lo, hi + 1) for m in subs}
    ticks |= {STRONG_BELOW, CONDITIONAL_BELOW}
    ticks = sorted(t for t in ticks if vmin * 0.999 <= t <= vmax * 1.001)
    for end in (vmin, vmax):  # label the ends too when no tick is near them
        if not any(abs(np.log10(t / end)) < 0.15 for t in ticks):
            ticks.append(float(f"{end:.2g}"))
    return sorted(ticks)


def shared_scale(agg: pd.DataFrame, model: str) -> tuple[float, float]:
    """One log colour scale for every checkpoint of ``model``: from the smallest positive to the largest
    replacement or interchange KL of any of its checkpoints (rounded outwards to two digits), widened to
    include the class thresholds. Nothing above zero is clamped."""
    d = rows(agg, "directed", model)
    v = d.loc[d["protocol"].isin(["replacement", "interchange"]), "kl_mean"].to_numpy(dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        raise SwapKLError(f"aggregate has no replacement or interchange rows for {model}")
    positive = v[v > 0]
    vmax = two_digits(max(float(v.max()), CONDITIONAL_BELOW * 2), up=True)
    low = float(positive.min()) if positive.size else STRONG_BELOW / 2
    return two_digits(min(low, STRONG_BELOW / 2), up=False), vmax


def plot_heatmaps(agg: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str, revision: str) -> None:
    """Side-by-side heatmaps of r(i<-j) and d_inter(i, j) for one checkpoint, on one log colour scale in nats
    shared by every checkpoint of the model (:func:`shared_scale`), so panels of different checkpoints
    compare by colour; the class thresholds 0.05 and 0.10 are marked on the colour bar."""
    agg = as_frame(agg)
    d = rows(agg, "directed", model, revision)
    n_layers = int(d["n_layers"].iloc[0])
    R, I = kl_matrices(d, n_layers)
    open_r, open_i = undecided_cells(d, n_layers)
    finite = np.concatenate([R[np.isfinite(R)], I[np.isfinite(I)]])
    if finite.size == 0:
        raise SwapKLError(f"aggregate has no replacement or interchange rows for {model} {revision}")
    vmin, vmax = shared_scale(agg, model)
    norm = LogNorm(vmin=vmin, vmax=vmax)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=MISSING_COLOUR, under=ZERO_COLOUR)
    dup = d["duplicate_of"].dropna()
    with figure_style():
        fig = new_figure(10.0, 4.9)
        axes = fig.subplots(1, 2)
        panels = [(R, "replacement r(i\u2190j): slot i runs block j", "block j run in slot i",
                   "slot i overwritten"),
                  (I, "interchange d_inter(i\u2194j): blocks i and j swap slots", "block j",
                   "block i")]
        for ax, (M, title, xlabel, ylabel), undecided in zip(axes, panels, (open_r, open_i)):
            shown = np.where(np.isfinite(M), np.where(M > 0, M, vmin / 10), np.nan)  # <= 0: the under colour
            diag = np.zeros((n_layers, n_layers, 4))
            diag[np.arange(n_layers), np.arange(n_layers)] = matplotlib.colors.to_rgba(DIAGONAL_COLOUR)
            im = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, norm=norm, origin="upper",
                           interpolation="nearest")
            ax.imshow(diag, origin="upper", interpolation="nearest")
            yy, xx = np.nonzero(undecided)
            ax.scatter(xx, yy, s=min(40.0, max(8.0, 300.0 / n_layers)), c="white", edgecolors="black", linewidths=0.5)
            ax.set_title(title)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_locator(MaxNLocator(integer=True, nbins=min(n_layers, 12)))
            ax.grid(False)
        cb = fig.colorbar(im, ax=list(axes), shrink=0.9, pad=0.02)
        cb.set_label("KL(p_base \u2016 p_variant) (nats, log scale)")
        cb.set_ticks(colorbar_ticks(vmin, vmax))
        cb.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        cb.ax.yaxis.set_minor_locator(NullLocator())
        for t in (STRONG_BELOW, CONDITIONAL_BELOW):
            cb.ax.axhline(t, color="white", linewidth=1.6)
            cb.ax.axhline(t, color="black", linewidth=0.8, linestyle="--")
        title = f"{model} @ {revision}: KL of replacement and interchange variants"
        if len(dup):
            title += f" (same weights as {dup.iloc[0]})"
        fit_title(fig, title)
        n_seqs, n_tokens = d["n_seqs"].iloc[0], d["n_tokens"].iloc[0]
        zero = "; pink: KL of 0 (identical outputs)" if (finite <= 0).any() else ""
        marked = (f"; white dot: the cell's 95% bootstrap CI contains a threshold, its class undecided "
                  f"({int(open_r.sum() + open_i.sum() // 2)} variants)" if open_r.any() or open_i.any() else "")
        revisions = agg.loc[agg["model"] == model, "revision"].nunique()
        shared = (f"; colour scale shared by the {revisions} checkpoints of {model}" if revisions > 1 else "")
        add_note(fig, f"{n_layers} blocks; {int(n_seqs)} windows, {int(n_tokens):,} tokens scored{marked}; grey: "
                      f"pair not probed; white diagonal: unmodified model; dashed lines on the colour bar: "
                      f"swap-similarity thresholds {STRONG_BELOW:g} (strong) and {CONDITIONAL_BELOW:g} "
                      f"(conditional){shared}{zero}")
        save_figure(fig, out_png, out_pdf)


