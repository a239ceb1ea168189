"""SLEB-iterative: remove, one at a time, the block whose removal least increases calibration NLL.

Calibration NLL of a model with blocks ``R`` removed is the token-weighted mean next-token NLL
over every valid position of the calibration windows that has a next token (the engine's
definition, float32 logits). Step k scores every remaining block b by the NLL of the model with
``R ∪ {b}`` removed, removes the lowest (ties: lower index first) and re-scores at step k + 1.
The removal sequence is nested: the set at budget n is the first n removals.

Each step runs one cached base pass per calibration batch and resumes every candidate from its
first removed slot, so nothing is held across steps but the per-candidate sums.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import torch

from swapkl.data.windows import Windows
from swapkl.errors import SwapKLError
from swapkl.model.variant import removal
from swapkl.model.batch_loop import sweep, window_batches

log = logging.getLogger(__name__)


@dataclass
class SlebResult:
    order: list[int]  # blocks in the order they were removed
    step_scores: list[dict[int, float]] = field(default_factory=list)  # per step: {candidate: NLL}
    base_nll: float = float("nan")

    def removed(self, n: int) -> list[int]:
        return sorted(self.order[:n])

    def single_removal_increase(self, n_layers: int) -> np.ndarray:
        """Step-1 scores as NLL increase over the base model (the SLEB-greedy per-layer score)."""
        s = np.full(n_layers, np.nan)
        if self.step_scores:
            for b, v in self.step_scores[0].items():
                s[b] = v - self.base_nll
        return s


def calibration_nll(engine, windows: Windows, removed_sets: list[tuple[int, ...]], *, batch_size: int = 8,
                    device: str = "cpu") -> tuple[float, list[float]]:
    """Mean calibration NLL of the base model and of each removal set."""
    sums = np.zeros(len(removed_sets) + 1)  # [0]: the base model, [k + 1]: removal set k
    cnts = np.zeros(len(removed_sets) + 1)
    variants = [removal(r, engine.n_layers) for r in removed_sets]
    for m in sweep(engine, window_batches(windows.input_ids, windows.attention_mask, batch_size), variants,
                   device=device):
        ok = torch.isfinite(m.nll)
        j = 0 if m.k is None else m.k + 1
        sums[j] += float(m.nll[ok].sum())
        cnts[j] += float(ok.sum())
    if cnts[0] == 0:
        raise SwapKLError(f"calibration windows {windows.source} have no position with a next token")
    return float(sums[0] / cnts[0]), (sums[1:] / np.maximum(cnts[1:], 1)).tolist()


def sleb_iterative(engine, windows: Windows, n: int, *, batch_size: int = 8, device: str = "cpu",
                   resume: SlebResult | None = None) -> SlebResult:
    """Remove ``n`` blocks one at a time by least calibration NLL, re-scoring after each removal.

    ``resume``: a result of the same engine and windows with fewer steps, continued (not copied)."""
    n_layers = engine.n_layers
    if not 0 <= n < n_layers:
        raise SwapKLError(f"SLEB budget {n} is infeasible for a {n_layers}-layer model (0 <= n < {n_layers})")
    res = resume if resume is not None else SlebResult(order=[])
    for step in range(len(res.order), n):
        cands = [b for b in range(n_layers) if b not in res.order]
        sets = [tuple(sorted(res.order + [b])) for b in cands]
        base, nlls = calibration_nll(engine, windows, sets, batch_size=batch_size, device=device)
        res.base_nll = base
        scores = dict(zip(cands, nlls))
        res.step_scores.append(scores)
        best = min(cands, key=lambda b: (scores[b], b))
        res.order.append(best)
        log.info("SLEB step %d: remove block %d (calibration NLL %.4f, base %.4f)", step + 1, best, scores[best], base)
    return res
