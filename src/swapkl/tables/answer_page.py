"""The report's opening page for one model: which blocks can be removed, at what cost, and how sure.

:func:`answer_table` computes, in memory, from the pruning table (and the sequential probe's decisions, where the
model has them) one row per budget and main guide at the model's last pruned revision: the blocks the guide
removed, the perplexity cost with its 95% interval, whether that guide is the cheapest at the budget with its
interval clear of every other main guide's, and how stable the guide's set is under resampling of windows on
the sequential probe's windows. :func:`answer_html` lays that out with the sections of the studies that have one
(the sublayers study's) and the model's main figures at full width;
:func:`write_answer_page` writes it (the workflow's rule summarise_answer).
"""

from __future__ import annotations

import base64
import html
import importlib
import math
from pathlib import Path

import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.hub.revision_names import last_revision
from swapkl.tables.atomic import write_text_atomic
from swapkl.tables.schemas import DECISIONS_SCHEMA, read_pruning, read_table
from swapkl.tables.table_html import STYLE, display_number

#: the page's long column headers wrap, so that its table fits a 1,300-pixel window
HEADERS = "th{white-space:normal;max-width:8em;vertical-align:bottom}"

#: the guides the page compares, in its column order: the two protocols' guides, deletion and cosine (BI)
MAIN_GUIDES = ("interchange", "replacement_max", "deletion", "bi")

COLUMNS = ["budget", "guide", "removed", "delta_ppl_pct", "ci_low", "ci_high", "verdict", "probe_stability",
           "windowed_set", "stability", "set_state", "set_windows"]


def _blocks(values) -> str:
    return ",".join(str(int(v)) for v in values)


def answer_table(pruning: pd.DataFrame, decisions: pd.DataFrame | None, model: str) -> tuple[str, pd.DataFrame]:
    """(the revision, the rows) of ``model``: see the module. ``verdict`` is "cheapest" where the guide's whole
    interval lies below that of every main guide that removed other blocks, "cheapest, not decided" where only
    its estimate is the lowest, "every guide removed these" where they all removed the same blocks, else empty
    (guides that removed the same blocks share a verdict). ``probe_stability``: how often the guide picks the same
    blocks when the pruning run's probe windows are resampled (the table's ``set_stability``; NaN for guides that
    do not read the probe). ``windowed_set``, ``stability``, ``set_state`` and ``set_windows`` are the sequential probe's
    set decision for that guide and budget at the same revision (empty without one)."""
    rows = pruning[(pruning["model"] == model) & pruning["guide"].isin(MAIN_GUIDES) & pruning["feasible"]
                   & pruning["fixed_set"].isna() & pruning["random_draw"].isna()]
    if rows.empty:
        raise SwapKLError(f"the pruning table has no row of model {model!r} for the guides {', '.join(MAIN_GUIDES)}")
    revision = last_revision(list(dict.fromkeys(rows["revision"])))
    rows = rows[rows["revision"] == revision]
    sets = {}
    if decisions is not None:
        chosen = decisions[(decisions["model"] == model) & (decisions["revision"] == revision)
                           & (decisions["kind"] == "set")]
        sets = {row.subject: row for row in chosen.itertuples()}
    out = []
    for budget, at in rows.groupby("budget", sort=True):
        at = at.set_index("guide")
        removed = {guide: _blocks(at.at[guide, "removed_layers"]) for guide in at.index}
        best = removed[at["delta_ppl_pct"].idxmin()]  # guides that removed the same blocks share its verdict
        others = at[[removed[g] != best for g in at.index]]
        clear = bool(len(others)) and (at.loc[[removed[g] == best for g in at.index], "delta_ppl_pct_ci_high"].max()
                                       < others["delta_ppl_pct_ci_low"].min())
        for guide in [g for g in MAIN_GUIDES if g in at.index]:
            decided = sets.get(f"{guide}@{budget}")
            verdict = ("" if removed[guide] != best else "every guide removed these" if not len(others)
                       else "cheapest" if clear else "cheapest, not decided")
            out.append({"budget": int(budget), "guide": guide, "removed": _blocks(at.at[guide, "removed_layers"]),
                        "delta_ppl_pct": float(at.at[guide, "delta_ppl_pct"]),
                        "ci_low": float(at.at[guide, "delta_ppl_pct_ci_low"]),
                        "ci_high": float(at.at[guide, "delta_ppl_pct_ci_high"]), "verdict": verdict,
                        "probe_stability": float(at.at[guide, "set_stability"]) if "set_stability" in at else math.nan,
                        "windowed_set": decided.answer if decided is not None else "",
                        "stability": float(decided.estimate) if decided is not None else float("nan"),
                        "set_state": decided.state if decided is not None else "",
                        "set_windows": int(decided.windows) if decided is not None else 0})
    return revision, pd.DataFrame(out, columns=COLUMNS)


