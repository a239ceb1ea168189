"""GPT-NeoX (Pythia): parallel residual, partial rotary, untied output embedding."""

from swapkl.adapters.base import Adapter, Layout, fused_head_slices


class GPTNeoXAdapter(Adapter):
    model_types = ("gpt_neox",)
    layout = Layout(backbone="gpt_neox", embed="embed_in", norm="final_layer_norm", attention="attention")
    lora_projections = {"q": ("query_key_value",), "k": ("query_key_value",), "v": ("query_key_value",),
                        "o": ("attention.dense",)}
    # parallel residual (Pythia): h + attention(ln1(h)) + mlp(ln2(h)); sequential when use_parallel_residual is off
    sublayer_prefixes = {"attention": ("input_layernorm.", "attention."), "mlp": ("post_attention_layernorm.", "mlp.")}
    sublayer_outputs = {"attention": ("attention.dense.",), "mlp": ("mlp.dense_4h_to_h.",)}

    @classmethod
    def head_slices(cls, config, unit, group, d):
        return fused_head_slices(cls.layout.attention, unit, d)

    def embed_dropout(self, h):
        return self.backbone.emb_dropout(h)
