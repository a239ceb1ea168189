"""Scoring multiple-choice requests and language-modelling windows on the probe engine, for the base model and
any set of variants at once.

Each batch of requests gets one base pass, and every variant (a single-block deletion, a pruned model)
resumes from the first slot it changes, so no variant model is ever built:

* multiple-choice tasks (:mod:`swapkl.relevance.tasks`): the log-likelihood of each choice is minus the sum of the
  engine's next-token NLL over the choice's tokens (the one NLL of :mod:`swapkl.model.kl`); ``acc`` and
  ``acc_norm`` as lm-eval defines them. Tokenisation follows lm-eval's ``HFLM``: trailing spaces of
  the context move to the continuation, ``context + continuation`` is encoded whole and the
  continuation is what follows the context's own encoding;
* language-modelling windows (:mod:`swapkl.data.windows`): next-token accuracy, the share of positions whose
  greedy (argmax) prediction is the next token.

The relevance run (:mod:`swapkl.relevance.accrel`), the accuracy-guided pruning guides and the healed models'
scores all score through these functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from swapkl.errors import SwapKLError
from swapkl.model.batch_loop import BASE as SWEEP_BASE
from swapkl.model.batch_loop import Batch, sweep, window_batches
from swapkl.model.kl import next_token_hits as _hits
from swapkl.model.kl import next_token_nll
from swapkl.model.variant import Variant

BASE = SWEEP_BASE.key  # the unmodified model's key in the score dictionaries


@dataclass(frozen=True)
class Request:
    doc: int
    choice: int
    context: str
    continuation: str
    tokens: tuple[int, ...]  # context tokens + continuation tokens
    n_continuation: int


def _encode(tokenizer, text: str) -> list[int]:
    """lm-eval HFLM's ``tok_encode``: the tokenizer's defaults, but no special tokens added when the text
    already starts with the prefix token (BOS, else EOS) as decoded text."""
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if prefix is not None and text.startswith(tokenizer.decode(prefix)):
        return list(tokenizer.encode(text, add_special_tokens=False))
    return list(tokenizer.encode(text))


def make_request(tokenizer, doc: int, choice: int, context: str, continuation: str, max_positions: int | None,
                 task: str) -> Request:
    """One (context, continuation) request, tokenised as lm-eval's ``HFLM`` does."""
    raw_context, raw_continuation = context, continuation
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    if not context:
        raise SwapKLError(f"task {task!r} document {doc}: the context is blank")
    whole = _encode(tokenizer, context + continuation)
    n_ctx = len(_encode(tokenizer, context))
    n_cont = len(whole) - n_ctx
    if n_cont < 1 or n_ctx < 1:
        raise SwapKLError(f"task {task!r} document {doc} choice {choice}: the continuation has no tokens of its own")
    if max_positions is not None and len(whole) - 1 > max_positions:
        raise SwapKLError(f"task {task!r} document {doc} choice {choice}: {len(whole)} tokens exceed the model's "
                          f"{max_positions} positions")
    return Request(doc, choice, raw_context, raw_continuation, tuple(whole), n_cont)


def task_requests(task, tokenizer, max_positions: int | None) -> list[Request]:
    """The (context, continuation) requests of every choice of every document, tokenised."""
    return [make_request(tokenizer, d, c, doc.context, task.target_delimiter + choice, max_positions, task.name)
            for d, doc in enumerate(task.docs) for c, choice in enumerate(doc.choices)]


