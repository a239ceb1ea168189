"""Sliding-window perplexity of a model with blocks removed, with a bootstrap over windows.

The evaluation text (documented rule):

1. Paragraphs as in :mod:`swapkl.data.windows` (:func:`swapkl.data.windows.dataset_paragraphs`, the one reader of
   dataset text): a dataset's rows (their ``text`` column, or the ``text_fields`` joined) with blank
   rows and ``= Heading =`` rows dropped (WikiText layout), or a text file split at blank lines with
   runs of whitespace collapsed to one space.
2. Words are maximal runs of non-whitespace characters (``str.split()``). The text is the first
   ``max_words`` words in order, paragraphs joined by a blank line (``"\\n\\n"``); a paragraph cut
   by the limit keeps its first words. ``max_words=None`` keeps everything.
3. The text is tokenised once with the model's tokenizer, without special tokens except a leading
   BOS token where the tokenizer adds one by default (:func:`swapkl.data.windows.tokenize_text`).

Windows over the token sequence ``x_0 .. x_{N-1}`` (the Hugging Face sliding-window recipe):
window k covers ``[b_k, e_k)`` with ``b_k = k * stride`` and ``e_k = min(b_k + window, N)``; the
last window is the first with ``e_k = N``. Every token ``x_t`` with ``t >= 1`` is predicted exactly
once, by the first window that contains it, from the context ``x_{b_k} .. x_{t-1}``: window 0
scores ``x_1 .. x_{e_0 - 1}`` (``e_0 - 1`` predictions; ``x_0`` has no context and is never
scored), window k > 0 scores ``x_{e_{k-1}} .. x_{e_k - 1}`` (``stride`` tokens except possibly the
last window). So ``stride <= window`` is required; with ``stride == window`` the windows do not
overlap and the first token of every window has no context, so it is not scored either.

``text_prep: paper`` applies the published study's matched evaluator instead (docs/paper_modes.md): the
text is :func:`swapkl.data.text_rules.paper_eval_text` of the rows as they are (a dataset's rows, or a text
file's lines: headings kept, blank rows dropped, joined by a blank line, the first ``max_words`` words
re-joined by single spaces), tokenised as above, cut into the same windows, but window k > 0 never scores
the token ``x_{e_{k-1}}`` at the previous window's end (its first target is ``x_{e_{k-1} + 1}``): the
scored tokens are ``N - (number of windows)``.

``text_prep: paper-gpt2`` applies the published study's GPT-2-Medium evaluator (``wikitext_ppl.py``,
``skip_layer_test.py``): the same text as ``paper`` (the study used ``max_words`` 20,000), the clean windows
and targets, but each window's NLL counted as its mean loss times its number of new tokens ``e_k - e_{k-1}``
and the sum divided by ``N``: window 0 scores ``e_0 - 1`` predictions yet counts ``e_0`` (its NLL sum is
multiplied by ``e_0 / (e_0 - 1)``, its token count is ``e_0``; :attr:`EvalWindows.weight`).

``PPL = exp(sum of NLL / number of scored tokens)`` (natural log). The 95% CI resamples windows
with replacement (each window keeps its NLL sum and its token count) with
``numpy.random.default_rng(seed)``; one set of resamplings is shared by every pruned model of a
checkpoint, so CIs of differences and ratios are paired.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch

from swapkl.data.windows import (
    dataset_paragraphs,
    dataset_rows,
    text_file_paragraphs,
    tokenize_text,
)
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_regular_file
from swapkl.data.text_rules import paper_eval_text
from swapkl.model.variant import Variant
from swapkl.model.batch_loop import sweep, window_batches
from swapkl.pruning.eval_spec import EvalSpec




@dataclass
class EvalWindows:
    input_ids: np.ndarray  # [W, window] int64, right-padded
    attention_mask: np.ndarray  # [W, window] int64
    score_mask: np.ndarray  # [W, window] bool: position t's prediction (of token t+1) is scored
    n_text_tokens: int
    source: str
    #: [W] factor on each window's NLL sum and token count (None: 1); only ``text_prep: paper-gpt2`` sets it
    weight: np.ndarray | None = None

    @property
    def n_windows(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def n_scored(self) -> int:
        return int(self.score_mask.sum())

    @property
    def sha256(self) -> str:
        h = hashlib.sha256()
        for a in (self.input_ids, self.attention_mask, self.score_mask.astype(np.int64)):
            h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
        if self.weight is not None:  # the clean and paper windows keep the hash they always had
            h.update(np.ascontiguousarray(self.weight, dtype=np.float64).tobytes())
        return h.hexdigest()


def first_words(paragraphs: list[str], max_words: int | None) -> str:
    """The first ``max_words`` whitespace-separated words, paragraphs joined by a blank line."""
    out, left = [], max_words
    for p in paragraphs:
        words = p.split()
        if not words:
            continue
        if left is not None:
            words = words[:left]
            left -= len(words)
        out.append(" ".join(words))
        if left == 0:
            break
    return "\n\n".join(out)


def eval_paragraphs(spec: EvalSpec) -> list[str]:
    if spec.text_file:
        return text_file_paragraphs(spec.text_file)
    return dataset_paragraphs(spec)


def eval_rows(spec: EvalSpec) -> list[str]:
    """The rows of ``text_prep: paper``: a dataset's rows as they are, or a text file's lines."""
    if spec.text_file:
        require_regular_file(spec.text_file, "evaluation text file")
        with open(spec.text_file, encoding="utf-8") as f:
            return f.read().splitlines()
    return dataset_rows(spec)


def sliding_windows(ids, window: int, stride: int, pad_id: int = 0, source: str = "",
                    skip_prev_end: bool = False) -> EvalWindows:
    """Cut a 1-D token sequence into scored windows (see the module docstring); ``skip_prev_end``: the
    paper's evaluator, which never scores the token at the previous window's end."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    n = len(ids)
    if n < 2:
        raise SwapKLError(f"evaluation text {source} has {n} token(s); at least 2 are needed")
    if not 1 <= stride <= window:
        raise SwapKLError(f"stride must be between 1 and the window ({window}), got {stride}")
    rows, masks, scores = [], [], []
    prev_end = 0
    begin = 0
    while True:
        end = min(begin + window, n)
        length = end - begin
        row = np.full(window, pad_id, dtype=np.int64)
        row[:length] = ids[begin:end]
        mask = np.zeros(window, dtype=np.int64)
        mask[:length] = 1
        score = np.zeros(window, dtype=bool)
        # first token this window scores
        first_target = max(prev_end + (1 if skip_prev_end and begin > 0 else 0), begin + 1)
        score[first_target - begin - 1: length - 1] = True
        rows.append(row), masks.append(mask), scores.append(score)
        prev_end = end
        if end == n:
            break
        begin += stride
    return EvalWindows(np.stack(rows), np.stack(masks), np.stack(scores), n, source)


