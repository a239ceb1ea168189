"""The bootstrap CIs of the published tables, computed from the per-sequence sums the GPU jobs store.

The probe and pruning jobs write measurements and per-window sums only (:mod:`swapkl.tables.schemas`); the
aggregation steps call these functions, so changing the number of resamples or the seed re-runs
the aggregation, never a GPU job. Every interval is the 95% percentile interval of
:mod:`swapkl.stats.bootstrap` over windows resampled by ``resample_indices(n_windows, n_boot, seed)``:
one resampling per checkpoint, shared by all its rows, so that the intervals of its variants
(and the delta-perplexity intervals against its base model) are paired.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from swapkl.stats.bootstrap import AgainstBase, percentile_ci, ratio_ci, resample_indices
from swapkl.errors import SwapKLError
from swapkl.tables.schemas import PRUNING_CI_COLUMNS, PRUNING_SCHEMA


def ratio_intervals(sums: np.ndarray, counts: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper CI of ``sum(sums[r]) / sum(counts[r])`` for every row r of ``[n_rows, n_seqs]`` arrays."""
    bounds = np.array([ratio_ci(s, c, idx) for s, c in zip(sums, counts)], dtype=np.float64).reshape(-1, 2)
    return bounds[:, 0], bounds[:, 1]


def pruning_intervals(table: pa.Table, n_boot: int, seed: int, where: str) -> pa.Table:
    """The per-checkpoint pruning ``table`` (:data:`~swapkl.tables.schemas.PRUNING_RUN_SCHEMA`) with its CI columns
    (:data:`~swapkl.tables.schemas.PRUNING_SCHEMA`): perplexity and delta perplexity (paired with the base row) over
    evaluation windows, KL over probe windows. Rows without per-window sums (infeasible budgets, the mean of
    the random draws) get NaN; the base row's KL and delta intervals are 0."""
    rows = table.to_pylist()
    base = [r for r in rows if r["guide"] == "base"]
    if len(base) != 1:
        raise SwapKLError(f"{where}: a pruning file holds one base row, found {len(base)}")
    tokens = np.asarray(base[0]["window_tokens"], dtype=np.float64)
    probe_tokens = np.asarray(base[0]["probe_tokens"], dtype=np.float64)
    paired = AgainstBase(base[0]["window_nll_sum"], tokens, n_boot, seed)
    probe_idx = resample_indices(len(probe_tokens), n_boot, seed)
    nan = float("nan")
    for r in rows:
        if r["window_nll_sum"] is None:
            r.update(dict.fromkeys(PRUNING_CI_COLUMNS, nan))
            continue
        if len(r["window_nll_sum"]) != len(tokens) or len(r["probe_kl_sum"] or ()) != len(probe_tokens):
            raise SwapKLError(f"{where}: {r['guide']} budget {r['budget']} has per-window sums of another length "
                              "than the base row's")
        r["ppl_ci_low"], r["ppl_ci_high"] = percentile_ci(np.exp(paired.log_ppl(r["window_nll_sum"])))
        r["delta_ppl_pct_ci_low"], r["delta_ppl_pct_ci_high"] = percentile_ci(
            100.0 * paired.increase(r["window_nll_sum"]))
        r["kl_ci_low"], r["kl_ci_high"] = ((0.0, 0.0) if r["guide"] == "base"
                                           else ratio_ci(r["probe_kl_sum"], probe_tokens, probe_idx))
    return pa.Table.from_pylist(rows, schema=PRUNING_SCHEMA)
