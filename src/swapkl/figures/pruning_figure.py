"""Pruning figures: cost vs budget per guide, the I/R pruning ratio across models and along a
training trajectory, and the agreement between the guides' per-layer scores.

Every function takes the tables written by :mod:`swapkl.pruning.prune` (``results/pruning.parquet``, the
agreement table) and writes one PNG and one PDF, byte-identical on reruns
(:func:`swapkl.figures.style.save_figure`).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from swapkl.errors import SwapKLError
from swapkl.figures.stepaxis import set_step_axis
from swapkl.figures.figure_registry import on_table
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
from swapkl.figures.palette import BLUE
from swapkl.pruning.guides.guide_registry import FAMILIES, registered
from swapkl.figures.palette import cycled
from swapkl.pruning.cost_ratio import ir_ratios
from swapkl.tables.schemas import read_agreement, read_pruning

#: guide -> (label, colour, line style, marker), in the registry's order (:mod:`swapkl.pruning.guides`)
GUIDE_STYLE = {g.name: (g.label, g.colour, g.linestyle, g.marker) for g in registered() if g.plotted}
GUIDE_FAMILY = {g.name: g.family for g in registered()}
FIXED_MARKERS = ("*", "h", "X", "p")


def _checkpoint(df: pd.DataFrame, model: str, revision: str) -> pd.DataFrame:
    g = df[(df["model"] == model) & (df["revision"] == revision)]
    if g.empty:
        raise SwapKLError(f"no pruning rows for {model}@{revision}")
    return g


def _err(y, lo, hi) -> np.ndarray:
    y, lo, hi = (np.asarray(v, dtype=np.float64) for v in (y, lo, hi))
    return np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])


def _compact(v: float, _pos=None) -> str:
    """Plain tick labels for a symmetric-log axis: 0, 0.5, 1, 20, 500, 1k, 20k, 1M (no "-10^0")."""
    a = abs(v)
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{'−' if v < 0 else ''}{a / div:g}{suffix}"
    return f"{v:g}".replace("-", "−")


def symlog_axis(ax, which: str, linthresh: float) -> None:
    """A symmetric-log ``which`` ("x" or "y") axis, linear within ±``linthresh``, with ticks at 0 and at
    1-2-5 multiples of the decades above ``linthresh`` (decades alone, thinned to at most six a side, over a
    wide range), labelled as plain numbers. Call once the data are drawn."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("symlog", linthresh=linthresh)
    axis = ax.xaxis if which == "x" else ax.yaxis
    lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()
    top = max(abs(lo), abs(hi), linthresh)
    decades = [linthresh * 10.0 ** k for k in range(int(np.floor(np.log10(top / linthresh))) + 1)]
    if len(decades) <= 3:
        mags = [d * m for d in decades for m in (1, 2, 5)]
    else:
        mags = decades[::int(np.ceil(len(decades) / 6))]
    ticks = [0.0] + [m for m in mags if m <= hi] + [-m for m in mags if -m >= lo]
    axis.set_major_locator(FixedLocator(sorted(ticks)))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(_compact))


#: a line panel turns symmetric-log when its largest |value| exceeds this many times the median |value|
SQUEEZE = 20.0


def _scale_for(ax, values, unit: str = "%") -> str:
    """A symmetric-log y axis where a few rules would squeeze the rest into a line (the largest |value| more
    than :data:`SQUEEZE` times the median, e.g. the anti-guided bound at +250% over guides near +1%), linear
    within ± the decade of the median |value|; else linear. Returns the axis note for the label."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    v = v[np.isfinite(v) & (v > 0)]
    if not v.size or v.max() <= SQUEEZE * np.median(v):
        return ""
    linthresh = float(10.0 ** np.floor(np.log10(np.median(v))))
    symlog_axis(ax, "y", linthresh)
    return f" (symmetric log scale, linear within ±{linthresh:g}{unit})"


def grouped_legend(fig, ax, series) -> None:
    """One legend of the selection rules, grouped under a bold header per guide family
    (:data:`swapkl.pruning.guides.guide_registry.FAMILIES`), in the registry's family order."""
    by_label = dict(zip(*reversed(ax.get_legend_handles_labels())))
    handles, labels, headers = [], [], []
    for fam in FAMILIES.values():
        members = [label for guide, (label, *_), _ in series if GUIDE_FAMILY.get(guide) == fam.name]
        members = [m for m in dict.fromkeys(members) if m in by_label]
        if not members:
            continue
        headers.append(len(labels))
        handles.append(Line2D([], [], linestyle="none"))
        labels.append(fam.label)
        handles += [by_label[m] for m in members]
        labels += members
    leg = fig.legend(handles, labels, loc="outside right upper", frameon=False, title="Selection rule by family",
                     handlelength=2.6)
    for k, text in enumerate(leg.get_texts()):
        if k in headers:
            text.set_fontweight("bold")


