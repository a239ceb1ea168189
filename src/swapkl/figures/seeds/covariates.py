"""What explains the protocol gap (exploratory): Spearman's rho of each covariate with the gap.

One panel per seed family (its members' pairs pooled over steps and seeds) and one per model outside the
families (its pairs pooled over steps): for each covariate (y), the pooled rho (large markers, 95%
percentile bootstrap CI over pairs) for the clean gap and the paper's one-direction gap, and as small hollow
markers each member's rho (family panels) or each checkpoint's rho (model panels), without CIs. Reads
results/covariate_correlations.parquet (:mod:`swapkl.studies.covariate_stats`) through :mod:`swapkl.tables.schemas`, so it
needs no torch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
from swapkl.figures.palette import BLUE, VERMILLION
from swapkl.tables.schemas import read_covariate_correlations
from swapkl.stats.seed_families import family_of

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


def _panels(corr: pd.DataFrame, families: dict | None) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """(title, pooled rows with CIs, small-marker rows) per panel: one per seed family (pooled over its
    members' pairs, steps and seeds; small markers: each member's rho) and one per model outside the families
    (pooled over its pairs and steps; small markers: each checkpoint's rho)."""
    by_model = corr[corr["scope"] == "model"]
    member_of = {m: name for m, (name, _) in family_of(families or {}).items()}
    panels, drawn = [], set()
    for name, f in (families or {}).items():
        pooled = corr[(corr["scope"] == "family") & (corr["group"] == f"family={name}")]
        if pooled.empty:
            continue
        drawn.add(name)
        small = by_model[by_model["model"].isin(list(f["members"]))]
        n_ck = corr[(corr["scope"] == "checkpoint") & corr["model"].isin(list(f["members"]))]["revision"].nunique()
        panels.append((f"family {name}: {small['model'].nunique()} seeds\n{int(pooled['n_pairs'].max())} pairs "
                       f"over {n_ck} step(s); small: each seed", pooled, small))
    for model in dict.fromkeys(by_model["model"].dropna()):
        if member_of.get(model) in drawn:
            continue
        pooled = by_model[by_model["model"] == model]
        small = corr[(corr["scope"] == "checkpoint") & (corr["model"] == model)]
        panels.append((f"{model}\n{int(pooled['n_pairs'].max())} pairs over {small['revision'].nunique()} "
                       "checkpoint(s); small: each checkpoint", pooled, small))
    return panels


def plot_covariate_correlations(corr, out_png, out_pdf, *, families: dict | None = None) -> None:
    """The figure (module docstring); ``families`` as the workflow's seed summary: ``{family: {"members":
    {model: seed}}}``."""
    corr = corr if isinstance(corr, pd.DataFrame) else read_covariate_correlations(corr)
    panels = _panels(corr, families)
    if not panels:
        raise SwapKLError("the covariate correlations hold no per-model rows: nothing to plot")
    covariates = list(dict.fromkeys(corr[corr["scope"] == "model"]["covariate"]))
    y = np.arange(len(covariates))[::-1].astype(float)
    with figure_style():
        fig = new_figure(3.4 * len(panels) + 3.2, 0.45 * len(covariates) + 2.4)
        axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True, squeeze=False)[0])
        for ax, (title, pooled, small) in zip(axes, panels):
            for k, (target, (label, colour)) in enumerate(TARGETS.items()):
                off = 0.15 if k == 0 else -0.15
                sel = pooled[pooled["target"] == target].set_index("covariate").reindex(covariates)
                rho = sel["spearman"].to_numpy(float)
                err = np.vstack([rho - sel["ci_low"].to_numpy(float), sel["ci_high"].to_numpy(float) - rho])
                ax.errorbar(rho, y + off, xerr=np.where(np.isfinite(err), err, 0), fmt="o", color=colour, ms=5,
                            capsize=2, label=f"{label}, pooled (95% CI)")
                each = small[(small["target"] == target) & small["covariate"].isin(covariates)]
                yy = y[[covariates.index(c) for c in each["covariate"]]] + off
                ax.scatter(each["spearman"], yy, s=12, facecolors="none", edgecolors=colour, linewidths=0.7,
                           alpha=0.7, label=f"{label}, one checkpoint or seed")
            ax.axvline(0, color="#444444", lw=0.8)
            ax.set_xlim(-1.05, 1.05)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("Spearman \u03c1 with the gap\n(unitless)")
        axes[0].set_yticks(y, [LABELS.get(c, c) for c in covariates])
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper center", ncol=2, fontsize=7, frameon=False)
        n_boot = int(corr["n_boot"].max())
        add_note(fig, "Exploratory: no correction for multiple comparisons. \u03c1 > 0: pairs with a larger covariate "
                      f"have a larger gap. CIs: percentile bootstrap over pairs ({n_boot} resamples); duplicate "
                      "revisions left out. A seed family's panel pools its members' pairs over steps and seeds.")
        save_figure(fig, out_png, out_pdf)
