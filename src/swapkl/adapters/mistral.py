"""Mistral: one mask for every layer, sliding-window when ``config.sliding_window`` is set."""

from swapkl.adapters.base import Adapter


class MistralAdapter(Adapter):
    model_types = ("mistral",)

    def build_masks(self, h0, attention_mask, position_ids):
        from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

        fn = create_causal_mask if self.config.sliding_window is None else create_sliding_window_causal_mask
        return {"full_attention": fn(**self.mask_inputs(h0, attention_mask, position_ids))}
