"""The sublayers study's statistics, from per-window sums (numpy only, so its gathering rules run without torch;
:mod:`swapkl.studies.sublayers.run` measures the sums on a model and writes the per-checkpoint tables).

**The decomposition of the gap** (:func:`decomposition`, ``results/sublayer_gaps.parquet``): the protocol gap of
each pair split over the block's sublayers, with intervals over windows.

For a pair (i, j) and a part (the whole block, its attention sublayer or its MLP sublayer), the part's gap is
``d_repl - d_inter``: ``d_repl`` the larger of the two replacement KLs (slot i running j's part, and j running
i's), ``d_inter`` the KL of exchanging the part between the two blocks, each a token-weighted mean over the
windows. The interaction is ``gap_block - gap_attention - gap_mlp``: zero where the two sublayers' gaps add up
to the block's. Over all the study's pairs, the mean gap of each part, the mean interaction, each sublayer's share
of the block's mean gap (mean sublayer gap / mean block gap) and the MLP's mean gap minus the attention's say which
sublayer carries more of the gap. Every quantity carries a 95% percentile bootstrap interval from one resampling of
the windows, shared by all of them (so the intervals are paired). The deletion of each block's attention and MLP
is measured too, with its cost per parameter removed.

**Pruning below the block** (:func:`removal_sets`, :func:`cost_rows`, ``results/sublayer_pruning.parquet``):
remove the cheapest attention and MLP sublayers up to the parameters of ``n`` blocks, and compare the perplexity
cost with removing ``n`` whole blocks, on the same evaluation windows. Every score comes from the measurements of
the decomposition (above), so a checkpoint is probed once for both. Each score is a token-weighted mean KL over
the probe windows.

The guides, by unit:

* ``interchange``, ``replacement_max``, ``deletion`` (whole blocks): the static greedy of the pruning study
  (:func:`swapkl.pruning.selection.greedy_select`, spacing Delta) over the block's interchange score (the smallest
  interchange KL over its partners), its replacement score (the same over the larger of the two replacement KLs)
  or its deletion KL;
* ``sublayer_deletion`` (sublayers): each sublayer's deletion KL;
* ``sublayer_interchange`` (sublayers): each sublayer's interchange score, the smallest KL of exchanging that
  sublayer with a partner's (the pairs of the study's ``pairs``).

A block guide removes ``n`` blocks. A sublayer guide gets the parameters of ``n`` blocks,
``param_budget = n * block parameters``. It ranks the sublayers by score per parameter removed, ascending (ties:
lower block first, attention before MLP). It then takes them in that order, skipping any that would pass the
budget, so it removes at most the block guides' parameters (``removed_params``). A block that loses both its
sublayers is removed whole. There is no spacing rule below the block.

A removed sublayer adds nothing to the residual stream: its output projection is zeroed (the engine's ``skip``
recipe, :mod:`swapkl.model.sublayers`).

The cost is the perplexity on the evaluation text (:mod:`swapkl.pruning.perplexity`),
``delta_ppl_pct = 100 * (ppl / base_ppl - 1)``. Its 95% percentile bootstrap interval resamples the evaluation
windows (:class:`swapkl.stats.bootstrap.AgainstBase`). The same resamples serve every row of a checkpoint, so the
difference between a sublayer guide and a block guide at one budget (``kind = difference``) has a paired interval.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from swapkl.errors import SwapKLError
from swapkl.probes.pairs import pairs_for
from swapkl.probes.protocols import build_variants
from swapkl.pruning.selection import BudgetError, greedy_select, layer_scores_from_pairs
from swapkl.stats.bootstrap import AgainstBase, percentile_ci, ratio_mean, ratio_resamples, resample_indices
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import read_concatenated

#: the protocols measured, by part: (replacement, interchange); and the deletions
PARTS = {"block": ("replacement", "interchange"), "attention": ("attention_replacement", "attention_interchange"),
         "mlp": ("mlp_replacement", "mlp_interchange")}
DELETIONS = {"attention": "attention_deletion", "mlp": "mlp_deletion", "block": "deletion"}

GAPS_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
    ("kind", pa.string()), ("part", pa.string()), ("layer_i", pa.int64()), ("layer_j", pa.int64()),
    ("d_repl", pa.float64()), ("d_inter", pa.float64()),
    ("value", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("params", pa.int64()), ("n_windows", pa.int64()), ("n_tokens", pa.int64()),
])
GAPS_KEY = ["model", "revision", "kind", "part", "layer_i", "layer_j"]


def sublayer_variants(pairs: str, n_layers: int) -> list:
    """Every variant the decomposition needs: the block and sublayer replacements and interchanges of the pairs,
    and every block's deletion and sublayer deletions."""
    protocols = [p for part in PARTS.values() for p in part] + list(DELETIONS.values())
    return build_variants(protocols, pairs, n_layers)


