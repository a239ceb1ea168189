"""Weight-averaged blocks: the LaCo-style merge of the paper's baseline.

``averaged_block(a, b)`` is a new block with block a's structure whose every parameter is
``(theta_a + theta_b) / 2`` (computed in float32, stored in the model's dtype); buffers are block
a's. It is the one copy swapkl makes of weights: built once per merge, registered with the engine
under a negative block id (:meth:`swapkl.model.engine.ProbeEngine.add_block`), run like any block, and
dropped when the caller leaves :func:`merged_blocks`.
"""

from __future__ import annotations

import contextlib
import copy

import torch
from torch import nn

from swapkl.errors import SwapKLError


def require_resident(*blocks: nn.Module) -> None:
    """Blocks whose weights are built into new blocks (or differentiated) must be in memory: accelerate's
    offloaded blocks (weights on the meta device, read in at each call) would be copied without their weights."""
    for block in blocks:
        if any(p.device.type == "meta" for p in block.parameters()):
            raise SwapKLError("a block that device_map offloaded to CPU or disk cannot be copied into a merged or "
                              "head-swapped block or differentiated (Taylor guide); give the GPUs more max_memory "
                              "or leave out the weight-changing protocols and those guides")


@torch.no_grad()
def averaged_block(block_a: nn.Module, block_b: nn.Module) -> nn.Module:
    require_resident(block_a, block_b)
    pb = dict(block_b.named_parameters())
    merged = copy.deepcopy(block_a)
    for name, p in merged.named_parameters():
        if name not in pb or pb[name].shape != p.shape:
            raise SwapKLError(f"blocks differ in parameter {name!r}: they cannot be averaged")
        p.copy_(((p.float() + pb[name].float()) / 2).to(p.dtype))
    return merged.eval()


@contextlib.contextmanager
def merged_blocks(engine, pairs):
    """``{(a, b): block id}`` of the averaged blocks of ``pairs``, registered while inside."""
    ids = {}
    try:
        for a, b in pairs:
            blocks = engine.adapter.blocks
            ids[(a, b)] = engine.add_block(averaged_block(blocks[a], blocks[b]))
        yield ids
    finally:
        for i in ids.values():
            engine.drop_block(i)
