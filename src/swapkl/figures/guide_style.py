"""How the figures draw the pruning guides: a colour per guide family, a line style and marker per guide.

The guide registry (:mod:`swapkl.pruning.guides.guide_registry`) says what a guide is (name, rank, label,
family); how it looks is the figures' business and lives here. A guide this table does not list still gets a
look: its family's colour and the first marker no other guide of that family uses, so a new guide remains one
module of the guides package (adding it here only chooses its look).
"""

from __future__ import annotations

from typing import NamedTuple

from swapkl.figures.palette import BLUE, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION
from swapkl.pruning.guides.guide_registry import registered

#: family -> colour (every family of the registry's FAMILIES has one; tests/test_guides.py checks it)
FAMILY_COLOURS = {"interchange": BLUE, "replacement": VERMILLION, "removal": GREEN, "representation": ORANGE,
                  "gradient": PURPLE, "merge": SKY, "control": GREY}
#: the reference rows, drawn in black rather than their family's grey
BLACK = frozenset({"base", "random", "random_mean"})
#: guide -> (line style, marker)
LOOKS = {
    "base": ("-", "o"), "interchange": ("-", "o"), "replacement_max": ("-", "s"), "replacement_mean": ("--", "D"),
    "deletion": ("-", "^"), "anti_interchange": (":", "x"), "interchange_clustered": (":", ">"),
    "replacement_max_clustered": (":", ">"), "fixed": ("-.", "*"), "bi": ("-", "v"), "angular": ("-", "P"),
    "sleb_iterative": ("-", "D"), "sleb_greedy": ("--", "d"), "accuracy_iterative": ("-.", "*"), "cka": ("--", "*"),
    "taylor": ("--", "h"), "laco": (":", "p"), "laco_paper": ("-.", "h"), "beam": ("--", "X"),
    "sleb_matched": (":", "H"), "random": ("-", "."), "random_mean": ("--", "X"),
}
#: markers handed, in this order, to guides without an entry in LOOKS
SPARE_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "p", "<", ">", "d", "H", "8")


class GuideLook(NamedTuple):
    label: str
    colour: str
    linestyle: str
    marker: str


def family_colour(family: str) -> str:
    return FAMILY_COLOURS[family]


def guide_look(name: str) -> GuideLook:
    """The label, colour, line style and marker of guide ``name``."""
    guides = {g.name: g for g in registered()}
    g = guides[name]
    colour = "black" if name in BLACK else FAMILY_COLOURS[g.family]
    if name in LOOKS:
        linestyle, marker = LOOKS[name]
    else:
        taken = {LOOKS[o.name][1] for o in guides.values() if o.family == g.family and o.name in LOOKS}
        unlisted = [o.name for o in registered() if o.family == g.family and o.name not in LOOKS]
        spare = [m for m in SPARE_MARKERS if m not in taken]
        linestyle, marker = "-", spare[unlisted.index(name) % len(spare)]
    return GuideLook(g.label, colour, linestyle, marker)


def plotted_looks() -> dict[str, GuideLook]:
    """guide -> its look, for every plotted guide, in the registry's order."""
    return {g.name: guide_look(g.name) for g in registered() if g.plotted}

