"""The protocol registry: every probe protocol, registered in one place.

In the style of lm-evaluation-harness's registries: a protocol is one module in this folder that builds its
variants and calls :func:`register` with a :class:`Protocol`. Everything that names protocols reads them from
here: the variants a probe measures (:func:`build_variants`), the checks and row order of the aggregate
(:mod:`swapkl.probes.aggregate_inputs`, :mod:`swapkl.probes.aggregate`), the choices and help of
``swapkl probe``, the config check of ``weight_protocols`` and the workflow's probe rules (the ``probe``
wildcard of the weight-changing ones, the outputs of ``probe_checkpoint``, their runtimes). Importing
:mod:`swapkl.probes.protocols` imports every module of the folder, so a protocol module cannot be forgotten.

Pure: the standard library and :mod:`swapkl.probes.pairs` only (the workflow reads it where torch is absent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from swapkl.errors import SwapKLError
from swapkl.registry import Registry
from swapkl.probes.pairs import pairs_for
from swapkl.model.variant import Variant

#: ``variants(pairs, n_layers, n_units)``: the variants of one protocol for the unordered pairs ``(i, j)``,
#: ``i < j``, of the pair set, a model of ``n_layers`` blocks and ``n_units`` head units per block
VariantBuilder = Callable[[list[tuple[int, int]], int, int], list[Variant]]

#: the identity columns a protocol's rows may fill (``layer_i`` is always filled)
ROW_COLUMNS = ("layer_i", "layer_j", "head")
#: how a two-block protocol stores its pairs: both directions (``layer_i != layer_j``) or once per unordered
#: pair (``layer_i < layer_j``)
PAIR_ORDERS = ("directed", "unordered")


@dataclass(frozen=True)
class Protocol:
    """One probe protocol.

    ``order``: where its variants come in a probe run and its rows in the aggregate (ascending; the base row
    comes first). ``columns``: the identity columns its rows fill (``layer_i``, with ``layer_j`` for a pair
    of blocks, with ``head`` for one head unit). ``pairs``: ``directed`` or ``unordered`` for a two-block
    protocol, None otherwise. ``changes_weights``: its variants run blocks built from the model's weights
    (such protocols are opt-in per model: the config's ``weight_protocols``). ``minutes_per_gb``: the
    workflow job's runtime per GB of weights (on top of a fixed 30 minutes). ``help``: one line for
    ``swapkl probe --help``.
    """

    name: str
    order: int
    variants: VariantBuilder
    help: str
    columns: tuple[str, ...] = ("layer_i", "layer_j")
    pairs: str | None = "directed"
    changes_weights: bool = False
    minutes_per_gb: float = 15

    def __post_init__(self):
        if not self.name.isidentifier():
            raise ValueError(f"protocol name {self.name!r}: letters, digits and underscores only")
        if self.columns[:1] != ("layer_i",) or not set(self.columns) <= set(ROW_COLUMNS):
            raise ValueError(f"protocol {self.name}: columns {self.columns} must start with layer_i and lie in "
                             f"{ROW_COLUMNS}")
        two_blocks = "layer_j" in self.columns
        if two_blocks != (self.pairs is not None) or (two_blocks and self.pairs not in PAIR_ORDERS):
            raise ValueError(f"protocol {self.name}: pairs must be one of {PAIR_ORDERS} exactly when its rows "
                             "fill layer_j")
        if "head" in self.columns and self.pairs != "unordered":
            raise ValueError(f"protocol {self.name}: head rows are stored once per unordered pair")

    @property
    def two_blocks(self) -> bool:
        """Its rows name two blocks (``layer_j`` is set)."""
        return "layer_j" in self.columns

    @property
    def heads(self) -> bool:
        """Its variants swap one head unit (``head`` is set)."""
        return "head" in self.columns


_PROTOCOLS: Registry[Protocol] = Registry("protocol", order=lambda p: p.order, unique_order=True)


def register(protocol: Protocol) -> Protocol:
    """Add ``protocol`` to the registry; a second protocol with its name or order is refused."""
    return _PROTOCOLS.add(protocol.name, protocol)


def registered() -> list[Protocol]:
    """Every protocol, in order."""
    return _PROTOCOLS.entries()


def protocol_names() -> tuple[str, ...]:
    """Every protocol's name, in order."""
    return _PROTOCOLS.names()


def get_protocol(name: str) -> Protocol:
    return _PROTOCOLS[name]


def weight_protocol_names() -> tuple[str, ...]:
    """The protocols whose variants run blocks built from the model's weights, in order."""
    return tuple(p.name for p in registered() if p.changes_weights)


def head_protocol_names() -> tuple[str, ...]:
    """The protocols whose variants swap one head unit (a ``head`` per row), in order."""
    return tuple(p.name for p in registered() if p.heads)


def parse_protocols(spec: str | list[str] | tuple[str, ...]) -> list[str]:
    """The protocols of a comma-separated list (or a sequence of names), in registry order."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    items = [p.strip() for p in items if p.strip()]
    if not items:
        raise SwapKLError("no protocol given: choose from " + ", ".join(protocol_names()))
    for p in items:
        get_protocol(p)
    return [p for p in protocol_names() if p in items]


def build_variants(protocols: list[str], pair_set: str, n_layers: int, n_units: int = 1) -> list[Variant]:
    """The variants of ``protocols`` on ``pair_set``, in registry order (each protocol's own order within)."""
    pairs = pairs_for(pair_set, n_layers)
    out: list[Variant] = []
    for name in parse_protocols(list(protocols)):
        out.extend(get_protocol(name).variants(pairs, n_layers, n_units))
    return out


def protocols_help() -> str:
    """One line per protocol: its name and help (``swapkl probe --help``)."""
    return "; ".join(f"{p.name}: {p.help}" for p in registered())
