"""The Jacobian figure (results/jacobian.parquet): each block's residual Jacobian spectral norm, and against its swap
distances in the aggregate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from swapkl.figures.palette import GREY, cycled
from swapkl.figures.select import as_frame, table_frame
from swapkl.figures.style import add_note, far_cut, figure_style, fit_title, new_figure, save_figure
from swapkl.probes.aggregate import rows


def block_swap_distances(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per block k: mean d_repl_max and mean d_inter over its adjacent pairs (k-1, k) and (k, k+1)."""
    adj = pairs[pairs["distance"] == 1]
    long = pd.concat([adj.assign(block=adj["layer_i"]), adj.assign(block=adj["layer_j"])])
    g = long.groupby("block")[["d_repl_max", "d_inter"]].mean()
    return g.rename(columns={"d_repl_max": "d_repl_adjacent", "d_inter": "d_inter_adjacent"}).reset_index()


#: a block whose ||J_k|| exceeds this many times the next largest is drawn at the axes' edge, its value written
JACOBIAN_FAR = 100.0


def plot_jacobian(table: pd.DataFrame | str | Path, agg: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """||J_k||_2 per block, and against the block's swap distances (mean KL of its adjacent pairs in the
    aggregate ``agg``). A block whose norm is :data:`JACOBIAN_FAR` times the next largest (in the demo, block 0
    at 2e7 beside blocks at 0.4-10) would leave decades of empty axis: the axes end above the other blocks, and
    the far block is drawn at the edge with its value."""
    agg = as_frame(agg)
    parts = []
    for (model, revision), sub in table_frame(table).groupby(["model", "revision"], sort=True):
        dist = block_swap_distances(rows(agg, "pair", model, revision))
        parts.append(sub.merge(dist, on="block", how="left"))
    df = pd.concat(parts, ignore_index=True)
    cut = far_cut(df["norm_mean"], JACOBIAN_FAR)
    edge = None if cut is None else cut * 10 ** 0.5
    far = df[df["norm_mean"] > cut] if cut is not None else df.iloc[:0]
    with figure_style():
        fig = new_figure(10.0, 3.8)
        axes = fig.subplots(1, 2)
        for k, ((model, revision), sub) in enumerate(df.groupby(["model", "revision"], sort=True)):
            colour = cycled(k)
            shown = sub["norm_mean"].clip(upper=edge) if edge is not None else sub["norm_mean"]
            axes[0].plot(sub["block"], shown, marker="o", markersize=3, color=colour, label=f"{model}@{revision}")
            axes[1].scatter(shown, sub["d_repl_adjacent"], color=colour, marker="o", s=16,
                            label=f"{model} replacement")
            axes[1].scatter(shown, sub["d_inter_adjacent"], color=colour, marker="x", s=16,
                            label=f"{model} interchange")
            for _, r in sub[sub["norm_mean"] > (cut if cut is not None else np.inf)].iterrows():
                axes[0].plot([r["block"]], [edge], marker="^", color=colour, markersize=7, clip_on=False)
                axes[0].annotate(f"block {int(r['block'])}: {r['norm_mean']:.3g}", (r["block"], edge),
                                 xytext=(8, -4), textcoords="offset points", fontsize=7, va="top", color=colour)
        axes[0].axhline(1.0, color=GREY, linestyle="--", linewidth=1.0)
        axes[0].set_xlabel("block k")
        axes[0].set_ylabel("||J_k||\u2082 (mean over prompts)")
        axes[0].set_yscale("log")
        axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
        axes[1].set_xlabel("||J_k||\u2082")
        axes[1].set_xscale("log")
        axes[1].set_ylabel("swap KL, block k's adjacent pairs (nats)")
        axes[1].set_yscale("log")
        if edge is not None:
            axes[0].set_ylim(top=edge * 1.05)
            axes[1].set_xlim(right=edge * 1.3)
            axes[1].axvline(edge, color=GREY, linewidth=0.8, linestyle=":")
        handles = [h for ax in axes for h in zip(*ax.get_legend_handles_labels())]
        fig.legend([h for h, _ in handles], [t for _, t in handles], frameon=False, fontsize=7,
                   loc="outside right upper")
        method = ", ".join(sorted(set(df["method"])))
        fit_title(fig, "Residual Jacobian spectral norms and swap distances")
        clipped = ""
        if len(far):
            listed = ", ".join(f"{r['model']} block {int(r['block'])} ({r['norm_mean']:.3g})"
                               for _, r in far.iterrows())
            clipped = (f"; off the axes, at their edge (triangle; right: dotted line): {listed}, more than "
                       f"{JACOBIAN_FAR:g} times any other block's norm. ||J_k|| is relative to the scale of the "
                       "block's input, and the first block reads the token embeddings, not the residual stream that "
                       "the later blocks read")
        add_note(fig, f"||J_k||: largest singular value of d(block_k(x) - x)/dx over a whole sequence ({method}); "
                      "below 1 (dashed) the block contracts perturbations" + clipped)
        save_figure(fig, out_png, out_pdf)
