"""The guide registry: every selection rule of a pruning run, registered in one place.

In the style of lm-evaluation-harness's model registry: a guide is one function decorated with
:func:`register_guide`, which records its name, its place in the tables (``rank``: rows, legends
and agreement statistics follow ascending rank), its label and its family. How a guide is drawn is not
recorded here: :mod:`swapkl.figures.guide_style` colours it by family. Adding a guide is that one
function plus its test; :func:`swapkl.pruning.prune.run_pruning`, the aggregation and the figures pick it
up from here.

A guide function takes a :class:`~swapkl.pruning.guides.context.GuideContext` and returns a
:class:`Selection` (which blocks to remove at each budget, the evaluations it spent, and the
per-layer scores it ranked by, oriented low = safe to remove), or ``None`` when its inputs are
missing (it is then skipped with a logged reason). Entries without a function (``base``,
``random_mean``) are rows that :mod:`swapkl.pruning.prune` derives from the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from swapkl.registry import Registry

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
    name: str
    rank: int
    label: str
    select: Callable | None
    plotted: bool = True
    family: str = "control"


_REGISTRY: Registry[Guide] = Registry("guide", order=lambda g: g.rank, unique_order=True)


def register_guide(name: str, *, rank: int, label: str, family: str, plotted: bool = True):
    """Decorator registering a guide function (or, applied to ``None``, a derived row) under ``name``.

    ``family`` is a key of :data:`FAMILIES`; ``plotted``: whether the pruning figures draw it.
    """
    if family not in FAMILIES:
        raise ValueError(f"guide {name!r}: unknown family {family!r} (families: {', '.join(FAMILIES)})")

    def deco(fn):
        _REGISTRY.add(name, Guide(name, rank, label, fn, plotted, family))
        return fn

    return deco


def registered() -> list[Guide]:
    """Every guide, in table order."""
    return _REGISTRY.entries()


def guide_names() -> list[str]:
    return list(_REGISTRY.names())


def get_guide(name: str) -> Guide:
    return _REGISTRY[name]
