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

from swapkl.errors import SwapKLError
from swapkl.figures.stepaxis import set_step_axis
from swapkl.figures.style import (add_note, far_cut, figure_style, fit_title, new_figure, save_figure,
                                  symlog_if_spread)
from swapkl.figures.palette import BLUE, GREY
from swapkl.figures.guide_style import family_colour, plotted_looks
from swapkl.pruning.guides.guide_registry import FAMILIES, registered
from swapkl.figures.palette import cycled
from swapkl.pruning.cost_ratio import ir_ratios
from swapkl.tables.schemas import read_agreement, read_pruning

#: guide -> (label, colour, line style, marker), in the registry's order (:mod:`swapkl.figures.guide_style`)
GUIDE_STYLE = {name: tuple(look) for name, look in plotted_looks().items()}
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


#: a point of a cost panel lies off its axis (drawn at the edge, its value written beside it) when it exceeds this
#: many times the largest of the points below it, e.g. the anti-guided bound at +400% beside guides near +1%
FAR = 10.0


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


#: the two rows of the pruning-cost figure: (value column, CI columns, random's spread column, axis label)
COST_ROWS = (("delta_ppl_pct", ("delta_ppl_pct_ci_low", "delta_ppl_pct_ci_high"), "delta_ppl_pct_sd",
              "Perplexity increase (%)"),
             ("kl_mean", ("kl_ci_low", "kl_ci_high"), None, "KL(base ‖ pruned)\n(nats/token)"))


def _draw_range(row, column: str, sd_col: str | None, v: float, draws: pd.Series) -> tuple[float, float]:
    """The random draws' bar: lowest to highest draw (a perplexity increase is bounded below, and a few draws with
    one far out give a mean − s.d. under any draw), from the draws' own rows (``draws``: their values of
    ``column``, which gives the KL row its bar too), else from the summary row's ``_min``/``_max``, else
    mean ± s.d."""
    if len(draws):
        return float(draws.min()), float(draws.max())
    low, high = row.get(f"{column}_min"), row.get(f"{column}_max")
    if low is not None and high is not None and pd.notna(low) and pd.notna(high):
        return float(low), float(high)
    spread = row[sd_col] if sd_col else np.nan
    return (v - spread, v + spread) if pd.notna(spread) else (v, v)


#: random draws reaching further than this multiple of the guided rules' axis sit at a cost panel's edge
RANDOM_REACH = 3.0


def _value_text(v: float, column: str) -> str:
    """An off-scale value as the axis would read it: a perplexity change in percent with separators (not
    ``7.08e+06``), other costs to three significant digits."""
    if column == "delta_ppl_pct":
        return f"{v:+,.0f}%" if abs(v) >= 100 else f"{v:+.1f}%"
    return f"{v:.3g}"


def _panel_top(points) -> float | None:
    """Where a cost panel's axis ends, or None to let it fit everything. The axis fits the guided rules: a rule
    far above the other rules (:func:`far_cut`: the anti-guided bound, LaCo's rule on a trained model) goes to
    the edge, and so does the random-draw row when it, or its range, reaches more than :data:`RANDOM_REACH`
    times as far as the guided rules need; random draws within that reach widen the axis to fit them."""
    if not points:
        return None
    guided = [p for p in points if not p[7]] or points
    cut = far_cut([p[1] for p in guided], FAR)
    core = [p for p in guided if cut is None or p[1] <= cut]
    top = 1.1 * max(max(p[1], p[3]) for p in core)
    reach = [1.1 * max(p[1], p[3]) for p in points if p[7] and p not in core]
    near = [r for r in reach if r <= RANDOM_REACH * top]
    if cut is None and len(near) == len(reach):
        return None
    return max([top] + near)


def cost_series(g: pd.DataFrame) -> list[tuple[str, tuple[str, str, str, str], pd.DataFrame]]:
    """The selection rules of one checkpoint's pruning rows, grouped by guide family (the registry's family
    order, then its guide order), each named fixed set as a rule of its own: (guide, (label, colour, line style,
    marker), rows)."""
    series = [(k, GUIDE_STYLE[k], g[g["guide"] == k]) for k in GUIDE_STYLE if k in set(g["guide"])]
    fixed = g[g["guide"] == "fixed"]
    for n, name in enumerate(sorted(set(fixed["fixed_set"].dropna()))):
        rows, several = _fixed_mean(fixed[fixed["fixed_set"] == name])
        label = f"Fixed set {name}" + (" (mean of its sets; bars: min–max)" if several else "")
        series.append(("fixed", (label, family_colour("control"), "-.", FIXED_MARKERS[n % len(FIXED_MARKERS)]), rows))
    order = list(FAMILIES)
    return sorted(series, key=lambda s: order.index(GUIDE_FAMILY.get(s[0], "control")))


