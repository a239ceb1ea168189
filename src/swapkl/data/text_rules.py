"""Text rules of the published study's scripts that differ from swapkl's clean rules (docs/paper_modes.md).

Plain functions on strings, no model: :mod:`swapkl.data.windows` applies :func:`paper_qwen3_items` under
``selection: paper-qwen3`` and :mod:`swapkl.pruning.perplexity` applies :func:`paper_eval_text` under
``text_prep: paper``.
"""

from __future__ import annotations

import numpy as np

#: the paper's Qwen3-8B rule: rows of at least this many characters (after stripping)
PAPER_QWEN3_MIN_CHARS = 50


def paper_qwen3_items(paragraphs: list[str], seed: int) -> list[str]:
    """The paper's Qwen3-8B candidate rows, in the order they are tried: each row stripped, rows shorter than
    :data:`PAPER_QWEN3_MIN_CHARS` characters or starting with ``=`` dropped, the rest shuffled in place by
    ``numpy.random.default_rng(seed).shuffle`` (the paper: seed 42). Cutting to ``seq_len`` tokens, skipping
    rows under ``min_tokens`` tokens and keeping the first ``n_seqs`` is :func:`swapkl.data.windows.select_windows`'
    in-order selection."""
    items = [p.strip() for p in paragraphs]
    items = [p for p in items if len(p) >= PAPER_QWEN3_MIN_CHARS and not p.startswith("=")]
    np.random.default_rng(seed).shuffle(items)
    return items


def paper_eval_text(rows: list[str], max_words: int | None) -> str:
    """The matched perplexity evaluator's text: every row that is not blank kept as it is (headings too),
    joined by a blank line; when that text has more than ``max_words`` whitespace-separated words, its first
    ``max_words`` words re-joined by single spaces (otherwise the joined text unchanged)."""
    text = "\n\n".join(r for r in rows if isinstance(r, str) and r.strip())
    words = text.split()
    if max_words is not None and len(words) > max_words:
        text = " ".join(words[:max_words])
    return text
