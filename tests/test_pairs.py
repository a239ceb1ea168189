"""Variant construction and pair sets."""

from __future__ import annotations

import pytest

from swapkl.errors import SwapKLError
from swapkl.probes.pairs import max_distance, pairs_for, parse_pair_set
from swapkl.model.variant import removal
from swapkl.probes.protocols import build_variants, parse_protocols
from swapkl.probes.protocols.block_deletion import deletion
from swapkl.probes.protocols.interchange import interchange
from swapkl.probes.protocols.replacement import replacement


def test_replacement_order_and_direction():
    v = replacement(1, 3, 5)
    assert v.order == (0, 3, 2, 3, 4)  # slot 1 runs block 3; block 1 never runs
    assert (v.protocol, v.layer_i, v.layer_j) == ("replacement", 1, 3)
    assert replacement(3, 1, 5).order == (0, 1, 2, 1, 4)
    assert v.key == "replacement:1:3" and replacement(3, 1, 5).key == "replacement:3:1"
    assert v.first_changed_slot(5) == 1
    assert replacement(3, 1, 5).first_changed_slot(5) == 3


def test_interchange_is_symmetric_with_i_less_than_j():
    a, b = interchange(1, 4, 6), interchange(4, 1, 6)
    assert a == b
    assert a.order == (0, 4, 2, 3, 1, 5)
    assert (a.layer_i, a.layer_j, a.key) == (1, 4, "interchange:1:4")
    assert sorted(a.order) == list(range(6))  # each block still runs once
    assert a.first_changed_slot(6) == 1


def test_deletion():
    for i in range(4):
        v = deletion(i, 4)
        assert v.order == tuple(b for b in range(4) if b != i)
        assert (v.layer_i, v.layer_j, v.key) == (i, None, f"deletion:{i}:")
        assert v.first_changed_slot(4) == i  # the last block: resume at slot 3 from the cached stream
    assert removal([0, 2], 4).order == (1, 3)


@pytest.mark.parametrize("n_layers", [2, 5, 12])
def test_pair_set_sizes(n_layers):
    L = n_layers
    assert len(pairs_for("adjacent", L)) == L - 1
    assert len(pairs_for("all", L)) == L * (L - 1) // 2
    for k in (1, 2, 3, 100):
        k_eff = min(k, L - 1)
        want = sum(L - d for d in range(1, k_eff + 1))
        assert len(pairs_for(f"within:{k}", L)) == want
    assert pairs_for("within:1", L) == pairs_for("adjacent", L)
    assert pairs_for(f"within:{L - 1}", L) == pairs_for("all", L)
    assert all(i < j for i, j in pairs_for("all", L))
    assert max_distance("within:2", L) == min(2, L - 1)


def test_pair_set_membership():
    assert pairs_for("within:2", 4) == [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]
    assert parse_pair_set("within:3") == ("within", 3)


def test_build_variants_counts_and_order():
    L = 6
    vs = build_variants(["deletion", "replacement", "interchange"], "within:2", L)
    n_pairs = len(pairs_for("within:2", L))
    protos = [v.protocol for v in vs]
    assert protos == ["replacement"] * (2 * n_pairs) + ["interchange"] * n_pairs + ["deletion"] * L
    repl = {(v.layer_i, v.layer_j) for v in vs if v.protocol == "replacement"}
    for i, j in pairs_for("within:2", L):
        assert (i, j) in repl and (j, i) in repl  # both directions
    assert len({v.key for v in vs}) == len(vs)


@pytest.mark.parametrize("bad", ["", "adjacent ", "within", "within:0", "within:-1", "within:x", "ALL", "pairs"])
def test_bad_pair_set(bad):
    with pytest.raises(SwapKLError, match="unknown pair set"):
        parse_pair_set(bad)


@pytest.mark.parametrize("bad", ["swap", "replacement,averaged", "", " , "])
def test_bad_protocol(bad):
    with pytest.raises(SwapKLError):
        parse_protocols(bad)


def test_protocols_parse_in_canonical_order():
    assert parse_protocols("deletion, replacement") == ["replacement", "deletion"]
    assert parse_protocols(["interchange"]) == ["interchange"]
