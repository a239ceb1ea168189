"""lm-eval tasks by split, for pruning that calibrates on one split and is evaluated on another.

The second paper's task-specific pruning calibrates a guide on each task's *training* split and evaluates the
pruned model on its *test* split. Both sides go through lm-eval's own task definitions: a task is loaded by
name with ``TaskManager`` (``include_path`` for local task YAMLs such as the demo's), and its requests are
built by ``Task.build_all_requests`` on the split asked for, so ``process_docs``, templates and partial
evaluation are lm-eval's. A group (``mmlu``) is loaded as its subtasks and pooled: its accuracy is the mean
over all documents, the size-weighted mean lm-eval reports for it.

The calibration split of a task is its ``training_split``; a task without one (MMLU) calibrates on its
``validation_split`` when that is not the split it is evaluated on; otherwise the task cannot calibrate and
naming it fails. A calibration draws documents reproducibly: a ``fraction`` of the split's documents and/or at
most ``max_docs`` of them, chosen by a seeded permutation.

Multiple-choice tasks are scored from log-likelihoods on the engine; generative tasks (``generate_until``,
GSM8K) by lm-eval's own generation (:mod:`swapkl.relevance.generation`). The requests are built as
``simple_evaluate`` builds them: the task's own ``num_fewshot`` (none: zero-shot) and the few-shot sampler seeded
with lm-eval's default seed.

The demo's tasks get their training split from :func:`swapkl.demo.split_tasks.split_demo_task`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.relevance.generation import FEWSHOT_SEED, GENERATIVE, gold_text
from swapkl.relevance.harness_tasks import HarnessTask

#: the output types a task split may have
OUTPUT_TYPES = ("multiple_choice", GENERATIVE)
CALIBRATION = "calibration"
EVALUATION = "evaluation"


@dataclass
class TaskSplit:
    """One lm-eval task name (a task or a group) on one split: its subtasks' requests, by document."""

    name: str
    split: str
    parts: list[HarnessTask]

    @property
    def n_docs(self) -> int:
        return sum(len(p.docs) for p in self.parts)

    @property
    def generative(self) -> bool:
        """Its documents are generated (``generate_until``) rather than scored by log-likelihood."""
        return self.parts[0].task.OUTPUT_TYPE == GENERATIVE

    def gold_texts(self) -> list[str]:
        """Each document's gold request as one text (context + continuation): calibration text for the
        guides that read windows."""
        out = []
        for part in self.parts:
            if part.task.OUTPUT_TYPE == GENERATIVE:
                out += [gold_text(part.task, doc) for doc in part.docs]
                continue
            for doc, args in zip(part.docs, part.arguments):
                ctx, cont = args[gold_index(part.task, doc, len(args))]
                out.append(ctx + cont)
        return out


def gold_index(task, doc, n_requests: int) -> int:
    """Index of the gold request of a multiple-choice document (lm-eval's ``doc_to_target``)."""
    target = task.doc_to_target(doc)
    if isinstance(target, str):
        choices = task.doc_to_choice(doc)
        target = choices.index(target) if target in choices else int(target)
    if not isinstance(target, (int, np.integer)) or not 0 <= int(target) < n_requests:
        raise SwapKLError(f"lm-eval task {task.config.task!r}: a document's target {target!r} is not one of its "
                          f"{n_requests} requests")
    return int(target)


def _split_of(task, role: str, name: str) -> str:
    cfg = task.config
    test = cfg.test_split or cfg.validation_split
    if role == EVALUATION:
        return test
    for split in (cfg.training_split, cfg.validation_split):
        if split and split != test:
            return split
    raise SwapKLError(f"lm-eval task {name!r} has no training split and no validation split apart from its "
                      f"evaluation split {test!r}: it cannot calibrate")


def _sample(n: int, fraction: float | None, max_docs: int | None, seed: int) -> list[int] | None:
    """Document ids drawn from ``n`` (sorted), or None for all of them."""
    k = n
    if fraction is not None:
        k = max(1, math.ceil(fraction * n))
    if max_docs is not None:
        k = min(k, max_docs)
    if k >= n:
        return None
    return sorted(int(i) for i in np.random.default_rng(seed).permutation(n)[:k])


def load_split(manager, name: str, role: str, *, fraction: float | None = None, max_docs: int | None = None,
               seed: int = 0) -> TaskSplit:
    """Task or group ``name`` on its calibration or evaluation split (``role``), lm-eval's requests built;
    ``fraction`` / ``max_docs``: a seeded draw of each subtask's documents."""
    if name not in manager.all_tasks:
        raise SwapKLError(f"lm-eval knows no task {name!r}")
    parts, splits = [], set()
    for sub, task in sorted(manager.load([name])["tasks"].items()):
        if task.OUTPUT_TYPE not in OUTPUT_TYPES:
            raise SwapKLError(f"lm-eval task {sub!r} is {task.OUTPUT_TYPE}, not {' or '.join(OUTPUT_TYPES)}")
        split = _split_of(task, role, sub)
        if task.get_config("num_fewshot") is None:
            task.set_config(key="num_fewshot", value=0)  # as simple_evaluate: no default means zero-shot
        task.set_fewshot_seed(seed=FEWSHOT_SEED)
        task.config.test_split = split  # build_all_requests builds the test split's requests: make it this one
        n = len(task.dataset[split])
        task.build_all_requests(samples=_sample(n, fraction, max_docs, seed), rank=0, world_size=1)
        by_doc: dict[int, list] = {}
        for inst in task.instances:
            by_doc.setdefault(inst.doc_id, []).append(inst)
        ids = sorted(by_doc)
        if not ids:
            raise SwapKLError(f"lm-eval task {sub!r} has no document on split {split!r}")
        docs = [by_doc[d][0].doc for d in ids]
        arguments = [[tuple(i.arguments) for i in sorted(by_doc[d], key=lambda i: i.idx)] for d in ids]
        parts.append(HarnessTask(sub, task, docs, arguments))
        splits.add(split)
    if len({p.task.OUTPUT_TYPE for p in parts}) > 1:
        raise SwapKLError(f"lm-eval group {name!r} mixes generative and multiple-choice subtasks")
    return TaskSplit(name, "+".join(sorted(splits)), parts)


def task_manager(include_path: str | None, include_defaults: bool):
    try:
        from lm_eval.tasks import TaskManager
    except ImportError as e:
        raise SwapKLError("lm-eval task names need lm-evaluation-harness: pip install -e .[lmeval]") from e
    return TaskManager(include_path=include_path, include_defaults=include_defaults)
