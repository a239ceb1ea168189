"""Registry of architecture adapters, keyed by ``config.model_type``.

Importing this package imports every module in it, and each :class:`Adapter` subclass registers itself when its
class is defined (``Adapter.__init_subclass__``): a new architecture is one module in this folder (plus its test),
with no list to keep in sync. See docs/extending.md.
"""

from __future__ import annotations

import importlib
import pkgutil

from swapkl.adapters.base import ADAPTERS, Adapter, BlockContext
from swapkl.errors import SwapKLError

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


def supported_architectures() -> list[str]:
    return sorted(ADAPTERS)


def adapter_class(model_type) -> type[Adapter]:
    """The adapter class registered for ``model_type``; a clear error for any other architecture."""
    if model_type not in ADAPTERS:
        raise SwapKLError(f"architecture {model_type!r} has no swapkl adapter; "
                          f"supported: {', '.join(supported_architectures())}")
    return ADAPTERS[model_type]


def get_adapter(model) -> Adapter:
    """The adapter for a loaded causal LM; a clear error for any other architecture."""
    model_type = getattr(model.config, "model_type", None)
    if model_type not in ADAPTERS:
        raise SwapKLError(
            f"architecture {model_type!r} ({type(model).__name__}) has no swapkl adapter; "
            f"supported: {', '.join(supported_architectures())}"
        )
    return ADAPTERS[model_type](model)


__all__ = ["Adapter", "BlockContext", "ADAPTERS", "adapter_class", "get_adapter", "supported_architectures"]
