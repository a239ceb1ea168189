"""Tasks that lm-evaluation-harness loads by name (the paper's ``arc_challenge``, ``arc_easy``, ``boolq``,
``hellaswag``, ``openbookqa``, ``piqa``, ``winogrande``, ``mmlu``), scored on the probe engine.

lm-eval does everything that defines the task: it downloads the dataset from the hub, applies the task's
own code (``process_docs``, templates, partial evaluation as in WinoGrande), builds the
``(context, continuation)`` requests of every document and turns their log-likelihoods into ``acc`` and
``acc_norm`` (``Task.process_results``). swapkl only computes those log-likelihoods, on the engine, for the
base model and every single-block deletion (:func:`swapkl.model.choice_scores.choice_loglikelihoods`, tokenised as
``HFLM`` does). A group (``mmlu``) is scored per subtask, one task name per subtask. Only zero-shot
multiple-choice tasks are accepted; the random baseline is the mean over documents of 1 / number of
requests of the document (its choices, or its contexts under partial evaluation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.model.choice_scores import choice_loglikelihoods, make_request
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


def load_harness_tasks(names: list[str], *, include_path: str | None = None, include_defaults: bool = True,
                       output_types: tuple[str, ...] = ("multiple_choice",),
                       limit: int | None = None) -> list[HarnessTask]:
    """lm-eval's tasks (groups expanded into subtasks) with their requests built: zero-shot tasks of
    ``output_types`` (``multiple_choice``; the downstream benchmarks also take ``loglikelihood``, LAMBADA),
    each on its first ``limit`` documents (lm-eval's ``limit``; None: all)."""
    try:
        from lm_eval.tasks import TaskManager
    except ImportError as e:
        raise SwapKLError("lm-eval task names need lm-evaluation-harness: pip install -e .[lmeval]") from e
    manager = TaskManager(include_path=include_path, include_defaults=include_defaults)
    unknown = [n for n in names if n not in manager.all_tasks]
    if unknown:
        raise SwapKLError(f"lm-eval knows no task {', '.join(map(repr, unknown))}")
    loaded = {}
    for name in names:
        try:
            loaded.update(manager.load([name])["tasks"])
        except OSError as e:  # datasets' ConnectionError offline, a dataset the hub does not have, a file error
            first = " ".join(str(e).split()) or type(e).__name__
            raise SwapKLError(f"lm-eval task {name!r}: its dataset cannot be loaded ({first}); lm-eval fetches "
                              "its tasks' datasets from the dataset hub, so run where the hub is reachable or "
                              "score local task files (--tasks)") from None
    out = []
    for name, task in sorted(loaded.items()):
        if task.OUTPUT_TYPE not in output_types:
            raise SwapKLError(f"lm-eval task {name!r} is {task.OUTPUT_TYPE}, not {' or '.join(output_types)}")
        if task.config.num_fewshot not in (None, 0):
            raise SwapKLError(f"lm-eval task {name!r} is {task.config.num_fewshot}-shot; swapkl scores zero-shot")
        task.build_all_requests(limit=limit, rank=0, world_size=1)
        by_doc: dict[int, list] = {}
        for inst in task.instances:
            by_doc.setdefault(inst.doc_id, []).append(inst)
        ids = sorted(by_doc)
        docs = [by_doc[d][0].doc for d in ids]
        arguments = [[tuple(i.arguments) for i in sorted(by_doc[d], key=lambda i: i.idx)] for d in ids]
        out.append(HarnessTask(name, task, docs, arguments))
    return out


def harness_requests(task: HarnessTask, tokenizer, max_positions: int | None) -> list:
    """Every (context, continuation) request of the task's documents, tokenised as ``HFLM`` does."""
    return [make_request(tokenizer, d, c, ctx, cont, max_positions, task.name)
            for d, args in enumerate(task.arguments) for c, (ctx, cont) in enumerate(args)]


def harness_results(task: HarnessTask, requests: list, lls, greedy=None, *, metrics=None) -> dict[str, np.ndarray]:
    """lm-eval's per-document results (``Task.process_results``) from request log-likelihoods (and greedy
    matches, for loglikelihood tasks), as metric -> array over documents; only ``metrics`` when given."""
    per_doc: list[list[tuple[float, bool]]] = [[] for _ in task.docs]
    for k, (r, v) in enumerate(zip(requests, lls)):
        per_doc[r.doc].append((float(v), bool(greedy[k]) if greedy is not None else False))
    results = [task.task.process_results(doc, vs) for doc, vs in zip(task.docs, per_doc)]
    names = [m for m in (metrics or results[0]) if m in results[0]]
    return {m: np.array([float(r[m]) for r in results]) for m in names}


def harness_relevance(engine, task: HarnessTask, tokenizer, *, model: str, revision: str | None,
                      batch_size: int = 16, pad_id: int = 0,
                      scan: Scan | None = None) -> tuple[list[dict], dict[str, dict[str, np.ndarray]]]:
    """Relevance rows (``acc`` and ``acc_norm``) of every block (and of each pruned set of ``scan``) on one
    lm-eval task, and the per-document 0/1 scores behind them (variant key -> metric -> array), as lm-eval's
    ``process_results`` gives them."""
    scan = scan or Scan(engine.n_layers)
    requests = harness_requests(task, tokenizer, engine.adapter.max_positions)
    lls = choice_loglikelihoods(engine, requests, scan.variants, batch_size=batch_size, pad_id=pad_id)
    per_variant = {key: harness_results(task, requests, x, metrics=METRICS) for key, x in lls.items()}
    rows = []
    for metric in METRICS:
        if metric in per_variant[next(iter(per_variant))]:
            scores = {k: p[metric] for k, p in per_variant.items()}
            rows += scan.rows(model, revision, task.name, metric, scores, task.random_baseline)
    return rows, per_variant
