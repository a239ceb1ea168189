"""Figures of task-calibrated pruning (``results/seed003_pruning.parquet``, :mod:`swapkl.pruning.task_tables`):
the task-specific table as an annotated grid (rows = methods, columns = tasks + average), and the Gromov
curves (accuracy against blocks removed, per task, for cosine- and accuracy-guided pruning)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.figure_registry import on_table
from swapkl.figures.palette import BLUE, ORANGE
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
from swapkl.pruning.task_tables import METHOD_LABELS, gromov_curves, main_budget_of, task_specific_table


def _table(table) -> pd.DataFrame:
    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    if df.empty:
        raise SwapKLError("the task-pruning table is empty: nothing to plot")
    return df


def plot_task_specific(table, out_png, out_pdf) -> None:
    """One panel per checkpoint: methods x (tasks, average), accuracy % in each cell."""
    df = _table(table)
    groups = list(df.groupby(["model", "revision"], sort=True))
    with figure_style():
        first = task_specific_table(groups[0][1])
        fig = new_figure(max(7.0, 2.2 + 0.95 * first.shape[1]), 1.2 + (0.35 * first.shape[0] + 0.9) * len(groups))
        axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
        for ax, ((model, revision), rows) in zip(axes, groups):
            t = task_specific_table(rows)
            ax.imshow(t.to_numpy(dtype=float), cmap="Blues", aspect="auto", vmin=0, vmax=100)
            for (i, j), v in np.ndenumerate(t.to_numpy(dtype=float)):
                ax.text(j, i, "n/a" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if v > 60 else "black")
            ax.set_xticks(range(t.shape[1]), list(t.columns), rotation=30, ha="right")
            ax.set_yticks(range(t.shape[0]), [METHOD_LABELS.get(m, m) for m in t.index])
            ax.set_xlabel("task (evaluation split)\naverage = unweighted mean over tasks")
            ax.set_ylabel("pruning method")
            n_layers = int(rows["n_layers"].iloc[0])
            ax.set_title(f"{model} @ {revision}: {main_budget_of(rows)} of {n_layers} blocks removed, accuracy %\n"
                         "(each task calibrated on its own training split)")
        add_note(fig, "Original: the unpruned model. Guides chose their blocks on each task's calibration "
                      "split;\ncells are lm-eval acc on its test split.")
        save_figure(fig, out_png, out_pdf)


def plot_gromov_curves(table, out_png, out_pdf) -> None:
    """One panel per (checkpoint, task): accuracy % against blocks removed, cosine (BI) and accuracy guides."""
    df = _table(table)
    panels = []
    for (model, revision), rows in df.groupby(["model", "revision"], sort=True):
        curves = gromov_curves(rows)
        panels += [(model, revision, task, c) for task, c in curves.groupby("task", sort=True)]
    if not panels:
        raise SwapKLError("the task-pruning table has no task calibrated on itself: no Gromov curve")
    cols = min(4, len(panels))
    nrows = -(-len(panels) // cols)
    with figure_style():
        fig = new_figure(3.0 * cols, 2.6 * nrows + 0.4)
        axes = np.atleast_1d(fig.subplots(nrows, cols, squeeze=False)).ravel()
        for ax, (model, revision, task, c) in zip(axes, panels):
            for method, colour, label in (("bi", ORANGE, "cosine (BI)-guided"), ("accuracy", BLUE, "accuracy-guided")):
                m = c[c["method"] == method].sort_values("budget")
                ax.plot(m["budget"], m["accuracy"], marker="o", color=colour, label=label)
            ax.set_title(f"{task} ({model} @ {revision})", fontsize=8)
            ax.set_xlabel("blocks removed")
            ax.set_xticks(sorted(c["budget"].unique()))
            ax.set_ylabel("accuracy %")
            ax.legend(fontsize=6)
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        add_note(fig, "Gromov curves: each task calibrated on its own training split, evaluated on its test split; "
                      "0 blocks = the unpruned model.\nAccuracy: lm-eval acc; on a generative task (GSM8K) exact "
                      "match after the strict answer regex (#### n).")
        save_figure(fig, out_png, out_pdf)


draw_task_specific = on_table(plot_task_specific, "pruning")
draw_gromov_curves = on_table(plot_gromov_curves, "pruning")
