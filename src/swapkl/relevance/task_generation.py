"""Generative tasks (GSM8K) in task-calibrated pruning: every removed set scored by lm-eval's own generation.

The engine scores log-likelihoods of many pruned models from one base pass; generation cannot share passes
that way, so each removed set is materialised as the stock transformers model without those blocks
(:func:`swapkl.relevance.pruned_model.materialise`, the source's tensors, checked against the engine) and
generates every document through ``HFLM.generate_until`` (:func:`swapkl.relevance.generation.generate`).
The scores are lm-eval's per-document ``exact_match`` of each of the task's filters.
"""

from __future__ import annotations

import numpy as np

from swapkl.relevance.generation import generate, harness_lm
from swapkl.relevance.pruned_model import materialise


def generative_scores(engine, split, tokenizer, sets, *, batch_size: int) -> dict[tuple, dict[str, np.ndarray]]:
    """Per removed set of ``sets`` (``()``: the unpruned model): ``<metric>,<filter>`` -> per-document values over
    the documents of every subtask of ``split``, in order."""
    out: dict[tuple, dict[str, np.ndarray]] = {}
    for s in sorted({tuple(sorted(s)) for s in sets} | {()}, key=lambda s: (len(s), s)):
        model = materialise(engine.model, s) if s else engine.model
        lm = harness_lm(model, tokenizer, batch_size=batch_size)
        parts = [generate(lm, part).scores for part in split.parts]
        out[s] = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        del lm, model
    return out
