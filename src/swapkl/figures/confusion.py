"""Rank confusion matrix of one guide against a reference ranking (the second seed paper's view),
with every guide's exact-rank and severe misranking rates against the deletion-cost ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.pruning.agreement import rank_confusion
from swapkl.stats.rank_correlation import spearman
from swapkl.errors import SwapKLError
from swapkl.figures.pruning_figure import AGREEMENT_LABELS, plot_agreement
from swapkl.figures.figure_registry import on_table
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
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
    rho = float(spearman(r["guide_rank"], r["reference_rank"])) if m >= 2 else float("nan")
    with figure_style():
        fig = new_figure(11.0, 4.8)
        ax_c, ax_b = fig.subplots(1, 2, width_ratios=[1, 1.1])
        ax_c.imshow(c, cmap="Greys", vmin=0, vmax=1, origin="lower")
        ax_c.plot([-0.5, m - 0.5], [-0.5, m - 0.5], color=BLUE, lw=0.8, ls="--")
        ax_c.set_xlabel(f"rank by {name(reference)} (0 = safest to remove)")
        ax_c.set_ylabel(f"rank by {name(guide)} (0 = safest to remove)")
        ax_c.grid(False)
        ax_c.set_title(f"{name(guide)} vs {name(reference)}: Spearman ρ of the ranks = {rho:.2f}", fontsize=9)
        vs = g.sort_values("guide")
        y = np.arange(len(vs))
        ax_b.barh(y - 0.2, vs["exact_rank_misranking"].to_numpy(dtype=float), height=0.4, color=BLUE,
                  label="exact rank differs")
        ax_b.barh(y + 0.2, vs["severe_misranking"].to_numpy(dtype=float), height=0.4, color=VERMILLION,
                  label="severe (rank offset ≥ ⌈m/4⌉)")
        ax_b.axvline(1 - 1 / m, color="black", lw=0.8, ls=":", label=f"exact-rank chance level (1 − 1/{m})")
        if np.isfinite(r["severe_chance"]):
            ax_b.axvline(r["severe_chance"], color=VERMILLION, lw=0.8, ls=":", label="severe chance level")
        ax_b.set_yticks(y, [name(k) for k in vs["guide"]])
        ax_b.invert_yaxis()
        ax_b.set_xlim(0, 1)
        ax_b.set_xlabel(f"share of the {m} ranked layers (fraction)")
        ax_b.set_title(f"Every guide against the {name(reference)} ranking")
        ax_b.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, fontsize="x-small")
        fig.suptitle(f"{model} @ {revision}: rank confusion (second seed paper's statistics)")
        add_note(fig, f"{name(guide)} against {name(reference)}: exact rank differs for "
                      f"{r['exact_rank_misranking']:.1%} of the layers (chance {r['exact_rank_chance']:.1%}, "
                      f"permutation p = {r['exact_rank_p']:.3g}); severe (offset ≥ {r['severe_offset']}) for "
                      f"{r['severe_misranking']:.1%} (chance {r['severe_chance']:.1%}, p = {r['severe_p']:.3g}). "
                      f"Ordinal ranks of the per-layer scores (low = safe to remove; ties: lower layer first) over "
                      f"the {m} layers both rankings score; boundary layers excluded: {excluded}. Spearman ρ = "
                      f"{rho:.2f} is the Pearson correlation of these ranks, so no single layer dominates it (the "
                      "Pearson r of the raw scores in the agreement table can be set by one outlying layer); the "
                      "paper's sign convention is −ρ.")
        save_figure(fig, out_png, out_pdf)



# the rank agreement between the pruning guides of one checkpoint, and their rank confusion against deletion
draw_pruning_agreement = on_table(plot_agreement, "agreement")
draw_rank_confusion = on_table(plot_rank_confusion, "agreement")
