"""Relevance statistics as "Rethinking Layer Relevance" reports them, against cosine (ShortGPT BI).

Per checkpoint and task (the metric the figures use: ``acc`` for multiple choice, ``next_token_acc``
for text), the AccRel of each block is compared with its block influence ``BI = 1 - cos(h_in, h_out)``
from the representation rows of the aggregate (both oriented low = safe to remove) by
:func:`swapkl.stats.agreement.rank_statistics`: Pearson R (``pearson``; ``pearson_paper_sign`` = R of cosine
similarity against relevance, negative when they agree), the rank confusion matrix's ranks
(``guide_rank``: relevance, ``reference_rank``: BI) with the exact-rank and severe misranking rates,
boundary layers excluded. Beside R, its permutation p-value and R without the interior blocks that are outliers of
either score (:func:`swapkl.stats.agreement.pearson_robustness`): the second paper's R can rest on a few blocks.

Groups: the subjects of a task group that lm-eval reports as one task (``mmlu_*`` -> ``mmlu``) count as one
task, as lm-eval aggregates them (``weight_by_size``): accuracy, base accuracy and random baseline are
item-weighted means over the subjects, ``n_items`` their sum, and AccRel is recomputed from them.

Task dependence (does a block's relevance differ between tasks beyond item-sampling noise?): Cochran's Q
heterogeneity test over the blocks every task defines. AccRel of block l on task t,
``1 - (acc - r) / (base - r)``, has the binomial sampling variance
``v = p (1 - p) / (n (base - r)^2)`` (``p = (n acc + 0.5) / (n + 1)``, the base accuracy and the items
treated as fixed and independent: an approximation); with weights ``w = 1 / v`` and the weighted mean
``m_l`` over tasks, ``Q = sum_l sum_t w (rel - m_l)^2`` is chi-square with ``sum_l (T - 1)`` degrees of
freedom when every block is equally relevant to every task (``heterogeneity_q``, ``heterogeneity_df``,
``heterogeneity_p``, the upper tail). ``mean_spread_relevance`` is descriptive: the mean over blocks of the
SD (ddof 0) across tasks of each task's z-scored relevance profile. (Cosine, measured once per checkpoint,
has no task dependence to compare with.) These columns repeat on every row of a checkpoint; NaN with fewer
than two tasks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from swapkl.stats.agreement import pearson_robustness, rank_statistics
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_distinct
from swapkl.tables.schemas import RELEVANCE_STATS_COLUMNS, read_relevance, single_block
from swapkl.relevance.tasks import acc_rel
from swapkl.tables import provenance
from swapkl.probes.aggregate import read_aggregate
from swapkl.tables.parquet_io import check_writable, write_parquet

#: the metric each task contributes to the statistics and figures (acc_norm stays in the relevance table)
PLOT_METRICS = ("acc", "next_token_acc")



def bi_per_block(agg: pd.DataFrame, model: str, revision: str) -> pd.Series:
    """ShortGPT BI of each block (index: layer) from the aggregate's representation rows."""
    r = agg[(agg["kind"] == "repr") & (agg["model"] == model) & (agg["revision"] == revision)
            & (agg["metric"] == "bi") & (agg["width"] == 1)]
    if r.empty:
        raise SwapKLError(f"aggregate has no BI rows for {model} {revision}")
    return pd.Series(r["value"].astype(float).to_numpy(), index=r["layer_i"].astype(np.int64).to_numpy())


def zscores(wide: pd.DataFrame) -> pd.DataFrame:
    """Each row (a task) standardised over its columns (blocks), ddof 0; NaN where undefined or constant."""
    std = wide.std(axis=1, ddof=0).replace(0.0, np.nan)
    return wide.sub(wide.mean(axis=1), axis=0).div(std, axis=0)


#: lm-eval task groups reported as one task: group name -> prefix of its subtasks' names
TASK_GROUPS = {"mmlu": "mmlu_"}


