"""Llama (3.x, including llama3 rope scaling, which lives in ``rotary_emb``)."""

from swapkl.adapters.base import Adapter


class LlamaAdapter(Adapter):
    model_types = ("llama",)
