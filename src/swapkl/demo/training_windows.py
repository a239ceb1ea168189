"""Token windows for demo training and evaluation.

A corpus file's paragraphs are joined exactly as swapkl's readers of evaluation text join them (a blank line
between two paragraphs: :func:`swapkl.pruning.perplexity.first_words`, which the perplexity evaluation and the
heal text use) and tokenised like them (:func:`swapkl.data.windows.tokenize_text`: no special tokens); the
token stream is cut into contiguous, non-overlapping windows (the tail that does not fill a window is dropped).

So the demo models are trained on text laid out like the text every demo measurement reads. (An earlier
layout put the eos token between paragraphs: the blank line's newline tokens were then tokens the models had
never seen, each scored at about 17 nats, so that removing blocks could lower perplexity.)
"""

from __future__ import annotations

from pathlib import Path

import torch

from swapkl.data.windows import default_bos
from swapkl.demo.corpus import read_paragraphs
from swapkl.errors import SwapKLError


#: what separates two paragraphs in the training text: the blank line of ``first_words``
PARAGRAPH_SEPARATOR = "\n\n"


def token_stream(paragraphs: list[str], tokenizer) -> torch.Tensor:
    """The token ids of the paragraphs joined by :data:`PARAGRAPH_SEPARATOR`, as one int64 vector.

    The paragraphs are tokenised one by one and the separator's ids put between them: the same ids as
    tokenising the joined text at once (byte-level pre-tokenisation splits at the whitespace, so no token
    crosses a paragraph boundary; tests/test_demo.py checks it), without tokenising megabytes as one string.
    """
    if default_bos(tokenizer) is not None:
        raise SwapKLError("the demo tokenizer adds a BOS token by default; the demo's token stream has none")
    separator = tokenizer(PARAGRAPH_SEPARATOR, add_special_tokens=False)["input_ids"]
    encoded = tokenizer(paragraphs, add_special_tokens=False)["input_ids"]
    ids: list[int] = []
    for k, paragraph_ids in enumerate(encoded):
        if k:
            ids.extend(separator)
        ids.extend(paragraph_ids)
    return torch.tensor(ids, dtype=torch.long)


def file_windows(path: Path, tokenizer, seq_len: int, *, max_windows: int | None = None,
                 min_windows: int = 1) -> torch.Tensor:
    """``[n, seq_len]`` windows of a corpus file (the first ``max_windows`` if given)."""
    if seq_len < 2:
        raise SwapKLError(f"sequence length {seq_len} must be at least 2")
    stream = token_stream(read_paragraphs(path), tokenizer)
    n = stream.numel() // seq_len
    if n < min_windows:
        raise SwapKLError(
            f"{path} gives only {n} windows of {seq_len} tokens, fewer than the {min_windows} needed")
    if max_windows is not None:
        n = min(n, max_windows)
    return stream[: n * seq_len].view(n, seq_len).clone()


class BatchOrder:
    """Deterministic batch order: a seeded permutation of the windows per epoch, cut into batches.

    Batches never straddle two epochs; the tail of each permutation that does not fill a batch is
    dropped, so every batch has the same size.
    """

    def __init__(self, n_windows: int, batch_size: int, seed: int):
        if batch_size < 1:
            raise SwapKLError(f"batch size {batch_size} must be positive")
        if n_windows < batch_size:
            raise SwapKLError(f"only {n_windows} training windows, fewer than one batch of {batch_size}")
        self.n_windows = n_windows
        self.batch_size = batch_size
        self.generator = torch.Generator().manual_seed(seed)
        self._perm = torch.empty(0, dtype=torch.long)
        self._pos = 0
        self.epoch = 0

    def next(self) -> torch.Tensor:
        """Indices of the next batch."""
        if self._pos + self.batch_size > self._perm.numel():
            self._perm = torch.randperm(self.n_windows, generator=self.generator)
            self._pos = 0
            self.epoch += 1
        idx = self._perm[self._pos: self._pos + self.batch_size]
        self._pos += self.batch_size
        return idx
