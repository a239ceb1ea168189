"""Representation baselines from the base pass, on the residual stream before the final norm.

* ShortGPT block influence ``BI(i) = 1 - cos(h_in_i, h_out_i)``, averaged over valid tokens.
* Gromov et al. angular distance ``arccos(cos(h_l, h_{l+n})) / pi`` for every start l and
  width n, averaged over valid tokens (``angular``) and at each sequence's last valid
  token only (``angular_last``, as public reimplementations do).

Both are returned as per-sequence sums and counts so they get the same bootstrap CIs as KL.
"""

from __future__ import annotations

import math

import torch


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a.double(), b.double(), dim=-1).clamp(-1.0, 1.0)


@torch.inference_mode()
def representation_sums(residuals: list[torch.Tensor], valid: torch.Tensor) -> dict[tuple[str, int, int], tuple[torch.Tensor, torch.Tensor]]:
    """``{(metric, start, width): (per-seq sum, per-seq count)}`` for one batch."""
    n_layers = len(residuals) - 1
    vmask = valid.double()
    counts = vmask.sum(1)
    last = valid.long().cumsum(1).argmax(1)  # index of the last valid position per sequence
    rows = torch.arange(valid.shape[0], device=valid.device)
    ones = torch.ones(valid.shape[0], dtype=torch.float64, device=valid.device)
    out = {}
    for l in range(n_layers):
        for n in range(1, n_layers - l + 1):
            c = _cos(residuals[l], residuals[l + n].to(residuals[l].device)).to(valid.device)
            ang = torch.arccos(c) / math.pi
            out[("angular", l, n)] = ((ang * vmask).sum(1), counts)
            out[("angular_last", l, n)] = (ang[rows, last], ones)
            if n == 1:
                out[("bi", l, 1)] = (((1.0 - c) * vmask).sum(1), counts)
    return out
