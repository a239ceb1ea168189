"""How stable a guide's removal set is: how often the guide picks the same blocks when the probe windows are
resampled. A set chosen on a few windows may be an accident of those windows; the share of bootstrap resamples that
give the same set says how much it rests on them (it is a stability, not a confidence level).

:func:`guide_selector` is a guide of the registry as a function of the variants' KLs, which the sequential probe
re-runs on its looks (:mod:`swapkl.studies.sequential`) and :func:`set_stabilities` on resamples of the uniform
probe's windows, for the pruning table (its ``set_stability`` column) and the figures and pages drawn from it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from swapkl.pruning.guides import get_guide
from swapkl.pruning.guides.context import GuideContext
from swapkl.stats.sequential import Evidence, set_decision
from swapkl.stats.sequential_design import Decisions

#: the protocols each guide of a set decision reads (deletion breaks ties of the pair guides)
GUIDE_PROTOCOLS = {"interchange": ("interchange", "deletion"), "replacement_max": ("replacement", "deletion"),
                   "replacement_mean": ("replacement", "deletion"), "deletion": ("deletion",)}
#: bootstrap resamples of the windows behind a stability, and the seed of the first budget's (budget n: seed + n)
N_BOOT, SEED = 1000, 0


def guide_selector(guide: str, budget: int, n_layers: int, spacing: int):
    """{variant key ``protocol:i:j``: KL} -> the blocks ``guide`` removes at ``budget`` (None: no feasible set)."""
    chosen = get_guide(guide)

    def select(kl: dict[str, float]) -> tuple[int, ...] | None:
        rows = []
        for key, value in kl.items():
            protocol, i, j = key.split(":")[:3]
            rows.append({"protocol": protocol, "layer_i": int(i), "layer_j": int(j) if j else None,
                         "kl_mean": float(value), "head": None})
        selection = chosen.select(GuideContext(pd.DataFrame(rows), None, n_layers, [budget], spacing))
        pruned = None if selection is None else selection.removed.get((budget, None))
        return None if pruned is None else tuple(int(b) for b in pruned.removed)

    return select


def probe_evidence(probe: pd.DataFrame, protocols) -> tuple[Evidence, list[str]]:
    """The per-window KL sums of ``probe``'s rows of ``protocols`` (one checkpoint's probe rows with their
    ``seq_kl_sum`` and ``seq_tokens``), and their variant keys."""
    rows = probe[probe["protocol"].isin(protocols)]
    if "head" in rows:  # head-level variants are not a guide's
        rows = rows[rows["head"].isna()]
    evidence = Evidence(np.asarray(rows.iloc[0]["seq_tokens"], dtype=np.float64))
    keys = []
    for r in rows.itertuples():
        key = f"{r.protocol}:{int(r.layer_i)}:{'' if pd.isna(r.layer_j) else int(r.layer_j)}"
        keys.append(key)
        for w, value in enumerate(r.seq_kl_sum):
            evidence.add(key, w, value)
    return evidence, keys


def set_stability(probe: pd.DataFrame, guide: str, budget: int, removed, n_layers: int, spacing: int,
                  n_boot: int = N_BOOT, seed: int = SEED) -> float:
    """The share of ``n_boot`` resamples of the probe windows (seed ``seed + budget``) on which ``guide`` removes
    ``removed`` at ``budget``; NaN where the guide does not read these protocols, where ``probe`` lacks them, or
    where its rule on all the windows does not give ``removed`` (a set chosen under other selection options)."""
    if guide not in GUIDE_PROTOCOLS or not probe["protocol"].isin(GUIDE_PROTOCOLS[guide]).any():
        return math.nan
    if not set(GUIDE_PROTOCOLS[guide]) <= set(probe["protocol"]):
        return math.nan
    evidence, keys = probe_evidence(probe, GUIDE_PROTOCOLS[guide])
    select = guide_selector(guide, budget, n_layers, spacing)
    chosen = select({k: evidence.kl(k) for k in keys})
    if chosen is None or tuple(sorted(chosen)) != tuple(sorted(int(b) for b in removed)):
        return math.nan
    return set_decision(evidence, guide, budget, keys, select, Decisions(n_boot=n_boot), seed + budget).estimate
