"""Rank confusion matrix of one guide against a reference ranking (the second seed paper's view),
with every guide's exact-rank and severe misranking rates against the deletion-cost ranking."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from swapkl.stats.agreement import rank_confusion
from swapkl.stats.rank_correlation import spearman
from swapkl.errors import SwapKLError
from swapkl.figures.pruning.cost import AGREEMENT_LABELS
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.figures.palette import BLUE, VERMILLION
from swapkl.tables.schemas import read_agreement


def plot_rank_confusion(agr: pd.DataFrame | str, model: str, revision: str, out_png, out_pdf, *,
                        guide: str = "bi", reference: str = "deletion") -> None:
    """Left: confusion matrix of ``guide``'s layer ranks (rows) against ``reference``'s (columns);
    right: exact-rank and severe misranking rates of every guide against ``reference``."""
    agr = agr if isinstance(agr, pd.DataFrame) else read_agreement(agr)
    g = agr[(agr["model"] == model) & (agr["revision"] == revision) & (agr["reference"] == reference)]
    row = g[g["guide"] == guide]
    if row.empty:
        raise SwapKLError(f"no agreement row of {guide} against {reference} for {model}@{revision}")
    r = row.iloc[0]
    c = rank_confusion(r["guide_rank"], r["reference_rank"])
    m = len(c)
    excluded = ", ".join(str(v) for v in r["excluded_layers"]) or "none"
    name = lambda k: AGREEMENT_LABELS.get(k, k)  # noqa: E731
    with figure_style():
        fig = new_figure(11.0, 4.8)
        ax_c, ax_b = fig.subplots(1, 2, width_ratios=[1, 1.1])
        vs = g.sort_values("guide")
        if m >= 2:
            rho = _confusion_panel(ax_c, c, r["guide_rank"], r["reference_rank"], name(guide), name(reference))
        else:  # e.g. a 3-block model: its boundary blocks excluded, at most one block is left to rank
            _no_ranks_panel(ax_c, r, excluded)
        _rates_panel(ax_b, vs, m, r["severe_chance"], name)
        ax_b.set_title(f"Every guide against the {name(reference)} ranking")
        fit_title(fig, f"{model} @ {revision}: rank confusion (statistics of the ICLR 2026 layer-relevance paper)")
        if m >= 2:
            add_note(fig, f"{name(guide)} against {name(reference)}: exact rank differs for "
                          f"{r['exact_rank_misranking']:.1%} of the layers (chance {r['exact_rank_chance']:.1%}, "
                          f"permutation p = {r['exact_rank_p']:.3g}); severe (offset ≥ {r['severe_offset']}) for "
                          f"{r['severe_misranking']:.1%} (chance {r['severe_chance']:.1%}, p = {r['severe_p']:.3g}). "
                          f"Ordinal ranks of the per-layer scores (low = safe to remove; ties: lower layer first) over "
                          f"the {m} layers both rankings score; boundary layers excluded: {excluded} (the "
                          f"deletion-vs-BI figure ranks every block, so its ρ differs). Spearman ρ = "
                          f"{rho:.2f} is the Pearson correlation of these ranks, so no single layer dominates it (the "
                          "Pearson r of the raw scores in the agreement table can be set by one outlying layer); the "
                          "paper's sign convention is −ρ.")
        else:
            add_note(fig, f"No rank statistics: {_few_ranked(r, excluded)} A ranking needs at least 2 layers; "
                          "the per-layer scores themselves are in the agreement table.")
        save_figure(fig, out_png, out_pdf)


def _few_ranked(r, excluded: str) -> str:
    n = int(r["n_ranked"])
    return (f"the model has {int(r['n_layers'])} blocks; with the boundary blocks excluded ({excluded}) both "
            f"rankings score {n} block{'' if n == 1 else 's'}.")


def _no_ranks_panel(ax, r, excluded: str) -> None:
    """The confusion panel of a model with fewer than 2 ranked layers: a note in place of the matrix."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(f"No rank confusion: {_few_ranked(r, excluded)} "
                                              "A ranking needs at least 2.", 44)),
            ha="center", va="center", transform=ax.transAxes, fontsize=9)


def _confusion_panel(ax, c, guide_rank, reference_rank, guide_name: str, reference_name: str) -> float:
    """The confusion matrix of the two rankings; returns the Spearman ρ of the ranks (shown in the title)."""
    m = len(c)
    rho = float(spearman(guide_rank, reference_rank))
    ax.imshow(c, cmap="Greys", vmin=0, vmax=1, origin="lower")
    ax.plot([-0.5, m - 0.5], [-0.5, m - 0.5], color=BLUE, lw=0.8, ls="--")
    ax.set_xlabel(f"rank by {reference_name} (0 = safest to remove)")
    ax.set_ylabel(f"rank by {guide_name} (0 = safest to remove)")
    ax.grid(False)
    ax.set_title(f"{guide_name} vs {reference_name}: Spearman ρ = {rho:.2f}\nof the ranks of the {m} inner layers",
                 fontsize=9)
    return rho


def _rates_panel(ax, vs: pd.DataFrame, m: int, severe_chance: float, name) -> None:
    """Every guide's exact-rank and severe misranking rates; chance lines where ``m`` layers were ranked."""
    y = np.arange(len(vs))
    exact = vs["exact_rank_misranking"].to_numpy(dtype=float)
    severe = vs["severe_misranking"].to_numpy(dtype=float)
    ax.barh(y - 0.2, np.nan_to_num(exact), height=0.4, color=BLUE, label="exact rank differs")
    ax.barh(y + 0.2, np.nan_to_num(severe), height=0.4, color=VERMILLION, label="severe (rank offset ≥ ⌈m/4⌉)")
    if m >= 2:
        ax.axvline(1 - 1 / m, color="black", lw=0.8, ls=":", label=f"exact-rank chance level (1 − 1/{m})")
        if np.isfinite(severe_chance):
            ax.axvline(severe_chance, color=VERMILLION, lw=0.8, ls=":", label="severe chance level")
    for k in np.flatnonzero(np.isnan(exact) & np.isnan(severe)):
        ax.text(0.01, k, "n/a (fewer than 2 ranked layers)", va="center", fontsize=7)
    ax.set_yticks(y, [name(k) for k in vs["guide"]])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"share of the {m} ranked layers (fraction)" if m >= 2 else "share of the ranked layers (fraction)")
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize="x-small")


# the rank agreement between the pruning guides of one checkpoint, and their rank confusion against deletion
