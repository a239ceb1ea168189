"""What explains the protocol gap (exploratory): Spearman's rho of each covariate with the gap, per model.

One panel per model: for each covariate (y), rho over all pairs and training steps of the model (large
markers, 95% percentile bootstrap CI over pairs) for the clean gap and the paper's one-direction gap, and
rho within each single checkpoint (small hollow markers, no CI). Reads results/covariate_correlations.parquet
(:mod:`swapkl.covariate_stats`) through :mod:`swapkl.schemas`, so it needs no torch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.style import BLUE, VERMILLION, add_note, figure_style, new_figure, save_figure
from swapkl.schemas import read_covariate_correlations

LABELS = {
    "distance": "pair distance j \u2212 i",
    "rel_update_mean": "relative update size ||f(h)||/||h||, mean of i, j",
    "rel_update_absdiff": "relative update size, |i \u2212 j|",
    "update_cos": "cosine of the updates of i and j on h_i",
    "commutator": "commutator ||ij(h) \u2212 ji(h)|| / ||ij(h)||",
    "weight_dist": "relative weight distance ||\u03b8_i \u2212 \u03b8_j||",
    "attn_entropy_mean": "attention entropy, mean of i, j",
    "attn_entropy_absdiff": "attention entropy, |i \u2212 j|",
}
TARGETS = {"gap": ("gap = max(r(i\u2190j), r(j\u2190i)) \u2212 d_inter", VERMILLION),
           "gap_fwd": ("one-direction gap = r(i\u2190j) \u2212 d_inter", BLUE)}


def plot_covariate_correlations(corr, out_png, out_pdf) -> None:
    corr = corr if isinstance(corr, pd.DataFrame) else read_covariate_correlations(corr)
    pooled = corr[corr["scope"] == "model"]
    models = list(dict.fromkeys(pooled["model"].dropna()))
    if not models:
        raise SwapKLError("the covariate correlations hold no per-model rows: nothing to plot")
    covariates = list(dict.fromkeys(pooled["covariate"]))
    y = np.arange(len(covariates))[::-1].astype(float)
    with figure_style():
        fig = new_figure(3.4 * len(models) + 3.2, 0.45 * len(covariates) + 2.4)
        axes = np.atleast_1d(fig.subplots(1, len(models), sharey=True, squeeze=False)[0])
        for ax, model in zip(axes, models):
            for k, (target, (label, colour)) in enumerate(TARGETS.items()):
                off = 0.15 if k == 0 else -0.15
                sel = pooled[(pooled["model"] == model) & (pooled["target"] == target)].set_index("covariate")
                sel = sel.reindex(covariates)
                rho = sel["spearman"].to_numpy(float)
                err = np.vstack([rho - sel["ci_low"].to_numpy(float), sel["ci_high"].to_numpy(float) - rho])
                ax.errorbar(rho, y + off, xerr=np.where(np.isfinite(err), err, 0), fmt="o", color=colour, ms=5,
                            capsize=2, label=f"{label}, all checkpoints (95% CI)")
                each = corr[(corr["scope"] == "checkpoint") & (corr["model"] == model) & (corr["target"] == target)]
                yy = y[[covariates.index(c) for c in each["covariate"]]] + off
                ax.scatter(each["spearman"], yy, s=12, facecolors="none", edgecolors=colour, linewidths=0.7,
                           alpha=0.7, label=f"{label}, one checkpoint")
            ax.axvline(0, color="#444444", lw=0.8)
            ax.set_xlim(-1.05, 1.05)
            n = pooled[(pooled["model"] == model)]["n_pairs"].max()
            k_ck = corr[(corr["scope"] == "checkpoint") & (corr["model"] == model)]["revision"].nunique()
            ax.set_title(f"{model}\n{n} pairs over {k_ck} checkpoint(s)", fontsize=9)
            ax.set_xlabel("Spearman \u03c1 with the gap\n(unitless)")
        axes[0].set_yticks(y, [LABELS.get(c, c) for c in covariates])
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper center", ncol=min(2, len(models)), fontsize=7, frameon=False)
        n_boot = int(pooled["n_boot"].max())
        add_note(fig, "Exploratory: no correction for multiple comparisons. \u03c1 > 0: pairs with a larger covariate "
                      f"have a larger gap. CIs: percentile bootstrap over pairs ({n_boot} resamples); duplicate "
                      "revisions left out.")
        save_figure(fig, out_png, out_pdf)
