"""The downstream benchmarks (:mod:`swapkl.relevance.downstream`): tasks of three sources, scored on the engine.

* **lm-eval task names** (the paper's ``hellaswag``, ``piqa``, ``winogrande``, ``arc_easy``, ``arc_challenge``,
  ``lambada_openai``): lm-eval loads the task and builds every request and turns the log-likelihoods into its
  own per-document results (``Task.process_results``, :mod:`swapkl.relevance.harness_tasks`); multiple choice
  gives ``acc`` and ``acc_norm``, a ``loglikelihood`` task (LAMBADA) ``acc`` (greedy match) and the
  log-likelihood behind ``perplexity``;
* **task YAML files** in lm-eval's format (local JSONL, zero-shot multiple choice; :mod:`swapkl.relevance.tasks`):
  ``acc`` and ``acc_norm`` as lm-eval defines them;
* **last-word files** (JSONL with a ``text`` field, the format of ``lambada_openai``): each document split at
  its last space as ``lambada_openai`` splits it (:mod:`swapkl.relevance.lambada`), the task named after the
  file.

``limit`` keeps each task's first ``limit`` documents (lm-eval's ``--limit``). Every request is tokenised as
lm-eval's ``HFLM`` does; multiple-choice requests are scored by
:func:`swapkl.model.choice_scores.choice_loglikelihoods`, last-word requests by
:func:`swapkl.relevance.lambada.continuation_scores` (log-likelihood and greedy match), for the base model and
every variant at once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.model.choice_scores import choice_loglikelihoods, choice_predictions, task_requests
from swapkl.relevance.harness_tasks import harness_requests, harness_results, load_harness_tasks
from swapkl.relevance.lambada import continuation_scores, lambada_metrics, lambada_requests, load_texts
from swapkl.relevance.tasks import first_docs, load_task

KINDS = ("multiple_choice", "loglikelihood")
#: lm-eval's per-document result keys swapkl reports (``perplexity`` is the document's log-likelihood there)
RESULT_KEYS = ("acc", "acc_norm", "perplexity")


@dataclass
class Benchmark:
    """One task: its name, kind (:data:`KINDS`), where it comes from (``source``, for the provenance), and the
    object that builds its requests and reads its results (``task``: a swapkl task, a ``HarnessTask`` or the
    list of last-word texts)."""

    name: str
    kind: str
    source: dict
    task: object

    @property
    def n_docs(self) -> int:
        return len(self.task) if isinstance(self.task, list) else len(self.task.docs)

    def requests(self, tokenizer, max_positions: int | None) -> list:
        if isinstance(self.task, list):
            return lambada_requests(self.task, tokenizer, max_positions, self.name)
        if self.source.get("lm_eval_task"):
            return harness_requests(self.task, tokenizer, max_positions)
        return task_requests(self.task, tokenizer, max_positions)

    def results(self, requests: list, ll: np.ndarray, greedy: np.ndarray | None) -> dict[str, np.ndarray]:
        """Per-document ``acc`` [, ``acc_norm``] [, ``loglikelihood``] (arrays over documents)."""
        if isinstance(self.task, list):
            return {"acc": greedy.astype(np.float64), "loglikelihood": ll}
        if self.source.get("lm_eval_task"):
            out = harness_results(self.task, requests, ll, greedy, metrics=RESULT_KEYS)
            if "perplexity" in out:  # lm-eval's per-document item of the perplexity metric: the log-likelihood
                out["loglikelihood"] = out.pop("perplexity")
            return out
        return choice_predictions(self.task, requests, ll)


def summary(results: dict[str, np.ndarray]) -> dict:
    """A task's scores for one model: ``accuracy`` (mean ``acc``), ``acc_norm`` (where reported),
    ``perplexity`` (``exp(-mean log-likelihood)``, lm-eval's aggregation, for loglikelihood tasks), ``n``."""
    acc = results["acc"]
    out = {"accuracy": float(np.mean(acc)), "acc_norm": None, "perplexity": None, "n": int(len(acc))}
    if "acc_norm" in results:
        out["acc_norm"] = float(np.mean(results["acc_norm"]))
    if "loglikelihood" in results:
        out["perplexity"] = lambada_metrics(results["loglikelihood"], acc > 0)["perplexity"]
    return out


def _check_limit(limit) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise SwapKLError(f"`limit` must be a positive number of documents or null, got {limit!r}")


def load_benchmarks(task_files=(), last_word_files=(), lm_eval_tasks=(), *, limit: int | None = None,
                    include_path: str | None = None) -> list[Benchmark]:
    """Every task, in the order: task YAML files, last-word files, lm-eval names; a one-line error when none
    is given, a name repeats or a file cannot be read."""
    _check_limit(limit)
    if not task_files and not last_word_files and not lm_eval_tasks:
        raise SwapKLError("no downstream task given: name task YAML files, last-word files and/or lm-eval tasks")
    out = []
    for path in task_files:
        task = load_task(path)
        task = first_docs(task, limit)
        out.append(Benchmark(task.name, "multiple_choice", {"yaml": task.yaml_path, "data": task.data_path}, task))
    for path in last_word_files:
        name = os.path.splitext(os.path.basename(path))[0]
        texts = load_texts(path)
        out.append(Benchmark(name, "loglikelihood", {"last_word_file": os.path.abspath(path)}, texts[:limit]))
    if lm_eval_tasks:
        for t in load_harness_tasks(list(lm_eval_tasks), include_path=include_path, output_types=KINDS,
                                    limit=limit):
            out.append(Benchmark(t.name, t.task.OUTPUT_TYPE, {"lm_eval_task": t.name}, t))
    names = [b.name for b in out]
    if len(set(names)) != len(names):
        raise SwapKLError(f"downstream task names repeat: {names}")
    return out


def score_benchmarks(engine, tokenizer, benchmarks: list[Benchmark], variants, *, batch_size: int = 16,
                     pad_id: int = 0) -> dict[str, dict[str, dict]]:
    """``{task: {variant key: summary}}`` for the engine's base model (key
    :data:`swapkl.model.choice_scores.BASE`) and each variant."""
    out = {}
    for b in benchmarks:
        requests = b.requests(tokenizer, engine.adapter.max_positions)
        if b.kind == "multiple_choice":
            lls = choice_loglikelihoods(engine, requests, variants, batch_size=batch_size, pad_id=pad_id)
            scored = {k: (x, None) for k, x in lls.items()}
        else:
            scored = continuation_scores(engine, requests, variants, batch_size=batch_size, pad_id=pad_id)
        out[b.name] = {k: summary(b.results(requests, ll, greedy)) for k, (ll, greedy) in scored.items()}
    return out
