"""Pruning guides: every rule that chooses which blocks to remove, registered in one place
(:mod:`swapkl.pruning.guides.guide_registry`).

Importing this package imports every module in it, and each module registers its guides when imported: a new
guide is one module in this folder (plus its test), with no list to keep in sync.
"""

import importlib
import pkgutil

from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.guide_registry import Guide, Pruned, Selection, get_guide, guide_names, register_guide, registered

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Guide", "GuideContext", "Pruned", "Selection", "get_guide", "guide_names", "register_guide",
           "registered"]
