"""Small synthetic results tables for the figure tests: every column a figure reads, values chosen so that the
hard cases of real runs appear (costs near zero or negative, a cluster of blocks at cos ~ 1, an outlying
boundary block, 17 guides, many checkpoints)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.stats.agreement import compare, rank_statistics
from swapkl.figures.pruning.cost import AGREEMENT_LABELS
from swapkl.pruning.guides.guide_registry import registered

N_LAYERS = 12
N_WINDOWS = 24
TOKENS = 100
BUDGETS = (0, 1, 2, 3, 4)


def _cost(guide: str, n: int, rank: int) -> float:
    """Relative NLL increase of removing ``n`` blocks by ``guide``; interchange and replacement are slightly
    negative at n = 1 (as in real demo runs), the rest grow with n."""
    if guide in ("interchange", "replacement_max"):
        return {1: -0.004, 2: 0.0005, 3: 0.02 + 0.01 * (guide == "replacement_max"), 4: 0.08}[n]
    return 0.01 * n * (1 + rank % 7) + (0.05 * n if guide == "anti_interchange" else 0.0)


def _row(model, revision, step, guide, n, nll, base_nll, **extra) -> dict:
    tok = np.full(N_WINDOWS, TOKENS)
    ppl, base = float(np.exp(nll.sum() / tok.sum())), float(np.exp(base_nll.sum() / tok.sum()))
    d = 100 * (ppl / base - 1)
    row = dict(model=model, revision=revision, step=step, n_layers=N_LAYERS, guide=guide, budget=n, random_draw=None,
               fixed_set=None, removed_layers=list(range(n)), feasible=True, ppl=ppl, base_ppl=base,
               delta_ppl_pct=d, delta_ppl_pct_ci_low=d - 0.5 - 0.1 * abs(d), delta_ppl_pct_ci_high=d + 0.5 + 0.1 * abs(d),
               kl_mean=0.05 * n + 0.01, kl_ci_low=0.05 * n, kl_ci_high=0.05 * n + 0.02, delta_ppl_pct_sd=None,
               delta_ppl_pct_min=None, delta_ppl_pct_max=None, spacing=1, eval_split="test", eval_window=64,
               eval_stride=32, n_eval_tokens=int(tok.sum()), window_nll_sum=nll.tolist(), window_tokens=tok.tolist())
    row.update(extra)
    return row


def pruning_table(model: str = "toy", revisions=(("step0", 0), ("step1000", 1000), ("step16000", 16000))
                  ) -> pd.DataFrame:
    """Every plotted guide, a fixed set and the random mean, at budgets 0-4, for each revision."""
    rows = []
    for k, (rev, step) in enumerate(revisions):
        rng = np.random.default_rng(k)
        base_nll = 3.0 * TOKENS + rng.normal(0, 5, N_WINDOWS)
        rows.append(_row(model, rev, step, "base", 0, base_nll, base_nll))
        for rank, g in enumerate(g for g in registered() if g.plotted or g.name == "fixed"):
            for n in BUDGETS[1:]:
                noise = rng.normal(0, 0.002, N_WINDOWS)
                nll = base_nll * (1 + _cost(g.name, n, rank) * (1 + k) + noise)
                extra = {}
                if g.name == "fixed":
                    extra = dict(fixed_set="paper")
                if g.name == "random_mean":
                    d = 100 * (float(np.exp((nll.sum() - base_nll.sum()) / (N_WINDOWS * TOKENS))) - 1)
                    extra = dict(delta_ppl_pct_sd=2.0, delta_ppl_pct_min=d - 3, delta_ppl_pct_max=d + 4, n_draws=5)
                rows.append(_row(model, rev, step, g.name, n, nll, base_nll, **extra))
    return pd.DataFrame(rows)


def agreement_table(model: str = "toy", revision: str = "step16000") -> pd.DataFrame:
    """Every agreement score against every other; block 0 is a far outlier of each score (so Pearson's r is
    driven by it while the ranks of the other blocks disagree)."""
    rng = np.random.default_rng(3)
    scores = {}
    for name in AGREEMENT_LABELS:
        s = rng.uniform(0.0, 1.0, N_LAYERS)
        s[0] = 50.0
        scores[name] = s
    rows = []
    for guide, x in scores.items():
        for ref, y in scores.items():
            if guide == ref:
                continue
            rows.append(dict(model=model, revision=revision, step=16000, n_layers=N_LAYERS, guide=guide,
                             reference=ref, **compare(x, y), **rank_statistics(x, y, exclude_boundary=False)))
    return pd.DataFrame(rows)


def relevance_tables(model: str = "toy", revision: str = "step16000") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(relevance rows, aggregate repr rows): ten inner blocks at cos ~ 0.99, block 0 at cos 0.2."""
    rng = np.random.default_rng(5)
    bi = np.r_[0.8, rng.uniform(0.004, 0.012, N_LAYERS - 2), 0.05]
    rows = []
    for task in ("arith", "copy", "lm"):
        metric = "next_token_acc" if task == "lm" else "acc"
        for layer in range(N_LAYERS):
            rel = float(0.9 if layer == 0 else rng.uniform(0.0, 0.3))
            rows.append(dict(model=model, revision=revision, task=task, metric=metric, layer=layer, accuracy=0.5,
                             base_accuracy=0.6, random_baseline=0.25, relevance=rel, n_items=200))
    agg = pd.DataFrame({"kind": "repr", "model": model, "revision": revision, "metric": "bi", "width": 1,
                        "layer_i": np.arange(N_LAYERS), "value": bi, "duplicate_of": None})
    return pd.DataFrame(rows), agg