def group_tasks(rel: pd.DataFrame) -> pd.DataFrame:
    """Single-block relevance rows with each group's subtasks merged into one task (module docstring)."""
    keep, merged = [rel], []
    for group, prefix in TASK_GROUPS.items():
        sub = rel["task"].str.startswith(prefix)
        if not sub.any() or (rel["task"] == group).any():
            continue
        keep = [k[~sub.reindex(k.index, fill_value=False)] for k in keep]
        g = rel[sub].assign(_w=rel.loc[sub, "n_items"].astype(float))
        for c in ("accuracy", "base_accuracy", "random_baseline"):
            g[c] = g[c] * g["_w"]
        out = g.groupby(["model", "revision", "metric", "layer"], sort=True)[
            ["accuracy", "base_accuracy", "random_baseline", "_w"]].sum().reset_index()
        for c in ("accuracy", "base_accuracy", "random_baseline"):
            out[c] = out[c] / out["_w"]
        out["n_items"] = out.pop("_w").astype(np.int64)
        out["task"] = group
        out["relevance"] = [acc_rel(a, b, r) for a, b, r in
                            zip(out["accuracy"], out["base_accuracy"], out["random_baseline"])]
        merged.append(out)
    return pd.concat([*keep, *merged], ignore_index=True)


def _variance(t: pd.DataFrame) -> pd.Series:
    n = t["n_items"].astype(float)
    p = (t["accuracy"].clip(0, 1) * n + 0.5) / (n + 1)
    span = (t["base_accuracy"] - t["random_baseline"]).clip(lower=0)
    return p * (1 - p) / (n * span**2)


def task_dependence(long: pd.DataFrame) -> dict:
    """Cochran's Q heterogeneity of AccRel across tasks, per block (module docstring), and the descriptive
    mean spread of the tasks' z-scored profiles; ``long``: one row per (task, layer)."""
    nan = float("nan")
    rel = long.pivot_table(index="task", columns="layer", values="relevance", dropna=False)
    var = long.assign(v=_variance(long)).pivot_table(index="task", columns="layer", values="v", dropna=False)
    ok = rel.notna() & np.isfinite(var) & (var > 0)
    rows = ok.any(axis=1)
    rel, var, ok = rel[rows], var[rows], ok[rows]
    cols = ok.all(axis=0)
    rel, var = rel.loc[:, cols], var.loc[:, cols]
    out = dict(n_tasks=int(len(rel)), n_blocks=int(rel.shape[1]), mean_spread_relevance=nan,
               heterogeneity_q=nan, heterogeneity_df=None, heterogeneity_p=nan)
    if len(rel) < 2 or rel.shape[1] < 1:
        return out
    z = zscores(rel)
    out["mean_spread_relevance"] = float(z.std(axis=0, ddof=0).mean())
    w = 1.0 / var
    mean = (w * rel).sum(axis=0) / w.sum(axis=0)
    q = float((w * (rel - mean) ** 2).to_numpy().sum())
    df = int(rel.shape[1] * (len(rel) - 1))
    out.update(heterogeneity_q=q, heterogeneity_df=df, heterogeneity_p=float(stats.chi2.sf(q, df)))
    return out


def relevance_statistics(rel: pd.DataFrame, agg: pd.DataFrame) -> pd.DataFrame:
    """One row per checkpoint and task of ``rel`` (the relevance table's single-block rows) with BI rows in
    ``agg``."""
    rel = group_tasks(single_block(rel))
    rel = rel[rel["metric"].isin(PLOT_METRICS)]
    rows = []
    for (model, revision), g in rel.groupby(["model", "revision"], sort=True):
        bi = bi_per_block(agg, model, revision)
        n_layers = int(g["layer"].nunique())
        dep = task_dependence(g)
        x_ref = bi.reindex(range(n_layers)).to_numpy(float)
        for task, t in g.groupby("task", sort=True):
            x = t.set_index("layer")["relevance"].reindex(range(n_layers)).to_numpy(float)
            ranks = rank_statistics(x, x_ref)
            rows.append(dict(model=model, revision=revision, task=task, metric=t["metric"].iloc[0], reference="bi",
                             n_layers=n_layers, **ranks, **dep, **pearson_robustness(x, x_ref, ranks["layers"])))
    return pd.DataFrame(rows, columns=RELEVANCE_STATS_COLUMNS)


def summarise_relevance(relevance_path: str, aggregate_path: str, out: str) -> None:
    """results/relevance_stats.parquet from the relevance table and the aggregate."""
    require_distinct({"`out`": out}, {"`relevance_path`": relevance_path, "`aggregate_path`": aggregate_path})
    check_writable(out)
    df = relevance_statistics(read_relevance(relevance_path), read_aggregate(aggregate_path))
    write_parquet(df, out, provenance.software_versions() | {
        "inputs": [relevance_path, aggregate_path],
        "input_sha256": provenance.input_sha256([relevance_path, aggregate_path])})
