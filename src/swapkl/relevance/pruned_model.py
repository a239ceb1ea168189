"""A pruned model materialised in memory as the stock transformers model, for code that needs a real
``PreTrainedModel`` (lm-evaluation-harness's ``HFLM`` generating text).

:func:`materialise` builds the model ``swapkl export`` would write for a removed set, without writing it:
the same config (:func:`swapkl.export.export_config`: ``num_hidden_layers`` and the per-layer lists by slot) and
the same tensors renamed by slot (:func:`swapkl.export.export_state_dict`), loaded into a fresh instance of the
source's own class. The tensors are the source's (``assign``, nothing is copied), so a materialised model costs
no memory beyond its non-persistent buffers; each kept block is rebuilt at its new slot, with that slot's
``layer_idx`` (KV caches index by it) exactly as ``from_pretrained`` would rebuild the exported folder. Before it
is returned its logits are checked against the probe engine's variant of the same removed set, with the
export's check (:func:`swapkl.export.difference_to_engine`). A model placed across several devices is refused
(the materialised copy would lack the placement's hooks).
"""

from __future__ import annotations

import copy

import torch

from swapkl.adapters import get_adapter
from swapkl.errors import SwapKLError
from swapkl.export import difference_to_engine, export_config, export_order, export_state_dict


def _blocks_prefix(model, blocks) -> str:
    return next(name for name, m in model.named_modules() if m is blocks) + "."


def _source_buffer(model, name: str, prefix: str, order: tuple[int, ...]) -> torch.Tensor:
    """The source model's buffer that becomes buffer ``name`` of the pruned model (a block's by its slot)."""
    if name.startswith(prefix):
        slot, rest = name[len(prefix):].split(".", 1)
        name = f"{prefix}{order[int(slot)]}.{rest}"
    return model.get_buffer(name)


@torch.inference_mode()
def materialise(model, removed) -> torch.nn.Module:
    """``model`` without the blocks ``removed``, as the stock transformers class (tensors shared with ``model``),
    checked against the engine's variant."""
    adapter = get_adapter(model)
    devices = sorted({str(p.device) for p in model.parameters()})
    if len(devices) > 1:
        raise SwapKLError(f"a pruned model is materialised on one device; this {type(model).__name__} is placed on "
                          f"{', '.join(devices)}")
    order = export_order(adapter.n_layers, remove=sorted(int(b) for b in removed))
    state = export_state_dict(model, adapter.blocks, order)
    with torch.device("meta"):
        pruned = type(model)(export_config(model.config, order))
    result = pruned.load_state_dict(state, strict=False, assign=True)
    if result.unexpected_keys:
        raise SwapKLError(f"the pruned {type(model).__name__} does not take tensors {result.unexpected_keys}")
    pruned.tie_weights()
    prefix = _blocks_prefix(model, adapter.blocks)
    for name, buf in list(pruned.named_buffers()):
        if buf.is_meta:
            module, _, leaf = name.rpartition(".")
            owner = pruned.get_submodule(module) if module else pruned
            owner.register_buffer(leaf, _source_buffer(model, name, prefix, order).clone(),
                                  persistent=leaf not in owner._non_persistent_buffers_set)
    left = [n for n, t in (*pruned.named_parameters(), *pruned.named_buffers()) if t.is_meta]
    if left:
        raise SwapKLError(f"the pruned {type(model).__name__} has tensors without values: {left}")
    pruned.generation_config = copy.deepcopy(model.generation_config)
    pruned.eval()
    _, diff, tol = difference_to_engine(pruned, model, order)
    if not diff <= tol:
        raise SwapKLError(f"the materialised model without blocks {sorted(removed)} differs from the engine's "
                          f"variant by {diff:.3g} (tolerance {tol:.3g})")
    return pruned
