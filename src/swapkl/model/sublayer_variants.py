"""The variants that move or skip one sublayer of a block (built by :mod:`swapkl.model.sublayers` when they run):
their recipes and block ids. Torch-free, like :mod:`swapkl.model.variant`: the protocol registry, which the
workflow and the figures read, imports it."""

from __future__ import annotations

from swapkl.model.variant import Variant

#: the two sublayers of a block
PARTS = ("attention", "mlp")

#: the negative block ids of the sublayer recipes start here, above every id another recipe uses (averaging: up to
#: L^2, head units: L^2 + 2 L^2 U) and below the blocks added by the engine (2^40)
_FIRST_ID = 2**30


def recipe_id(recipe: tuple, n_layers: int) -> int:
    """The block id of a sublayer recipe, the same wherever the recipe recurs (a replacement's changed block is one
    of an interchange's) and unique to it: ``("sublayer", block, donor, part)`` or ``("skip", block, part)``."""
    kind = 2 * (recipe[0] == "skip") + PARTS.index(recipe[-1])
    block = recipe[1]
    other = recipe[2] if recipe[0] == "sublayer" else block
    return -(_FIRST_ID + (kind * n_layers + block) * n_layers + other)


def _with(protocol: str, i: int, j: int | None, n_layers: int, slots: dict[int, tuple]) -> Variant:
    """The variant whose slots in ``slots`` run the block built by their recipe; every other slot its own."""
    order = list(range(n_layers))
    blocks = []
    for slot, recipe in slots.items():
        order[slot] = recipe_id(recipe, n_layers)
        blocks.append((order[slot], recipe))
    return Variant(protocol, i, j, tuple(order), blocks=tuple(blocks))


def sublayer_replacement(protocol: str, part: str, i: int, j: int, n_layers: int) -> Variant:
    """Slot i runs block i with block j's sublayer ``part``."""
    return _with(protocol, i, j, n_layers, {i: ("sublayer", i, j, part)})


def sublayer_interchange(protocol: str, part: str, i: int, j: int, n_layers: int) -> Variant:
    """Blocks i and j (stored i < j) exchange their sublayers ``part``."""
    i, j = min(i, j), max(i, j)
    return _with(protocol, i, j, n_layers, {i: ("sublayer", i, j, part), j: ("sublayer", j, i, part)})


def sublayer_deletion(protocol: str, part: str, i: int, n_layers: int) -> Variant:
    """Block i runs without its sublayer ``part``."""
    return _with(protocol, i, None, n_layers, {i: ("skip", i, part)})


def with_skips(order: tuple[int, ...], skipped, n_layers: int, protocol: str = "pruned") -> Variant:
    """The variant that runs blocks ``order`` (indices into the model's ``n_layers`` blocks), each block of
    ``skipped`` (``(block, part)``, at most one part per block) without that sublayer."""
    parts: dict[int, str] = {}
    for block, part in skipped:
        if part not in PARTS or not 0 <= block < n_layers:
            raise ValueError(f"no sublayer {part!r} of block {block} in a {n_layers}-block model")
        if block in parts:
            raise ValueError(f"block {block}: skip both of its sublayers by removing the block")
        parts[block] = part
    ids = tuple(recipe_id(("skip", b, parts[b]), n_layers) if b in parts else b for b in order)
    recipes = tuple((recipe_id(("skip", b, p), n_layers), ("skip", b, p)) for b, p in sorted(parts.items()))
    return Variant(protocol, None, None, ids, blocks=recipes)


def sublayers_removed(blocks: tuple[int, ...], skipped: tuple[tuple[int, str], ...], n_layers: int,
                      protocol: str = "pruned") -> Variant:
    """The model without the blocks ``blocks`` and, in the blocks it keeps, without the sublayers ``skipped``
    (``(block, part)``, at most one part per block: a block without both is a block removed)."""
    gone = set(blocks)
    if any(b in gone for b, _ in skipped):
        raise ValueError(f"a skipped sublayer's block is removed: {sorted(b for b, _ in skipped if b in gone)}")
    return with_skips(tuple(b for b in range(n_layers) if b not in gone), skipped, n_layers, protocol)
