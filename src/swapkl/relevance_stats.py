"""Relevance statistics as "Rethinking Layer Relevance" reports them, against cosine (ShortGPT BI).

Per checkpoint and task (the metric the figures use: ``acc`` for multiple choice, ``next_token_acc``
for text), the AccRel of each block is compared with its block influence ``BI = 1 - cos(h_in, h_out)``
from the representation rows of the aggregate (both oriented low = safe to remove) by
:func:`swapkl.agreement.rank_statistics`: Pearson R (``pearson``; ``pearson_paper_sign`` = R of cosine
similarity against relevance, negative when they agree), the rank confusion matrix's ranks
(``guide_rank``: relevance, ``reference_rank``: BI) with the exact-rank and severe misranking rates,
boundary layers excluded.

Task dependence: each task's relevance is standardised over the blocks (z-scores, :func:`zscores`);
a block's spread is the standard deviation (ddof 0) of its z-scores across the tasks, over the blocks
every task defines. Cosine's z-scores are standardised the same way per task; swapkl measures BI
once per checkpoint on the probe windows, not per task, so its spread is 0 for every block. The test is
Wilcoxon's signed-rank test (``scipy.stats.wilcoxon``, one-sided: relevance spreads larger) of the
per-block differences ``spread(relevance) - spread(cosine)``; with cosine measured once per checkpoint
this asks whether relevance varies across tasks at all. Its columns repeat on every row of a checkpoint;
NaN when fewer than two tasks define relevance or every difference is zero.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from swapkl.agreement import rank_statistics
from swapkl.errors import SwapKLError
from swapkl.file_checks import require_distinct
from swapkl.schemas import RELEVANCE_STATS_COLUMNS, read_relevance, single_block

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


def _spread(z: pd.DataFrame) -> np.ndarray:
    """Per column (block): SD (ddof 0) across rows (tasks); exactly 0 where every row holds the same value."""
    same = (z == z.iloc[0]).all(axis=0).to_numpy()
    return np.where(same, 0.0, z.std(axis=0, ddof=0).to_numpy())


def task_dependence(rel_wide: pd.DataFrame, bi: pd.Series) -> dict:
    """Wilcoxon signed-rank test of per-block z-score spreads across tasks, relevance vs cosine."""
    nan = float("nan")
    z = zscores(rel_wide).dropna(how="all")
    z = z.loc[:, z.notna().all(axis=0)]
    out = dict(n_tasks=int(len(z)), n_blocks=int(z.shape[1]), mean_spread_relevance=nan, mean_spread_cosine=nan,
               wilcoxon_statistic=nan, wilcoxon_p=nan)
    if len(z) < 2 or z.shape[1] < 1:
        return out
    cos = 1.0 - bi.reindex(rel_wide.columns)
    zc = zscores(pd.DataFrame([cos.to_numpy()] * len(z), index=z.index, columns=rel_wide.columns))[z.columns]
    spread_rel, spread_cos = _spread(z), _spread(zc.fillna(0.0))
    out.update(mean_spread_relevance=float(spread_rel.mean()), mean_spread_cosine=float(spread_cos.mean()))
    d = spread_rel - spread_cos
    if np.any(d != 0):
        w = stats.wilcoxon(d, alternative="greater")
        out.update(wilcoxon_statistic=float(w.statistic), wilcoxon_p=float(w.pvalue))
    return out


def relevance_statistics(rel: pd.DataFrame, agg: pd.DataFrame) -> pd.DataFrame:
    """One row per checkpoint and task of ``rel`` (the relevance table's single-block rows) with BI rows in
    ``agg``."""
    rel = single_block(rel)
    rel = rel[rel["metric"].isin(PLOT_METRICS)]
    rows = []
    for (model, revision), g in rel.groupby(["model", "revision"], sort=True):
        bi = bi_per_block(agg, model, revision)
        wide = g.pivot_table(index="task", columns="layer", values="relevance", dropna=False)
        n_layers = wide.shape[1]
        dep = task_dependence(wide, bi)
        x_ref = bi.reindex(range(n_layers)).to_numpy(float)
        for task, t in g.groupby("task", sort=True):
            x = t.set_index("layer")["relevance"].reindex(range(n_layers)).to_numpy(float)
            rows.append(dict(model=model, revision=revision, task=task, metric=t["metric"].iloc[0], reference="bi",
                             n_layers=n_layers, **rank_statistics(x, x_ref), **dep))
    return pd.DataFrame(rows, columns=RELEVANCE_STATS_COLUMNS)


def summarise_relevance(relevance_path: str, aggregate_path: str, out: str) -> None:
    """results/relevance_stats.parquet from the relevance table and the aggregate."""
    from swapkl import provenance
    from swapkl.aggregate import read_aggregate
    from swapkl.parquet_io import check_writable, write_parquet

    require_distinct({"--out": out}, {"--input": relevance_path, "--aggregate": aggregate_path})
    check_writable(out)
    df = relevance_statistics(read_relevance(relevance_path), read_aggregate(aggregate_path))
    write_parquet(df, out, provenance.software_versions() | {
        "inputs": [relevance_path, aggregate_path],
        "input_sha256": provenance.input_sha256([relevance_path, aggregate_path])})
