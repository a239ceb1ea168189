"""What the sublayers study says about a model, as statements with their 95% intervals and verdicts: which sublayer
carries more of the protocol gap, whether the two add up, and whether pruning below the block costs less than
pruning whole blocks at the same parameter budget. A statement holds only where its interval excludes 0; every
other is undecided. ``benchmarks/real_study_numbers.py --sublayers`` writes them for a run (docs/real_sublayers.csv),
and the README's statements are checked against that file."""

from __future__ import annotations

import pandas as pd

COLUMNS = ["model", "revision", "claim", "estimate", "low", "high", "verdict"]


def sign_verdict(low: float, high: float, above: str, below: str) -> str:
    """``above`` when the interval lies above 0, ``below`` when below, else ``undecided``."""
    if low > 0:
        return above
    if high < 0:
        return below
    return "undecided"


def _last_revision(frame: pd.DataFrame) -> str:
    return frame.sort_values("step", na_position="first")["revision"].iloc[-1]


def statements(gaps: pd.DataFrame, pruning: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model (its last revision): the attention's and the MLP's share of the mean gap (verdict ``estimate``, or
    ``undefined`` where the block's mean gap is not away from 0 at 95%), the MLP's mean gap minus
    the attention's (verdict ``mlp``, ``attention`` or ``undecided``: which carries more), the mean interaction
    (``nonzero`` / ``undecided``), and each sublayer guide's perplexity increase minus each block guide's at each
    budget (``sublayer cheaper``, ``blocks cheaper`` or ``undecided``)."""
    out = []
    for model in dict.fromkeys(gaps["model"]):
        g = gaps[gaps["model"] == model]
        revision = _last_revision(g)
        rows = g[(g["revision"] == revision) & g["layer_i"].isna()].set_index(["kind", "part"])

        def add(claim, key, verdict):
            r = rows.loc[key]
            out.append(dict(model=model, revision=revision, claim=claim, estimate=float(r["value"]),
                            low=float(r["ci_low"]), high=float(r["ci_high"]), verdict=verdict))

        block = rows.loc[("mean_gap", "block")]
        defined = "estimate" if block["ci_low"] > 0 or block["ci_high"] < 0 else "undefined"
        for part in ("attention", "mlp"):  # a share of a mean gap that may be 0 means nothing
            add(f"share:{part}", ("share", part), defined)
        diff = rows.loc[("mlp_minus_attention", "mlp")]
        add("mlp_minus_attention", ("mlp_minus_attention", "mlp"),
            sign_verdict(diff["ci_low"], diff["ci_high"], "mlp", "attention"))
        inter = rows.loc[("mean_interaction", "block")]
        add("mean_interaction", ("mean_interaction", "block"),
            sign_verdict(inter["ci_low"], inter["ci_high"], "nonzero", "nonzero"))
        if pruning is None:
            continue
        p = pruning[(pruning["model"] == model) & (pruning["revision"] == revision)
                    & (pruning["kind"] == "difference")]
        for r in p.sort_values(["budget", "guide", "versus"]).itertuples():
            out.append(dict(model=model, revision=revision, claim=f"{r.guide}-{r.versus}@{int(r.budget)}",
                            estimate=float(r.value), low=float(r.ci_low), high=float(r.ci_high),
                            verdict=sign_verdict(r.ci_low, r.ci_high, "blocks cheaper", "sublayer cheaper")))
    return pd.DataFrame(out, columns=COLUMNS)
