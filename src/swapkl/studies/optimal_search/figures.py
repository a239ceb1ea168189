"""Optimal removal-set search (results/optimal_search.parquet): calibration NLL and evaluations per method and
budget, greedy against beam, best-first and exhaustive enumeration (swapkl.pruning.optimal)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.figures.palette import BLUE, GREEN, GREY, ORANGE, VERMILLION
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.tables.schemas import OPTIMAL_SEARCH_SCHEMA, read_frame

#: method -> (label, colour, marker), in drawing order
METHODS = {"greedy": ("greedy (SLEB-iterative)", VERMILLION, "o"), "beam": ("beam", ORANGE, "s"),
           "best_first": ("best-first", GREEN, "^"), "exhaustive": ("exhaustive (optimum)", BLUE, "x")}
OFFSET = 0.04  # x shift between methods, in blocks


#: the left panel's second title line where every method removed the same blocks (then: at which budgets)
SAME_SETS = "all methods found the same blocks at"


def same_sets(sub: pd.DataFrame) -> list[int]:
    """The budgets of one model at which every method removed the same blocks."""
    return [int(b) for b, g in sub.groupby("budget", sort=True)
            if len({tuple(sorted(int(x) for x in r)) for r in g["removed_layers"]}) == 1]


def plot_optimal_search(table, out_png, out_pdf) -> None:
    """One row of panels per model: calibration NLL of each method's set per budget (left; the unpruned
    model's NLL dashed) and the number of sets each method scored (right). Where every method found the same
    set at every budget, the left panel draws one black line for them all, and its title says so."""
    df = table if isinstance(table, pd.DataFrame) else read_frame(table, OPTIMAL_SEARCH_SCHEMA, "optimal search")
    models = sorted(df["model"].unique())
    with figure_style():
        fig = new_figure(9.0, 3.2 * len(models) + 0.8)
        axes = np.atleast_2d(fig.subplots(len(models), 2, squeeze=False))
        for (left, right), model in zip(axes, models):
            sub = df[df["model"] == model]
            same = same_sets(sub)
            budgets = sorted(int(b) for b in sub["budget"].unique())
            for k, (method, (label, colour, marker)) in enumerate(METHODS.items()):
                rows = sub[sub["method"] == method].sort_values("budget")
                if rows.empty:
                    continue
                x = rows["budget"].to_numpy(dtype=float) + (k - 1.5) * OFFSET  # side by side where methods tie
                right.plot(x, rows["n_evals"].to_numpy(dtype=float), marker=marker, color=colour, label=label)
                if same != budgets:  # where every method found the same set, one line below says so
                    left.plot(x, rows["cost"].to_numpy(dtype=float), marker=marker, color=colour, label=label)
            if same == budgets:  # one set per budget: one line, not four lines offset to look like four results
                rows = sub[sub["method"] == sub["method"].iloc[0]].sort_values("budget")
                left.plot(rows["budget"], rows["cost"], marker="o", color="black", label="every method (same blocks)")
            left.axhline(float(sub["base_cost"].iloc[0]), color=GREY, linestyle="--", label="unpruned model")
            left.set_ylabel("calibration NLL (nats/token)")
            right.set_ylabel("removal sets scored")
            right.set_ylim(bottom=0)
            title = f"{model}, {sub['revision'].iloc[0]} ({int(sub['n_layers'].iloc[0])} blocks): NLL of the set found"
            if same:  # said under the title: a box inside the panel can cover a line (the unpruned model's)
                which = "every budget" if same == budgets else "n = " + ", ".join(map(str, same))
                title += f"\n{SAME_SETS} {which}"
            left.set_title(title)
            right.set_title("evaluations spent")
            for ax in (left, right):
                ax.set_xlabel("blocks removed")
                ax.set_xticks(sorted(sub["budget"].unique()))
        handles = {}
        for ax in axes.ravel():  # every method (right panels) and the shared line of the left where it is drawn
            handles.update({label: h for h, label in zip(*ax.get_legend_handles_labels())})
        fig.legend(list(handles.values()), list(handles), title="method", loc="outside right center",
                   frameon=False, fontsize=7)
        fit_title(fig, "Exact removal-set search against greedy pruning")
        add_note(fig, "lower NLL is better; exhaustive enumeration is the certified optimum, best-first is exact "
                      "only if removing a further block never lowers the NLL")
        save_figure(fig, out_png, out_pdf)


