"""One model's protocol gap inside the block: each adjacent pair's gap for the whole block, its attention and its
MLP; what deleting each sublayer costs per parameter; and, where the run prunes, sublayer against block pruning
at the same parameter budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from swapkl.errors import SwapKLError
from swapkl.figures.guide_style import guide_look
from swapkl.figures.palette import BLUE, GREY, PURPLE, SKY, VERMILLION
from swapkl.figures.stepaxis import set_step_axis
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.tables.schemas import read_frame

#: how each part is drawn: label, colour, marker
PARTS = {"block": ("whole block", "black", "o"), "attention": ("attention sublayer", BLUE, "s"),
         "mlp": ("MLP sublayer", VERMILLION, "^")}
#: the sublayer guides' looks (the block guides take the pruning figures' looks)
SUBLAYER_GUIDES = {"sublayer_deletion": ("Sublayer deletion KL per parameter", PURPLE, "--", "D"),
                   "sublayer_interchange": ("Sublayer interchange score per parameter", SKY, "--", "v")}
BLOCK_GUIDES = ("interchange", "replacement_max", "deletion")


def _errorbars(ax, x, frame: pd.DataFrame, colour: str, marker: str, label: str, **kw) -> None:
    v = frame["value"].to_numpy(dtype=float)
    err = np.vstack([v - frame["ci_low"].to_numpy(dtype=float), frame["ci_high"].to_numpy(dtype=float) - v])
    ax.errorbar(x, v, yerr=np.clip(err, 0, None), fmt=marker, color=colour, ms=4, capsize=2, lw=1, label=label, **kw)


def _gaps_panel(ax, gaps: pd.DataFrame) -> str:
    """Each adjacent pair's gap per part, and the sum of the two sublayers' gaps; returns the note's sentence."""
    rows = gaps[(gaps["kind"] == "gap") & (gaps["layer_j"] == gaps["layer_i"] + 1)]
    pairs = sorted(set(rows["layer_i"].astype(int)))
    for k, (part, (label, colour, marker)) in enumerate(PARTS.items()):
        r = rows[rows["part"] == part].set_index("layer_i").loc[pairs]
        _errorbars(ax, np.array(pairs) + (k - 1) * 0.2, r, colour, marker, label)
    both = sum(rows[rows["part"] == p].set_index("layer_i").loc[pairs, "value"].to_numpy(dtype=float)
               for p in ("attention", "mlp"))
    ax.plot(pairs, both, "-", color=GREY, lw=1, label="attention + MLP (additive)")
    ax.axhline(0, color=GREY, lw=0.6)
    ax.set_xlabel("adjacent pair (i, i+1), by i")
    ax.set_ylabel("gap = d_repl \u2212 d_inter (nats/token)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Protocol gap of each pair, by part")
    ax.legend(frameon=False, fontsize=7)
    summary = gaps[gaps["layer_i"].isna()].set_index(["kind", "part"])
    if ("share", "mlp") not in summary.index:  # a table without the means over pairs
        return f"median gap: block {rows[rows['part'] == 'block']['value'].median():.3g}"

    def stated(kind, part, fmt):
        r = summary.loc[(kind, part)]
        return f"{fmt(r['value'])} ({fmt(r['ci_low'])} to {fmt(r['ci_high'])})"

    pct = lambda x: f"{100 * x:.0f}%"  # noqa: E731
    num = lambda x: f"{x:+.3f}"  # noqa: E731
    block = summary.loc[("mean_gap", "block")]
    shares = (f"attention carries {stated('share', 'attention', pct)} and the MLP {stated('share', 'mlp', pct)} of "
              "the block's mean gap" if block["ci_low"] > 0 or block["ci_high"] < 0 else
              f"the block's mean gap {stated('mean_gap', 'block', num)} is not away from 0 at 95%, so no shares")
    return (f"over the {len(pairs)} pairs: {shares}; MLP − attention "
            f"{stated('mlp_minus_attention', 'mlp', num)}, interaction {stated('mean_interaction', 'block', num)} "
            "nats/token")


def _deletion_panel(ax, gaps: pd.DataFrame) -> None:
    rows = gaps[gaps["kind"] == "deletion_per_mparam"]
    positive = True
    for k, (part, (label, colour, marker)) in enumerate(PARTS.items()):
        r = rows[rows["part"] == part].sort_values("layer_i")
        positive &= bool((r["ci_low"] > 0).all())
        _errorbars(ax, r["layer_i"].to_numpy(dtype=float) + (k - 1) * 0.2, r, colour, marker, label)
    if positive:
        ax.set_yscale("log")
    ax.set_xlabel("block")
    ax.set_ylabel("deletion KL per million parameters")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Cost of deleting each part, per parameter" + (" (log axis)" if positive else ""))
    ax.legend(frameon=False, fontsize=7)


