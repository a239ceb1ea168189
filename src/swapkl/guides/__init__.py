"""Pruning guides: every rule that chooses which blocks to remove, registered in one place
(:mod:`swapkl.guides.registry`). Importing this package registers them all."""

from swapkl.guides import calibration, draws, gradient, merge, protocol, representation  # noqa: F401  (registers)
from swapkl.guides.context import GuideContext
from swapkl.guides.registry import Guide, Pruned, Selection, get_guide, guide_names, register_guide, registered

__all__ = ["Guide", "GuideContext", "Pruned", "Selection", "get_guide", "guide_names", "register_guide",
           "registered"]
