"""The guide registry: every selection rule of a pruning run, registered in one place.

A guide is registered with :func:`register_guide`, which records its name, its place in the tables (``rank``:
rows, legends and agreement statistics follow ascending rank), its label, its family and the function that
chooses its blocks, named as ``"module:function"`` and imported only when the guide runs (as a stage names its
runner and a figure its plot function). So the registry itself imports no numpy: the workflow's config reads
the guides' names from it where Snakemake runs. How a guide is drawn is not recorded here:
:mod:`swapkl.figures.guide_style` colours it by family. :mod:`swapkl.pruning.guides` registers every guide;
:func:`swapkl.pruning.prune.run_pruning`, the aggregation and the figures pick them up from here.

A guide function takes a :class:`~swapkl.pruning.guides.context.GuideContext` and returns a
:class:`Selection` (which blocks to remove at each budget, the evaluations it spent, and the
per-layer scores it ranked by, oriented low = safe to remove), or ``None`` when its inputs are
missing (it is then skipped with a logged reason). Entries without a function (``base``,
``random_mean``) are rows that :mod:`swapkl.pruning.prune` derives from the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swapkl.registry import Registry

if TYPE_CHECKING:  # annotations only: the registry runs without numpy
    import numpy as np

#: the beam search guide's width (its label says it)
BEAM_WIDTH = 3

#: a row key: (budget, random draw or None)
RowKey = tuple[int, "int | None"]


@dataclass(frozen=True, order=True)
class Pruned:
    """One pruned model: the blocks removed and, for LaCo merges, the slots whose block runs the
    average of itself and the removed block after it (``merged[k]`` pairs with ``merged[k] + 1``)."""

    removed: tuple[int, ...]
    merged: tuple[int, ...] = ()


@dataclass
class Selection:
    """What a guide chose: ``removed[(budget, draw)]`` is a :class:`Pruned` or ``None`` (infeasible)."""

    removed: dict[RowKey, Pruned | None] = field(default_factory=dict)
    n_evals: dict[RowKey, int] = field(default_factory=dict)
    scores: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """A family of guides: what their scores measure. Figures colour a guide by its family and group their
    legends by family."""

    name: str
    label: str


#: the guide families, in legend order
FAMILIES = {f.name: f for f in (
    Family("interchange", "Interchange KL"),
    Family("replacement", "Replacement KL"),
    Family("removal", "Measured removal cost"),
    Family("representation", "Representation similarity"),
    Family("gradient", "Gradient"),
    Family("merge", "Layer merging"),
    Family("control", "Controls and baselines"),
)}


@dataclass(frozen=True)
class Guide:
    """One guide: ``function`` chooses its blocks (``"module:function"``, or the function itself; None: a row
    derived from the other guides'), ``plotted``: whether the pruning figures draw it."""

    name: str
    rank: int
    label: str
    function: str | Callable | None
    plotted: bool = True
    family: str = "control"

    @property
    def chooses(self) -> bool:
        """Whether the guide chooses blocks of its own (a derived row does not)."""
        return self.function is not None

    def select(self, ctx) -> Selection | None:
        """The guide's choice on ``ctx`` (a :class:`~swapkl.pruning.guides.context.GuideContext`), its function
        imported now."""
        function = self.function
        if function is None:
            raise ValueError(f"guide {self.name!r} is a derived row: it chooses no blocks")
        if isinstance(function, str):
            module, name = function.split(":")
            function = getattr(importlib.import_module(module), name)
        return function(ctx)


_REGISTRY: Registry[Guide] = Registry("guide", order=lambda g: g.rank, unique_order=True)


def register_guide(name: str, function: str | Callable | None, *, rank: int, label: str, family: str,
                   plotted: bool = True) -> Guide:
    """Register the guide ``name`` whose blocks ``function`` chooses (``"module:function"``; None: a derived
    row). ``family`` is a key of :data:`FAMILIES`; ``plotted``: whether the pruning figures draw it."""
    if family not in FAMILIES:
        raise ValueError(f"guide {name!r}: unknown family {family!r} (families: {', '.join(FAMILIES)})")
    return _REGISTRY.add(name, Guide(name, rank, label, function, plotted, family))


def registered() -> list[Guide]:
    """Every guide, in table order."""
    return _REGISTRY.entries()


def guide_names() -> list[str]:
    return list(_REGISTRY.names())


def selecting_guides() -> list[str]:
    """The guides that choose blocks (and so have pruned models to export or score), sorted by name: what a
    config's guide lists may name."""
    return sorted(g.name for g in registered() if g.chooses)


def get_guide(name: str) -> Guide:
    return _REGISTRY[name]
