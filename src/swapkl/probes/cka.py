"""Linear CKA between each block's input and output residual stream (Kornblith et al., 2019).

For token matrices ``X`` (stream entering slot l) and ``Y`` (stream leaving it), rows = the valid
tokens of the calibration windows, columns centred over those tokens:

    CKA(X, Y) = ||Yc^T Xc||_F^2 / (||Xc^T Xc||_F * ||Yc^T Yc||_F)

1 when the block's output is a linear-isotropic copy of its input (up to scale and rotation).
Computed in float64 from sums accumulated over batches (``sum x``, ``X^T X``, ``X^T Y``), so the
windows can be processed in any number of batches with the same result; memory: ``2 L + 1``
``d x d`` float64 matrices on the device (about 8.7 GB at d = 4096, L = 32).
"""

from __future__ import annotations

import numpy as np
import torch

from swapkl.data.windows import Windows
from swapkl.errors import SwapKLError
from swapkl.model.batch_loop import sweep, window_batches


def _frob(a: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(a))


@torch.inference_mode()
def block_cka(engine, windows: Windows, *, batch_size: int = 8, device: str = "cpu") -> np.ndarray:
    """``cka[l]`` = linear CKA between the streams entering and leaving block l (base model)."""
    n_layers = engine.n_layers
    count = 0
    sums = gram = cross = None
    for m in sweep(engine, window_batches(windows.input_ids, windows.attention_mask, batch_size), [], device=device):
        first = m.state.residuals[0].device  # a placed model leaves each stream on its block's device
        xs = [r[m.state.valid.to(r.device)].double().to(first) for r in m.state.residuals]
        if sums is None:
            d = xs[0].shape[1]
            sums = [torch.zeros(d, dtype=torch.float64, device=xs[0].device) for _ in xs]
            gram = [torch.zeros(d, d, dtype=torch.float64, device=xs[0].device) for _ in xs]
            cross = [torch.zeros(d, d, dtype=torch.float64, device=xs[0].device) for _ in range(n_layers)]
        count += xs[0].shape[0]
        for s, x in enumerate(xs):
            sums[s] += x.sum(0)
            gram[s] += x.T @ x
            if s < n_layers:
                cross[s] += x.T @ xs[s + 1]
        del xs
    if count < 2:
        raise SwapKLError(f"calibration windows {windows.source} have fewer than 2 valid tokens for CKA")
    mu = [v / count for v in sums]
    cov = [g - count * torch.outer(m, m) for g, m in zip(gram, mu)]
    out = np.empty(n_layers)
    for l in range(n_layers):
        c = cross[l] - count * torch.outer(mu[l], mu[l + 1])
        out[l] = _frob(c) ** 2 / (_frob(cov[l]) * _frob(cov[l + 1]))
    return out
