"""OLMo (``olmo``, the first OLMo release in transformers): non-parametric LayerNorms, optional
``clip_qkv`` (a config value, the same for every block), rotary embeddings computed once at model
level; the stock forward is laid out exactly like Llama's, so nothing is slot-bound but the mask."""

from swapkl.adapters.base import Adapter


class OlmoAdapter(Adapter):
    model_types = ("olmo",)
