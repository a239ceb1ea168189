"""The second paper's pruning tables, derived from ``results/seed003_pruning.parquet`` (no torch).

* :func:`task_specific_table`: rows = methods, columns = tasks + ``average``; each task's cell comes from the
  run calibrated on that task itself (calibration = the task's name), at the main budget (the largest budget
  of the table's non-curve rows, i.e. 25% of the blocks); ``original`` is the unpruned model.
* :func:`calibration_table`: rows = (calibration set, method), columns = tasks + ``average``: how one
  calibration (a mix, a single task such as ARC-E, or C4) transfers to every task, at the main budget.
* :func:`gromov_curves`: accuracy against blocks removed per task and method, each task calibrated on itself.

A generative task (GSM8K) has no ``acc``: its accuracy in every table is lm-eval's ``exact_match`` under
:data:`GENERATIVE_METRIC` (both of GSM8K's filters are in the per-job table). Calibrations of kind ``curve`` (a
``curve_tasks`` entry: calibrated on itself, evaluated on itself only) appear in the Gromov curves and in no
other table. Accuracies are in percent, as the paper reports them; ``average`` is the unweighted mean over the tasks.
:func:`summary_rows` stacks all three as one long table (``results/seed003_tables.parquet``), the table the
reproduction scorecard reads.
"""

from __future__ import annotations

import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.relevance.relevance_jobs import TASK_PRUNING_METHODS
from swapkl.tables import provenance
from swapkl.tables.file_checks import require_distinct
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import TASK_PRUNING_SCHEMA, read_concatenated

AVERAGE = "average"
#: the score a generative task stands in for ``acc`` with: lm-eval's exact match after the strict regex
#: (GSM8K's ``#### n`` answer line)
GENERATIVE_METRIC = "exact_match,strict-match"
#: calibration kinds of the task-specific and calibration tables (``curve`` sets only draw curves)
TABLE_KINDS = ("task", "mix", "lm")
#: the methods of the paper's tables, in row order: "original" removes nothing; the others are guides
#: (swapkl.relevance.task_calibration)
METHODS = TASK_PRUNING_METHODS
METHOD_LABELS = {"original": "Original", "taylor": "Taylor", "bi": "Cosine (BI)", "sleb_iterative": "Perplexity (SLEB)",
                 "accuracy": "Accuracy", "interchange": "Interchange KL", "deletion": "Deletion KL"}