def _table(table, reader) -> pd.DataFrame:
    """A DataFrame as is, or a Parquet path read with ``reader``."""
    return table if isinstance(table, pd.DataFrame) else reader(table)


def _fixed_mean(rows: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """A fixed set's rows, one per budget: where the name holds several sets of one size (e.g. random trials),
    their mean, with the sets' min and max in place of the CI columns."""
    ok = rows[rows["feasible"].astype(bool)]
    if ok.empty or ok.groupby("budget").size().max() == 1:
        return rows, False
    g = ok.groupby("budget")
    out = pd.DataFrame({"budget": list(g.groups), "feasible": True,
                        "delta_ppl_pct": g["delta_ppl_pct"].mean().to_numpy(),
                        "delta_ppl_pct_ci_low": g["delta_ppl_pct"].min().to_numpy(),
                        "delta_ppl_pct_ci_high": g["delta_ppl_pct"].max().to_numpy(),
                        "kl_mean": g["kl_mean"].mean().to_numpy(), "kl_ci_low": g["kl_mean"].min().to_numpy(),
                        "kl_ci_high": g["kl_mean"].max().to_numpy()})
    return out, True


def plot_delta_ppl(df: pd.DataFrame | str, model: str, revision: str, out_png, out_pdf) -> None:
    """Delta PPL % (left) and KL to the base model (right) vs number of removed blocks, one line per guide
    (and per named fixed set)."""
    df = _table(df, read_pruning)
    g = _checkpoint(df, model, revision)
    budgets = sorted(set(g["budget"]) - {0})
    series = [(k, GUIDE_STYLE[k], g[g["guide"] == k]) for k in GUIDE_STYLE if k in set(g["guide"])]
    fixed = g[g["guide"] == "fixed"]
    for n, name in enumerate(sorted(set(fixed["fixed_set"].dropna()))):
        rows, several = _fixed_mean(fixed[fixed["fixed_set"] == name])
        label = f"Fixed set {name}" + (" (mean of its sets; bars: min–max)" if several else "")
        series.append(("fixed", (label, FAMILIES["control"].colour, "-.", FIXED_MARKERS[n % len(FIXED_MARKERS)]), rows))
    guides = [k for k, _, _ in series]
    base = g[g["guide"] == "base"].iloc[0]
    with figure_style():
        # the grouped legend (one row per rule and per family header) sits beside the top panels: they are at
        # least as tall as it, so it never reaches down into the ranked panel
        top_h = max(4.6, 0.2 * (len(series) + len(FAMILIES)) + 0.8)
        fig = new_figure(12.0, top_h + 0.22 * len(series) + 1.0)
        top, bottom = fig.subfigures(2, 1, height_ratios=[top_h, 0.22 * len(series) + 1.0])
        ax_p, ax_k = top.subplots(1, 2)
        width = 0.6 / max(len(guides), 1)
        for k, (guide, (label, colour, ls, marker), rows_of) in enumerate(series):
            r = rows_of[rows_of["feasible"]].sort_values("budget")
            if r.empty:
                continue
            x = r["budget"].to_numpy(dtype=np.float64) + (k - (len(guides) - 1) / 2) * width
            y = r["delta_ppl_pct"].to_numpy()
            if guide == "random_mean":
                sd = r["delta_ppl_pct_sd"].fillna(0.0).to_numpy()
                ax_p.errorbar(x, y, yerr=sd, color=colour, ls=ls, marker=marker, capsize=2, label=label)
                ax_p.fill_between(x, r["delta_ppl_pct_min"], r["delta_ppl_pct_max"], color=colour, alpha=0.08, lw=0)
                ax_k.plot(x, r["kl_mean"], color=colour, ls=ls, marker=marker, label=label)
                continue
            ax_p.errorbar(x, y, yerr=_err(y, r["delta_ppl_pct_ci_low"], r["delta_ppl_pct_ci_high"]), color=colour,
                          ls=ls, marker=marker, capsize=2, label=label)
            kl = r["kl_mean"].to_numpy()
            ax_k.errorbar(x, kl, yerr=_err(kl, r["kl_ci_low"], r["kl_ci_high"]), color=colour, ls=ls, marker=marker,
                          capsize=2, label=label)
        plotted = g[g["feasible"].astype(bool) & (g["budget"] > 0)]
        note = _scale_for(ax_p, plotted["delta_ppl_pct"])
        kl_note = _scale_for(ax_k, plotted["kl_mean"], unit="")
        ax_p.axhline(0.0, color="black", lw=0.8)
        ax_p.set_xlabel("Blocks removed (n)")
        ax_p.set_ylabel("Perplexity increase over the unpruned model (%)" + ("\n" + note.strip() if note else ""))
        ax_p.set_title("Perplexity cost on held-out text")
        ax_k.set_xlabel("Blocks removed (n)")
        ax_k.set_ylabel("KL(base ‖ pruned) on the probe windows (nats/token)"
                        + ("\n" + kl_note.strip() if kl_note else ""))
        ax_k.set_title("Output change against the unpruned model")
        for ax in (ax_p, ax_k):
            ax.set_xticks(budgets)
        if guides:
            grouped_legend(fig, ax_p, series)
        _ranked_panel(bottom.subplots(), series, max(budgets, default=0))
        fig.suptitle(f"{model} @ {revision}: cost of removing blocks, by selection rule")
        add_note(fig, (
            f"Unpruned perplexity {base['ppl']:.2f} on {base['eval_split']} (sliding window {base['eval_window']}, "
            f"stride {base['eval_stride']}, {base['n_eval_tokens']} scored tokens). Error bars: 95% bootstrap CI over "
            f"evaluation windows (KL: over probe windows). Guided and random removals keep removed blocks more than "
            f"{base['spacing']} index apart; BI, angular and SLEB do not."))
        save_figure(fig, out_png, out_pdf)


def _ranked_panel(ax, series, budget: int) -> None:
    """Every selection rule's perplexity cost at ``budget`` blocks, sorted, with its CI: the rules that the
    line panels draw on top of each other, side by side."""
    rows = []
    for guide, (label, colour, _, marker), rows_of in series:
        r = rows_of[rows_of["feasible"] & (rows_of["budget"] == budget)]
        if r.empty:
            continue
        r = r.iloc[0]
        if guide == "random_mean":
            lo, hi = r["delta_ppl_pct"] - r["delta_ppl_pct_sd"], r["delta_ppl_pct"] + r["delta_ppl_pct_sd"]
        else:
            lo, hi = r["delta_ppl_pct_ci_low"], r["delta_ppl_pct_ci_high"]
        rows.append((float(r["delta_ppl_pct"]), float(lo), float(hi), label, colour, marker))
    if not rows:
        ax.set_axis_off()
        return
    rows.sort(key=lambda t: t[0])
    for k, (y, lo, hi, _, colour, marker) in enumerate(rows):
        ax.errorbar([y], [k], xerr=_err([y], [lo], [hi]), color=colour, marker=marker, capsize=2, ls="none")
    ax.set_yticks(range(len(rows)), [t[3] for t in rows], fontsize=7)
    ax.invert_yaxis()
    note = ""
    ax.margins(x=0.04)
    if max(abs(t[2]) for t in rows) > 20:  # a few costly rules would squeeze the rest into one point
        symlog_axis(ax, "x", 1)
        note = " (symmetric log scale, linear within ±1%)"
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_xlabel("Perplexity increase over the unpruned model (%)" + note)
    ax.set_title(f"All rules at n = {budget} blocks removed, lowest cost first (bars: 95% CI; random: mean ± s.d.)")


def _default_revision(g: pd.DataFrame) -> str:
    revs = g.drop_duplicates("revision")
    if len(revs) == 1:
        return str(revs["revision"].iloc[0])
    if revs["step"].notna().all():
        return str(revs.sort_values("step")["revision"].iloc[-1])
    if "main" in set(revs["revision"]):
        return "main"
    raise SwapKLError(f"model {g['model'].iloc[0]} has several revisions without steps; say which one to plot")


DIFF_LABEL = "ΔPPL% interchange-guided − ΔPPL% replacement-guided\n(percentage points; below 0: interchange cheaper)"


def _diff_note(n_boot: int) -> str:
    return ("Difference of the perplexity increases (%) of interchange-guided and replacement-guided (max of both "
            "directions) removal of the same number of blocks; below 0: the blocks the interchange protocol calls "
            "equivalent are cheaper to remove. Error bars: 95% paired bootstrap CI over evaluation windows "
            f"({n_boot} resamples). The ratio of the two costs is not drawn: it is undefined where either cost is "
            "near zero or negative.")


def plot_ir_panel(df: pd.DataFrame, out_png, out_pdf, *, revisions: dict[str, str] | None = None,
                  n_boot: int = 1000, seed: int = 0) -> None:
    """Interchange- minus replacement-guided perplexity increase (percentage points) vs budget, with its paired
    bootstrap CI, one line per model (its last training step unless ``revisions`` says otherwise)."""
    df = _table(df, read_pruning)
    revisions = dict(revisions or {})
    parts = []
    for model, g in df.groupby("model", sort=True):
        rev = revisions.get(model) or _default_revision(g)
        parts.append(g[g["revision"] == rev])
    if not parts:
        raise SwapKLError("no pruning rows to plot")
    ir = ir_ratios(pd.concat(parts), n_boot=n_boot, seed=seed)
    if ir.empty:
        raise SwapKLError("no checkpoint has both interchange- and replacement-guided rows")
    with figure_style():
        fig = new_figure(6.4, 4.6)
        ax = fig.subplots()
        models = list(dict.fromkeys(ir["model"]))
        for k, model in enumerate(models):
            r = ir[ir["model"] == model].sort_values("budget")
            x = r["budget"].to_numpy(dtype=np.float64) + (k - (len(models) - 1) / 2) * 0.08
            y = r["ir_diff"].to_numpy()
            ax.errorbar(x, y, yerr=_err(y, r["ir_diff_ci_low"], r["ir_diff_ci_high"]), marker="o", capsize=2,
                        color=cycled(k), label=f"{model} @ {r['revision'].iloc[0]}")
        ax.axhline(0.0, color="black", lw=0.8, ls="--", label="same cost")
        ax.set_xticks(sorted(set(ir["budget"])))
        ax.set_xlabel("Blocks removed (n)")
        ax.set_ylabel(DIFF_LABEL)
        ax.set_title("Does the interchange protocol find cheaper removals?")
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", frameon=False)
        add_note(fig, _diff_note(n_boot))
        save_figure(fig, out_png, out_pdf)


def plot_ir_trajectory(df: pd.DataFrame, model: str, out_png, out_pdf, *, budgets=None, n_boot: int = 1000,
                       seed: int = 0) -> None:
    """Interchange- minus replacement-guided perplexity increase vs training step of ``model``, one line per
    budget."""
    df = _table(df, read_pruning)
    g = df[df["model"] == model]
    if g.empty:
        raise SwapKLError(f"no pruning rows for model {model}")
    if g["step"].isna().any():
        raise SwapKLError(f"model {model} has revisions without a training step; a trajectory needs stepN revisions")
    ir = ir_ratios(g, n_boot=n_boot, seed=seed)
    if budgets is not None:
        ir = ir[ir["budget"].isin(list(budgets))]
    if ir.empty:
        raise SwapKLError(f"model {model} has no checkpoint with both interchange- and replacement-guided rows")
    with figure_style():
        fig = new_figure(6.6, 4.6)
        ax = fig.subplots()
        for k, n in enumerate(sorted(set(ir["budget"]))):
            r = ir[ir["budget"] == n].sort_values("step")
            y = r["ir_diff"].to_numpy()
            ax.errorbar(r["step"].to_numpy(dtype=np.float64), y, yerr=_err(y, r["ir_diff_ci_low"], r["ir_diff_ci_high"]),
                        marker="o", capsize=2, color=cycled(k), label=f"n = {n}")
        desc = set_step_axis(ax, ir["step"].to_numpy(dtype=np.float64))
        ax.axhline(0.0, color="black", lw=0.8, ls="--", label="same cost")
        ax.set_xlabel("Training step")
        ax.set_ylabel(DIFF_LABEL)
        ax.set_title(f"{model}: protocol dependence of pruning over training")
        fig.legend(*ax.get_legend_handles_labels(), title="blocks removed", loc="outside right upper", frameon=False)
        add_note(fig, _diff_note(n_boot) + f" One line per number of removed blocks n; {desc}.")
        save_figure(fig, out_png, out_pdf)


AGREEMENT_LABELS = {
    "interchange": "Interchange",
    "replacement_max": "Replacement (max)",
    "replacement_mean": "Replacement (mean)",
    "deletion": "Deletion KL",
    "sleb_single": "Single-removal NLL (SLEB)",
    "accuracy_single": "Single-removal next-token accuracy drop",
    "bi": "ShortGPT BI",
    "angular": "Angular (width 1)",
    "cka": "1 − linear CKA (block in/out)",
    "taylor": "First-order Taylor |θ·∇L|",
}


def plot_agreement(agr: pd.DataFrame, model: str, revision: str, out_png, out_pdf) -> None:
    """Spearman correlation between every two guides' per-layer scores (left) and each guide's
    misranking rate against the deletion-cost ranking (right)."""
    agr = _table(agr, read_agreement)
    g = agr[(agr["model"] == model) & (agr["revision"] == revision)]
    if g.empty:
        raise SwapKLError(f"no agreement rows for {model}@{revision}")
    names = [k for k in AGREEMENT_LABELS if k in set(g["guide"]) | set(g["reference"])]
    names += sorted((set(g["guide"]) | set(g["reference"])) - set(names))
    m = np.eye(len(names))
    for _, r in g.iterrows():
        m[names.index(r["guide"]), names.index(r["reference"])] = r["spearman"]
    labels = [AGREEMENT_LABELS.get(n, n) for n in names]
    vs = g[g["reference"] == "deletion"].set_index("guide")
    # the bars share the heatmap's rows (and so its labels): a row without a comparison reads "n/a"
    rates = np.array([vs.loc[n, "misranking_rate"] if n in vs.index else np.nan for n in names], dtype=np.float64)
    cell = 0.48  # inches per heatmap cell: room for "−0.00" at 7 pt
    side = cell * len(names)
    with figure_style():
        fig = new_figure(side + 6.4, max(side + 3.4, 5.0))
        ax_h, ax_b = fig.subplots(1, 2, width_ratios=[side, 2.4], sharey=True)
        im = ax_h.imshow(m, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")  # cells fill the axes
        ax_h.set_xticks(range(len(names)), [textwrap.fill(t, 18) for t in labels], rotation=90, fontsize=7)
        ax_h.set_yticks(range(len(names)), labels)
        ax_h.grid(False)
        for i in range(len(names)):
            for j in range(len(names)):
                if np.isfinite(m[i, j]):
                    ax_h.text(j, i, f"{m[i, j]:.2f}".replace("-", "−"), ha="center", va="center", fontsize=6.5,
                              color="white" if abs(m[i, j]) > 0.6 else "black")
        fig.colorbar(im, ax=ax_h, location="bottom", label="Spearman ρ between per-layer scores", shrink=0.7,
                     aspect=40)
        ax_h.set_title("Rank agreement between guides")
        ax_b.barh(np.arange(len(names)), np.nan_to_num(rates), color=BLUE)
        for k, v in enumerate(rates):
            ax_b.text((0 if np.isnan(v) else v) + 0.01, k, "n/a" if np.isnan(v) else f"{v:.2f}", va="center",
                      fontsize=7, zorder=4, bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none"))
        ax_b.tick_params(axis="y", labelleft=False)
        ax_b.axvline(0.5, color="black", lw=0.8, ls="--", label="unrelated ordering (0.5)")
        ax_b.set_xlim(0, 1.1)
        ax_b.set_xlabel("Misranking rate: share of layer\npairs ordered unlike deletion KL")
        ax_b.set_title("Against the deletion-cost ranking")
        ax_b.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16))
        fig.suptitle(f"{model} @ {revision}: do the guides rank layers alike? (low score = safe to remove)")
        add_note(fig, "Per-layer scores: pair guides s(i) = min over probed partners of d(i, j); deletion KL and "
                      "single-removal calibration NLL increase of block i; BI; angular distance across block i; 1 − linear "
                      "CKA of block i's input and output; first-order Taylor importance |Σ θ·∂L/∂θ| of block i. "
                      "Misranking counts layer pairs that neither ranking ties.")
        save_figure(fig, out_png, out_pdf)


draw_pruning_cost = on_table(plot_delta_ppl, "pruning")


def draw_pruning_ratio(inputs, out_png, out_pdf, *, wildcards, params):
    plot_ir_panel(inputs["pruning"], out_png, out_pdf, n_boot=params["n_boot"], seed=params["seed"])


def draw_pruning_trajectory(inputs, out_png, out_pdf, *, wildcards, params):
    plot_ir_trajectory(inputs["pruning"], wildcards["model"], out_png, out_pdf, n_boot=params["n_boot"],
                       seed=params["seed"])