def seeds_table(family: str = "fam", seeds=(0, 1, 2), steps=(0, 1000, 4000, 16000)) -> pd.DataFrame:
    rows = []
    rng = np.random.default_rng(7)
    for s in ("adjacent", "within:2"):
        for step in steps:
            vals = {seed: 0.05 + 0.02 * np.log1p(step) + rng.normal(0, 0.01) for seed in seeds}
            for seed, v in vals.items():
                rows.append(dict(kind="member", family=family, pair_set=s, revision=f"step{step}", step=step,
                                 seed=seed, model=f"{family}-seed{seed}", n_pairs=11, gap_mean=v, gap_fwd_mean=0.8 * v))
            v = np.array(list(vals.values()))
            fam = dict(kind="family", family=family, pair_set=s, revision=f"step{step}", step=step, n_pairs=11,
                       n_seeds=len(seeds), seeds=list(seeds), absent_seeds=[], spearman_gap=0.6, kendall_w_gap=0.7,
                       spearman_gap_fwd=0.5)
            for q, scale in (("gap", 1.0), ("gap_fwd", 0.8)):
                fam.update({f"{q}_seed_mean": scale * v.mean(), f"{q}_seed_sd": scale * v.std(ddof=1),
                            f"{q}_seed_min": scale * v.min(), f"{q}_seed_max": scale * v.max()})
            rows.append(fam)
    return pd.DataFrame(rows)


COVARIATES = ("distance", "rel_update_mean", "rel_update_absdiff", "update_cos", "commutator", "weight_dist",
              "attn_entropy_mean", "attn_entropy_absdiff")


def covariate_correlations(models=("toy", "other"), revisions=("step0", "step100", "step200")) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    rows = []
    for model in models:
        for scope, revs in (("model", [None]), ("checkpoint", list(revisions))):
            for rev in revs:
                for cov in COVARIATES:
                    for target in ("gap", "gap_fwd"):
                        rho = float(rng.uniform(-0.9, 0.9))
                        rows.append(dict(scope=scope, group=f"model={model}" + (f", revision={rev}" if rev else ""),
                                         model=model, revision=rev, covariate=cov, target=target, n_pairs=30,
                                         spearman=rho, ci_low=rho - 0.1, ci_high=rho + 0.1, n_boot=100,
                                         resampled="pairs"))
    return pd.DataFrame(rows)


def weight_protocol_aggregate(n_layers: int = N_LAYERS, heads: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(13)
    rows = []
    for i in range(n_layers):
        for j in range(i + 1, min(n_layers, i + 4)):
            for p, (a, b) in (("replacement", (i, j)), ("replacement", (j, i)), ("averaging", (i, j)),
                              ("averaging", (j, i))):
                rows.append(dict(protocol=p, layer_i=a, layer_j=b, head=None, kl_mean=float(rng.uniform(0.01, 2))))
            rows.append(dict(protocol="interchange", layer_i=i, layer_j=j, head=None, kl_mean=float(rng.uniform(0.01, 2))))
            for h in range(heads):
                rows.append(dict(protocol="head_interchange", layer_i=i, layer_j=j, head=h,
                                 kl_mean=float(rng.uniform(0.001, 0.2))))
    df = pd.DataFrame(rows).assign(kind="directed", model="toy", revision="step16000", duplicate_of=None)
    return df
