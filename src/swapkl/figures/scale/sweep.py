"""Figures of the scale sweep and the mechanism/robustness tables (results/scaling.parquet,
results/rope_counterfactual.parquet, results/convergence.parquet, results/jacobian.parquet)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from swapkl.errors import SwapKLError
from swapkl.probes.aggregate import rows
from swapkl.figures.guide_style import guide_look
from swapkl.figures.labels import place_labels
from swapkl.figures.select import as_frame
from swapkl.figures.style import add_note, far_cut, figure_style, fit_title, new_figure, save_figure
from swapkl.figures.palette import GREY
from swapkl.pruning.guides.guide_registry import registered
from swapkl.figures.palette import BLUE, GREEN, ORANGE, VERMILLION, cycled

#: fewer models than this show no trend with size (the figure says so)
MIN_TREND_MODELS = 3
#: parameter counts that span at least this factor get a log axis; a narrower span (the demo's models differ by
#: 1%) a linear one, where a log axis would show nothing but scientific-notation ticks
LOG_SIZE_SPAN = 10.0
PE_COLOURS = {"learned": BLUE, "alibi": GREEN, "rope": VERMILLION}
PE_LABELS = {"learned": "learned absolute (GPT-2, OPT)", "alibi": "ALiBi (BLOOM)", "rope": "rotary (RoPE)"}


def _frame(table) -> pd.DataFrame:
    return table if isinstance(table, pd.DataFrame) else pq.read_table(table).to_pandas()


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
    df = _frame(table)
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


def plot_rope_counterfactual(table: pd.DataFrame | str | Path, out_png, out_pdf, *, model: str,
                             revision: str) -> None:
    """Per-pair I/R ratio of ``model`` at ``revision`` with rotary embeddings on and off (paired dots), with the
    sign test in the note."""
    df = _frame(table)
    df = df[(df["model"] == model) & (df["revision"] == revision)]
    if df.empty:
        raise SwapKLError(f"the RoPE counterfactual table has no rows for {model} {revision}")
    pairs, summary = df[df["kind"] == "pair"], df[df["kind"] == "summary"].iloc[0]
    with figure_style():
        fig = new_figure(6.4, 4.0)
        ax = fig.subplots()
        x = np.arange(len(pairs))
        for k, (_, r) in enumerate(pairs.iterrows()):
            ax.plot([k, k], [r["ratio_ir_on"], r["ratio_ir_off"]], color=GREY, linewidth=0.8)
        ax.scatter(x, pairs["ratio_ir_on"], color=BLUE, label="RoPE on", zorder=3, s=22)
        ax.scatter(x, pairs["ratio_ir_off"], color=ORANGE, label="RoPE off (cos = 1, sin = 0)", zorder=3, s=22)
        ax.set_xticks(x, [f"{int(i)}\u2013{int(j)}" for i, j in zip(pairs["layer_i"], pairs["layer_j"])], rotation=90,
                      fontsize=6)
        ax.axhline(1.0, color=GREY, linestyle="--", linewidth=1.0)
        ax.set_xlabel("adjacent pair")
        ax.set_ylabel("I/R ratio d_inter / d_repl")
        ax.set_title(f"{model}@{revision}: the protocol gap without rotary position information")
        ax.legend(frameon=False, loc="best")
        add_note(fig, f"mean I/R {summary['ratio_ir_mean_on']:.3f} (on) vs {summary['ratio_ir_mean_off']:.3f} (off); "
                      f"gap larger without RoPE on {int(summary['n_larger_gap'])} of {int(summary['n_pairs'])} pairs, "
                      f"exact sign test p = {summary['sign_test_p']:.3g} (two-sided)")
        save_figure(fig, out_png, out_pdf)


def plot_predictor_validity(table: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """Each pair's swap score against the cost of removing the cheaper of its two blocks, per protocol."""
    df = _frame(table)
    pairs, summary = df[df["kind"] == "pair"], df[df["kind"] == "summary"].set_index("protocol")
    model, revision = df["model"].iloc[0], df["revision"].iloc[0]
    with figure_style():
        fig = new_figure(8.4, 3.6)
        axes = fig.subplots(1, 2)
        for ax, (protocol, col, colour) in zip(axes, (("replacement", "d_repl_max", VERMILLION),
                                                      ("interchange", "d_inter", BLUE))):
            ax.scatter(pairs[col], pairs["cost"], s=14, color=colour)
            ax.set_xscale("log")
            ax.set_xlabel(f"{protocol} KL of the pair (nats)")
            ax.set_ylabel("\u0394PPL % removing the cheaper block")
            s = summary.loc[protocol]
            ax.set_title(f"{protocol}: \u03c1 = {s['spearman']:.3f} (n = {int(s['n_pairs'])})", fontsize=9)
        fit_title(fig, f"{model}@{revision}: does the swap score predict the removal cost?")
        add_note(fig, f"cost: relative perplexity increase when the cheaper of the pair's two blocks is removed "
                      f"alone (base perplexity {df['base_ppl'].iloc[0]:.2f}); \u03c1: Spearman")
        save_figure(fig, out_png, out_pdf)


