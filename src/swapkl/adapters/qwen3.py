"""Qwen3: q/k norms inside the blocks; the mask type is chosen per slot from ``config.layer_types``.

The stock forward picks ``layer_types[slot]`` by position in the stack, while a block's own
sliding-window setting travels with its weights. A moved block therefore keeps its own
attention module but receives the mask of the slot it runs in, exactly as a reordered
``nn.ModuleList`` behaves.
"""

from swapkl.adapters.base import Adapter


class Qwen3Adapter(Adapter):
    model_types = ("qwen3",)

    def mask_kind(self, slot: int) -> str:
        return self.config.layer_types[slot]

    def build_masks(self, h0, attention_mask, position_ids):
        from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

        kwargs = self.mask_inputs(h0, attention_mask, position_ids)
        masks = {"full_attention": create_causal_mask(**kwargs)}
        if "sliding_attention" in self.config.layer_types:
            masks["sliding_attention"] = create_sliding_window_causal_mask(**kwargs)
        return masks
