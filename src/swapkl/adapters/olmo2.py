"""OLMo 2 (``olmo2``): RMSNorm after attention and MLP (post-norm inside the residual branch) and
q/k RMSNorms, all parameters of the block, so they travel with it; rotary embeddings computed
once at model level and one causal mask for every slot, as in Llama."""

from swapkl.adapters.base import Adapter


class Olmo2Adapter(Adapter):
    model_types = ("olmo2",)
    # each sublayer's norm comes after it, inside its residual branch
    sublayer_prefixes = {"attention": ("self_attn.", "post_attention_layernorm."),
                         "mlp": ("mlp.", "post_feedforward_layernorm.")}

    @classmethod
    def head_slices(cls, config, unit, group, d):
        """The default slices plus the unit's slices of ``q_norm``/``k_norm``, which act on the whole projection."""
        q = slice(unit * group * d, (unit + 1) * group * d)
        k = slice(unit * d, (unit + 1) * d)
        return super().head_slices(config, unit, group, d) + [("self_attn.q_norm.weight", 0, q),
                                                              ("self_attn.k_norm.weight", 0, k)]
