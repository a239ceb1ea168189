"""Downstream benchmarks as a table figure (``results/downstream/{model}/{revision}.parquet``).

One row per scored model (the base model, each guide's pruned model at each budget, the healed control, each
healed export), one column per task and the average over tasks; a cell shows the score (acc_norm where lm-eval
reports it, else acc, as the paper's downstream table does) in whole points and is coloured by its change from
the base model's score on that task, against the sampling noise of a score on that many items.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.stats.proportions import wilson_interval

AVERAGE = "average"  # the task name of the average rows (swapkl.relevance.downstream.AVERAGE)


def row_label(r) -> str:
    """The readable name of one scored model (a row of the figure)."""
    removed = ", ".join(str(b) for b in (r.removed_layers if r.removed_layers is not None else []))
    if r.phase == "base":
        return "base model"
    if r.phase == "control":
        return "healed control (unpruned)"
    guide = r.guide
    if isinstance(r.fixed_set, str):
        guide = f"fixed {r.fixed_set}"
    elif r.random_draw is not None and r.random_draw == r.random_draw:
        guide = f"random draw {int(r.random_draw)}"
    prefix = "healed " if r.phase == "healed" else ""
    return f"{prefix}{guide}, n={int(r.budget)}: without {removed}"


def score_grid(rows: pd.DataFrame) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(row labels, column names, scores, retentions) of one checkpoint's table, in its row order; the average
    column last."""
    tasks = [t for t in dict.fromkeys(rows["task"]) if t != AVERAGE] + [AVERAGE]
    keys = ["phase", "guide", "budget", "random_draw", "fixed_set", "checkpoint"]
    labels, scores, retentions = [], [], []
    for _, group in rows.groupby(keys, dropna=False, sort=False):
        by_task = group.set_index("task")
        labels.append(row_label(group.iloc[0]))
        scores.append([by_task["score"].get(t, np.nan) for t in tasks])
        retentions.append([by_task["retention"].get(t, np.nan) for t in tasks])
    return labels, tasks, np.array(scores, dtype=float), np.array(retentions, dtype=float)


def plot_downstream(table: pd.DataFrame | str, out_png, out_pdf, *, model: str, revision: str) -> None:
    """The table figure of one checkpoint (module docstring). Scores in whole percentage points (what n ~ 100
    items support); a cell's colour is its change from the base model in points, full at the half-width of the
    95% Wilson interval of the base model's score on that task: paler cells are within sampling noise."""
    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    rows = df[(df["model"] == model) & (df["revision"] == revision)]
    if rows.empty:
        raise SwapKLError(f"the downstream table has no rows of {model} @ {revision}")
    labels, tasks, scores, _ = score_grid(rows)
    n_docs = rows[rows["task"] != AVERAGE].drop_duplicates("task").set_index("task")["n"]
    base = scores[labels.index("base model")] if "base model" in labels else scores[0]
    half = np.array([np.nan if t not in n_docs else
                     100 * float(np.subtract(*reversed(wilson_interval(base[j], int(n_docs[t]))))) / 2
                     for j, t in enumerate(tasks)])
    scale = float(np.nanmax(half)) if np.isfinite(half).any() else 5.0
    change = 100 * (scores - base)
    with figure_style():
        fig = new_figure(3.4 + 1.05 * len(tasks), 2.9 + 0.27 * len(labels))
        ax = fig.subplots()
        im = ax.imshow(np.nan_to_num(change, nan=0.0), cmap="RdBu", vmin=-scale, vmax=scale, aspect="auto")
        for (i, j), v in np.ndenumerate(scores):
            dark = abs(change[i, j]) > 0.65 * scale
            ax.text(j, i, "" if np.isnan(v) else f"{100 * v:.{0 if tasks[j] != AVERAGE else 1}f}", ha="center",
                    va="center", fontsize=7, color="white" if dark else "black",
                    fontweight="bold" if tasks[j] == AVERAGE else "normal")
        ax.axvline(len(tasks) - 1.5, color="black", lw=1.2)  # the average column
        ax.set_xticks(range(len(tasks)), [f"{t}\n(n={n_docs[t]}, ±{half[j]:.0f})" if t in n_docs else
                                          "average\nover tasks" for j, t in enumerate(tasks)], fontsize=7)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_xlabel("task (score in %; n = documents; ± = the base score's 95% interval)", fontsize=8)
        ax.set_ylabel("scored model")
        fig.colorbar(im, ax=ax, label="change from the\nbase model (points)", shrink=0.8, extend="both")
        fit_title(fig, f"Downstream task scores of {model} @ {revision}: base, pruned and healed models")
        add_note(fig, "Pruned rows: a guide's n removed blocks ('without i, j'), scored on the probe engine; healed "
                      "rows: merged LoRA checkpoints reloaded (control: the unpruned model healed alike). "
                      "Score: acc_norm "
                      "where lm-eval reports it, else acc. Colour: "
                      f"the change from the base model, full at ±{scale:.0f} points, the largest half-width of the "
                      "base score's 95% Wilson interval: paler cells differ from the base by less than sampling "
                      "noise on these items.", width=0.9)
        save_figure(fig, out_png, out_pdf)


