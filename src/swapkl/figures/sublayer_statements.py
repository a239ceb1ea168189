"""What the sublayers study says about a model, as statements with their 95% intervals and verdicts: which sublayer
carries more of the protocol gap, whether the two add up, and whether pruning below the block costs less than
pruning whole blocks at the same parameter budget. A statement holds only where its interval excludes 0; every
other is undecided. ``benchmarks/real_study_numbers.py --sublayers`` writes them for a run (docs/real_sublayers.csv),
and the README's statements are checked against that file."""

from __future__ import annotations

import html

import pandas as pd

from swapkl.tables.schemas import read_frame
from swapkl.tables.table_html import display_number

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


#: the columns the answer page reads from each table
GAP_COLUMNS = ["model", "revision", "step", "kind", "part", "layer_i", "layer_j", "value", "ci_low", "ci_high",
               "n_windows", "n_tokens"]
PRUNING_COLUMNS = ["model", "revision", "kind", "guide", "versus", "budget", "feasible", "removed", "value", "ci_low",
                   "ci_high", "n_windows", "n_tokens"]
#: how the answer page reads each verdict of a pruning difference (sublayer guide minus block guide)
_CHEAPER = {"sublayer cheaper": "the sublayers cost less", "blocks cheaper": "the blocks cost less",
            "undecided": "undecided"}


def answer_section(tables: dict, model: str, revision: str) -> str:
    """The answer page's section of the study (``tables``: the paths of ``sublayer_gaps`` and ``sublayer_pruning``):
    at ``revision``, which sublayer carries more of the gap, and at each budget the cheapest block set against the
    cheapest sublayer set of the same parameters, with the paired interval of their difference and its verdict. Empty
    where the study did not run on that revision."""
    gaps = read_frame(tables["sublayer_gaps"], GAP_COLUMNS, "sublayer gaps")
    gaps = gaps[(gaps["model"] == model) & (gaps["revision"] == revision)]
    if gaps.empty:
        return ""
    pruning = read_frame(tables["sublayer_pruning"], PRUNING_COLUMNS, "sublayer pruning")
    pruning = pruning[(pruning["model"] == model) & (pruning["revision"] == revision)]
    said = statements(gaps, pruning).set_index("claim")
    diff = said.loc["mlp_minus_attention"]
    carries = {"mlp": "the MLP sublayers carry more of the protocol gap than the attention sublayers",
               "attention": "the attention sublayers carry more of the protocol gap than the MLP sublayers",
               "undecided": "which sublayer carries more of the protocol gap is undecided"}[diff["verdict"]]
    n = int(gaps["n_windows"].dropna().iloc[0])
    tokens = int(gaps["n_tokens"].dropna().iloc[0])
    lines = ["<h2>Inside the block: attention and MLP sublayers</h2>",
             f"<p>On {n} windows ({tokens} scored tokens), {carries} (MLP minus attention mean gap "
             f"{display_number(diff['estimate'])} nats/token, 95% interval {display_number(diff['low'])} to {display_number(diff['high'])}).",
             ]
    costs = pruning[(pruning["kind"] == "cost") & pruning["feasible"]]
    if costs.empty:
        lines[-1] += "</p>"
        return "\n".join(lines)
    row = costs.iloc[0]
    lines[-1] += (f" Removing sublayers instead of whole blocks, at the parameters of n blocks: each cost is the "
                  f"perplexity change on {int(row['n_tokens'])} held-out tokens ({int(row['n_windows'])} windows); "
                  "the difference is the sublayer set's cost minus the block set's, paired over those windows.</p>")
    head = ["blocks' parameters (n)", "block set of lowest cost", "ΔPPL %", "sublayer set of lowest cost", "ΔPPL %",
            "difference (points)", "95% interval", "verdict"]
    lines.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>")
    block_guides = ("interchange", "replacement_max", "deletion")
    for budget, at in costs.groupby("budget", sort=True):
        blocks = at[at["guide"].isin(block_guides)].sort_values("value", kind="mergesort")
        parts = at[~at["guide"].isin(block_guides)].sort_values("value", kind="mergesort")
        if blocks.empty or parts.empty:
            continue
        b, s = blocks.iloc[0], parts.iloc[0]
        key = f"{s['guide']}-{b['guide']}@{int(budget)}"
        if key not in said.index:
            continue
        d = said.loc[key]
        same = sorted(map(str, b["removed"])) == sorted(map(str, s["removed"]))
        cells = [str(int(budget)), f"{b['guide']}: {', '.join(map(str, b['removed']))}", display_number(b["value"]),
                 f"{s['guide']}: {', '.join(map(str, s['removed']))}", display_number(s["value"]), display_number(d["estimate"]),
                 f"{display_number(d['low'])} to {display_number(d['high'])}",
                 "the same blocks removed" if same else _CHEAPER[d["verdict"]]]
        lines.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)