def load_eval_windows(spec: EvalSpec, tokenizer, max_positions: int | None = None) -> EvalWindows:
    spec.check()
    if max_positions is not None and spec.window > max_positions:
        raise SwapKLError(
            f"evaluation window {spec.window} exceeds the model's {max_positions} positions "
            "(max_position_embeddings); choose a smaller window"
        )
    if tokenizer is None:
        raise SwapKLError("the model has no tokenizer; sliding-window perplexity needs one")
    if spec.text_file:
        require_regular_file(spec.text_file, "evaluation text file")
    paper = spec.text_prep in ("paper", "paper-gpt2")
    text = paper_eval_text(eval_rows(spec), spec.max_words) if paper else first_words(eval_paragraphs(spec),
                                                                                      spec.max_words)
    if not text:
        raise SwapKLError(f"evaluation text {spec.describe()} is empty")
    ids = tokenize_text(tokenizer, text)  # BOS first where the tokenizer adds one by default
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ew = sliding_windows(ids, spec.window, spec.stride, pad, spec.describe(), skip_prev_end=spec.text_prep == "paper")
    if spec.text_prep == "paper-gpt2":
        ew.weight = new_token_weights(ew)
    return ew


def new_token_weights(ew: EvalWindows) -> np.ndarray:
    """``text_prep: paper-gpt2``'s factor per window: its new tokens over its scored predictions (window 0:
    ``e_0 / (e_0 - 1)``, it counts the first token it cannot predict; every other window 1)."""
    w = np.ones(ew.n_windows)
    first = int(ew.attention_mask[0].sum())
    w[0] = first / (first - 1)
    return w


# ------------------------------------------------------------------------------------------ NLL


def window_nll(engine, ew: EvalWindows, variants: list[Variant], *, batch_size: int = 8,
               device: str = "cpu") -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Per-window NLL sums over the scored tokens.

    Returns ``(base_nll_sum [W], tokens [W], [nll_sum [W] of each variant, in order])``. One cached base
    pass per batch; each variant resumes from its first changed slot (:class:`ProbeEngine`).
    """
    w = ew.n_windows
    base = np.zeros(w)
    weight = np.ones(w) if ew.weight is None else ew.weight
    tokens = ew.score_mask.sum(1).astype(np.float64) * weight
    out = [np.zeros(w) for _ in variants]
    batches = window_batches(ew.input_ids, ew.attention_mask, batch_size, scored=ew.score_mask)
    for m in sweep(engine, batches, variants, device=device, desc="perplexity"):
        sel = m.batch.scored[m.state.valid].to(m.nll.device)  # scored positions among the valid tokens
        z = torch.zeros(m.state.n_seqs, dtype=torch.float64, device=m.nll.device)
        (base if m.k is None else out[m.k])[m.batch.rows] = z.index_add_(0, m.state.token_seq.to(m.nll.device)[sel],
                                                                        m.nll[sel]).cpu().numpy()
    return base * weight, tokens, [o * weight for o in out]


def perplexity(nll_sum, tokens) -> float:
    return float(np.exp(np.sum(nll_sum) / np.sum(tokens)))



