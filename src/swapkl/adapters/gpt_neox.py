"""GPT-NeoX (Pythia): parallel residual, partial rotary, untied output embedding."""

from swapkl.adapters.base import Adapter, Layout


class GPTNeoXAdapter(Adapter):
    model_types = ("gpt_neox",)
    layout = Layout(backbone="gpt_neox", embed="embed_in", norm="final_layer_norm", attention="attention")

    def embed_dropout(self, h):
        return self.backbone.emb_dropout(h)
