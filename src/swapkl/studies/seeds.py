"""Across-seed statistics of seed families (``results/seeds.parquet``).

Input: the aggregate (``results/swapkl.parquet``: its ``summary`` and ``pair`` rows), the families of
:func:`swapkl.stats.seed_families.expand_seed_families` and, when family members are pruned, the pruning
table. Revisions flagged as duplicates in the aggregate (``duplicate_of``) are left out. One long
table; the column ``kind`` says which columns a row fills:

Every row: kind, family, pair_set (null for pruning rows), revision, step.

kind="member" -- one per (family, member, revision, pair set), copied from the aggregate's summary:
    seed, model, n_pairs, gap_mean, gap_fwd_mean, d_repl_max_mean, d_repl_fwd_mean, d_inter_mean.

kind="family" -- one per (family, revision, pair set) with at least one member:
    n_seeds, seeds (list), absent_seeds (list: the members whose revision the hub lacks, recorded as
    absent by their download and left out of every statistic; see :mod:`swapkl.hub.absence`), n_pairs; ``{q}_seed_mean``, ``{q}_seed_sd`` (ddof 1; null for one seed),
    ``{q}_seed_min``, ``{q}_seed_max`` over the members' mean gap, for q in gap (the clean
    ``d_repl_max - d_inter``) and gap_fwd (the paper's one-direction ``r(i<-j) - d_inter``);
    pair-ranking stability for q in gap, gap_fwd, d_repl_max, d_inter: ``spearman_{q}`` (mean over
    every pair of seeds of Spearman's rho between the two seeds' per-pair values) and ``kendall_w_{q}``
    (Kendall's coefficient of concordance W of the seeds' rankings, tie-corrected), null with fewer
    than two seeds or pairs, or when a seed ranks every pair equal.

kind="pruning" -- one per (family, revision, guide, budget, layer) of the guides (the base row, the
    random baseline and fixed sets left out), over the members pruned at that revision with a feasible
    set: guide, budget, layer, n_chosen (members whose set removes the layer), n_seeds, share_chosen.

kind="decomposition" -- one per (data family, init family, revision, pair set, quantity) where both a
    ``varies: data`` and a ``varies: init`` family have two or more seeds:
    data_family, init_family, quantity (gap | gap_fwd), var_data, var_init (sample variances, ddof
    1, of the members' mean gap), n_data, n_init, share_data = var_data / (var_data + var_init),
    share_init = 1 - share_data (null when both variances are 0). Estimator: under an additive model
    gap = mu + D(data order) + W(initialisation) + noise with independent effects, the data family
    (initialisation fixed) estimates var(D) + var(noise) and the init family var(W) + var(noise); the
    share is of their sum. With three seeds per family each variance has 2 degrees of freedom, and the
    estimate says little: under equal variances (and normal effects) share_data is Uniform(0, 1).
    ``share_data_ci_low`` / ``_high``: the exact 95% interval of the share s = r / (1 + r) of the variance
    ratio r = var(data family) / var(init family) from its F(n_data - 1, n_init - 1) pivot,
    ``r_hat / F_{0.975} .. r_hat / F_{0.025}``; with 3 + 3 seeds F_{0.975}(2, 2) = 39, so an estimated
    share of 0.5 has the interval 0.025 .. 0.975: what three seeds per family can identify.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pyarrow as pa
from scipy.stats import f as f_dist
from scipy.stats import rankdata

from swapkl.tables import provenance
from swapkl.probes.aggregate import read_aggregate
from swapkl.stats.rank_correlation import spearman
from swapkl.errors import SwapKLError
from swapkl.probes.pair_statistics import pair_set_column
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.provenance import read as read_provenance
from swapkl.tables.schemas import SEED_GAPS as GAPS
from swapkl.tables.schemas import SEED_MEMBER_STATS as MEMBER_STATS
from swapkl.tables.schemas import SEED_RANKED as RANKED
from swapkl.tables.schemas import SEEDS_SCHEMA as SCHEMA
from swapkl.tables.schemas import read_pruning, read_seeds
from swapkl.stats.seed_families import family_of

KINDS = ("member", "family", "pruning", "decomposition")
#: pruning rows that are no guide's choice: the unpruned model and the random baseline (draws and their mean)
NOT_CHOICES = ("base", "random", "random_mean")


# ----------------------------------------------------------------------------------------- rank statistics


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks of each row (seeds x pairs) over its columns."""
    return np.vstack([rankdata(row) for row in values])