def _boot(sums: np.ndarray, tokens: np.ndarray, idx: np.ndarray) -> tuple[float, np.ndarray]:
    """The token-weighted mean and its value under each resampling."""
    return ratio_mean(sums, tokens), ratio_resamples(sums, tokens, idx)


def decomposition(sums: dict[str, np.ndarray], tokens: np.ndarray, pairs: str, n_layers: int, *,
                  params: dict[str, int], n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """The rows of :data:`GAPS_SCHEMA` (without the model's labels): per pair, the gap of each part and the
    interaction; per block, each deletion's KL and its KL per million parameters removed (``params``: the
    parameters of each part of a block)."""
    idx = resample_indices(len(tokens), n_boot, seed)
    n_windows, n_tokens = len(tokens), int(tokens.sum())
    rows = []

    def row(kind, part, i, j, value, boots, d_repl=float("nan"), d_inter=float("nan"), n_params=0):
        low, high = percentile_ci(boots)
        rows.append(dict(kind=kind, part=part, layer_i=i, layer_j=j, d_repl=d_repl, d_inter=d_inter, value=value,
                         ci_low=low, ci_high=high, params=n_params, n_windows=n_windows, n_tokens=n_tokens))

    per_pair: dict[str, list] = {part: [] for part in PARTS}
    for i, j in pairs_for(pairs, n_layers):
        gaps = {}
        for part, (repl, inter) in PARTS.items():
            (r_ij, b_ij), (r_ji, b_ji) = (_boot(sums[f"{repl}:{a}:{b}"], tokens, idx) for a, b in ((i, j), (j, i)))
            d_inter, b_inter = _boot(sums[f"{inter}:{i}:{j}"], tokens, idx)
            gaps[part] = (max(r_ij, r_ji) - d_inter, np.maximum(b_ij, b_ji) - b_inter)
            row("gap", part, i, j, gaps[part][0], gaps[part][1], max(r_ij, r_ji), d_inter)
        row("interaction", "block", i, j, gaps["block"][0] - gaps["attention"][0] - gaps["mlp"][0],
            gaps["block"][1] - gaps["attention"][1] - gaps["mlp"][1])
        for part in PARTS:
            per_pair[part].append(gaps[part])
    mean = {part: (float(np.mean([g for g, _ in v])), np.mean([b for _, b in v], axis=0))
            for part, v in per_pair.items()}
    for part in PARTS:
        row("mean_gap", part, None, None, *mean[part])
    row("mean_interaction", "block", None, None, mean["block"][0] - mean["attention"][0] - mean["mlp"][0],
        mean["block"][1] - mean["attention"][1] - mean["mlp"][1])
    for part in ("attention", "mlp"):
        with np.errstate(divide="ignore", invalid="ignore"):
            row("share", part, None, None, mean[part][0] / mean["block"][0], mean[part][1] / mean["block"][1])
    row("mlp_minus_attention", "mlp", None, None, mean["mlp"][0] - mean["attention"][0],
        mean["mlp"][1] - mean["attention"][1])
    for i in range(n_layers):
        for part, protocol in DELETIONS.items():
            kl, boots = _boot(sums[f"{protocol}:{i}:"], tokens, idx)
            row("deletion", part, i, None, kl, boots, n_params=params[part])
            row("deletion_per_mparam", part, i, None, kl / params[part] * 1e6, boots / params[part] * 1e6,
                n_params=params[part])
    return rows


def aggregate_sublayers(inputs: list[str], out: str) -> None:
    """Concatenate per-checkpoint decomposition tables into one (provenance: each input's)."""
    check_writable(out)
    table, prov = read_concatenated(inputs, GAPS_SCHEMA, "sublayer gaps", GAPS_KEY)
    write_parquet(table, out, prov)


#: the guides, in table order: name -> the unit it removes
GUIDES = {"interchange": "block", "replacement_max": "block", "deletion": "block",
          "sublayer_deletion": "sublayer", "sublayer_interchange": "sublayer"}
BLOCK_GUIDES = [g for g, unit in GUIDES.items() if unit == "block"]
SUBLAYER_GUIDES = [g for g, unit in GUIDES.items() if unit == "sublayer"]
SUBLAYERS = ("attention", "mlp")

PRUNING_SCHEMA = pa.schema([
    ("model", pa.string()), ("revision", pa.string()), ("step", pa.int64()), ("n_layers", pa.int64()),
    ("kind", pa.string()), ("guide", pa.string()), ("versus", pa.string()), ("budget", pa.int64()),
    ("feasible", pa.bool_()), ("removed", pa.list_(pa.string())), ("removed_params", pa.int64()),
    ("param_budget", pa.int64()), ("ppl", pa.float64()), ("base_ppl", pa.float64()),
    ("value", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_windows", pa.int64()), ("n_tokens", pa.int64()),
])
PRUNING_KEY = ["model", "revision", "kind", "guide", "versus", "budget"]


def unit_label(block: int, part: str | None = None) -> str:
    """``"3"`` for block 3, ``"3.attention"`` / ``"3.mlp"`` for one of its sublayers."""
    return str(block) if part is None else f"{block}.{part}"


def _means(sums: dict[str, np.ndarray], tokens: np.ndarray) -> dict[str, float]:
    return {key: ratio_mean(s, tokens) for key, s in sums.items()}


def block_scores(means: dict[str, float], pairs: str, n_layers: int) -> dict[str, np.ndarray]:
    """Per block, the score of each block guide (low = safe to remove)."""
    pair_list = pairs_for(pairs, n_layers)
    inter = {(i, j): means[f"interchange:{i}:{j}"] for i, j in pair_list}
    repl = {(i, j): max(means[f"replacement:{i}:{j}"], means[f"replacement:{j}:{i}"]) for i, j in pair_list}
    return {"interchange": layer_scores_from_pairs(inter, n_layers),
            "replacement_max": layer_scores_from_pairs(repl, n_layers),
            "deletion": np.array([means[f"deletion:{i}:"] for i in range(n_layers)])}


def sublayer_scores(means: dict[str, float], pairs: str, n_layers: int) -> dict[str, dict[tuple[int, str], float]]:
    """Per sublayer ``(block, part)``, the score of each sublayer guide (low = safe to remove)."""
    pair_list = pairs_for(pairs, n_layers)
    out: dict[str, dict[tuple[int, str], float]] = {"sublayer_deletion": {}, "sublayer_interchange": {}}
    for part in SUBLAYERS:
        inter = layer_scores_from_pairs({(i, j): means[f"{part}_interchange:{i}:{j}"] for i, j in pair_list},
                                        n_layers)
        for i in range(n_layers):
            out["sublayer_deletion"][(i, part)] = means[f"{part}_deletion:{i}:"]
            out["sublayer_interchange"][(i, part)] = float(inter[i])
    return out


def fill_budget(scores: dict[tuple[int, str], float], params: dict[str, int], budget: int) -> list[tuple[int, str]]:
    """The sublayers taken, in ascending score per parameter (ties: lower block, then attention first), each while
    the parameters removed stay within ``budget``; sublayers without a score (NaN) are never taken."""
    ranked = sorted((u for u, s in scores.items() if np.isfinite(s)),
                    key=lambda u: (scores[u] / params[u[1]], u[0], SUBLAYERS.index(u[1])))
    taken, used = [], 0
    for unit in ranked:
        if used + params[unit[1]] <= budget:
            taken.append(unit)
            used += params[unit[1]]
    return sorted(taken, key=lambda u: (u[0], SUBLAYERS.index(u[1])))


def as_removal(units: list[tuple[int, str]]) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
    """(blocks removed whole: both sublayers taken, sublayers skipped in the blocks kept)."""
    by_block: dict[int, list[str]] = {}
    for block, part in units:
        by_block.setdefault(block, []).append(part)
    whole = tuple(sorted(b for b, parts in by_block.items() if len(set(parts)) == len(SUBLAYERS)))
    return whole, tuple((b, p) for b, p in units if b not in whole)


def removal_sets(sums: dict[str, np.ndarray], tokens: np.ndarray, pairs: str, n_layers: int, *,
                 params: dict[str, int], budgets: list[int], spacing: int) -> dict[tuple[str, int], dict | None]:
    """``{(guide, budget): {"blocks": ..., "skipped": ..., "removed": labels, "removed_params": int}}``, ``None``
    where a block guide's greedy scan cannot reach the budget."""
    means = _means(sums, tokens)
    blocks, subs = block_scores(means, pairs, n_layers), sublayer_scores(means, pairs, n_layers)
    out: dict[tuple[str, int], dict | None] = {}
    for n in budgets:
        for guide in BLOCK_GUIDES:
            try:
                chosen = tuple(sorted(greedy_select(blocks[guide], n, spacing)))
            except BudgetError:
                out[(guide, n)] = None
                continue
            out[(guide, n)] = dict(blocks=chosen, skipped=(), removed=[unit_label(b) for b in chosen],
                                   removed_params=n * params["block"])
        for guide in SUBLAYER_GUIDES:
            units = fill_budget(subs[guide], params, n * params["block"])
            whole, skipped = as_removal(units)
            labels = sorted([unit_label(b) for b in whole] + [unit_label(b, p) for b, p in skipped],
                            key=lambda s: (int(s.split(".")[0]), s))
            out[(guide, n)] = dict(blocks=whole, skipped=skipped, removed=labels,
                                   removed_params=sum(params[p] for _, p in units))
    return out


def cost_rows(sets: dict[tuple[str, int], dict | None], base_nll: np.ndarray, nll: dict[tuple[str, int], np.ndarray],
              tokens: np.ndarray, *, params: dict[str, int], n_boot: int, seed: int) -> list[dict]:
    """The rows of :data:`PRUNING_SCHEMA` without the model's labels: each set's perplexity cost (``kind = cost``) and each
    sublayer guide's cost minus each block guide's at the same budget (``kind = difference``), with paired
    intervals. ``nll[(guide, budget)]``: the per-window NLL sums of each feasible set on the evaluation windows."""
    paired = AgainstBase(base_nll, tokens, n_boot, seed)
    base_ppl = float(np.exp(np.sum(base_nll) / np.sum(tokens)))
    n_windows, n_tokens = len(tokens), int(round(float(np.sum(tokens))))
    nan = float("nan")
    increase, rows = {}, []
    for (guide, n), chosen in sets.items():
        common = dict(kind="cost", guide=guide, versus=None, budget=n, param_budget=n * params["block"],
                      base_ppl=base_ppl, n_windows=n_windows, n_tokens=n_tokens)
        if chosen is None:
            rows.append(common | dict(feasible=False, removed=None, removed_params=None, ppl=nan, value=nan,
                                      ci_low=nan, ci_high=nan))
            continue
        ppl = float(np.exp(np.sum(nll[(guide, n)]) / np.sum(tokens)))
        increase[(guide, n)] = 100.0 * paired.increase(nll[(guide, n)])
        low, high = percentile_ci(increase[(guide, n)])
        rows.append(common | dict(feasible=True, removed=chosen["removed"], removed_params=chosen["removed_params"],
                                  ppl=ppl, value=100.0 * (ppl / base_ppl - 1.0), ci_low=low, ci_high=high))
    cost = {(r["guide"], r["budget"]): r for r in rows}
    for (guide, n) in sets:
        if GUIDES[guide] != "sublayer":
            continue
        for versus in BLOCK_GUIDES:
            if (guide, n) not in increase or (versus, n) not in increase:
                continue
            low, high = percentile_ci(increase[(guide, n)] - increase[(versus, n)])
            rows.append(dict(kind="difference", guide=guide, versus=versus, budget=n, feasible=True,
                             removed=cost[(guide, n)]["removed"], removed_params=cost[(guide, n)]["removed_params"],
                             param_budget=n * params["block"], ppl=cost[(guide, n)]["ppl"], base_ppl=base_ppl,
                             value=cost[(guide, n)]["value"] - cost[(versus, n)]["value"], ci_low=low, ci_high=high,
                             n_windows=n_windows, n_tokens=n_tokens))
    return rows


def check_budgets(budgets, n_layers: int) -> list[int]:
    """The budgets, each a number of blocks in 1..n_layers-1."""
    bad = [b for b in budgets if not isinstance(b, int) or isinstance(b, bool) or not 1 <= b < n_layers]
    if bad:
        raise SwapKLError(f"sublayers.budgets: {bad} not block counts in 1..{n_layers - 1} of this "
                          f"{n_layers}-block model")
    return sorted(set(budgets))


def aggregate_sublayer_pruning(inputs: list[str], out: str) -> None:
    """Concatenate the per-checkpoint sublayer pruning tables into one (provenance: each input's)."""
    check_writable(out)
    table, prov = read_concatenated(inputs, PRUNING_SCHEMA, "sublayer pruning", PRUNING_KEY)
    write_parquet(table, out, prov)
