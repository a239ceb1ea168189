"""Interchange- against replacement-guided pruning cost, with a paired bootstrap over evaluation windows: the
difference of the two perplexity increases (always defined), and their ratio where both are clearly positive."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.stats.bootstrap import AgainstBase, percentile_ci


def ir_ratios(df: pd.DataFrame, *, numerator: str = "interchange", denominator: str = "replacement_max",
              n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per checkpoint and budget: the difference ``ir_diff = delta_ppl_pct(numerator) - delta_ppl_pct(denominator)``
    (percentage points) and the ratio ``ir_ratio = delta_ppl_pct(numerator) / delta_ppl_pct(denominator)``, each
    with a 95% paired bootstrap CI over evaluation windows (both guides and the base model resampled with the
    same windows; seed ``seed``).

    A ratio of two signed costs near zero is not a statistic, so ``ir_ratio`` and its CI are NaN unless both
    costs are clearly positive (the lower end of each one's bootstrap CI above zero; ``ratio_defined``).

    ``same_blocks``: both guides removed the same blocks (their difference is then 0 with a CI of no width).

    Columns: model, revision, step, budget, delta_num, delta_den, ir_diff, ir_diff_ci_low, ir_diff_ci_high,
    same_blocks, ratio_defined, ir_ratio, ir_ci_low, ir_ci_high.
    """
    rows = []
    for (model, rev), g in df.groupby(["model", "revision"], sort=False):
        base = g[g["guide"] == "base"]
        if base.empty:
            continue
        paired = AgainstBase(np.asarray(base["window_nll_sum"].iloc[0], dtype=np.float64),
                             base["window_tokens"].iloc[0], n_boot, seed)
        for n in sorted(set(g["budget"]) - {0}):
            num = g[(g["guide"] == numerator) & (g["budget"] == n) & g["feasible"]]
            den = g[(g["guide"] == denominator) & (g["budget"] == n) & g["feasible"]]
            if num.empty or den.empty:
                continue
            dn, dd = float(num["delta_ppl_pct"].iloc[0]), float(den["delta_ppl_pct"].iloc[0])
            bn = paired.increase(np.asarray(num["window_nll_sum"].iloc[0]))
            bd = paired.increase(np.asarray(den["window_nll_sum"].iloc[0]))
            diff_lo, diff_hi = percentile_ci(100.0 * (bn - bd))  # bn, bd: relative increases, not percent
            defined = bool(percentile_ci(bn)[0] > 0 and percentile_ci(bd)[0] > 0)
            same = sorted(num["removed_layers"].iloc[0]) == sorted(den["removed_layers"].iloc[0])
            ratio = lo = hi = float("nan")
            if defined:
                lo, hi = percentile_ci(bn / bd)
                ratio = dn / dd
            rows.append(dict(model=model, revision=rev, step=g["step"].iloc[0], budget=int(n), delta_num=dn,
                             delta_den=dd, ir_diff=dn - dd, ir_diff_ci_low=diff_lo, ir_diff_ci_high=diff_hi,
                             same_blocks=same, ratio_defined=defined, ir_ratio=ratio, ir_ci_low=lo, ir_ci_high=hi))
    cols = ["model", "revision", "step", "budget", "delta_num", "delta_den", "ir_diff", "ir_diff_ci_low",
            "ir_diff_ci_high", "same_blocks", "ratio_defined", "ir_ratio", "ir_ci_low", "ir_ci_high"]
    return pd.DataFrame(rows, columns=cols)
