"""The demo's LAMBADA-style last-word task, built from the demo corpus's held-out ``test.txt``.

Each document is the opening of a test paragraph cut after a word, seeded: the first k words (12 <= k <= 40)
of a paragraph whose k-th word is alphabetic, so the target is a word and not punctuation or code. The file
is JSONL with one field ``text``, the format of lm-eval's ``lambada_openai``; the downstream benchmarks score it
as that task does (context = everything before the last space, target = the last word, accuracy = the greedy
decoding reproduces it).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from swapkl.demo.corpus import corpus_file, read_paragraphs
from swapkl.errors import SwapKLError
from swapkl.tables.atomic import write_text_atomic

_WORD = re.compile(r"^[A-Za-z]+$")


def last_word_texts(paragraphs: list[str], *, n_docs: int, seed: int, min_words: int = 12,
                    max_words: int = 40) -> list[str]:
    """``n_docs`` seeded openings of ``paragraphs`` that end in an alphabetic word (see the module docstring)."""
    rng = random.Random(seed)
    usable = [p.split() for p in paragraphs if len(p.split()) >= min_words]
    texts: list[str] = []
    for _ in range(100 * n_docs):
        if len(texts) == n_docs or not usable:
            break
        words = rng.choice(usable)
        k = rng.randint(min_words, min(len(words), max_words))
        if _WORD.match(words[k - 1]):
            texts.append(" ".join(words[:k]))
    if len(texts) < n_docs:
        raise SwapKLError(f"could not draw {n_docs} last-word documents of {min_words} words or more")
    return texts


def build_demo_last_word(corpus_dir: Path, out: Path, *, n_docs: int = 200, seed: int = 0) -> str:
    """Write the demo's last-word task to ``out`` (JSONL, field ``text``); return its path."""
    texts = last_word_texts(read_paragraphs(corpus_file(Path(corpus_dir), "test")), n_docs=n_docs, seed=seed)
    write_text_atomic(Path(out), "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts))
    return str(out)