def _batch(requests: list[Request], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask, and the mask of positions that predict a continuation token.

    The last token is never fed forward for its own prediction, exactly like lm-eval's input of
    ``(context + continuation)[:-1]``; here it is fed but no position's loss uses it.
    """
    width = max(len(r.tokens) for r in requests)
    ids = torch.full((len(requests), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    cont = torch.zeros(len(requests), width, dtype=torch.bool)
    for b, r in enumerate(requests):
        n = len(r.tokens)
        ids[b, :n] = torch.tensor(r.tokens)
        mask[b, :n] = 1
        cont[b, n - 1 - r.n_continuation: n - 1] = True  # position t predicts token t + 1
    return ids.to(device), mask.to(device), cont.to(device)


def request_batches(requests: list[Request], batch_size: int, pad_id: int, device):
    """(a generator of batches of ``requests``, longest first for less padding, rows as request indices; their
    number). Each batch reaches the device only when the sweep takes it."""
    by_length = sorted(range(len(requests)), key=lambda k: -len(requests[k].tokens))
    starts = range(0, len(by_length), batch_size)

    def batches():
        for start in starts:
            idx = by_length[start: start + batch_size]
            yield Batch(idx, *_batch([requests[k] for k in idx], pad_id, device))

    return batches(), len(starts)


@torch.inference_mode()
def choice_loglikelihoods(engine, requests: list[Request], variants: list[Variant], *, batch_size: int = 16,
                          pad_id: int = 0) -> dict[str, np.ndarray]:
    """Log-likelihood of every request's continuation, for the base model and each variant (float64)."""
    device = engine.unemb.weight.device
    out = {BASE: np.empty(len(requests))} | {v.key: np.empty(len(requests)) for v in variants}
    batches, n_batches = request_batches(requests, batch_size, pad_id, device)
    for m in sweep(engine, batches, variants, device=device, targets=False, n_batches=n_batches,
                   desc="choice log-likelihoods"):
        where = m.batch.scored[m.state.valid].to(engine.unemb.device)
        # only the continuation's positions are unembedded
        nll = next_token_nll(engine.unemb, engine.final_normed(m.hidden, m.state.valid)[where],
                             m.state.targets.labels[where], engine.chunk_tokens)
        if not torch.isfinite(nll).all():
            raise SwapKLError("non-finite logits while scoring choices")
        s = torch.zeros(len(m.batch.rows), dtype=torch.float64, device=nll.device)
        idx = m.state.token_seq.to(nll.device)[where]
        out[m.variant.key][m.batch.rows] = (-s.index_add_(0, idx, nll)).cpu().numpy()
    return out


def per_document(task, requests: list[Request], lls: np.ndarray) -> list[list[float]]:
    """Request log-likelihoods regrouped as one list of choice scores per document."""
    per_doc: list[list[float]] = [[math.nan] * len(d.choices) for d in task.docs]
    for r, x in zip(requests, lls):
        per_doc[r.doc][r.choice] = float(x)
    return per_doc


def choice_predictions(task, requests: list[Request], lls: np.ndarray) -> dict[str, np.ndarray]:
    """Per-document ``acc`` and ``acc_norm`` (0/1 float arrays) from request log-likelihoods."""
    per_doc = per_document(task, requests, lls)
    acc = np.empty(len(task.docs))
    acc_norm = np.empty(len(task.docs))
    for d, doc in enumerate(task.docs):
        x = np.asarray(per_doc[d])
        lengths = np.array([float(len(c)) for c in doc.choices])
        acc[d] = float(np.argmax(x) == doc.gold)
        acc_norm[d] = float(np.argmax(x / lengths) == doc.gold)
    return {"acc": acc, "acc_norm": acc_norm}


# -- language modelling ---------------------------------------------------------------------------------------

@torch.inference_mode()
def next_token_hits(engine, windows, variants: list[Variant], *, batch_size: int = 8) -> dict[str, np.ndarray]:
    """Per-position 0/1 greedy hits (valid positions with a next token), base and each variant."""
    out: dict[str, list[np.ndarray]] = {BASE: []} | {v.key: [] for v in variants}
    batches = window_batches(windows.input_ids, windows.attention_mask, batch_size)
    for m in sweep(engine, batches, variants, device=engine.unemb.weight.device, targets=False,
                   desc="next-token accuracy"):
        labels = m.state.targets.labels
        has = labels >= 0
        hv = engine.final_normed(m.hidden, m.state.valid)[has]  # only positions with a next token
        out[m.variant.key].append(_hits(engine.unemb, hv, labels[has], engine.chunk_tokens).cpu().numpy()
                                  .astype(np.float64))
    return {k: np.concatenate(v) for k, v in out.items()}
