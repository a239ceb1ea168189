"""Token windows for demo training and evaluation.

A corpus file is tokenised paragraph by paragraph, the paragraphs are concatenated with the eos token
after each one, and the token stream is cut into contiguous, non-overlapping windows (the tail that does
not fill a window is dropped).
"""

from __future__ import annotations

from pathlib import Path

import torch

from swapkl.demo.corpus import read_paragraphs
from swapkl.errors import SwapKLError


def token_stream(paragraphs: list[str], tokenizer) -> torch.Tensor:
    """All paragraphs' token ids, each followed by ``tokenizer.eos_token_id``, as one int64 vector."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise SwapKLError("the demo tokenizer has no eos token")
    encoded = tokenizer(paragraphs, add_special_tokens=False)["input_ids"]
    ids: list[int] = []
    for paragraph_ids in encoded:
        ids.extend(paragraph_ids)
        ids.append(eos)
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
