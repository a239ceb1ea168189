"""First-order Taylor importance of each block on calibration text.

``L`` is the token-weighted mean next-token NLL over every valid position of the calibration
windows that has a valid next token (log-softmax in float32, or float64 for a float64 model). The
importance of block ``b`` is

    T(b) = | sum over the parameters theta of block b of  theta * dL/dtheta |,

the magnitude of the first-order change of ``L`` when the block's parameters are scaled to zero
(``L(0) - L(theta) ~ -sum theta * g``). Low = safe to remove.

Memory (8B models): only the blocks' parameters require gradients, and each parameter's
gradient is folded into its block's accumulator by a post-accumulate hook and freed at once, so
at most one parameter's gradient is alive beside the activations; weights stay in their dtype
(bf16), the product ``theta * g`` is formed in float32 (float64 for a float64 model) and summed
in float64.
"""

from __future__ import annotations

import numpy as np
import torch

from swapkl.data.windows import Windows
from swapkl.errors import SwapKLError
from swapkl.model.merge import require_resident


def _next_token_positions(mask: torch.Tensor) -> torch.Tensor:
    """[B, T-1] bool: valid positions whose next position is valid too."""
    return mask[:, :-1].bool() & mask[:, 1:].bool()


def taylor_importance(model, blocks, windows: Windows, *, batch_size: int = 8, device: str = "cpu") -> np.ndarray:
    """``T(b)`` for every block of ``blocks`` (the model's ``nn.ModuleList``), stock forward."""
    require_resident(*blocks)  # an offloaded block's gradients would land on temporary copies, never counted
    ids_all = torch.from_numpy(windows.input_ids)
    mask_all = torch.from_numpy(windows.attention_mask)
    total = int(_next_token_positions(mask_all).sum())
    if total == 0:
        raise SwapKLError(f"calibration windows {windows.source} have no position with a next token")
    acc = torch.zeros(len(blocks), dtype=torch.float64)
    was = {p: p.requires_grad for p in model.parameters()}
    handles = []

    def fold(b: int):
        def hook(p: torch.Tensor) -> None:
            wide = torch.promote_types(p.dtype, torch.float32)
            acc[b] += float(torch.sum(p.grad.to(wide) * p.detach().to(wide), dtype=torch.float64))
            p.grad = None

        return hook

    try:
        for p in model.parameters():
            p.requires_grad_(False)
        for b, block in enumerate(blocks):
            for p in block.parameters():
                p.requires_grad_(True)
                handles.append(p.register_post_accumulate_grad_hook(fold(b)))
        with torch.enable_grad():
            for lo in range(0, ids_all.shape[0], batch_size):
                ids = ids_all[lo:lo + batch_size].to(device)
                mask = mask_all[lo:lo + batch_size].to(device)
                logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
                wide = torch.promote_types(logits.dtype, torch.float32)
                lp = torch.log_softmax(logits[:, :-1].to(wide), -1).gather(2, ids[:, 1:].unsqueeze(2)).squeeze(2)
                keep = _next_token_positions(mask)
                (-lp[keep].sum() / total).backward()
                del logits, lp
    finally:
        for h in handles:
            h.remove()
        for p, flag in was.items():
            p.requires_grad_(flag)
            p.grad = None
    return acc.abs().numpy()
