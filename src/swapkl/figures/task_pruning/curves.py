"""Figures of task-calibrated pruning (``results/seed003_pruning.parquet``, :mod:`swapkl.relevance.task_tables`):
the task-specific table as an annotated grid (rows = methods, columns = tasks + average), and the Gromov
curves (accuracy against blocks removed, per task, for cosine- and accuracy-guided pruning)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.palette import BLUE, ORANGE
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
from swapkl.relevance.task_tables import (GENERATIVE_METRIC, METHOD_LABELS, gromov_curves, main_budget_of,
                                        task_specific_table)
from swapkl.stats.proportions import wilson_interval


def _table(table) -> pd.DataFrame:
    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    if df.empty:
        raise SwapKLError("the task-pruning table is empty: nothing to plot")
    return df


def items_per_task(rows: pd.DataFrame) -> dict[str, int]:
    """The number of scored items (documents) of each task's evaluation split."""
    return {task: int(n) for task, n in rows.groupby("task")["n_docs"].max().items()}


def _ci_text(v: float, n: int | None) -> str:
    """``v`` (a percentage of ``n`` items) with its 95% Wilson interval, in whole points: the precision that n
    items support."""
    if n is None or not np.isfinite(v):
        return f"{v:.1f}" if np.isfinite(v) else "n/a"
    lo, hi = wilson_interval(v / 100.0, n)
    return f"{v:.0f}\n[{100 * lo:.0f}, {100 * hi:.0f}]"


def plot_task_specific(table, out_png, out_pdf) -> None:
    """One panel per checkpoint: methods x (tasks, average), accuracy % in each cell, in whole points with its 95%
    Wilson interval over the task's items (the average, over tasks, without one)."""
    df = _table(table)
    groups = list(df.groupby(["model", "revision"], sort=True))
    with figure_style():
        first = task_specific_table(groups[0][1])
        fig = new_figure(max(7.0, 2.2 + 1.1 * first.shape[1]), 1.6 + (0.5 * first.shape[0] + 1.2) * len(groups))
        axes = fig.subplots(len(groups), 1, squeeze=False)[:, 0]
        for ax, ((model, revision), rows) in zip(axes, groups):
            t = task_specific_table(rows)
            n_items = items_per_task(rows)
            ax.imshow(t.to_numpy(dtype=float), cmap="Blues", aspect="auto", vmin=0, vmax=100)
            for (i, j), v in np.ndenumerate(t.to_numpy(dtype=float)):
                ax.text(j, i, _ci_text(v, n_items.get(t.columns[j])), ha="center", va="center", fontsize=7,
                        color="white" if v > 60 else "black")
            ax.set_xticks(range(t.shape[1]), [f"{c}\n(n = {n_items[c]})" if c in n_items else c for c in t.columns],
                          rotation=30, ha="right")
            ax.set_yticks(range(t.shape[0]), [METHOD_LABELS.get(m, m) for m in t.index])
            ax.set_xlabel("task (evaluation split)\naverage = unweighted mean over tasks")
            ax.set_ylabel("pruning method")
            n_layers = int(rows["n_layers"].iloc[0])
            ax.set_title(f"{model} @ {revision}: {main_budget_of(rows)} of {n_layers} blocks removed, accuracy %\n"
                         "(each task calibrated on its own training split)")
        add_note(fig, "Original: the unpruned model. Guides chose their blocks on each task's calibration split; "
                      "cells are lm-eval acc on its test split, in whole points, with the 95% Wilson interval over "
                      "the task's n items in brackets (the average column: the mean over tasks, no interval).",
                 width=0.9)
        save_figure(fig, out_png, out_pdf)


def plot_gromov_curves(table, out_png, out_pdf) -> None:
    """One panel per (checkpoint, task): accuracy % against blocks removed, cosine (BI) and accuracy guides."""
    df = _table(table)
    panels = []
    for (model, revision), rows in df.groupby(["model", "revision"], sort=True):
        curves = gromov_curves(rows)
        n_items = items_per_task(rows)
        panels += [(model, revision, task, c, n_items.get(task)) for task, c in curves.groupby("task", sort=True)]
    if not panels:
        raise SwapKLError("the task-pruning table has no task calibrated on itself: no Gromov curve")
    cols = min(4, len(panels))
    nrows = -(-len(panels) // cols)
    with figure_style():
        fig = new_figure(3.5 * cols + 1.6, 2.8 * nrows + 0.6)
        axes = np.atleast_1d(fig.subplots(nrows, cols, squeeze=False)).ravel()
        for ax, (model, revision, task, c, n) in zip(axes, panels):
            for k, (method, colour, label) in enumerate((("bi", ORANGE, "cosine (BI)-guided"),
                                                         ("accuracy", BLUE, "accuracy-guided"))):
                m = c[c["method"] == method].sort_values("budget")
                y = m["accuracy"].to_numpy(dtype=float)
                x = m["budget"].to_numpy(dtype=float) + (k - 0.5) * 0.08
                if n:
                    lo, hi = wilson_interval(y / 100.0, n)
                    ax.errorbar(x, y, yerr=np.vstack([y - 100 * lo, 100 * hi - y]), marker="o", color=colour,
                                capsize=2, label=label)
                else:
                    ax.plot(x, y, marker="o", color=colour, label=label)
            ax.set_title(f"{task}\n{model} @ {revision}" + (f", n = {n} items" if n else ""), fontsize=8)
            ax.set_xlabel("blocks removed")
            ax.set_xticks(sorted(c["budget"].unique()))
            ax.set_ylabel("accuracy (%)")
            ax.set_ylim(0, 100)
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        fig.legend(*axes[0].get_legend_handles_labels(), fontsize=7, frameon=False, loc="outside right upper")
        generative = bool((df["metric"] == GENERATIVE_METRIC).any())
        add_note(fig, "Gromov curves: each task calibrated on its own training split, evaluated on its test split; "
                      "0 blocks = the unpruned model; bars: 95% Wilson interval over the task's n items; the axis "
                      "spans 0-100%. Accuracy: lm-eval acc"
                      + ("; on a generative task exact match after the strict answer regex (#### n)."
                         if generative else "."), width=0.9)
        save_figure(fig, out_png, out_pdf)


