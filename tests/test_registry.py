"""swapkl.registry: the one registry type, and every extension point built on it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from swapkl.errors import SwapKLError
from swapkl.registry import Registry


@dataclass(frozen=True)
class Entry:
    name: str
    rank: int


def test_entries_list_in_their_order_and_names_follow():
    reg = Registry("toy", order=lambda e: e.rank, unique_order=True)
    for name, rank in (("c", 3), ("a", 1), ("b", 2)):
        reg.add(name, Entry(name, rank))
    assert reg.names() == ("a", "b", "c")
    assert [e.rank for e in reg.entries()] == [1, 2, 3]
    assert list(reg) == ["c", "a", "b"], "the dict keeps registration order"


def test_without_an_order_the_registration_order_holds():
    reg = Registry("toy")
    reg.add("z", 1)
    reg.add("a", 2)
    assert reg.names() == ("z", "a") and reg.entries() == [1, 2]


def test_a_name_or_an_order_twice_is_refused():
    reg = Registry("toy", order=lambda e: e.rank, unique_order=True)
    reg.add("a", Entry("a", 1))
    for again in (Entry("a", 1), Entry("a", 5)):
        with pytest.raises(ValueError, match="toy 'a' is registered twice"):
            reg.add("a", again)
    with pytest.raises(ValueError, match="toy 'b' has the order 1 of 'a'"):
        reg.add("b", Entry("b", 1))
    assert reg.names() == ("a",)
    lenient = Registry("toy", same_again=True)
    lenient.add("a", Entry("a", 1))
    assert lenient.add("a", Entry("a", 1)) == Entry("a", 1)  # a family of figures imported anew
    with pytest.raises(ValueError, match="registered twice"):
        lenient.add("a", Entry("a", 2))


def test_an_unknown_name_fails_naming_the_choices():
    reg = Registry("toy")
    reg.add("x", 1)
    reg.add("y", 2)
    with pytest.raises(SwapKLError, match="unknown toy 'nope': choose from x, y"):
        reg["nope"]
    assert reg.get("nope") is None and "nope" not in reg


def test_every_extension_point_is_a_registry():
    from swapkl.adapters import ADAPTERS
    from swapkl.commands import COMMANDS
    from swapkl.config.stages import STAGES
    from swapkl.figures.figure_registry import _REGISTRY as FIGURES
    from swapkl.probes.protocols.protocol_registry import _PROTOCOLS
    from swapkl.pruning.guides.guide_registry import _REGISTRY as GUIDES

    kinds = {"architecture": ADAPTERS, "command": COMMANDS, "stage": STAGES, "figure": FIGURES,
             "protocol": _PROTOCOLS, "guide": GUIDES}
    for what, reg in kinds.items():
        assert isinstance(reg, Registry) and reg.what == what
    with pytest.raises(SwapKLError, match="unknown guide 'nope'"):
        GUIDES["nope"]
    with pytest.raises(SwapKLError, match="unknown protocol 'nope': choose from replacement, interchange"):
        _PROTOCOLS["nope"]