#: the widest rule label the pruning-cost figure's label column shows whole (a longer one is cut with "…"; every
#: registered guide's label fits: tests/test_figure_layout.py)
LABEL_WIDTH = 58


def cost_label(label: str) -> str:
    """A rule's line label in the pruning-cost figure (random's bar there spans its draws; long labels cut)."""
    return textwrap.shorten(label.replace(" ± s.d. of draws; band: min–max", "; bar: min–max of draws"),
                            LABEL_WIDTH, placeholder="…")


def plot_delta_ppl(df: pd.DataFrame | str, model: str, revision: str, out_png, out_pdf) -> None:
    """The cost of removing n blocks by every selection rule, as a table of panels: one column per budget n, the
    perplexity increase (top row) and the KL to the unpruned model (bottom row), one line of each panel per rule
    (grouped by guide family), with its 95% CI (random: the mean, its bar from the lowest to the highest draw). Every
    panel has its own linear axis fitted to the guided rules (:func:`_panel_top`); a point far beyond them (the
    anti-guided bound, random draws on a trained model) sits at the panel's edge with its value written. Beside a
    probe-guided rule's cost: its set stability (the table's ``set_stability``), where the table has it."""
    df = _table(df, read_pruning)
    g = _checkpoint(df, model, revision)
    budgets = sorted(set(g["budget"]) - {0})
    series = cost_series(g)
    draws = g[(g["guide"] == "random") & g["feasible"].astype(bool)]
    base = g[g["guide"] == "base"].iloc[0]
    # one line per rule, a header line above each family's first rule
    ticks, labels, headers, ys, y = [], [], [], [], 0
    for k, (guide, (label, *_), _) in enumerate(series):
        family = GUIDE_FAMILY.get(guide, "control")
        if k == 0 or family != GUIDE_FAMILY.get(series[k - 1][0], "control"):
            ticks.append(y), labels.append(FAMILIES[family].label), headers.append(len(labels) - 1)
            y += 1
        ticks.append(y), labels.append(cost_label(label))
        ys.append(y)
        y += 1
    with figure_style():
        height = 0.16 * y + 1.1
        nb = max(len(budgets), 1)
        fig = new_figure(2.1 * nb + 4.4 + 2.8, 2 * height + 1.2)
        grid = fig.add_gridspec(2, nb + 1, width_ratios=[1.0] * nb + [1.3])
        # the cost panels first (fig.axes: row by row), then the across-budgets column
        axes = np.array([[fig.add_subplot(grid[r, c]) for c in range(nb)] for r in range(2)])
        for ax in axes.flat[1:]:  # one rule per line: every cost panel reads the same rows
            ax.sharey(axes[0, 0])
        for ax in axes[:, 1:].flat:
            ax.tick_params(labelleft=False)
        summary = [_across_budgets(fig.add_subplot(grid[r, nb]), g, budgets, column, ci, axis_label)
                   for r, (column, ci, _, axis_label) in enumerate(COST_ROWS)]
        if summary[-1].lines:  # one legend for both, under the column: inside, it would cover lines
            summary[-1].legend(fontsize=6.5, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=1)
        for r, (column, (lo_col, hi_col), sd_col, axis_label) in enumerate(COST_ROWS):
            for c, n in enumerate(budgets):
                ax = axes[r, c]
                points, stability = [], {}
                for yk, (guide, (label, colour, _, marker), rows_of) in zip(ys, series):
                    row = rows_of[rows_of["feasible"].astype(bool) & (rows_of["budget"] == n)]
                    if row.empty:
                        continue
                    row = row.iloc[0]
                    v = float(row[column])
                    if guide == "random_mean":
                        lo, hi = _draw_range(row, column, sd_col, v, draws[draws["budget"] == n][column])
                    else:
                        lo, hi = float(row[lo_col]), float(row[hi_col])
                    points.append((yk, v, lo, hi, cost_label(label), colour, marker, guide == "random_mean"))
                    stable = row.get("set_stability")
                    if r == 0 and stable is not None and np.isfinite(stable):
                        stability[yk] = float(stable)
                top = _panel_top(points)
                for yk, v, lo, hi, label, colour, marker, _ in points:
                    if yk in stability and (top is None or v <= top):  # how much the set rests on the probe windows
                        end = hi if np.isfinite(hi) and (top is None or hi <= top) else v
                        ax.annotate(f"{100 * stability[yk]:.0f}%", (end, yk), xytext=(3, 0), textcoords="offset points",
                                    ha="left", va="center", fontsize=5.5, color="#666666")
                    if top is not None and v > top:
                        ax.plot([top], [yk], marker=">", color=colour, ls="none", clip_on=False)
                        ax.annotate(f"{_value_text(v, column)} →", (top, yk), xytext=(-6, 0), textcoords="offset points",
                                    ha="right", va="center", fontsize=6.5, color=colour)
                        continue
                    ax.errorbar([v], [yk], xerr=_err([v], [lo], [hi]), color=colour, marker=marker, capsize=2,
                                ls="none", label=label)
                if top is not None:
                    ax.set_xlim(right=top)
                if column == "delta_ppl_pct":  # the unpruned model's cost, 0, in view
                    ax.set_xlim(left=min(0.0, ax.get_xlim()[0]))
                    ax.axvline(0.0, color="black", lw=0.8)
                ax.grid(False, axis="y")
                ax.tick_params(axis="x", labelsize=7)
                if r == 0:
                    ax.set_title(f"n = {n} removed")
                ax.set_xlabel(axis_label, fontsize=7.5)
        axes[0, 0].set_yticks(ticks, labels)
        axes[0, 0].set_ylim(y - 0.5, -0.5)
        for ax in axes[:, 0]:
            ax.tick_params(axis="y", labelsize=7)
            for k, text in enumerate(ax.get_yticklabels()):
                if k in headers:
                    text.set_fontweight("bold")
        fit_title(fig, f"{model} @ {revision}: cost of removing n blocks, by selection rule")
        add_note(fig, (
            "Right: the main rules' costs against n on one logarithmic axis, so that the budgets compare by eye "
            "(the panels' own axes differ). "
            f"Unpruned perplexity {base['ppl']:.2f} on {base['eval_split']} (sliding window {base['eval_window']}, "
            f"stride {base['eval_stride']}, {base['n_eval_tokens']} scored tokens); KL on the probe windows. Bars: "
            f"95% bootstrap CI over evaluation windows (KL: over probe windows); random: the mean of the draws, its bar "
            f"from the lowest to the highest draw. Each panel has its own linear axis, fitted to the guided rules: a "
            f"point more than {FAR:g} times the next one below it, or random draws more than {RANDOM_REACH:g} times "
            f"as far as the guided rules, sit at the right edge (▸) with the value written, and a bar past the edge "
            f"is cut there. Guided and random removals keep removed blocks more than {base['spacing']} index apart; "
            f"BI, angular and SLEB do not."
            + (" Grey percentages beside the probe-guided rules' costs: how often the rule picks the same blocks "
               "when the probe windows are resampled (1,000 resamples; the set's stability, not a confidence level)."
               if "set_stability" in g and g["set_stability"].notna().any() else "")))
        save_figure(fig, out_png, out_pdf)