def _trajectory_panel(ax, gaps: pd.DataFrame) -> None:
    """The mean gap over the pairs of each part at every probed step."""
    rows = gaps[(gaps["kind"] == "mean_gap") & gaps["step"].notna()]
    for k, (part, (label, colour, marker)) in enumerate(PARTS.items()):
        r = rows[rows["part"] == part].sort_values("step")
        _errorbars(ax, r["step"].to_numpy(dtype=float), r, colour, marker, label)
        ax.plot(r["step"], r["value"], "-", color=colour, lw=1)
    ax.axhline(0, color=GREY, lw=0.6)
    set_step_axis(ax, rows["step"])
    ax.set_xlabel("training step")
    ax.set_ylabel("mean gap over the pairs (nats/token)")
    ax.set_title("Along training: the mean gap of each part")
    ax.legend(frameon=False, fontsize=7)


def _look(guide: str) -> tuple[str, str, str, str]:
    if guide in SUBLAYER_GUIDES:
        return SUBLAYER_GUIDES[guide]
    look = guide_look(guide)
    return f"{look.label} (blocks)", look.colour, look.linestyle, look.marker


def _pruning_panel(ax, pruning: pd.DataFrame) -> str:
    cost = pruning[(pruning["kind"] == "cost") & pruning["feasible"].astype(bool)]
    guides = [g for g in (*BLOCK_GUIDES, *SUBLAYER_GUIDES) if g in set(cost["guide"])]
    for k, guide in enumerate(guides):
        r = cost[cost["guide"] == guide].sort_values("budget")
        label, colour, style, marker = _look(guide)
        x = r["budget"].to_numpy(dtype=float) + (k - (len(guides) - 1) / 2) * 0.07
        _errorbars(ax, x, r, colour, marker, label)
        ax.plot(x, r["value"], style, color=colour, lw=1)
    if (cost["ci_low"] > 0).all():
        ax.set_yscale("log")
    ax.set_xlabel("budget: blocks removed, or their parameters in sublayers")
    ax.set_ylabel("perplexity increase (%)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Pruning at the same parameter budget")
    ax.legend(frameon=False, fontsize=7)
    diff = pruning[pruning["kind"] == "difference"]
    cheaper = diff[diff["ci_high"] < 0]
    dearer = diff[diff["ci_low"] > 0]
    return (f"sublayer guide minus block guide, paired 95% intervals: cheaper in {len(cheaper)}, dearer in "
            f"{len(dearer)}, undecided in {len(diff) - len(cheaper) - len(dearer)} of {len(diff)} comparisons")


#: the columns the figure reads of each table
GAPS_COLUMNS = ["model", "revision", "step", "kind", "part", "layer_i", "layer_j", "value", "ci_low", "ci_high",
                "n_windows", "n_tokens"]
PRUNING_COLUMNS = ["model", "revision", "kind", "guide", "budget", "feasible", "value", "ci_low", "ci_high",
                   "n_windows", "n_tokens"]


def plot_sublayer_decomposition(gaps: pd.DataFrame | str, pruning: pd.DataFrame | str | None, out_png, out_pdf, *,
                                model: str) -> None:
    """Left: the gap of each adjacent pair for the whole block, its attention and its MLP, with the sum of the
    two sublayers' gaps (where they add up, it meets the block's points). Middle: each part's deletion KL per
    million parameters. Right (where the run prunes): perplexity increase of the block guides and the sublayer
    guides at each budget. The last revision of the model; where the model was probed at several training steps, a
    first panel draws each part's mean gap along training. 95% bootstrap intervals. ``gaps`` and ``pruning``: the
    study's tables or their files (results/sublayer_gaps.parquet, results/sublayer_pruning.parquet)."""
    if not isinstance(gaps, pd.DataFrame):
        gaps = read_frame(gaps, GAPS_COLUMNS, "sublayer gaps")
    if pruning is not None and not isinstance(pruning, pd.DataFrame):
        pruning = read_frame(pruning, PRUNING_COLUMNS, "sublayer pruning")
    every = gaps[gaps["model"] == model]
    if every.empty:
        raise SwapKLError(f"the sublayer gaps table has no rows of model {model!r}")
    revision = every.sort_values("step", na_position="first")["revision"].iloc[-1]
    gaps = every[every["revision"] == revision]
    along = bool(every["step"].notna().all() and every["revision"].nunique() > 1)
    if pruning is not None:
        pruning = pruning[(pruning["model"] == model) & (pruning["revision"] == revision)]
        pruning = None if pruning.empty else pruning
    panels = 2 + (pruning is not None) + along
    with figure_style():
        fig = new_figure(4.6 * panels, 4.4)
        axes = list(fig.subplots(1, panels))
        if along:
            _trajectory_panel(axes.pop(0), every)
        notes = [_gaps_panel(axes[0], gaps)]
        _deletion_panel(axes[1], gaps)
        if pruning is not None:
            notes.append(_pruning_panel(axes[2], pruning))
        fit_title(fig, f"{model}: the protocol gap inside the block" + (f" (panels 2-{panels}: {revision})" if along
                                                                          else f" at {revision}"))
        first = gaps.iloc[0]
        notes.append(f"KL over {int(first['n_tokens'])} scored tokens of {int(first['n_windows'])} windows"
                     + (f"; perplexity on {int(pruning['n_tokens'].iloc[0])} tokens of "
                        f"{int(pruning['n_windows'].iloc[0])} windows" if pruning is not None else ""))
        add_note(fig, "; ".join(notes))
        save_figure(fig, out_png, out_pdf)