def mean_pairwise_spearman(values) -> float:
    """Mean over every pair of rows (seeds) of Spearman's rho between them (:func:`swapkl.stats.rank_correlation.spearman`);
    NaN with fewer than two rows or columns, or a row of equal values."""
    values = np.asarray(values, dtype=np.float64)
    m, n = values.shape
    if m < 2 or n < 2 or not np.isfinite(values).all():
        return float("nan")
    a, b = np.array(list(combinations(range(m), 2))).T
    return float(np.mean(spearman(values[a], values[b])))


def kendall_w(values) -> float:
    """Kendall's W of the rows' (raters') rankings of the columns (items), with the tie correction:
    W = 12 S / (m^2 (n^3 - n) - m sum_r T_r), S the squared deviations of the items' rank sums from
    their mean, T_r = sum over tie groups of rater r of (t^3 - t). NaN with fewer than two raters or
    items, or when every rater ranks every item equal."""
    values = np.asarray(values, dtype=np.float64)
    m, n = values.shape
    if m < 2 or n < 2 or not np.isfinite(values).all():
        return float("nan")
    ranks = _ranks(values)
    sums = ranks.sum(axis=0)
    s = float(((sums - sums.mean()) ** 2).sum())
    ties = sum(float(((counts ** 3) - counts).sum()) for counts in
               (np.unique(row, return_counts=True)[1].astype(np.float64) for row in values))
    denominator = m ** 2 * (n ** 3 - n) - m * ties
    return float("nan") if denominator <= 0 else 12.0 * s / denominator


# ----------------------------------------------------------------------------------------- tables


def _members_frame(agg: pd.DataFrame, families: dict) -> pd.DataFrame:
    member_of = family_of(families)
    s = agg[(agg["kind"] == "summary") & agg["model"].isin(list(member_of)) & agg["duplicate_of"].isna()]
    out = pd.DataFrame({
        "kind": "member",
        "family": [member_of[m][0] for m in s["model"]],
        "pair_set": s["pair_set"].to_numpy(object),
        "revision": s["revision"].to_numpy(object),
        "step": s["step"].to_numpy(object),
        "seed": [member_of[m][1] for m in s["model"]],
        "model": s["model"].to_numpy(object),
        "n_pairs": s["n_pairs"].to_numpy(object),
        **{c: s[c].to_numpy(np.float64) for c in MEMBER_STATS},
    })
    return out


def _pair_matrix(agg: pd.DataFrame, models: list[str], revision: str, pair_set: str, quantity: str) -> np.ndarray:
    """seeds x pairs of ``quantity`` (pairs of ``pair_set``, ordered by (i, j)), the same pairs for every seed."""
    column = pair_set_column(pair_set)
    p = agg[(agg["kind"] == "pair") & (agg["revision"] == revision) & agg["model"].isin(models)]
    p = p[p[column].fillna(False).astype(bool)]
    rows, pairs = [], None
    for model in models:
        mine = p[p["model"] == model].sort_values(["layer_i", "layer_j"])
        these = list(zip(mine["layer_i"].astype(int), mine["layer_j"].astype(int)))
        if pairs is None:
            pairs = these
        elif these != pairs:
            raise SwapKLError(f"seed family members {models[0]} and {model} at {revision} do not have the same "
                              f"pairs of {pair_set} (different depths?)")
        rows.append(mine[quantity].to_numpy(np.float64))
    return np.vstack(rows)