#: the rules the across-budgets panel of the pruning-cost figure draws (where the table has them)
ACROSS_BUDGETS = ("interchange", "replacement_max", "deletion", "bi", "sleb_iterative", "random_mean")
#: the across-budgets panel leaves the random mean out where it reaches this many times as far as the guided rules
#: (a log axis of 1.5 decades more would squeeze the guides)
ACROSS_REACH = 30.0


def _across_budgets(ax, g: pd.DataFrame, budgets, column: str, ci: tuple[str, str], axis_label: str):
    """The main rules' cost at every budget on one axis (logarithmic where every value drawn is positive), each
    with its 95% interval: how the cost grows with n, which the per-budget panels, each on its own axis, hide.
    The random draws' mean is left out where it reaches more than :data:`ACROSS_REACH` times as far as the guided
    rules (as on a trained model, where it is far off the guides' scale), and the title says so. Returns ``ax``."""
    series = {}
    for guide in (r for r in ACROSS_BUDGETS if r in set(g["guide"])):
        rows = g[(g["guide"] == guide) & g["feasible"].astype(bool) & g["budget"].isin(budgets)
                 & g["random_draw"].isna()].sort_values("budget")
        if "fixed_set" in rows:
            rows = rows[rows["fixed_set"].isna()]
        if not rows.empty:
            series[guide] = rows
    guided = [rows[c].to_numpy(dtype=float) for guide, rows in series.items() if guide != "random_mean"
              for c in (column, ci[1]) if c in rows]
    reach = np.nanmax(np.concatenate(guided)) if guided else np.nan
    far = "random_mean" in series and np.isfinite(reach) and reach > 0 and (
        np.nanmax(series["random_mean"][column].to_numpy(dtype=float)) > ACROSS_REACH * reach)
    if far:
        del series["random_mean"]
    drawn = []
    for k, (guide, rows) in enumerate(series.items()):
        label, colour, style, marker = GUIDE_STYLE.get(guide, (guide, GREY, "-", "o"))
        n = rows["budget"].to_numpy(dtype=float) + (k - 2.5) * 0.04  # dodged: equal costs stay visible
        v = rows[column].to_numpy(dtype=float)
        if guide == "random_mean" or ci[0] not in rows:
            err = None
        else:
            err = _err(v, rows[ci[0]].to_numpy(dtype=float), rows[ci[1]].to_numpy(dtype=float))
        ax.errorbar(n, v, yerr=err, color=colour, ls=style, marker=marker, ms=3.5, lw=1, capsize=1.5,
                    label=cost_label(label))
        drawn.append(v)
    values = np.concatenate(drawn) if drawn else np.array([])
    if len(values) and (values[np.isfinite(values)] > 0).all():
        ax.set_yscale("log", nonpositive="clip")  # an interval reaching below 0 ends at the panel's foot
    ax.set_xticks(list(budgets))
    if len(budgets):
        ax.set_xlim(min(budgets) - 0.3, max(budgets) + 0.3)
    ax.set_xlabel("blocks removed (n)", fontsize=7.5)
    ax.set_ylabel(axis_label, fontsize=7.5)
    ax.tick_params(labelsize=7)
    ax.set_title("all budgets, one axis" + ("\n(random draws: far above, off the axis)" if far else ""), fontsize=9)
    return ax


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


