"""Last-word prediction (LAMBADA) scored like lm-eval's ``lambada_openai``, on the probe engine.

LAMBADA is not multiple choice. A document's text is split at its last space: the context is everything
before it and the continuation the space and the last word (``lambada_openai``'s ``doc_to_text`` and
``doc_to_target``). For each document and each model (the base and every variant of the engine) swapkl
computes lm-eval's ``loglikelihood`` result pair: the continuation's log-likelihood and whether greedy
decoding reproduces it (every continuation token is the argmax of the logits at its position). The task's
metrics are ``perplexity = exp(-mean log-likelihood)`` and ``acc = mean greedy match``.

Requests are tokenised as lm-eval's ``HFLM`` does (:func:`swapkl.model.choice_scores.make_request`) and every variant
resumes from its first changed slot (:func:`swapkl.model.batch_loop.sweep`), so all pruned sets of a checkpoint cost one
base pass per batch.
"""

from __future__ import annotations

import json

import numpy as np
import torch

from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_regular_file
from swapkl.model.kl import next_token_hits, next_token_nll
from swapkl.model.choice_scores import Request, make_request, request_batches
from swapkl.model.batch_loop import BASE, sweep


def split_last_word(text: str) -> tuple[str, str]:
    """``(context, " " + last word)`` of a document, as ``lambada_openai`` splits it."""
    words = text.split(" ")
    if len(words) < 2:
        raise SwapKLError(f"a LAMBADA document needs at least two words, got {text!r}")
    return " ".join(words[:-1]), " " + words[-1]


def load_texts(path: str, field: str = "text") -> list[str]:
    """The ``field`` of every row of a JSONL file."""
    require_regular_file(path, "LAMBADA file")
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                row = json.loads(line)
                if field not in row:
                    raise SwapKLError(f"{path!r} line {n} has no field {field!r}")
                out.append(row[field])
    if not out:
        raise SwapKLError(f"{path!r} has no documents")
    return out


def lambada_requests(texts: list[str], tokenizer, max_positions: int | None, name: str = "lambada") -> list[Request]:
    return [make_request(tokenizer, d, 0, *split_last_word(t), max_positions, name) for d, t in enumerate(texts)]


@torch.inference_mode()
def continuation_scores(engine, requests: list[Request], variants, *, batch_size: int = 16,
                        pad_id: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{variant key: (log-likelihood [R] float64, greedy match [R] bool)}`` for the base model (key of
    :data:`swapkl.model.batch_loop.BASE`) and each variant."""
    device = engine.unemb.weight.device
    keys = [BASE.key] + [v.key for v in variants]
    ll = {k: np.empty(len(requests)) for k in keys}
    greedy = {k: np.empty(len(requests), dtype=bool) for k in keys}
    batches, n_batches = request_batches(requests, batch_size, pad_id, device)
    for m in sweep(engine, batches, variants, device=device, targets=False, n_batches=n_batches,
                   desc="continuation scores"):
        where = m.batch.scored[m.state.valid]
        h = engine.adapter.final_norm(m.hidden)[m.state.valid][where]
        labels = m.state.targets.labels[where]
        nll = next_token_nll(engine.unemb, h, labels, engine.chunk_tokens)
        if not torch.isfinite(nll).all():
            raise SwapKLError("non-finite logits while scoring continuations")
        misses = (~next_token_hits(engine.unemb, h, labels, engine.chunk_tokens)).double()
        seq = m.state.token_seq[where]
        z = torch.zeros(len(m.batch.rows), dtype=torch.float64, device=device)
        ll[m.variant.key][m.batch.rows] = (-z.clone().index_add_(0, seq, nll)).cpu().numpy()
        greedy[m.variant.key][m.batch.rows] = (z.index_add_(0, seq, misses) == 0).cpu().numpy()
    return {k: (ll[k], greedy[k]) for k in keys}


def lambada_metrics(ll: np.ndarray, greedy: np.ndarray) -> dict[str, float]:
    """lm-eval's ``perplexity`` (exp of minus the mean log-likelihood) and ``acc`` (mean greedy match)."""
    return {"perplexity": float(np.exp(-np.mean(ll))), "acc": float(np.mean(greedy))}
