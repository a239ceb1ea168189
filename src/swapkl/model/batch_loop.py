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
from swapkl.probes.pairs import Variant
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
                   scored: np.ndarray | None = None) -> list[Batch]:
    """Consecutive batches of ``batch_size`` windows (the last one shorter), rows as slices."""
    ids, mask = torch.as_tensor(input_ids), torch.as_tensor(attention_mask)
    score = None if scored is None else torch.as_tensor(scored)
    n = ids.shape[0]
    return [Batch(slice(lo, min(n, lo + batch_size)), ids[lo:lo + batch_size], mask[lo:lo + batch_size],
                  None if score is None else score[lo:lo + batch_size]) for lo in range(0, n, batch_size)]


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
    shows progress (:mod:`swapkl.progress`) over ``n_batches`` (default ``len(batches)``) times the items.
    """
    variants = list(variants)
    total = (len(batches) if n_batches is None else n_batches) * (len(variants) + 1)
    bar = Progress(total, desc or "", "variant", quiet=not desc)
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