SAME_BLOCKS = "hollow: both removed the same blocks"


def _hollow_same(ax, x, y, same, colour) -> None:
    """Draws the points where both guides removed the same blocks hollow (their difference is 0 by construction,
    not a measured tie)."""
    same = np.asarray(same, dtype=bool)
    ax.plot(np.asarray(x)[same], np.asarray(y)[same], ls="none", marker="o", mfc="white", mec=colour, zorder=3)


def _legend(fig, ax, any_same: bool, **kwargs) -> None:
    """The figure's legend beside its panel, with the hollow marker's meaning when a point is hollow."""
    handles, labels = ax.get_legend_handles_labels()
    if any_same:
        handles.append(Line2D([], [], ls="none", marker="o", mfc="white", mec=GREY))
        labels.append(SAME_BLOCKS)
    fig.legend(handles, labels, loc="outside right center", frameon=False, **kwargs)


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
            _hollow_same(ax, x, y, r["same_blocks"], cycled(k))
        ax.axhline(0.0, color="black", lw=0.8, ls="--", label="same cost")
        ax.set_xticks(sorted(set(ir["budget"])))
        ax.set_xlabel("Blocks removed (n)")
        ax.set_ylabel(DIFF_LABEL)
        # one model's differences can be a hundred times another's: the small ones would sit flat on zero
        scale = symlog_if_spread(ax, ir[["ir_diff", "ir_diff_ci_low", "ir_diff_ci_high"]].to_numpy().ravel())
        # the figure's title spans the legend's column too, so the legend beside the panel sits at its middle
        fit_title(fig, "Does the interchange protocol find cheaper removals?")
        _legend(fig, ax, bool(ir["same_blocks"].any()))
        add_note(fig, _diff_note(n_boot) + (f" {scale[0].upper()}{scale[1:]}." if scale else ""))
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
            x, y = r["step"].to_numpy(dtype=np.float64), r["ir_diff"].to_numpy()
            ax.errorbar(x, y, yerr=_err(y, r["ir_diff_ci_low"], r["ir_diff_ci_high"]), marker="o", capsize=2,
                        color=cycled(k), label=f"n = {n}")
            _hollow_same(ax, x, y, r["same_blocks"], cycled(k))
        desc = set_step_axis(ax, ir["step"].to_numpy(dtype=np.float64))
        ax.axhline(0.0, color="black", lw=0.8, ls="--", label="same cost")
        ax.set_xlabel("Training step")
        ax.set_ylabel(DIFF_LABEL)
        fit_title(fig, f"{model}: protocol dependence of pruning over training")
        _legend(fig, ax, bool(ir["same_blocks"].any()), title="blocks removed")
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
        fit_title(fig, f"{model} @ {revision}: do the guides rank layers alike? (low score = safe to remove)")
        add_note(fig, "Per-layer scores: pair guides s(i) = min over probed partners of d(i, j); deletion KL and "
                      "single-removal calibration NLL increase of block i; BI; angular distance across block i; 1 − linear "
                      "CKA of block i's input and output; first-order Taylor importance |Σ θ·∂L/∂θ| of block i. "
                      "Misranking counts layer pairs that neither ranking ties.")
        save_figure(fig, out_png, out_pdf)
