"""Multiple-choice demo tasks built from the demo corpus's held-out ``test.txt``, in lm-eval's format.

Two tasks, seeded and offline, written with :func:`swapkl.relevance.tasks.write_task` (JSONL + task YAML that
lm-eval also runs):

* ``demo_next_word`` (4 choices, chance 0.25): the first k words of a paragraph; the true next word
  against three distractor words drawn from the training text by word frequency, so a model can only
  beat chance by reading the context;
* ``demo_continuation`` (2 choices, chance 0.5): the first k words of a paragraph; its next four words
  against the same four words in another order (same words, so only word order and context decide).

Only alphabetic words serve as answers, so ``acc_norm``'s character lengths mean what they say.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

from swapkl.demo.corpus import corpus_file, read_paragraphs
from swapkl.errors import SwapKLError
from swapkl.relevance.relevance_jobs import DEMO_TASKS as TASKS
from swapkl.relevance.tasks import write_task

_WORD = re.compile(r"^[A-Za-z]+$")


def _frequent_words(paragraphs: list[str], n: int = 2000) -> tuple[list[str], list[int]]:
    counts = Counter(w for p in paragraphs for w in p.split() if _WORD.match(w))
    common = counts.most_common(n)
    return [w for w, _ in common], [c for _, c in common]


def build_demo_tasks(corpus_dir: Path, out_dir: Path, *, n_docs: int = 200, seed: int = 0,
                     max_context_words: int = 24) -> list[str]:
    """Write both demo tasks into ``out_dir``; return the YAML paths."""
    test = read_paragraphs(corpus_file(Path(corpus_dir), "test"))
    words, weights = _frequent_words(read_paragraphs(corpus_file(Path(corpus_dir), "train")))
    rng = random.Random(seed)
    usable = [p.split() for p in test if len(p.split()) >= 12]
    if len(usable) < 2:
        raise SwapKLError(f"{corpus_dir}/test.txt has too few paragraphs of 12 words or more for the demo tasks")
    next_word, continuation = [], []
    for _ in range(100 * n_docs):
        if len(next_word) >= n_docs and len(continuation) >= n_docs:
            break
        para = rng.choice(usable)
        k = rng.randrange(4, min(len(para) - 5, max_context_words) + 1)
        context = " ".join(para[:k])
        gold = para[k]
        if len(next_word) < n_docs and _WORD.match(gold):
            options = [gold]  # a list, not a set: a set's order follows the strings' hashes, which change
            while len(options) < 4:  # from process to process, and so would the choices' order and the gold index
                word = rng.choices(words, weights)[0]
                if word not in options:
                    options.append(word)
            choices = sorted(options, key=lambda _: rng.random())
            next_word.append({"query": context, "choices": choices, "gold": choices.index(gold)})
        if len(continuation) < n_docs:
            shuffled = para[k:k + 4]
            rng.shuffle(shuffled)
            true, false = " ".join(para[k:k + 4]), " ".join(shuffled)
            if true != false:
                choices = [true, false] if rng.random() < 0.5 else [false, true]
                continuation.append({"query": context, "choices": choices, "gold": choices.index(true)})
    if len(next_word) < n_docs or len(continuation) < n_docs:
        raise SwapKLError(f"could not draw {n_docs} documents per demo task from {corpus_dir}/test.txt")
    return [write_task(str(out_dir), "demo_next_word", next_word),
            write_task(str(out_dir), "demo_continuation", continuation)]
