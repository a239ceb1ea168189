"""The one loop every engine measurement runs: batch by batch, one cached base pass, then each variant.

:func:`sweep` walks the batches; per batch it runs :meth:`ProbeEngine.base_pass` once, yields the
base model's item, then every variant's item in the engine's planned order (each resumes from its
first changed slot and shares the stream its planned neighbour left behind, see
:mod:`swapkl.model.engine`), with progress over (batch, variant) items (:mod:`swapkl.progress`: a bar on a
terminal, lines in a log). Each item carries what a
per-sequence reduction needs: the batch, the base pass's state and either the per-valid-token KL and
NLL (``targets=True``) or the final residual stream before the norm (``targets=False``, for callers
that score their own positions). The probe, pruning's perplexity and KL, SLEB's calibration NLL, CKA
and the accuracy relevance all reduce these items; none of them writes its own batch loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from swapkl.model.engine import BatchState
from swapkl.model.variant import Variant
from swapkl.progress import Progress

#: the unmodified model, as the variant of every batch's first item
BASE = Variant("base", None, None, ())


@dataclass(frozen=True)
class Batch:
    """Rows of the whole input that go through the model together."""

    rows: slice | list[int]  # which rows (windows, requests) of the caller's input these are
    input_ids: torch.Tensor  # [B, T]
    attention_mask: torch.Tensor  # [B, T]
    scored: torch.Tensor | None = None  # [B, T] bool: positions whose next-token prediction counts, if the caller has one

    def to(self, device) -> "Batch":
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return replace(self, input_ids=move(self.input_ids), attention_mask=move(self.attention_mask),
                       scored=move(self.scored))


def window_batches(input_ids: np.ndarray, attention_mask: np.ndarray, batch_size: int,
                   scored: np.ndarray | None = None, *, by_length: bool = False) -> list[Batch]:
    """Batches of ``batch_size`` windows (the last one shorter).

    By default consecutive windows, rows as slices. ``by_length=True`` (windows that are mostly padding): the
    windows sorted by their extent (last attended position + 1; longest first, ties in window order), each
    batch's rows as the list of its windows' indices, and each batch cut after its longest window's extent.
    Only trailing columns that no window of the batch attends to are cut: under causal attention no kept
    position sees them, so every kept position's numbers are those of the uncut batch up to rounding.
    A window whose mask is 1 everywhere (``padding: counted``, token files) has the
    full extent, so such windows keep every position and their order. Callers put per-window results back in
    window order by ``rows`` (``out[batch.rows] = ...``).
    """
    ids, mask = torch.as_tensor(input_ids), torch.as_tensor(attention_mask)
    score = None if scored is None else torch.as_tensor(scored)
    n = ids.shape[0]
    if not by_length:
        return [Batch(slice(lo, min(n, lo + batch_size)), ids[lo:lo + batch_size], mask[lo:lo + batch_size],
                      None if score is None else score[lo:lo + batch_size]) for lo in range(0, n, batch_size)]
    extent = window_extents(mask if score is None else mask.bool() | score.bool())
    order = sorted(range(n), key=lambda r: -int(extent[r]))  # stable: ties keep window order
    out = []
    for lo in range(0, n, batch_size):
        rows = order[lo:lo + batch_size]
        t = max(int(extent[rows].max()), 1)
        pick = torch.as_tensor(rows)
        out.append(Batch(rows, ids[pick, :t], mask[pick, :t], None if score is None else score[pick, :t]))
    return out


def window_extents(mask: torch.Tensor) -> torch.Tensor:
    """[n] last nonzero column + 1 of each row of ``mask`` (0 for a row without one)."""
    cols = torch.arange(1, mask.shape[1] + 1).expand_as(mask)
    return torch.where(mask.bool(), cols, torch.zeros_like(cols)).amax(1)


def in_window_order(per_batch: Sequence, batches: Sequence[Batch], dtype=np.float64) -> np.ndarray:
    """Per-window values given batch by batch (one sequence per batch, in its rows' order) as one array in the
    order of the windows the batches were made from."""
    rows = [np.arange(b.rows.start, b.rows.stop) if isinstance(b.rows, slice) else np.asarray(b.rows, dtype=np.int64)
            for b in batches]
    where = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    if len(per_batch) != len(rows) or not np.array_equal(np.sort(where), np.arange(len(where))):
        raise ValueError("the batches' rows do not cover every window once")
    out = np.empty(len(where), dtype=dtype)
    for values, r in zip(per_batch, rows):
        out[r] = np.asarray(values, dtype=dtype)
    return out


@dataclass
class Measured:
    """One (batch, variant) result. ``state``, ``kl``, ``nll`` and ``hidden`` hold only inside the loop body:
    the sweep drops them before the next base pass, so two batches' residual caches never coexist."""

    index: int  # batch number
    batch: Batch  # on the device
    variant: Variant  # BASE for the unmodified model
    k: int | None  # position of ``variant`` in the caller's list; None for BASE
    state: BatchState | None
    kl: torch.Tensor | None = None  # [N valid tokens] float64 (targets=True); zeros for BASE
    nll: torch.Tensor | None = None  # [N valid tokens] float64, NaN where no next token (targets=True)
    hidden: torch.Tensor | None = None  # [B, T, d] stream after the last block, before the norm (targets=False)


def sweep(engine, batches: Iterable[Batch], variants: Sequence[Variant], *, device, targets: bool = True,
          done: Callable[[int, Variant], bool] | None = None, desc: str | None = None,
          n_batches: int | None = None) -> Iterator[Measured]:
    """Yield, batch by batch, the base model's item then each variant's (see the module docstring).

    ``done(batch number, variant)`` (BASE included) says a result exists already (a resumed run): that
    item is not computed or yielded, and a batch whose items are all done gets no base pass. ``desc``
    shows progress (:mod:`swapkl.progress`) over ``n_batches`` (default ``len(batches)``) times the items, counted
    in model runs (one item, the base model or one variant, on one batch).
    """
    variants = list(variants)
    total = (len(batches) if n_batches is None else n_batches) * (len(variants) + 1)
    bar = Progress(total, desc or "", "model run", quiet=not desc)
    try:
        for index, batch in enumerate(batches):
            todo = [k for k, v in enumerate(variants) if done is None or not done(index, v)]
            base_todo = done is None or not done(index, BASE)
            bar.skip(len(variants) - len(todo) + (not base_todo))
            if not todo and not base_todo:
                continue
            batch = batch.to(device)
            state = engine.base_pass(batch.input_ids, batch.attention_mask, targets=targets)
            planned = [todo[k] for k in engine.plan_indices([variants[k] for k in todo])]
            for k in ([None] if base_todo else []) + planned:
                m = Measured(index, batch, BASE if k is None else variants[k], k, state)
                if k is None and targets:
                    m.kl, m.nll = torch.zeros_like(state.base_nll), state.base_nll
                elif k is None:
                    m.hidden = state.residuals[-1]
                elif targets:
                    m.kl, m.nll = engine.token_stats(state, m.variant)
                else:
                    m.hidden = engine.final_hidden(state, m.variant)
                yield m
                m.state = m.kl = m.nll = m.hidden = None
                bar.update(1)
            del state
    finally:
        bar.close()
