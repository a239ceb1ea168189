"""Recovery after pruning: each guide's delta PPL before and after healing (``results/recovery.parquet``).

Before healing the pruned model is compared with the base model; after healing the healed model is compared
with the unpruned control that went through the same heal, so both bars measure the damage that pruning
leaves, with the heal's domain adaptation taken out of the second.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.figures.palette import BLUE
from swapkl.pruning.guides.guide_registry import registered

ORANGE = "#d95f02"
#: the guide registry's label of each guide
GUIDE_LABELS = {g.name: g.label for g in registered()}


def plot_recovery(table: pd.DataFrame | str, out_png, out_pdf) -> None:
    """One panel per checkpoint: grouped bars of delta PPL % (pruned vs base, healed vs control) per guide
    and budget, labelled with the net recovery."""
    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    pruned = df[df["phase"] == "pruned"]
    if pruned.empty:
        raise SwapKLError("the recovery table has no pruned rows to plot")
    groups = list(pruned.groupby(["model", "revision"], sort=False))
    with figure_style():
        fig = new_figure(4.6 + 1.5 * max(len(g) for _, g in groups), 1.0 + 3.0 * len(groups))
        axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
        for ax, ((model, revision), rows) in zip(axes, groups):
            healed = df[(df["model"] == model) & (df["revision"] == revision) & (df["phase"] == "healed")]
            labels, before, after, net = [], [], [], []
            for r in rows.itertuples(index=False):
                h = healed[(healed["guide"] == r.guide) & (healed["budget"] == r.budget)]
                h = h[h["removed_layers"].map(lambda x, want=list(r.removed_layers): list(x) == want)]
                labels.append(f"{textwrap.fill(GUIDE_LABELS.get(r.guide, r.guide), 22)}\nn = {r.budget}")
                before.append(_with_ci(r._asdict(), "delta_ppl_pct"))
                after.append(_with_ci(h.iloc[0], "delta_ppl_pct") if len(h) else (np.nan,) * 3)
                net.append(_with_ci(h.iloc[0], "net_recovery") if len(h) else (np.nan,) * 3)
            x = np.arange(len(labels))
            for shift, values, colour, label in ((-0.2, before, BLUE, "pruned vs base"),
                                                 (0.2, after, ORANGE, "healed vs healed control")):
                v, lo, hi = (np.asarray(c, dtype=np.float64) for c in zip(*values))
                ax.bar(x + shift, v, 0.4, color=colour, label=label)
                ax.errorbar(x + shift, v, yerr=np.abs(np.vstack([v - lo, hi - v])), fmt="none", ecolor="#333333",
                            elinewidth=0.8, capsize=2)
            for k, (v, lo, hi) in enumerate(net):
                if np.isfinite(v):
                    text = f"{100 * v:.0f}%" + (f"\n[{100 * lo:.0f}, {100 * hi:.0f}]" if np.isfinite(lo) else "")
                    top = np.nanmax([after[k][0], after[k][2]])
                    ax.annotate(text, (x[k] + 0.2, top), ha="center", va="bottom", fontsize=7)
            ax.axhline(0, color="#888888", lw=0.6)
            ax.set_xticks(x, labels)
            ax.set_ylabel("perplexity increase (%)")
            ax.set_title(f"{model} @ {revision}", fontsize=9)
            ax.set_ylim(top=max(np.nanmax(np.r_[np.ravel(before), np.ravel(after), 0.0]), 0.0) * 1.25 or None)
        axes[0].legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fit_title(fig, "Recovery after pruning: the cost of removing blocks, before and after healing")
        add_note(fig, "Before healing: the pruned model against the unpruned one; after: the healed pruned model "
                      "against the unpruned control healed the same way. Numbers over the healed bars: net "
                      "recovery = 1 − (PPL healed − PPL control) / (PPL pruned − PPL base), with its 95% interval "
                      "in brackets. Bars: 95% bootstrap intervals over the evaluation windows, one resampling shared "
                      "by every phase of a checkpoint.", width=0.9)
        save_figure(fig, out_png, out_pdf)


def _with_ci(row, column: str) -> tuple[float, float, float]:
    """(value, low, high) of ``column`` in ``row``; a table written before the intervals has NaN bounds."""
    get = row.get if hasattr(row, "get") else row.__getitem__
    value = get(column)
    low, high = (get(f"{column}_ci_{end}") if f"{column}_ci_{end}" in row else np.nan for end in ("low", "high"))
    return tuple(np.nan if x is None else float(x) for x in (value, low, high))


