"""Head-level swaps: which parameter slices make up one attention *head unit* of a block.

The unit swapped between blocks i and j is one key/value head together with every query head
that reads it (its grouped-query group): query rows of the group's ``g = n_heads / n_kv_heads``
query heads, the key and value rows of the KV head, and the output-projection columns of the group's
query heads. With multi-head attention (GPT-NeoX, GPT-2, OLMo: ``n_kv_heads = n_heads``) a unit is
one head. Swapping whole groups keeps every head's computation intact; swapping single query heads
of a GQA block would pair them with another block's keys and values.

The slices are architecture knowledge: each adapter's :meth:`~swapkl.adapters.base.Adapter.head_slices`.
Per architecture (``u`` = unit, ``d`` = head dim, ``H`` = hidden size):

* Llama, Mistral, Qwen3, OLMo, OLMo 2 (``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``): q rows
  ``[u g d, (u+1) g d)``, k and v rows ``[u d, (u+1) d)``, their biases where present, o columns
  ``[u g d, (u+1) g d)``. Qwen3's ``q_norm``/``k_norm`` act on the head dimension and are shared by
  all heads of a block: they stay. OLMo 2's ``q_norm``/``k_norm`` act on the whole projection: the
  unit's slices of their weights move with it (their mean square still mixes all heads of the block,
  as the architecture does).
* GPT-NeoX (fused ``query_key_value``, laid out per head as ``[q_h; k_h; v_h]``): rows
  ``[3 u d, 3 (u+1) d)`` and bias; ``dense`` columns ``[u d, (u+1) d)``.
* BLOOM (fused ``query_key_value``, laid out per head as ``[q_h; k_h; v_h]`` like GPT-NeoX): rows
  ``[3 u d, 3 (u+1) d)`` and bias; ``dense`` columns ``[u d, (u+1) d)``.
* OPT (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``, no GQA): rows ``[u d, (u+1) d)`` of q, k, v
  and their biases, ``out_proj`` columns ``[u d, (u+1) d)``.
* GPT-2 (``c_attn``, a Conv1D with weight ``[H, 3H]`` = ``[q | k | v]``): columns ``[u d, (u+1) d)``
  of each third and bias; ``c_proj`` (weight ``[H, H]``, input rows) rows ``[u d, (u+1) d)``.

Output-projection biases, layer norms and MLPs are not a head's parameters and stay.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from swapkl.adapters import ADAPTERS
from swapkl.errors import SwapKLError
from swapkl.model.merge import require_resident


def n_units(config) -> int:
    """Head units per block: the number of key/value heads (= heads without GQA)."""
    heads = config.num_attention_heads
    return int(getattr(config, "num_key_value_heads", None) or heads)


def _dims(config) -> tuple[int, int, int]:
    heads = config.num_attention_heads
    kv = n_units(config)
    d = getattr(config, "head_dim", None) or config.hidden_size // heads
    return heads // kv, kv, d


def unit_slices(config, unit: int) -> list[tuple[str, int, slice]]:
    """``(parameter name in the block, dimension, index range)`` of head unit ``unit``."""
    g, kv, d = _dims(config)
    if not 0 <= unit < kv:
        raise SwapKLError(f"head unit {unit} does not exist: the blocks have {kv} head units")
    t = getattr(config, "model_type", None)
    if t not in ADAPTERS:
        raise SwapKLError(f"head-level swaps are not defined for architecture {t!r}")
    return ADAPTERS[t].head_slices(config, unit, g, d)


@torch.no_grad()
def head_swapped_block(block: nn.Module, donor: nn.Module, config, unit: int) -> nn.Module:
    """A copy of ``block`` whose head unit ``unit`` holds ``donor``'s parameters (same dtype)."""
    require_resident(block, donor)
    own = dict(block.named_parameters())
    theirs = dict(donor.named_parameters())
    names = [(n, dim, s) for n, dim, s in unit_slices(config, unit) if n in own]
    if not any(n.endswith("weight") for n, _, _ in names):
        raise SwapKLError(f"block has none of the attention parameters of a {config.model_type} head unit")
    out = copy.deepcopy(block)
    params = dict(out.named_parameters())
    for n, dim, s in names:
        params[n].narrow(dim, s.start, s.stop - s.start).copy_(theirs[n].narrow(dim, s.start, s.stop - s.start))
    return out.eval()
