"""GPT-NeoX (Pythia): parallel residual, partial rotary, untied output embedding."""

from swapkl.adapters.base import Adapter


class GPTNeoXAdapter(Adapter):
    model_types = ("gpt_neox",)
    backbone_attr = "gpt_neox"
    embed_attr = "embed_in"
    norm_attr = "final_layer_norm"
    attention_attr = "attention"

    def embed_dropout(self, h):
        return self.backbone.emb_dropout(h)