def _image(path: str | Path, caption: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return (f'<figure><img style="width:100%;max-width:1400px" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _setting(pruning: pd.DataFrame, model: str, revision: str) -> str:
    """The sizes the pruning costs rest on, as scored (not as requested)."""
    row = pruning[(pruning["model"] == model) & (pruning["revision"] == revision)].iloc[0]
    return (f"The guides ranked the blocks on {int(row['n_probe_seqs'])} probe windows ({int(row['n_probe_tokens'])} "
            f"scored tokens); each cost is the perplexity change on {int(row['n_eval_tokens'])} held-out tokens "
            f"({int(row['n_eval_windows'])} windows), with a 95% bootstrap interval over those windows.")


def answer_html(pruning: pd.DataFrame, decisions: pd.DataFrame | None, model: str,
                figures: list[tuple[str, str]] = (), sections=()) -> str:
    """The page: the answer table of :func:`answer_table`, what it rests on, the studies' ``sections``
    ((``"module:function"``, {table: path}) pairs: :attr:`swapkl.study.Study.answer`, each called with the page's
    model and revision) and ``figures`` ((PNG path, caption) pairs) at full width."""
    revision, table = answer_table(pruning, decisions, model)
    lines = [f"<h1>{html.escape(model)}: which blocks can be removed, at what cost, how sure</h1>",
             f"<p>Revision {html.escape(revision)}. {html.escape(_setting(pruning, model, revision))} "
             "A guide is <b>cheapest</b> at a budget when its whole interval lies below every other guide's here; "
             "where the intervals overlap the page says <b>not decided</b>. For the guides that read the probe, the "
             "share of 1,000 resamples of those probe windows on which the guide picks the same blocks says how much "
             "the set rests on these windows (a stability, not a confidence level).</p>"]
    if decisions is not None and (table["set_state"] != "").any():
        lines.append("<p>The last columns are the sequential probe's decision on the same revision: the set the "
                     "guide picks from its windows, the share of window resamples that pick that same set, and "
                     "whether that share reached the stated stability (<b>holds</b>) or not (<b>undecided</b>). "
                     "Where that set differs from the one removed here, the pruning run's few probe windows chose "
                     "another set than the larger sample does.</p>")
    head = ["blocks removed (n)", "guide", "removed", "ΔPPL %", "95% interval", "verdict",
            "same set on resampled probe windows", "set on more windows", "stability", "state", "windows"]
    lines.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
    for row in table.itertuples():
        differs = row.windowed_set and row.windowed_set != row.removed
        cells = [str(row.budget), row.guide, row.removed, display_number(row.delta_ppl_pct),
                 f"{display_number(row.ci_low)} to {display_number(row.ci_high)}", row.verdict,
                 f"{100 * row.probe_stability:.0f}%" if math.isfinite(row.probe_stability) else "",
                 (f"<b>{row.windowed_set}</b>" if differs else row.windowed_set),
                 display_number(row.stability) if row.windowed_set else "", row.set_state,
                 str(row.set_windows) if row.windowed_set else ""]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines.append("</table>")
    for function, tables in sections:
        module, _, name = function.partition(":")
        lines.append(getattr(importlib.import_module(module), name)(tables, model, revision))
    lines += [_image(path, caption) for path, caption in figures]
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(model)}: the answer</title>"
            f"<style>{STYLE}{HEADERS}</style></head><body>" + "\n".join(lines) + "</body></html>")


def write_answer_page(pruning: str, decisions: str | None, model: str, figures: list[tuple[str, str]],
                      out: str, sections=()) -> None:
    """Read the pruning table (and the decisions table), write the page of :func:`answer_html` to ``out``."""
    frame = read_pruning(pruning)
    chosen = read_table(decisions, DECISIONS_SCHEMA, "decisions")[0].to_pandas() if decisions else None
    write_text_atomic(out, answer_html(frame, chosen, model, figures, sections))
