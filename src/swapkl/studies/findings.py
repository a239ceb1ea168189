"""The findings table: each comparison swapkl states about a finished study, with its estimate, its test and a
verdict, ``holds`` (at 95%) or ``undecided``.

Every interval takes the window as its unit and is Student's t on the windows' linearised influences
(:mod:`swapkl.stats.sequential`): with few windows a percentile bootstrap is too narrow. The claims, per model:

* ``gap_adjacent`` / ``gap_adjacent_fwd``: the mean adjacent gap ``d_repl - d_inter`` (max of both replacement
  directions / the one direction the paper's Pythia trajectory measured) is positive; its relative half-width is
  reported beside it;
* ``fwd_gap_differs:PYTHIA``: the one-direction mean adjacent gap differs from the paper's converged Pythia value
  (the value lies outside its interval);
* ``cheaper:A:B:n``: guide A's pruned model has a lower held-out NLL (so perplexity) than guide B's at budget n,
  paired over the evaluation windows, conditional on the sets the guides chose (where both chose the same blocks
  the difference is 0 by construction: verdict ``same blocks``);
* ``bi_severe_below_chance:REF`` / ``bi_exact_below_chance:REF``: BI's severe / exact-rank misranking against REF
  (deletion KL, or next-token relevance) is below what random ranks give: the one-sided permutation p-value of
  :func:`swapkl.stats.agreement.rank_chance` below 0.05 (a permutation test, not an interval: the blocks, not
  the windows, are the unit, and there are few of them);
* ``bi_relevance_r_agrees:pearson`` / ``...:pearson_without_outliers``: Pearson R of BI against next-token relevance
  (the second paper's sign: negative is agreement) over blocks 1..L-2, and over them without the blocks outside
  Tukey's fences on either score, is agreement beyond chance (one-sided permutation p below 0.05);
* ``r_stronger_than_paper:pythia:...``: the same R is stronger (more negative) than the paper's strongest, Pythia's
  -0.46: the upper end of its Fisher z interval over blocks lies below -0.46.

:func:`findings` builds the table from the tables of a finished run in memory; ``benchmarks/real_study_numbers.py
--findings`` writes it for ``make real`` (the probe files under results/probes hold the per-window sums).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from swapkl.stats.agreement import fisher_interval
from swapkl.stats.sequential import mean_gap, paired_difference
from swapkl.pruning.stability import GUIDE_PROTOCOLS, set_stability

LEVEL = 0.95
HOLDS, UNDECIDED, SAME = "holds", "undecided", "same blocks"
GUIDES_COMPARED = ("replacement_max", "deletion", "bi", "sleb_iterative")


def _row(model: str, claim: str, statement: str, estimate: float, low: float, high: float, test: str,
         verdict: str, p_value: float = math.nan, n: int = 0) -> dict:
    return {"model": model, "claim": claim, "statement": statement, "estimate": estimate, "low": low, "high": high,
            "p_value": p_value, "test": test, "n": n, "verdict": verdict}


def mean_gap_interval(directed: pd.DataFrame, distance: int = 1, one_direction: bool = False,
                      level: float = LEVEL) -> tuple[float, float, float, int]:
    """(mean gap over the pairs at ``distance``, interval low, high, windows) from the probe rows of one
    checkpoint (per-window KL sums); the larger replacement direction (or i<-j for ``one_direction``) per pair
    (:func:`swapkl.stats.sequential.mean_gap`)."""
    rows = {(r.protocol, int(r.layer_i), int(r.layer_j)): np.asarray(r.seq_kl_sum, dtype=np.float64)
            for r in directed.itertuples() if r.protocol in ("replacement", "interchange") and pd.notna(r.layer_j)}
    tokens = np.asarray(directed.iloc[0]["seq_tokens"], dtype=np.float64)
    pairs = sorted((i, j) for p, i, j in rows if p == "interchange" and j - i == distance)
    triples = np.array([[rows[("replacement", i, j)], rows[("replacement", j, i)], rows[("interchange", i, j)]]
                        for i, j in pairs])
    return (*mean_gap(triples, tokens, 1 - level, one_direction=one_direction), len(tokens))


def nll_difference(a: pd.Series, b: pd.Series, level: float = LEVEL) -> tuple[float, float, float, int]:
    """(held-out NLL of pruned model a minus b, interval low, high, windows), paired over the evaluation
    windows (pruning rows' ``window_nll_sum`` / ``window_tokens``)."""
    tokens = np.asarray(a["window_tokens"], dtype=np.float64)
    est, lo, hi = paired_difference(np.asarray(a["window_nll_sum"], dtype=np.float64),
                                    np.asarray(b["window_nll_sum"], dtype=np.float64), tokens, 1 - level)
    return est, lo, hi, len(tokens)


def _verdict(low: float, high: float) -> str:
    return HOLDS if low > 0 or high < 0 else UNDECIDED


#: the paper's converged one-direction adjacent gaps (Garcia 2026, Pythia trajectory, ../shared/BRIEF.md), which
#: count padded positions: a comparison with them is near like-for-like, not exact
PAPER_FWD_GAPS = {"pythia-410m": 0.263, "pythia-1.4b": 0.403}


def gap_findings(model: str, directed: pd.DataFrame) -> list[dict]:
    out = []
    for claim, fwd, what in (("gap_adjacent", False, "max of both replacement directions"),
                             ("gap_adjacent_fwd", True, "one direction, slot i runs block i+1")):
        est, lo, hi, n = mean_gap_interval(directed, one_direction=fwd)
        half = (hi - lo) / 2
        out.append(_row(model, claim, f"the mean adjacent gap ({what}) is positive: {est:+.3f} "
                                      f"({lo:+.3f} to {hi:+.3f}, +-{100 * half / abs(est):.0f}%)",
                        est, lo, hi, "t-interval over windows", HOLDS if lo > 0 else UNDECIDED, n=n))
    est, lo, hi, n = mean_gap_interval(directed, one_direction=True)
    for name, value in PAPER_FWD_GAPS.items():
        inside = lo <= value <= hi
        out.append(_row(model, f"fwd_gap_differs:{name}", f"the one-direction adjacent gap {est:+.3f} ({lo:+.3f} to "
                                                          f"{hi:+.3f}) differs from {name}'s {value:.3f}",
                        est - value, lo - value, hi - value, "t-interval over windows against the paper's value",
                        UNDECIDED if inside else HOLDS, n=n))
    return out


def pruning_findings(model: str, pruning: pd.DataFrame, guide: str = "interchange") -> list[dict]:
    """``guide`` against each of :data:`GUIDES_COMPARED` at every budget both reached."""
    out = []
    rows = pruning[(pruning["model"] == model) & pruning["feasible"].astype(bool)]
    ours = {int(r["budget"]): r for _, r in rows[rows["guide"] == guide].iterrows()}
    for other in GUIDES_COMPARED:
        theirs = {int(r["budget"]): r for _, r in rows[rows["guide"] == other].iterrows()}
        for n in sorted(set(ours) & set(theirs)):
            a, b = ours[n], theirs[n]
            claim = f"cheaper:{guide}:{other}:{n}"
            if sorted(a["removed_layers"]) == sorted(b["removed_layers"]):
                out.append(_row(model, claim, f"{guide} and {other} remove the same blocks at n = {n}", 0.0, 0.0,
                                0.0, "same removal set", SAME))
                continue
            est, lo, hi, windows = nll_difference(a, b)
            word = "cheaper" if est < 0 else "costlier"
            out.append(_row(model, claim, f"{guide} is {word} than {other} at n = {n}: held-out NLL {est:+.4f} "
                                          f"({lo:+.4f} to {hi:+.4f})",
                            est, lo, hi, "paired t-interval over evaluation windows", _verdict(lo, hi), n=windows))
    return out


def rank_findings(model: str, stats: pd.DataFrame, reference: str) -> list[dict]:
    """BI's misranking against ``reference`` below chance, from rows with the permutation p-values."""
    out = []
    for _, r in stats.iterrows():
        for kind, rate, chance, p in (("severe", "severe_misranking", "severe_chance", "severe_p"),
                                      ("exact", "exact_rank_misranking", "exact_rank_chance", "exact_rank_p")):
            claim = f"bi_{kind}_below_chance:{reference}"
            out.append(_row(model, claim, f"BI's {kind} misranking against {reference} ({100 * r[rate]:.0f}%) is "
                                          f"below chance ({100 * r[chance]:.0f}%): permutation p = {r[p]:.3f}",
                            float(r[rate]), math.nan, math.nan, "one-sided permutation test over blocks",
                            HOLDS if r[p] < 1 - LEVEL else UNDECIDED, p_value=float(r[p])))
    return out


#: the second paper's strongest R (cosine similarity against relevance, blocks 1..L-2; Pythia; ../shared/BRIEF.md):
#: an R beyond it is beyond Mistral's -0.23 and OLMo's -0.15 too
PAPER_R = ("pythia", -0.46)


def relevance_r_findings(model: str, r: pd.Series) -> list[dict]:
    """BI against next-token relevance, one relevance-statistics row: Pearson R (paper's sign) over blocks 1..L-2
    and over those without the outlying blocks, each as agreement beyond chance (permutation p) and as stronger than
    the paper's strongest R (Fisher's z interval over blocks, which outlying blocks make too optimistic)."""
    out = []
    name, paper = PAPER_R
    for blocks, col, m, dropped in (
            ("blocks 1..L-2", "pearson", int(r["n_ranked"]), []),
            ("blocks 1..L-2 without the outlying ones", "pearson_without_outliers", int(r["n_without_outliers"]),
             list(r["outlying_layers"]))):
        est, p = -float(r[col]), float(r[col + "_p"])
        where = blocks + (f" ({', '.join(map(str, dropped))} left out)" if dropped else "")
        out.append(_row(model, f"bi_relevance_r_agrees:{col}", f"BI agrees with next-token relevance over {where}: "
                                                                f"R (paper's sign) {est:+.2f} over {m} blocks, "
                                                                f"permutation p = {p:.3f}",
                        est, math.nan, math.nan, "one-sided permutation test over blocks",
                        HOLDS if p < 1 - LEVEL else UNDECIDED, p_value=p, n=m))
        lo, hi = sorted(-v for v in fisher_interval(float(r[col]), m, LEVEL))
        out.append(_row(model, f"r_stronger_than_paper:{name}:{col}",
                        f"R (paper's sign) over {where}, {est:+.2f} ({lo:+.2f} to {hi:+.2f}), is stronger than "
                        f"{name}'s {paper:+.2f}", est, lo, hi, "Fisher z interval over blocks against the paper's value",
                        HOLDS if hi < paper else UNDECIDED, n=m))
    return out


def findings(probes: pd.DataFrame, pruning: pd.DataFrame | None = None, agreement: pd.DataFrame | None = None,
             relevance_stats: pd.DataFrame | None = None) -> pd.DataFrame:
    """The findings table of a finished run (each model's last revision) from its tables in memory: ``probes``,
    the rows of its probe files (with their per-window sums)."""
    rows = []
    for model in sorted(set(probes["model"])):
        mine = probes[probes["model"] == model]
        last = mine.sort_values("step", na_position="first")["revision"].iloc[-1]
        directed = mine[mine["revision"] == last]
        rows += gap_findings(model, directed)
        if pruning is not None:
            rows += pruning_findings(model, pruning[pruning["revision"] == last])
        if agreement is not None:
            a = agreement[(agreement["model"] == model) & (agreement["guide"] == "bi")
                          & (agreement["reference"] == "deletion")]
            rows += rank_findings(model, a.head(1), "deletion")
        if relevance_stats is not None:
            r = relevance_stats[(relevance_stats["model"] == model) & (relevance_stats["reference"] == "bi")]
            rows += rank_findings(model, r.head(1), "relevance")
            if "pearson_without_outliers" in r and len(r):
                rows += relevance_r_findings(model, r.iloc[0])
    return pd.DataFrame(rows)


def removal_summary(probes: pd.DataFrame, pruning: pd.DataFrame, guide: str = "interchange",
                    n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """What to remove, per model (last revision) and budget: the blocks ``guide`` removed, the perplexity increase
    over the unpruned model with its 95% t-interval over the evaluation windows (NLL paired with the base row,
    then exponentiated), and how often the guide picks the same blocks when the probe windows are resampled
    (``stability``; NaN where the guide's default rule does not give the table's set, e.g. under paper
    settings)."""
    out = []
    for model in sorted(set(probes["model"])):
        mine = probes[probes["model"] == model]
        last = mine.sort_values("step", na_position="first")["revision"].iloc[-1]
        rows = mine[(mine["revision"] == last) & mine["protocol"].isin(GUIDE_PROTOCOLS[guide])]
        n_layers = int(rows.iloc[0]["n_layers"])
        table = pruning[(pruning["model"] == model) & (pruning["revision"] == last) & pruning["feasible"].astype(bool)]
        base = table[table["guide"] == "base"].iloc[0]
        for _, r in table[table["guide"] == guide].sort_values("budget").iterrows():
            budget = int(r["budget"])
            est, lo, hi, n = nll_difference(r, base)
            removed = tuple(sorted(int(b) for b in r["removed_layers"]))
            stability = set_stability(rows, guide, budget, removed, n_layers, int(r["spacing"]), n_boot, seed)
            out.append({"model": model, "guide": guide, "budget": budget, "removed": ",".join(map(str, removed)),
                        "ppl_increase_pct": 100 * math.expm1(est), "ppl_increase_low": 100 * math.expm1(lo),
                        "ppl_increase_high": 100 * math.expm1(hi), "eval_windows": n, "stability": stability,
                        "probe_windows": len(rows.iloc[0]["seq_tokens"])})
    return pd.DataFrame(out)
