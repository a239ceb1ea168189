"""One checkpoint's sequential decisions (results/decisions.parquet): each pair's gap with the interval the sign
was decided on, the windows each took, and each guide's removal set with the share of window resamples that pick
it. What holds at the stated confidence is drawn in colour, what stayed open in grey."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.palette import BLUE, GREY, VERMILLION
from swapkl.figures.style import add_note, figure_style, fit_title, linear_threshold, new_figure, save_figure
from swapkl.tables.schemas import DECISIONS_SCHEMA, read_frame

#: how a sign decision is drawn: (label, colour)
SIGNS = {("holds", "+"): ("gap > 0 (interchange costs less) holds", BLUE),
         ("holds", "-"): ("gap < 0 (replacement costs less) holds", VERMILLION),
         ("undecided", ""): ("undecided at the cap", GREY)}


def _pair(subject: str) -> tuple[int, int]:
    i, j = subject.split("-")
    return int(i), int(j)


def _signs_panels(ax, ax_windows, rows: pd.DataFrame, cap: int) -> None:
    """Top: each pair's gap with its interval at the run's adjusted level; bottom: the windows each took."""
    rows = rows.assign(pair=rows["subject"].map(_pair)).sort_values("pair")
    x = np.arange(len(rows))
    for (state, answer), (label, colour) in SIGNS.items():
        mine = ((rows["state"] == state) & (rows["answer"].fillna("") == answer)).to_numpy()
        if state == "undecided":
            mine = (rows["state"] != "holds").to_numpy()
        if not mine.any():
            continue
        r = rows[mine]
        est = r["estimate"].to_numpy(dtype=float)
        err = np.vstack([est - r["low"].to_numpy(dtype=float), r["high"].to_numpy(dtype=float) - est])
        ax.errorbar(x[mine], est, yerr=np.clip(err, 0, None), fmt="o", ms=3.5, capsize=2, lw=1, color=colour,
                    label=f"{label} ({int(mine.sum())})")
        ax_windows.bar(x[mine], r["windows"].to_numpy(dtype=float), color=colour, width=0.7)
    ax.axhline(0, color=GREY, lw=0.7)
    ax.set_yscale("symlog", linthresh=linear_threshold(rows["estimate"].to_numpy(dtype=float)))
    ax.set_ylabel("gap = max(d_repl) \u2212 d_inter\n(nats/token; symmetric log)")
    ax.set_title("Sign of each pair's gap", pad=24)
    ax.legend(frameon=False, fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3, borderaxespad=0.2)
    ax_windows.axhline(cap, color=GREY, lw=0.7, ls="--")
    ax_windows.set_ylim(0, cap * 1.1)
    ax_windows.set_ylabel("windows\ntaken")
    ax_windows.set_xticks(x, [f"{i}-{j}" for i, j in rows["pair"]], rotation=90, fontsize=7)
    ax_windows.set_xlabel("pair of blocks (i-j)")


def _blocks(answer) -> str:
    """A set decision's blocks as the label reads them ("none" where the table holds no set)."""
    return answer.replace(",", ", ") if isinstance(answer, str) and answer else "none"


def _sets_panel(ax, rows: pd.DataFrame, level: float) -> None:
    """Each guide's set at each budget: the share of window resamples that pick it, against the level."""
    rows = rows.assign(guide=rows["subject"].str.rsplit("@", n=1).str[0],
                       budget=rows["subject"].str.rsplit("@", n=1).str[1].astype(int)).sort_values(["guide", "budget"])
    y = np.arange(len(rows))[::-1]
    holds = (rows["state"] == "holds").to_numpy()
    stability = 100 * rows["estimate"].to_numpy(dtype=float)
    for mine, colour, label in ((holds, BLUE, "holds"), (~holds, GREY, "undecided at the cap")):
        if mine.any():
            ax.scatter(stability[mine], y[mine], color=colour, zorder=3, s=22, label=label)
    ax.axvline(100 * level, color=GREY, lw=0.8, ls="--", label=f"{100 * level:.0f}%: needed to hold")
    ax.set_yticks(y, [f"{g}, n = {b}: blocks {_blocks(r.answer)}\n({r.windows} windows)"
                      for g, b, r in zip(rows["guide"], rows["budget"], rows.itertuples())], fontsize=7.5)
    finite = stability[np.isfinite(stability)]
    low = float(finite.min()) if finite.size else 90.0
    ax.set_xlim(max(0.0, min(90.0, 10 * np.floor((low - 2) / 10))), 101)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("window resamples that pick the set (%)")
    ax.set_title("Removal set of each guide and budget")
    ax.legend(frameon=False, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)


def _halfwidth_panel(ax, rows: pd.DataFrame) -> None:
    """The half-width decisions alone (a run that decides nothing else): each pair set's mean gap and interval."""
    y = np.arange(len(rows))[::-1]
    for yy, r in zip(y, rows.itertuples()):
        colour = BLUE if r.state == "holds" else GREY
        ax.errorbar([r.estimate], [yy], xerr=[[r.estimate - r.low], [r.high - r.estimate]], fmt="o", ms=4, capsize=3,
                    color=colour)
    ax.axvline(0, color=GREY, lw=0.7)
    ax.set_yticks(y, [f"{r.subject}: {r.state}\n({r.windows} windows)" for r in rows.itertuples()], fontsize=8)
    ax.set_xlabel("mean gap = max(d_repl) \u2212 d_inter over the pair set (nats/token)")
    ax.set_title("Mean gap of each pair set, to its relative half-width")


def plot_sequential_decisions(decisions: pd.DataFrame | str, model: str, revision: str, out_png, out_pdf) -> None:
    """The decisions of ``model``@``revision`` in the sequential probe's decisions table (``decisions``: the table or
    its file, results/decisions.parquet)."""
    if not isinstance(decisions, pd.DataFrame):
        decisions = read_frame(decisions, DECISIONS_SCHEMA, "decisions table")
    d = decisions[(decisions["model"] == model) & (decisions["revision"] == revision)]
    if d.empty:
        raise SwapKLError(f"the decisions table has no rows for {model}@{revision}")
    signs, sets = d[d["kind"] == "sign"], d[d["kind"] == "set"]
    confidence = float(d["confidence"].iloc[0])
    cap = int(d["windows"].max())
    with figure_style():
        fig = new_figure(13.0, 6.0)
        left, right = fig.subfigures(1, 2, width_ratios=[1.5, 1]) if len(signs) and len(sets) else (fig, fig)
        if len(signs):
            top, bottom = left.subplots(2, 1, height_ratios=[3, 1], sharex=True)
            _signs_panels(top, bottom, signs, cap)
        if len(sets):
            _sets_panel(right.subplots(), sets, confidence)
        if not len(signs) and not len(sets):
            _halfwidth_panel(fig.subplots(), d[d["kind"] == "halfwidth"])
        fit_title(fig, f"{model} @ {revision}: how sure the answer is (sequential probe, {100 * confidence:.0f}% "
                       f"confidence, up to {cap} windows)")
        others = [f"{r.subject} mean gap {r.estimate:+.3g} ({r.low:+.3g} to {r.high:+.3g}), {r.state}, "
                  f"{r.windows} windows" for r in d[d["kind"] == "halfwidth"].itertuples()]
        add_note(fig, "Each variant was measured only while a decision it takes part in was open, on windows drawn "
                      "from one pool in looks; intervals are at the confidence adjusted for every planned look, "
                      "with the window as the unit; a set holds when at least the stated share of resamples of the "
                      "windows picks it" + ("; half-width decisions: " + "; ".join(others) if others else ""))
        save_figure(fig, out_png, out_pdf)