def _checked(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows of ``metric``, and of :data:`GENERATIVE_METRIC` for the tasks that have no row of ``metric``."""
    has = set(df.loc[df["metric"] == metric, "task"])
    rows = df[(df["metric"] == metric) | ((df["metric"] == GENERATIVE_METRIC) & ~df["task"].isin(has))]
    if rows.empty:
        raise SwapKLError(f"the task-pruning table has no row of metric {metric!r}")
    return rows


def main_budget_of(df: pd.DataFrame) -> int:
    """The budget every pruning method of the table's calibrations was chosen at (the curve methods add other
    budgets on single-task calibrations; mixes and LM calibrations have only the main one)."""
    rows = df[df["calibration_kind"].isin(TABLE_KINDS) & (df["method"] != "original")]
    if rows.empty:
        raise SwapKLError("the task-pruning table has no pruned model outside the Gromov curves")
    fixed = rows[rows["calibration_kind"] != "task"]
    if len(fixed):
        common = set(fixed["budget"])
    else:
        common = set.intersection(*(set(b) for _, b in rows.groupby("method")["budget"]))
    if len(common) != 1:
        raise SwapKLError(f"the task-pruning table's methods share no single main budget (common: {sorted(common)})")
    return int(common.pop())


def _pivot(rows: pd.DataFrame, index: list[str], tasks: list[str]) -> pd.DataFrame:
    table = rows.pivot_table(index=index, columns="task", values="accuracy", aggfunc="first") * 100.0
    table = table.reindex(columns=tasks)
    table[AVERAGE] = table[tasks].mean(axis=1, skipna=False)
    return table


def task_specific_table(df: pd.DataFrame, *, metric: str = "acc", methods: list[str] | None = None,
                        tasks: list[str] | None = None) -> pd.DataFrame:
    """Methods x (tasks, average) in percent, each task calibrated on itself, at the main budget."""
    rows = _checked(df, metric)
    budget = main_budget_of(rows)
    rows = rows[(rows["calibration_kind"] == "task") & (rows["calibration"] == rows["task"])]
    if rows.empty:
        raise SwapKLError("the task-pruning table has no task calibrated on itself")
    rows = rows[(rows["budget"] == budget) | (rows["method"] == "original")]
    tasks = tasks or sorted(rows["task"].unique())
    table = _pivot(rows, ["method"], tasks)
    return table.loc[[m for m in (methods or METHODS) if m in table.index]]


def calibration_table(df: pd.DataFrame, *, metric: str = "acc", tasks: list[str] | None = None) -> pd.DataFrame:
    """(calibration, method) x (tasks, average) in percent at the main budget: every calibration set on every task."""
    rows = _checked(df, metric)
    rows = rows[rows["calibration_kind"].isin(TABLE_KINDS)]
    budget = main_budget_of(rows)
    rows = rows[(rows["budget"] == budget) | (rows["method"] == "original")]
    tasks = tasks or sorted(rows["task"].unique())
    table = _pivot(rows, ["calibration", "method"], tasks)
    return table.loc[sorted(table.index, key=lambda k: (k[0], METHODS.index(k[1]) if k[1] in METHODS else 99))]


def gromov_curves(df: pd.DataFrame, *, metric: str = "acc", methods=("bi", "accuracy")) -> pd.DataFrame:
    """Long table (task, method, budget, metric, accuracy %): each task calibrated on itself; budget 0 = original;
    ``metric`` is ``metric`` or, on a generative task, :data:`GENERATIVE_METRIC`."""
    rows = _checked(df, metric)
    rows = rows[rows["calibration_kind"].isin(("task", "curve")) & (rows["calibration"] == rows["task"])]
    base = rows[rows["method"] == "original"]
    out = [base.assign(method=m) for m in methods]
    out.append(rows[rows["method"].isin(methods)])
    curves = pd.concat(out)[["task", "method", "budget", "metric", "accuracy"]]
    curves = curves.assign(accuracy=curves["accuracy"] * 100.0)
    return curves.sort_values(["task", "method", "budget"]).reset_index(drop=True)


def summary_rows(df: pd.DataFrame, *, metric: str = "acc") -> pd.DataFrame:
    """The three tables of every (model, revision), stacked long: columns model, revision, table,
    calibration, method, budget, task, metric (a generative task's curve: :data:`GENERATIVE_METRIC`), accuracy
    (percent)."""
    parts = []
    for (model, revision), one in df.groupby(["model", "revision"], sort=True):
        budget = main_budget_of(one)
        head = dict(model=model, revision=revision, metric=metric)
        spec = task_specific_table(one, metric=metric).stack().rename("accuracy").reset_index()
        parts.append(spec.assign(table="task_specific", calibration="own task", **head,
                                 budget=[0 if m == "original" else budget for m in spec["method"]]))
        cal = calibration_table(one, metric=metric).stack().rename("accuracy").reset_index()
        parts.append(cal.assign(table="calibration", **head,
                                budget=[0 if m == "original" else budget for m in cal["method"]]))
        curves = gromov_curves(one, metric=metric)
        parts.append(curves.assign(table="gromov", calibration="own task", model=model, revision=revision))
    cols = ["model", "revision", "table", "calibration", "method", "budget", "task", "metric", "accuracy"]
    return pd.concat(parts, ignore_index=True)[cols]


def aggregate_task_pruning(inputs: list[str], out: str, *, summary: str | None = None) -> None:
    """Concatenate per-job task-pruning files (``results/seed003_pruning.parquet``; provenance: each input's),
    and write the paper's tables derived from them to ``summary`` (:func:`swapkl.relevance.task_tables.summary_rows`)."""
    require_distinct({"`out`": out} | ({"`summary`": summary} if summary else {}), [("`inputs`", p) for p in inputs])
    key = ["model", "revision", "calibration", "method", "budget", "task", "metric"]
    table, prov = read_concatenated(inputs, TASK_PRUNING_SCHEMA, "task-pruning", key)
    table = table.sort_by([(c, "ascending") for c in key])
    rows = None
    if summary is not None:
        check_writable(summary)
        rows = summary_rows(table.to_pandas())
    write_parquet(table, out, prov)
    if summary is not None:
        write_parquet(rows, summary, provenance.derived([out], metric="acc"))
