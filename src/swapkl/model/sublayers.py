"""Blocks with one sublayer changed: the attention or the MLP (each with the norms around it, as the adapter's
``sublayer_prefixes`` say) taken from another block, or skipped.

A block is two sublayers that each add their output to the residual stream: sequentially (Llama, Qwen3, Gemma-3,
GPT-2, OLMo: the MLP reads the stream after attention's update) or in parallel (GPT-NeoX/Pythia: both read the
same stream). Either way, taking a sublayer from a donor block copies its parameters into a copy of the host
block, so the host keeps its own attention pattern (sliding or full window), rotary table and position in the
stack; skipping a sublayer zeroes its output projection (weight and bias), so its update is exactly zero and the
stream passes through (a norm after the projection, as in Gemma-3 and OLMo 2, maps zeros to zeros). An
architecture whose sublayers cannot be separated says why (``Adapter.sublayer_refusal``) and is refused.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from swapkl.errors import SwapKLError
from swapkl.model.merge import require_resident
from swapkl.model.sublayer_variants import PARTS



def sublayer_parameters(block: nn.Module, adapter, part: str) -> list[str]:
    """The names of ``block``'s parameters that belong to sublayer ``part``; refused where the adapter says the
    sublayers cannot be separated, or where its prefixes do not split the block's parameters in two."""
    if part not in PARTS:
        raise SwapKLError(f"unknown sublayer {part!r}: choose from {', '.join(PARTS)}")
    config = adapter.config
    refusal = adapter.sublayer_refusal(config)
    if refusal:
        raise SwapKLError(f"{config.model_type}: the sublayers of a block cannot be separated: {refusal}")
    names = [n for n, _ in block.named_parameters()]
    parts = {p: {n for n in names if n.startswith(adapter.sublayer_prefixes[p])} for p in PARTS}
    unassigned = sorted(set(names) - parts["attention"] - parts["mlp"])
    both = sorted(parts["attention"] & parts["mlp"])
    if unassigned or both or not parts[part]:
        raise SwapKLError(f"{config.model_type}: the adapter's sublayer prefixes do not split a block in two "
                          f"(in neither: {unassigned[:4]}, in both: {both[:4]}, in {part}: {len(parts[part])})")
    return [n for n in names if n in parts[part]]


@torch.no_grad()
def sublayer_swapped_block(block: nn.Module, donor: nn.Module, adapter, part: str) -> nn.Module:
    """A copy of ``block`` whose sublayer ``part`` holds ``donor``'s parameters."""
    require_resident(block, donor)
    names = sublayer_parameters(block, adapter, part)
    theirs = dict(donor.named_parameters())
    out = copy.deepcopy(block)
    own = dict(out.named_parameters())
    for name in names:
        if name not in theirs or theirs[name].shape != own[name].shape:
            raise SwapKLError(f"blocks differ in parameter {name!r}: their {part} sublayers cannot be exchanged")
        own[name].copy_(theirs[name])
    return out.eval()


@torch.no_grad()
def sublayer_skipped_block(block: nn.Module, adapter, part: str) -> nn.Module:
    """A copy of ``block`` whose sublayer ``part`` adds nothing to the residual stream (its output projection's
    weight and bias are zero)."""
    sublayer_parameters(block, adapter, part)
    out = copy.deepcopy(block)
    zeroed = [p for n, p in out.named_parameters() if n.startswith(adapter.sublayer_outputs[part])]
    if not zeroed:
        raise SwapKLError(f"{adapter.config.model_type}: no parameter named {adapter.sublayer_outputs[part]} in a "
                          f"block: its {part} output projection")
    for p in zeroed:
        p.zero_()
    return out.eval()