def plot_convergence(table: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """Rank agreement with the full prompt set and top-pair stability against the number of prompts. The axes
    run from 0 (rank agreement: from its lowest value if below 0) to 1, so that draw-to-draw noise near 1 is not
    magnified; the point at the full set (n = n_seqs), 1 by construction, is drawn hollow."""
    df = _frame(table)
    with figure_style():
        fig = new_figure(10.0, 3.8)
        axes = fig.subplots(1, 2)
        groups = list(df.groupby(["model", "revision", "protocol"], sort=True))
        for k, ((model, revision, protocol), sub) in enumerate(groups):
            colour = cycled(k)
            label = f"{model}@{revision} {protocol}"
            # series side by side on the log axis, each its own line style: lines that coincide (rho = 1) stay
            # visible
            shift = 1.0 + 0.035 * (k - (len(groups) - 1) / 2)
            style = dict(color=colour, marker="os^Dv"[k % 5], ls=("-", "--", ":", "-.")[k % 4], markersize=4)
            sub = sub.sort_values("n")
            part = sub[sub["n"] < sub["n_seqs"]]
            full = sub[sub["n"] >= sub["n_seqs"]]
            axes[0].errorbar(part["n"] * shift, part["spearman_median"],
                             yerr=[part["spearman_median"] - part["spearman_q05"],
                                   part["spearman_q95"] - part["spearman_median"]], capsize=3, label=label, **style)
            axes[1].plot(part["n"] * shift, part["top_pair_share"], label=label, **style)
            for ax, col in ((axes[0], "spearman_median"), (axes[1], "top_pair_share")):
                ax.plot(full["n"] * shift, full[col], ls="none", marker=style["marker"], markersize=5,
                        markerfacecolor="white", markeredgecolor=colour, label="_full set")
        axes[0].set_ylabel("Spearman \u03c1 with the full-set ranking")
        axes[1].set_ylabel("share of draws finding the best pair")
        sizes = sorted(set(df["n"]))
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xticks(sizes, [str(n) for n in sizes])
            ax.minorticks_off()
            ax.set_xlabel("windows (prompts) in the subsample")
        axes[0].set_ylim(min(0.0, float(df["spearman_q05"].min()) - 0.05), 1.05)
        axes[1].set_ylim(-0.02, 1.05)
        axes[0].legend(frameon=False, fontsize=7, loc="lower right")
        fit_title(fig, "How many prompts does a stable pair ranking need?")
        lowest = df[df["n"] < df["n_seqs"]]["spearman_median"]
        add_note(fig, "subsamples drawn without replacement from the stored per-sequence sums; bars: 5-95% of draws "
                      "(within the marker where the draws agree that closely); series side by side at each n; "
                      "hollow: the full set (n = all windows), where both are 1 by construction"
                      + (f"; lowest median \u03c1 below the full set: {lowest.min():.4f}" if len(lowest) else ""))
        save_figure(fig, out_png, out_pdf)


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
    for (model, revision), sub in _frame(table).groupby(["model", "revision"], sort=True):
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


def plot_domain_slices(table: pd.DataFrame | str | Path, out_png, out_pdf) -> None:
    """Relative perplexity increase of every pruning configuration on the reference text against the second
    corpus, one panel per slice, with Spearman's rho."""
    df = _frame(table)
    summaries = df[df["kind"] == "summary"].reset_index(drop=True)
    configs = df[df["kind"] == "config"]
    order = {g.name: k for k, g in enumerate(registered())}  # the pruning figures' order, looks and labels
    guides = sorted(set(configs["guide"]), key=lambda g: (order.get(g, len(order)), g))
    with figure_style():
        fig = new_figure(3.6 * len(summaries) + 2.6, 3.8)
        axes = np.atleast_1d(fig.subplots(1, len(summaries)))
        for ax, (_, s) in zip(axes, summaries.iterrows()):
            rows = configs[configs["model"] == s["model"]]
            for guide in guides:
                g = rows[rows["guide"] == guide]
                look = guide_look(guide) if guide in order else None
                ax.scatter(g["delta_ppl_pct_reference"], g["delta_ppl_pct_slice"], s=18,
                           color=look.colour if look else GREY, marker=look.marker if look else "o",
                           label=look.label if look else guide)
            ax.set_xlabel(f"\u0394PPL % on {s['reference']}'s text")
            ax.set_ylabel(f"\u0394PPL % on {s['model']}'s text")
            ax.set_title(f"{s['model']}: \u03c1 = {s['spearman']:.3f} (n = {int(s['n_configs'])})", fontsize=9)
        shown = {}  # each guide once, in the order the panels drew them
        for ax in axes:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                shown.setdefault(label, handle)
        fig.legend(list(shown.values()), list(shown), loc="outside right center", frameon=False, fontsize=6, title="guide",
                   title_fontsize=7)
        fit_title(fig, "Pruning cost on two corpora: is the ranking of removals the same?")
        add_note(fig, "each dot: one guide at one budget (random draws: their mean); the same removed blocks "
                      "evaluated on both texts")
        save_figure(fig, out_png, out_pdf)
