"""The one registry type of swapkl: protocols, guides, figures, architecture adapters, commands and stages.

A :class:`Registry` is a dict from a name to an entry, with what every extension point needs and none had
alike before: a second entry under a name is refused (unless it is the same entry again), an optional order
(an entry's ``rank``, ``order`` or section) that two entries may not share, listing in that order, and a
lookup of an unknown name that fails naming the choices. It imports nothing but the error type, so the
light registries (stages, figures, commands) stay importable where Snakemake runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from swapkl.errors import SwapKLError

T = TypeVar("T")


class Registry(dict, Generic[T]):
    """Entries of one kind (``what``: "guide", "protocol", ...) by name.

    ``order``: the sort key of an entry (default: the order of registration); ``unique_order``: two entries
    may not have the same key; ``same_again``: registering an equal entry under its name again is a no-op (a
    family of figures imported anew) instead of an error. ``registry[name]`` of a name not registered raises :class:`SwapKLError` naming
    the registered ones; ``name in registry``, ``.get`` and iteration are a dict's."""

    def __init__(self, what: str, *, order: Callable[[T], Any] | None = None, unique_order: bool = False,
                 same_again: bool = False):
        super().__init__()
        self.what = what
        self.order = order
        self.unique_order = unique_order
        self.same_again = same_again

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` under ``name`` and return it. A second entry under the name (an equal one too,
        unless ``same_again``), or one at a taken order, is a ValueError."""
        if name in self:
            if self.same_again and self[name] == entry:
                return entry
            raise ValueError(f"{self.what} {name!r} is registered twice")
        if self.unique_order:
            key = self.order(entry)
            clash = [other for other, e in self.items() if self.order(e) == key]
            if clash:
                raise ValueError(f"{self.what} {name!r} has the order {key!r} of {clash[0]!r}")
        self[name] = entry
        return entry

    def __missing__(self, name):
        raise SwapKLError(f"unknown {self.what} {name!r}: choose from {', '.join(self.names())}")

    def entries(self) -> list[T]:
        """Every entry, in order."""
        if self.order is None:
            return list(self.values())
        return sorted(self.values(), key=self.order)

    def names(self) -> tuple[str, ...]:
        """Every name, in the order of :meth:`entries`."""
        if self.order is None:
            return tuple(self)
        return tuple(name for name, _ in sorted(self.items(), key=lambda item: self.order(item[1])))
