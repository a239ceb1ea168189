"""Gemma-3 text models (``gemma3_text``, ``Gemma3ForCausalLM``): sliding and full attention layers, each type
with its own rotary table; four (1 + w) RMSNorms per block and per-head q/k RMSNorms; scaled embeddings.

Slot or block? -- decided per per-layer attribute, matching a reordered ``nn.ModuleList``:

* the **attention type is the slot's**. The stock forward picks both the mask (sliding-window or
  causal) and the rotary embeddings (``rope_parameters["sliding_attention"]``, the local base, or
  ``["full_attention"]``, the global base) from ``config.layer_types[slot]``, by position in the
  stack. A sliding block moved to a full slot therefore attends to every earlier token with the
  global rope, and a full block moved to a sliding slot sees the window with the local rope.
  Exported checkpoints keep ``layer_types`` by slot too (:mod:`swapkl.export`), so they reload
  to what the engine measured.
* the module's own ``self_attn.layer_type``/``sliding_window``/``is_sliding`` are read only by the
  KV cache and by flash-attention kernels (which take the window from the module, not the mask);
  swapkl uses neither (eager or SDPA attention, no cache), so they change nothing here.
* everything with weights travels with the block: ``input_layernorm``, ``post_attention_layernorm``,
  ``pre_feedforward_layernorm``, ``post_feedforward_layernorm`` and the q/k norms. The q/k norms act
  on one head's ``head_dim`` and are shared by all heads of a block, so a head unit swapped between
  blocks (head interchange) runs with the host block's q/k norms, as in Qwen3.
* the embedding scale ``sqrt(hidden_size)`` (cast to the weight dtype) is part of
  ``embed_tokens``'s forward and runs once before slot 0; ``query_pre_attn_scalar`` is one config
  value folded into every block's attention ``scaling``.

Refused with a one-line error: ``final_logit_softcapping`` (the logits are then not linear in the final
hidden state, which the engine's KL summaries need, see :mod:`swapkl.model.kl`) and
``use_bidirectional_attention`` (not a causal LM).
"""

from __future__ import annotations

from torch import nn

from swapkl.adapters.base import Adapter
from swapkl.errors import SwapKLError


class Gemma3Adapter(Adapter):
    model_types = ("gemma3_text",)
    # a norm before and after each sublayer, both inside its residual branch
    sublayer_prefixes = {"attention": ("input_layernorm.", "self_attn.", "post_attention_layernorm."),
                         "mlp": ("pre_feedforward_layernorm.", "mlp.", "post_feedforward_layernorm.")}

    def __init__(self, model: nn.Module):
        super().__init__(model)
        softcap = getattr(self.config, "final_logit_softcapping", None)
        if softcap is not None:
            raise SwapKLError(f"gemma3_text with final_logit_softcapping={softcap} is not supported: swapkl's KL "
                              "needs logits linear in the final hidden state")
        if getattr(self.config, "use_bidirectional_attention", False):
            raise SwapKLError("gemma3_text with use_bidirectional_attention is not a causal language model; "
                              "swapkl measures next-token distributions")

    def mask_kind(self, slot: int) -> str:
        return self.config.layer_types[slot]

    def build_masks(self, h0, attention_mask, position_ids):
        from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

        kwargs = self.mask_inputs(h0, attention_mask, position_ids)
        return {"full_attention": create_causal_mask(**kwargs),
                "sliding_attention": create_sliding_window_causal_mask(**kwargs)}

    def rotary_embeddings(self, h0, position_ids):
        """``{layer type: (cos, sin)}``: Gemma-3's rotary module holds one table per layer type."""
        return {t: self.rotation(self.backbone.rotary_emb(h0, position_ids, t)) for t in sorted(set(
            self.config.layer_types))}

    def run_block(self, block, slot, h, ctx):
        kind = self.mask_kind(slot)
        out = self.block_module(block)(h, attention_mask=ctx.masks[kind], position_ids=ctx.position_ids,
                                       position_embeddings=ctx.position_embeddings[kind], use_cache=False)
        return out[0] if isinstance(out, tuple) else out
