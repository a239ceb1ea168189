"""Generative (``output_type: generate_until``) lm-eval tasks such as GSM8K, scored by lm-evaluation-harness's own
generation path on a model held in memory.

Everything that defines the score is lm-eval's: the task (loaded by ``TaskManager``, from the hub or a local
YAML) builds each document's prompt with its few-shot examples (``Task.build_all_requests``; the few-shot
sampler seeded as ``simple_evaluate`` seeds it, :data:`FEWSHOT_SEED`), its ``generation_kwargs`` (the ``until``
stop strings, greedy decoding, ``max_gen_toks``) go to ``HFLM.generate_until``, which batches, left-pads,
generates and cuts at the first stop string, and the task's filters (``filter_list``: GSM8K's ``strict-match``
and ``flexible-extract`` regexes, then ``take_first``) and ``process_results`` (``exact_match`` with the task's
``ignore_case``, ``ignore_punctuation`` and ``regexes_to_ignore``) turn the text into one score per document
and filter. swapkl only drives those steps, the way ``lm_eval.evaluator.evaluate`` does, once per model: the
unpruned model, or a pruned one materialised by :func:`swapkl.relevance.pruned_model.materialise`.

A score is named ``<metric>,<filter>`` (``exact_match,strict-match``), as lm-eval reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError

GENERATIVE = "generate_until"
#: lm-eval's default few-shot seed (``simple_evaluate(fewshot_random_seed=...)``)
FEWSHOT_SEED = 1234


@dataclass
class Generations:
    texts: list[str]  # per document: the generated text (one request per document)
    scores: dict[str, np.ndarray]  # "<metric>,<filter>" -> per-document values


def harness_lm(model, tokenizer, *, batch_size: int):
    """lm-eval's ``HFLM`` around a model object held in memory (no weights are loaded)."""
    try:
        from lm_eval.models.huggingface import HFLM
    except ImportError as e:
        raise SwapKLError("generative tasks need lm-evaluation-harness: pip install -e .[lmeval]") from e
    return HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size)


def _by_document(task) -> dict[int, list]:
    by_doc: dict[int, list] = {}
    for inst in task.instances:
        by_doc.setdefault(inst.doc_id, []).append(inst)
    return {d: sorted(v, key=lambda i: i.idx) for d, v in sorted(by_doc.items())}


def generate(lm, part) -> Generations:
    """Generate every document of ``part`` (a :class:`swapkl.relevance.harness_tasks.HarnessTask` of a
    ``generate_until`` task, requests built) with ``lm`` and score it as ``lm_eval.evaluator.evaluate`` does."""
    task = part.task
    if task.OUTPUT_TYPE != GENERATIVE:
        raise SwapKLError(f"lm-eval task {part.name!r} is {task.OUTPUT_TYPE}, not {GENERATIVE}")
    by_doc = _by_document(task)
    if any(len(v) != 1 for v in by_doc.values()):
        raise SwapKLError(f"lm-eval task {part.name!r} asks for several generations per document (repeats); "
                          "swapkl scores one")
    instances = [v[0] for v in by_doc.values()]
    for inst in task.instances:  # a fresh model: the previous model's responses go
        inst.resps, inst.filtered_resps = [], {}
    texts = lm.generate_until(instances, disable_tqdm=True)
    for inst, text in zip(instances, texts):
        inst.resps.append(text)
    task.apply_filters()
    scores: dict[str, list[float]] = {}
    for key in instances[0].filtered_resps:
        for inst, doc in zip(instances, part.docs):
            for metric, value in task.process_results(doc, [inst.filtered_resps[key]]).items():
                scores.setdefault(f"{metric},{key}", []).append(float(value))
    return Generations(list(texts), {k: np.array(v) for k, v in scores.items()})


def gold_text(task, doc) -> str:
    """A generative document as text: its own prompt (no few-shot examples), the target delimiter and its target
    (GSM8K: question, worked answer and ``#### n``)."""
    target = task.doc_to_target(doc)
    if isinstance(target, list):
        target = target[0]
    return f"{task.doc_to_text(doc)}{task.config.target_delimiter}{target}"
