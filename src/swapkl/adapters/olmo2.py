"""OLMo 2 (``olmo2``): RMSNorm after attention and MLP (post-norm inside the residual branch) and
q/k RMSNorms, all parameters of the block, so they travel with it; rotary embeddings computed
once at model level and one causal mask for every slot, as in Llama."""

from swapkl.adapters.base import Adapter


class Olmo2Adapter(Adapter):
    model_types = ("olmo2",)
