"""Accuracy-based layer relevance (AccRel), computed by the probe engine.

For a task D with random baseline r(D), the relevance of block l is

    AccRel(l, D) = 1 - max(acc(f_-l, D) - r(D), 0) / max(acc(f, D) - r(D), 0),

undefined (NaN here) when the full model f is not above chance (:func:`swapkl.relevance.tasks.acc_rel`). It is 0 for a block whose
deletion costs nothing, 1 for one whose deletion brings the model down to chance, and negative
when deleting the block *improves* accuracy.

Scoring runs on the engine (:mod:`swapkl.model.choice_scores`): each batch of requests gets one base
pass, and every single-block deletion (or any other set of removed blocks) resumes from the first slot it
changes, so no variant model is ever built. Two kinds of data:

* multiple-choice tasks (:mod:`swapkl.relevance.tasks`): the log-likelihood of each choice is minus the sum of the
  engine's next-token NLL over the choice's tokens (the one NLL of :mod:`swapkl.model.kl`); ``acc`` and
  ``acc_norm`` as lm-eval defines them. Tokenisation follows lm-eval's ``HFLM``: trailing spaces of
  the context move to the continuation, ``context + continuation`` is encoded whole and the
  continuation is what follows the context's own encoding;
* language-modelling windows (:mod:`swapkl.data.windows`): next-token accuracy, the share of positions whose
  greedy (argmax) prediction is the next token; random baseline 1 / vocabulary size.

Besides every single-block deletion, a run can score the pruned models a pruning study chose
(:mod:`swapkl.relevance.scored_models`): each
guide's removed set at each budget (LaCo's merged slots run the averaged block, as in the pruning
study), with AccRel of the pruned model ``f_-S`` in place of ``f_-l``. A ``Scan`` holds the variants
of one run: identical models (the same set chosen by several guides, or a budget-1 set that is a
single-block deletion) are one variant, computed once and reported on each of their rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from swapkl.data.windows import check_windows, load_windows
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.model.choice_scores import choice_loglikelihoods, choice_predictions, next_token_hits, \
    per_document, task_requests
from swapkl.relevance.harness_tasks import harness_relevance, load_harness_tasks
from swapkl.relevance.relevance_jobs import RelevanceJob
from swapkl.relevance.scored_models import Scan, pruned_sets_from_table, scan_for
from swapkl.relevance.tasks import load_task
from swapkl.tables import provenance
from swapkl.tables.file_checks import require_distinct, require_regular_file
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import RELEVANCE_SCHEMA

COLUMNS = RELEVANCE_SCHEMA.names


@dataclass
class TaskScores:
    rows: list[dict]  # relevance rows, acc and acc_norm
    predictions: dict[str, dict[str, np.ndarray]]  # variant key -> metric -> per-document 0/1
    loglikelihoods: dict[str, list[list[float]]]  # variant key -> per-document choice scores


def task_relevance(engine, task, tokenizer, *, model: str, revision: str | None, batch_size: int = 16,
                   pad_id: int = 0, scan: Scan | None = None) -> TaskScores:
    """Relevance of every block (and of each pruned set of ``scan``) on one multiple-choice task, with the
    per-document scores behind it."""
    scan = scan or Scan(engine.n_layers)
    requests = task_requests(task, tokenizer, engine.adapter.max_positions)
    lls = choice_loglikelihoods(engine, requests, scan.variants, batch_size=batch_size, pad_id=pad_id)
    per_variant = {k: choice_predictions(task, requests, x) for k, x in lls.items()}
    rows = []
    for metric in ("acc", "acc_norm"):
        scores = {k: p[metric] for k, p in per_variant.items()}
        rows += scan.rows(model, revision, task.name, metric, scores, task.random_baseline)
    return TaskScores(rows, per_variant, {k: per_document(task, requests, x) for k, x in lls.items()})


def lm_relevance(engine, windows, name: str, *, model: str, revision: str | None, batch_size: int = 8,
                 scan: Scan | None = None) -> list[dict]:
    """Relevance rows of every block (and of each pruned set of ``scan``) on language-modelling windows
    (next-token accuracy)."""
    scan = scan or Scan(engine.n_layers)
    hits = next_token_hits(engine, windows, scan.variants, batch_size=batch_size)
    return scan.rows(model, revision, name, "next_token_acc", hits, 1.0 / engine.adapter.vocab_size)


def run_relevance(job: RelevanceJob) -> None:
    """Relevance of every block of one checkpoint on each task (and LM data), into one Parquet file: a
    :class:`~swapkl.relevance.relevance_jobs.RelevanceJob` (``run_relevance(job)``), whose fields say what each
    option does."""
    job = RelevanceJob.checked(job)
    model, task_files, out, revision, lm_data, lm_name = (job.model, list(job.task_files), job.out, job.revision,
                                                         job.lm_data, job.lm_name)
    harness_tasks, lm_sets, pruning, pruning_guides = job.harness_tasks, job.lm_sets, job.pruning, job.pruning_guides
    dtype, device, batch_size, chunk_tokens = job.dtype, job.device, job.batch_size, job.chunk_tokens
    allow_pickle, trust_remote_code, placement = job.allow_pickle, job.trust_remote_code, job.placement
    label, revision_label = job.label, job.revision_label
    lm_sets = dict(lm_sets or {})
    if lm_data is not None:
        if lm_name in lm_sets:
            raise SwapKLError(f"task names repeat: {lm_name!r} names the LM data and one of the LM sets")
        lm_sets = {lm_name: lm_data} | lm_sets
    if not task_files and not harness_tasks and not lm_sets:
        raise SwapKLError("no task given: name task YAML files, lm-eval task names and/or language-modelling data")
    tasks = [load_task(p) for p in task_files]
    hub_tasks = []
    if harness_tasks:
        hub_tasks = load_harness_tasks(list(harness_tasks))
    names = [t.name for t in tasks] + [t.name for t in hub_tasks] + list(lm_sets)
    if len(set(names)) != len(names):
        raise SwapKLError(f"task names repeat: {names}")
    require_distinct({"`out`": out}, [("`task_files`", t) for t in task_files] + [("`pruning`", pruning)])
    check_writable(out)
    if pruning is not None:
        require_regular_file(pruning, "pruning table")
    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code, **(placement or {}))
    if (tasks or hub_tasks) and loaded.tokenizer is None:
        raise SwapKLError(f"model {model!r} has no tokenizer; multiple-choice tasks need one")
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens)
    label = label or loaded.model_id
    revision = revision_label or loaded.revision
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer is not None and loaded.tokenizer.pad_token_id is not None \
        else 0
    if pruning_guides is not None and pruning is None:
        raise SwapKLError("pruning guides name the guides of a pruning table; give the table too (`pruning`)")
    sets = [] if pruning is None else pruned_sets_from_table(pruning, n_layers=engine.n_layers,
                                                                weights_sha256=loaded.weights_sha256,
                                                                guides=pruning_guides, model=model)
    rows = []
    windows, lm_prov = None, {}
    with scan_for(engine, sets) as scan:
        for t in tasks:
            rows += task_relevance(engine, t, loaded.tokenizer, model=label, revision=revision,
                                   batch_size=batch_size, pad_id=pad, scan=scan).rows
        for t in hub_tasks:
            rows += harness_relevance(engine, t, loaded.tokenizer, model=label, revision=revision,
                                      batch_size=batch_size, pad_id=pad, scan=scan)[0]
        for name, spec in lm_sets.items():
            windows = load_windows(spec, loaded.tokenizer)
            check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
            rows += lm_relevance(engine, windows, name, model=label, revision=revision, batch_size=batch_size,
                                 scan=scan)
            lm_prov[name] = spec.as_dict() | {"source": windows.source, "tokens_sha256": windows.sha256}
    task_prov = {t.name: {"yaml": t.yaml_path, "data": t.data_path, "n_docs": len(t.docs)} for t in tasks}
    task_prov |= {t.name: {"lm_eval_task": t.name, "n_docs": len(t.docs)} for t in hub_tasks}
    pruning_prov = None if pruning is None else {"path": pruning, "guides": pruning_guides or "all",
                                                 "n_pruned_sets": len(sets),
                                                 "n_distinct_pruned_models": scan.n_distinct_sets}
    prov = provenance.build(loaded, windows if len(lm_sets) == 1 else None, tasks=task_prov,
                            n_layers=engine.n_layers, layer_evals=engine.layer_evals,
                            lm_data=None if lm_data is None else lm_data.as_dict(), lm_sets=lm_prov,
                            pruning=pruning_prov, input_sha256=provenance.input_sha256(
                                [*(f for t in tasks for f in (t.yaml_path, t.data_path)), pruning]))
    write_parquet(pa.Table.from_pylist(rows, schema=RELEVANCE_SCHEMA), out, prov)