def absent_seeds(families: dict, absent) -> dict[tuple[str, str], list[int]]:
    """{(family, revision): seeds of the family's members recorded as absent at that revision}."""
    member_of = family_of(families)
    out: dict[tuple[str, str], list[int]] = {}
    for rec in absent:
        if rec.get("model") in member_of:
            family, seed = member_of[rec["model"]]
            out.setdefault((family, rec["revision"]), []).append(int(seed))
    return {key: sorted(set(seeds)) for key, seeds in out.items()}


def _family_rows(agg: pd.DataFrame, members: pd.DataFrame, absent: dict) -> pd.DataFrame:
    rows = []
    for (family, pair_set, revision), g in members.groupby(["family", "pair_set", "revision"], sort=False):
        g = g.sort_values("seed")
        row = {"kind": "family", "family": family, "pair_set": pair_set, "revision": revision,
               "step": g["step"].iloc[0], "n_seeds": len(g), "seeds": [int(x) for x in g["seed"]],
               "absent_seeds": absent.get((family, revision), []), "n_pairs": g["n_pairs"].iloc[0]}
        for q in GAPS:
            v = g[f"{q}_mean"].to_numpy(np.float64)
            row.update({f"{q}_seed_mean": v.mean(), f"{q}_seed_sd": v.std(ddof=1) if len(v) > 1 else np.nan,
                        f"{q}_seed_min": v.min(), f"{q}_seed_max": v.max()})
        for q in RANKED:
            matrix = _pair_matrix(agg, list(g["model"]), revision, pair_set, q)
            row[f"spearman_{q}"] = mean_pairwise_spearman(matrix)
            row[f"kendall_w_{q}"] = kendall_w(matrix)
        rows.append(row)
    return pd.DataFrame(rows)


def pruning_choices(pruning: pd.DataFrame, families: dict) -> pd.DataFrame:
    """How often each layer is chosen per (family, revision, guide, budget) across the members."""
    member_of = family_of(families)
    p = pruning[pruning["model"].isin(list(member_of)) & pruning["random_draw"].isna()
                & pruning["fixed_set"].isna() & pruning["feasible"].fillna(False).astype(bool)
                & ~pruning["guide"].isin(NOT_CHOICES) & pruning["removed_layers"].notna()]
    rows = []
    p = p.assign(family=[member_of[m][0] for m in p["model"]])
    for (family, revision, guide, budget), g in p.groupby(["family", "revision", "guide", "budget"], sort=False):
        n_layers = int(g["n_layers"].iloc[0])
        counts = np.zeros(n_layers, dtype=np.int64)
        for removed in g["removed_layers"]:
            counts[np.asarray(list(removed), dtype=np.int64)] += 1
        for layer in range(n_layers):
            rows.append({"kind": "pruning", "family": family, "revision": revision, "step": g["step"].iloc[0],
                         "guide": guide, "budget": int(budget), "layer": layer, "n_chosen": int(counts[layer]),
                         "n_seeds": len(g), "share_chosen": counts[layer] / len(g)})
    return pd.DataFrame(rows)


def share_interval(var_d: float, var_i: float, n_d: int, n_i: int, level: float = 0.95) -> tuple[float, float]:
    """Exact interval of var_D / (var_D + var_I) from the F pivot of the sample variance ratio (module
    docstring); NaN when a sample variance is 0."""
    if not (var_d > 0 and var_i > 0):
        return np.nan, np.nan
    ratio = var_d / var_i
    lo_q, hi_q = f_dist.ppf([(1 + level) / 2, (1 - level) / 2], n_d - 1, n_i - 1)
    r_low, r_high = ratio / lo_q, ratio / hi_q
    return float(r_low / (1 + r_low)), float(r_high / (1 + r_high))


