"""Registry of architecture adapters, keyed by ``config.model_type``."""

from __future__ import annotations

from swapkl.adapters.base import Adapter, BlockContext
from swapkl.adapters.bloom import BloomAdapter
from swapkl.adapters.gpt2 import GPT2Adapter
from swapkl.adapters.gpt_neox import GPTNeoXAdapter
from swapkl.adapters.llama import LlamaAdapter
from swapkl.adapters.mistral import MistralAdapter
from swapkl.adapters.olmo import OlmoAdapter
from swapkl.adapters.olmo2 import Olmo2Adapter
from swapkl.adapters.opt import OPTAdapter
from swapkl.adapters.qwen3 import Qwen3Adapter
from swapkl.errors import SwapKLError

ADAPTERS: dict[str, type[Adapter]] = {
    t: cls
    for cls in (BloomAdapter, GPT2Adapter, GPTNeoXAdapter, LlamaAdapter, MistralAdapter, OlmoAdapter, Olmo2Adapter,
                OPTAdapter, Qwen3Adapter)
    for t in cls.model_types
}


def supported_architectures() -> list[str]:
    return sorted(ADAPTERS)


def get_adapter(model) -> Adapter:
    """The adapter for a loaded causal LM; a clear error for any other architecture."""
    model_type = getattr(model.config, "model_type", None)
    if model_type not in ADAPTERS:
        raise SwapKLError(
            f"architecture {model_type!r} ({type(model).__name__}) has no swapkl adapter; "
            f"supported: {', '.join(supported_architectures())}"
        )
    return ADAPTERS[model_type](model)


__all__ = ["Adapter", "BlockContext", "ADAPTERS", "get_adapter", "supported_architectures"]
