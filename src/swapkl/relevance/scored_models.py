"""The models one relevance run scores: every single-block deletion and the pruned models a pruning study
chose.

A :class:`PrunedSet` is one row of a checkpoint's pruning table (read by :func:`pruned_sets_from_table`): a
guide's removed set at one budget, with LaCo's merged slots, which run the averaged block as in the pruning
study. A :class:`Scan` holds the variants of one run: identical models (the same set chosen by several guides,
or a budget-1 set that is a single-block deletion) are one variant, computed once and reported on each of
their rows, with AccRel (:func:`swapkl.relevance.tasks.acc_rel`) against the base model.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.model.variant import Variant, removal_variant
from swapkl.probes.protocols.block_deletion import deletion
from swapkl.pruning.guides.guide_registry import Pruned
from swapkl.model.merge import merged_blocks
from swapkl.pruning.prune import pruned_variant
from swapkl.model.choice_scores import BASE
from swapkl.relevance.tasks import acc_rel
from swapkl.tables import provenance
from swapkl.tables.schemas import PRUNING_RUN_SCHEMA, read_table


@dataclass(frozen=True)
class PrunedSet:
    """A pruning guide's choice at one budget (one row of a pruning table): the blocks it removes and, for
    LaCo, the slots whose block runs the average of itself and the next (removed) block."""

    guide: str
    budget: int
    removed: tuple[int, ...]
    merged: tuple[int, ...] = ()
    random_draw: int | None = None
    fixed_set: str | None = None

    def columns(self) -> dict:
        return dict(layer=None, guide=self.guide, budget=self.budget, random_draw=self.random_draw,
                    fixed_set=self.fixed_set, removed_layers=list(self.removed),
                    merged_layers=list(self.merged) if self.merged else None)


_NO_SET = dict(guide=None, budget=None, random_draw=None, fixed_set=None, merged_layers=None)


class Scan:
    """The models one relevance run scores: every single-block deletion (unless ``single_blocks`` is false: the
    downstream benchmarks score only the pruned sets) and each :class:`PrunedSet`.

    ``variants`` holds each distinct block order once; ``merged_ids`` maps a LaCo merge ``(i, i + 1)``
    to the engine block id of its averaged block (:func:`scan_for` registers them)."""

    def __init__(self, n_layers: int, pruned_sets=(), merged_ids: dict | None = None, *, single_blocks: bool = True):
        self.n_layers = n_layers
        by_order: dict[tuple, Variant] = {}
        self.entries = []  # (the row's identifying columns, key of its variant)
        for layer in range(n_layers if single_blocks else 0):
            v = by_order.setdefault(deletion(layer, n_layers).order, deletion(layer, n_layers))
            self.entries.append((dict(layer=layer, removed_layers=[layer]), v.key))
        for s in pruned_sets:
            bad = [b for b in (*s.removed, *s.merged) if not 0 <= b < n_layers]
            if bad or not s.removed or len(set(s.removed)) != len(s.removed):
                raise SwapKLError(f"pruned set of guide {s.guide!r} at budget {s.budget} removes {list(s.removed)}: "
                                  f"not distinct blocks of this {n_layers}-block model")
            v = removal_variant(s.removed, n_layers)
            if s.merged:
                v = pruned_variant(Pruned(s.removed, s.merged), n_layers, merged_ids or {})
                v = dataclasses.replace(v, protocol=f"removed{list(s.removed)}merged{list(s.merged)}")
            self.entries.append((s.columns(), by_order.setdefault(v.order, v).key))
        self.variants = list(by_order.values())
        self.n_distinct_sets = len(self.variants) - (n_layers if single_blocks else 0)

    def rows(self, model: str, revision: str | None, task: str, metric: str, scores: dict[str, np.ndarray],
             random_baseline: float) -> list[dict]:
        """One row per scored model from per-item 0/1 scores of the base model and each variant."""
        base = float(scores[BASE].mean())
        rows = []
        for columns, key in self.entries:
            acc = float(scores[key].mean())
            rows.append(dict(model=model, revision=revision, task=task, metric=metric, accuracy=acc,
                             base_accuracy=base, random_baseline=random_baseline,
                             relevance=acc_rel(acc, base, random_baseline), n_items=int(len(scores[BASE])))
                        | _NO_SET | columns)
        return rows


@contextlib.contextmanager
def scan_for(engine, pruned_sets=(), *, single_blocks: bool = True):
    """The :class:`Scan` of ``engine``'s model and ``pruned_sets`` (and every single-block deletion unless
    ``single_blocks`` is false), with LaCo's averaged blocks registered while inside."""
    with merged_blocks(engine, sorted({(i, i + 1) for s in pruned_sets for i in s.merged})) as ids:
        yield Scan(engine.n_layers, pruned_sets, ids, single_blocks=single_blocks)


def pruned_sets_from_table(path: str, *, n_layers: int, weights_sha256: str | None = None,
                           guides: list[str] | None = None, model: str | None = None) -> list[PrunedSet]:
    """Every pruned model of a checkpoint's pruning table: each feasible row with removed blocks (not the
    ``base`` row, not the ``random_mean`` summary), in the table's order; only those of ``guides`` if given.

    The table must describe a model of ``n_layers`` blocks and, when ``weights_sha256`` is given, record the
    weights' hash and have been measured on those weights (:func:`swapkl.tables.provenance.require_made_from`)."""
    # a per-checkpoint file (swapkl prune) or the aggregated table: the run's columns are in both
    table, prov = read_table(path, PRUNING_RUN_SCHEMA, "pruning")
    df = table.to_pandas()
    if weights_sha256 is not None:
        own = provenance.require_made_from(path, prov, weights_sha256, model or path, "pruning table")
        if "checkpoints" in prov:  # an aggregate holds other checkpoints: only this one's rows
            df = df[[(m, r) in own for m, r in zip(df["model"], df["revision"])]].reset_index(drop=True)
    sizes = sorted(set(df["n_layers"].dropna().astype(int)))
    if sizes != [n_layers]:
        raise SwapKLError(f"pruning table {path!r} describes models of {sizes} blocks, not {n_layers}")
    unknown = sorted(set(guides or ()) - set(df["guide"]))
    if unknown:
        raise SwapKLError(f"pruning table {path!r} has no guide {', '.join(unknown)} "
                          f"(it has {', '.join(sorted(set(df['guide'])))})")
    out = []
    for r in df.itertuples(index=False):
        if guides is not None and r.guide not in guides:
            continue
        if not r.feasible or r.removed_layers is None or len(r.removed_layers) == 0:
            continue
        merged = () if r.merged_layers is None else tuple(int(b) for b in r.merged_layers)
        out.append(PrunedSet(r.guide, int(r.budget), tuple(int(b) for b in r.removed_layers), merged,
                             None if _missing(r.random_draw) else int(r.random_draw),
                             None if _missing(r.fixed_set) else str(r.fixed_set)))
    return out


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))