def decomposition(members: pd.DataFrame, families: dict) -> pd.DataFrame:
    """Data-order and initialisation shares of the across-seed variance (see the module docstring)."""
    rows = []
    data = [f for f, spec in families.items() if spec["varies"] == "data"]
    init = [f for f, spec in families.items() if spec["varies"] == "init"]
    for d_family, i_family in ((d, i) for d in data for i in init):
        d_rows = members[members["family"] == d_family]
        i_rows = members[members["family"] == i_family]
        for (pair_set, revision), dg in d_rows.groupby(["pair_set", "revision"], sort=False):
            ig = i_rows[(i_rows["pair_set"] == pair_set) & (i_rows["revision"] == revision)]
            if len(dg) < 2 or len(ig) < 2:
                continue
            for q in GAPS:
                var_d = float(dg[f"{q}_mean"].var(ddof=1))
                var_i = float(ig[f"{q}_mean"].var(ddof=1))
                total = var_d + var_i
                share = var_d / total if total > 0 else np.nan
                low, high = share_interval(var_d, var_i, len(dg), len(ig))
                rows.append({"kind": "decomposition", "pair_set": pair_set, "revision": revision,
                             "step": dg["step"].iloc[0], "data_family": d_family, "init_family": i_family,
                             "quantity": q, "var_data": var_d, "var_init": var_i, "n_data": len(dg),
                             "n_init": len(ig), "share_data": share, "share_init": 1 - share,
                             "share_data_ci_low": low, "share_data_ci_high": high})
    return pd.DataFrame(rows)


def seed_statistics(agg: pd.DataFrame, families: dict, pruning: pd.DataFrame | None = None,
                    absent=()) -> pd.DataFrame:
    """The seeds table (see the module docstring), sorted by kind, family, pair set, step, revision.
    ``absent``: the records (:mod:`swapkl.hub.absence`) of members' revisions that the hub lacks."""
    members = _members_frame(agg, families)
    missing = absent_seeds(families, absent)
    present = set(zip(members["model"], members["revision"]))
    clash = sorted((r["model"], r["revision"]) for r in absent if (r.get("model"), r["revision"]) in present)
    if clash:
        raise SwapKLError(f"{clash[0][0]} at {clash[0][1]} is both in the aggregate and recorded as absent")
    if members.empty:
        raise SwapKLError(f"the aggregate has no summary rows of any seed family member "
                          f"({', '.join(sorted(families)) or 'no families'})")
    frames = [members, _family_rows(agg, members, missing)]
    if pruning is not None:
        frames.append(pruning_choices(pruning, families))
    frames.append(decomposition(members, families))
    df = pd.concat([f for f in frames if not f.empty], ignore_index=True)
    df = df.reindex(columns=SCHEMA.names)
    order = df["kind"].map({k: i for i, k in enumerate(KINDS)})
    step = pd.to_numeric(df["step"], errors="coerce").fillna(np.inf)
    keys = ["_order", "family", "data_family", "pair_set", "_step", "revision", "seed", "guide", "budget",
            "layer", "quantity"]
    df = df.assign(_order=order, _step=step).sort_values(keys, kind="mergesort", na_position="first")
    return df.drop(columns=["_order", "_step"]).reset_index(drop=True)


def to_table(df: pd.DataFrame) -> pa.Table:
    """The seeds table as Arrow with :data:`SCHEMA` (nulls where a kind leaves a column empty)."""
    arrays = []
    for field in SCHEMA:
        values = [None if (not isinstance(v, list) and pd.isna(v)) else v for v in df[field.name]]
        arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def write_seed_statistics(aggregate_path, out, *, families: dict, pruning_path=None) -> pd.DataFrame:
    """Read the aggregate (and pruning table), compute :func:`seed_statistics`, write ``out`` atomically."""
    check_writable(str(out))
    agg = read_aggregate(aggregate_path)
    absent = list(read_provenance(str(aggregate_path)).get("absent", []))
    pruning = read_pruning(pruning_path) if pruning_path else None
    if pruning_path:
        absent += [r for r in read_provenance(str(pruning_path)).get("absent", []) if r not in absent]
    df = seed_statistics(agg, families, pruning, absent)
    write_parquet(to_table(df), str(out), provenance.derived(
        [aggregate_path, pruning_path], families=families, aggregate=str(aggregate_path),
        pruning=None if pruning_path is None else str(pruning_path), absent=absent))
    return df


