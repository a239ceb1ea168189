"""Tasks that lm-evaluation-harness loads by name (the paper's ``arc_challenge``, ``arc_easy``, ``boolq``,
``hellaswag``, ``openbookqa``, ``piqa``, ``winogrande``, ``mmlu``), scored on the probe engine.

lm-eval does everything that defines the task: it downloads the dataset from the hub, applies the task's
own code (``process_docs``, templates, partial evaluation as in WinoGrande), builds the
``(context, continuation)`` requests of every document and turns their log-likelihoods into ``acc`` and
``acc_norm`` (``Task.process_results``). swapkl only computes those log-likelihoods, on the engine, for the
base model and every single-block deletion (:func:`swapkl.relevance.choice_scores.choice_loglikelihoods`, tokenised as
``HFLM`` does). A group (``mmlu``) is scored per subtask, one task name per subtask. Only zero-shot
multiple-choice tasks are accepted; the random baseline is the mean over documents of 1 / number of
requests of the document (its choices, or its contexts under partial evaluation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.relevance.choice_scores import choice_loglikelihoods, make_request
from swapkl.relevance.scored_models import Scan
from swapkl.relevance.tasks import METRICS, random_baseline


@dataclass
class HarnessTask:
    name: str
    task: object  # an lm_eval.api.task.Task with its instances built
    docs: list  # lm-eval's documents, by doc_id
    arguments: list[list[tuple[str, str]]]  # per document: its requests' (context, continuation), by idx

    @property
    def random_baseline(self) -> float:
        return random_baseline([len(a) for a in self.arguments])


def load_harness_tasks(names: list[str], *, include_path: str | None = None,
                       include_defaults: bool = True) -> list[HarnessTask]:
    """lm-eval's tasks (groups expanded into subtasks) with their requests built."""
    try:
        from lm_eval.tasks import TaskManager
    except ImportError as e:
        raise SwapKLError("lm-eval task names need lm-evaluation-harness: pip install -e .[lmeval]") from e
    manager = TaskManager(include_path=include_path, include_defaults=include_defaults)
    unknown = [n for n in names if n not in manager.all_tasks]
    if unknown:
        raise SwapKLError(f"lm-eval knows no task {', '.join(map(repr, unknown))}")
    out = []
    for name, task in sorted(manager.load(list(names))["tasks"].items()):
        if task.OUTPUT_TYPE != "multiple_choice":
            raise SwapKLError(f"lm-eval task {name!r} is {task.OUTPUT_TYPE}, not multiple_choice")
        if task.config.num_fewshot not in (None, 0):
            raise SwapKLError(f"lm-eval task {name!r} is {task.config.num_fewshot}-shot; swapkl scores zero-shot")
        task.build_all_requests(rank=0, world_size=1)
        by_doc: dict[int, list] = {}
        for inst in task.instances:
            by_doc.setdefault(inst.doc_id, []).append(inst)
        ids = sorted(by_doc)
        docs = [by_doc[d][0].doc for d in ids]
        arguments = [[tuple(i.arguments) for i in sorted(by_doc[d], key=lambda i: i.idx)] for d in ids]
        out.append(HarnessTask(name, task, docs, arguments))
    return out


def harness_relevance(engine, task: HarnessTask, tokenizer, *, model: str, revision: str | None,
                      batch_size: int = 16, pad_id: int = 0,
                      scan: Scan | None = None) -> tuple[list[dict], dict[str, dict[str, np.ndarray]]]:
    """Relevance rows (``acc`` and ``acc_norm``) of every block (and of each pruned set of ``scan``) on one
    lm-eval task, and the per-document 0/1 scores behind them (variant key -> metric -> array), as lm-eval's
    ``process_results`` gives them."""
    scan = scan or Scan(engine.n_layers)
    requests = [make_request(tokenizer, d, c, ctx, cont, engine.adapter.max_positions, task.name)
                for d, args in enumerate(task.arguments) for c, (ctx, cont) in enumerate(args)]
    lls = choice_loglikelihoods(engine, requests, scan.variants, batch_size=batch_size, pad_id=pad_id)
    per_variant = {}
    for key, x in lls.items():
        per_doc: list[list[float]] = [[] for _ in task.docs]
        for r, v in zip(requests, x):
            per_doc[r.doc].append(float(v))
        results = [task.task.process_results(doc, [(v, False) for v in vs]) for doc, vs in zip(task.docs, per_doc)]
        per_variant[key] = {m: np.array([float(r[m]) for r in results]) for m in METRICS if m in results[0]}
    rows = []
    for metric in METRICS:
        if metric in per_variant[next(iter(per_variant))]:
            scores = {k: p[metric] for k, p in per_variant.items()}
            rows += scan.rows(model, revision, task.name, metric, scores, task.random_baseline)
    return rows, per_variant
