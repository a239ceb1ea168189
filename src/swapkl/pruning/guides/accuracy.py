"""Accuracy-guided iterative pruning (the guide of "Rethinking Layer Relevance", task-specific calibration).

Start from the full model; at each step remove the block whose removal (together with those already
removed) leaves the highest accuracy on the calibration task, then re-score the remaining blocks.
Ties go to the lowest block index. Every candidate is a variant on the probe engine, resuming from
the first slot it changes, so a step costs one base pass per batch plus the candidates' suffixes.

``accuracy_guided_sets`` returns the removed set for each budget from any accuracy function; the
pruning study registers it as the guide ``accuracy_iterative``
(:mod:`swapkl.pruning.guides.calibration`) with :func:`window_accuracy`, the next-token accuracy on the
calibration windows (the pruning study has calibration windows for every model, not tasks);
:func:`task_accuracy` scores a multiple-choice task instead.
"""

from __future__ import annotations

import numpy as np

from swapkl.model.variant import removal_variant


def task_accuracy(engine, task, tokenizer, removed_sets, *, metric: str = "acc", batch_size: int = 16,
                  pad_id: int = 0) -> dict[tuple[int, ...], float]:
    """Accuracy of the model without each removed set on a multiple-choice task."""
    # torch side: the figures read the guides without torch
    from swapkl.model.choice_scores import choice_loglikelihoods, choice_predictions, task_requests

    n = engine.n_layers
    variants = {tuple(sorted(s)): removal_variant(s, n) for s in removed_sets}
    requests = task_requests(task, tokenizer, engine.adapter.max_positions)
    lls = choice_loglikelihoods(engine, requests, list(variants.values()), batch_size=batch_size, pad_id=pad_id)
    return {s: float(np.mean(choice_predictions(task, requests, lls[v.key])[metric])) for s, v in variants.items()}


def window_accuracy(engine, windows, removed_sets, *, batch_size: int = 8) -> dict[tuple[int, ...], float]:
    """Next-token accuracy (share of positions whose argmax is the next token, :func:`next_token_hits`) of
    the model without each removed set on language-modelling windows, and of the unpruned model under ``()``."""
    # torch side: the figures read the guides without torch
    from swapkl.model.choice_scores import BASE, next_token_hits

    n = engine.n_layers
    variants = {tuple(sorted(s)): removal_variant(s, n) for s in removed_sets}
    hits = next_token_hits(engine, windows, list(variants.values()), batch_size=batch_size)
    return {s: float(hits[v.key].mean()) for s, v in variants.items()} | {(): float(hits[BASE].mean())}


def accuracy_guided_sets(accuracy_of, n_layers: int, max_budget: int) -> dict[int, tuple[int, ...]]:
    """Removed set for budgets 1..max_budget; ``accuracy_of(list of sets) -> {set: accuracy}``."""
    removed: tuple[int, ...] = ()
    out = {}
    for budget in range(1, max_budget + 1):
        candidates = [tuple(sorted(removed + (b,))) for b in range(n_layers) if b not in removed]
        scores = accuracy_of(candidates)
        best = max(candidates, key=lambda s: (scores[s], [-b for b in s]))
        removed = best
        out[budget] = removed
    return out
