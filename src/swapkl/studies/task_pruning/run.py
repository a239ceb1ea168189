"""Task-calibrated layer pruning (the second paper's task-specific and task-agnostic pruning), one job per
checkpoint.

The job chooses the blocks each method removes on each named calibration set
(:mod:`swapkl.relevance.task_calibration`): the calibration split of one task (task-specific), a mix of a fraction
of every task's calibration split (task-agnostic), or language-modelling windows (C4). The main budget is
``round(prune_fraction * L)`` blocks (the paper: 25%); ``curve_methods`` are also chosen at every budget of
``curve_budgets`` on the single-task calibrations (the Gromov curves: accuracy against blocks removed).
Every pruned model, and the unpruned one (method ``original``, budget 0), is then evaluated on the evaluation
split of every task, through lm-eval's own task definitions (:mod:`swapkl.relevance.task_splits`), scored on the engine: identical removed sets (of any
method and calibration) are one variant, and no pruned model is built.

``curve_tasks`` are tasks that only draw Gromov curves (GSM8K, generative and costly): each calibrates on
itself (calibration kind ``curve``), only ``original`` and the curve methods at the curve budgets are chosen on
it, and its pruned models are evaluated on that task alone, which no other calibration's models are. A
generative task is scored by lm-eval's generation on materialised pruned models
(:mod:`swapkl.relevance.task_generation`), ``exact_match`` per filter.

This is the run of the study's folder (:mod:`swapkl.studies.task_pruning`). The per-job files are concatenated by :func:`swapkl.relevance.task_tables.aggregate_task_pruning` into ``results/seed003_pruning.parquet``
(schema :data:`swapkl.tables.schemas.TASK_PRUNING_SCHEMA`); :mod:`swapkl.relevance.task_tables` derives the
paper's tables from it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import check_windows, load_windows
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.model.variant import removal_variant
from swapkl.relevance.task_calibration import METHODS, Calibration, choose_sets, per_document_metrics, \
    split_loglikelihoods, task_calibration
from swapkl.relevance.task_generation import generative_scores
from swapkl.model.choice_scores import BASE
from swapkl.relevance.task_splits import CALIBRATION, EVALUATION, load_split, task_manager
from swapkl.studies.task_pruning.jobs import TaskPruningJob
from swapkl.tables import provenance
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import TASK_PRUNING_SCHEMA


def main_budget(n_layers: int, prune_fraction: float) -> int:
    """Blocks removed at ``prune_fraction`` of ``n_layers`` (rounded half up), at least 1."""
    if not 0 < prune_fraction < 1:
        raise SwapKLError(f"`prune_fraction` must be between 0 and 1, got {prune_fraction}")
    return max(1, int(np.floor(prune_fraction * n_layers + 0.5)))


def method_budgets(methods, curve_methods, curve_budgets, budget: int, kind: str = "task") -> dict[str, list[int]]:
    """method -> the budgets it is chosen at (``original``: none) on a calibration of ``kind``: the main
    ``budget`` for every method, and the curve budgets for the curve methods on a single task; a ``curve``
    calibration chooses only the curve methods, at the curve budgets only."""
    if kind == "curve":
        base = {"original": []} if "original" in methods else {}
        return base | {m: sorted(set(curve_budgets)) for m in curve_methods}
    out = {m: ([] if m == "original" else [budget]) for m in methods}
    for m in curve_methods if kind == "task" else ():
        out[m] = sorted(set(out.get(m, [])) | set(curve_budgets))
    return out


def load_calibration(manager, calibration: dict, tokenizer, *, seq_len: int, pad_id: int, seed: int) -> Calibration:
    """The named calibration set: ``{name, tasks, fraction, max_docs}`` (tasks) or ``{name, lm}`` (a DataSpec)."""
    name = calibration["name"]
    if calibration.get("lm") is not None:
        if calibration.get("tasks"):
            raise SwapKLError(f"calibration {name!r} names both tasks and language-modelling data")
        spec = calibration["lm"] if isinstance(calibration["lm"], DataSpec) else DataSpec(**calibration["lm"])
        return Calibration(name, "lm", load_windows(spec, tokenizer))
    if not calibration.get("tasks"):
        raise SwapKLError(f"calibration {name!r} names no task and no language-modelling data")
    splits = [load_split(manager, t, CALIBRATION, fraction=calibration.get("fraction"),
                         max_docs=calibration.get("max_docs"), seed=seed) for t in calibration["tasks"]]
    calib = task_calibration(name, splits, tokenizer, seq_len=seq_len, pad_id=pad_id)
    if calibration.get("curve"):
        if calibration["tasks"] != [name]:
            raise SwapKLError(f"curve calibration {name!r} must calibrate on its own task alone")
        calib.kind = "curve"
    return calib


def _split_scores(engine, split, tokenizer, sets, *, batch_size: int, pad_id: int) -> dict[tuple, dict]:
    """removed set (``()``: unpruned) -> metric -> per-document values over the split's documents."""
    if split.generative:
        return generative_scores(engine, split, tokenizer, sets, batch_size=batch_size)
    variants = {s: removal_variant(s, engine.n_layers) for s in sets if s}
    per: dict[tuple, dict[str, list]] = {}
    for part, requests, lls in split_loglikelihoods(engine, split, tokenizer, list(variants.values()),
                                                    batch_size=batch_size, pad_id=pad_id):
        for s in {*variants, ()}:
            for metric, x in per_document_metrics(part, requests, lls[variants[s].key if s else BASE]).items():
                per.setdefault(s, {}).setdefault(metric, []).append(x)
    return {s: {m: np.concatenate(p) for m, p in by.items()} for s, by in per.items()}


def evaluation_rows(engine, splits, tokenizer, sets: dict, *, batch_size: int, pad_id: int,
                    curves: frozenset = frozenset()) -> list[dict]:
    """One row per (calibration, method, budget) key of ``sets``, task and metric: lm-eval's metric pooled over
    the task's documents. Identical removed sets (across methods and calibrations) are scored once. The sets of
    a curve calibration (``curves``, named as their task) are evaluated on that task alone, which no other
    calibration's sets are."""
    rows = []
    for split in splits:
        keys = {k: s for k, s in sets.items() if (k[0] == split.name if split.name in curves else k[0] not in curves)}
        per = _split_scores(engine, split, tokenizer, set(keys.values()), batch_size=batch_size, pad_id=pad_id)
        for (calibration, method, budget), s in keys.items():
            for metric, x in per[s].items():
                rows.append(dict(calibration=calibration, method=method, budget=budget, removed_layers=list(s),
                                 task=split.name, split=split.split, metric=metric, accuracy=float(x.mean()),
                                 n_docs=int(len(x))))
    return rows


def _calibration_columns(calib: Calibration) -> dict:
    return dict(calibration_kind=calib.kind, n_calibration_docs=calib.n_docs,
                calibration_split="+".join(sorted({s.split for s in calib.splits})) or calib.windows.source)


def run_task_pruning(job: TaskPruningJob) -> None:
    """Choose each method's blocks on each calibration set of a
    :class:`~swapkl.studies.task_pruning.jobs.TaskPruningJob` (``run_task_pruning(job)``; the curve methods also
    at the curve budgets, on single-task calibrations) and evaluate every pruned model on every task of its
    ``tasks`` (lm-eval names; evaluation split), into one Parquet file, its ``out``. ``curve_tasks``: tasks
    evaluated only on the models of their own curve calibration (a calibration ``{name: task, tasks: [task],
    curve: true}``)."""
    job = TaskPruningJob.checked(job)
    calibrations, tasks, curve_tasks, methods = list(job.calibrations), list(job.tasks), job.curve_tasks, job.methods
    curve_methods, curve_budgets, prune_fraction = job.curve_methods, job.curve_budgets, job.prune_fraction
    spacing, score_pairs, seq_len, seed, batch_size = job.spacing, job.score_pairs, job.seq_len, job.seed, job.batch_size
    out, metadata = job.out, dict(job.metadata or {})
    curve_names = sorted(c["name"] for c in calibrations if c.get("curve"))
    if curve_names != sorted(curve_tasks) or set(curve_tasks) & set(tasks):
        raise SwapKLError(f"the curve tasks {sorted(curve_tasks)} must be exactly the curve calibrations "
                          f"{curve_names} and not among `tasks`")
    if not tasks or not calibrations:
        raise SwapKLError("no evaluation task (`tasks`) or no calibration set (`calibrations`) given")
    unknown = sorted((set(methods) | set(curve_methods)) - set(METHODS))
    if unknown:
        raise SwapKLError(f"unknown pruning method {', '.join(map(repr, unknown))}: choose from {', '.join(METHODS)}")
    names = [c.get("name") for c in calibrations]
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise SwapKLError(f"calibration sets need distinct names, got {names}")
    check_writable(out)
    manager = task_manager(job.include_path, job.include_defaults)
    evaluation = [load_split(manager, t, EVALUATION) for t in [*tasks, *curve_tasks]]
    loaded = load_model(job.model, job.revision, dtype=job.dtype, device=job.device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code, **(job.placement or {}))
    if loaded.tokenizer is None:
        raise SwapKLError(f"model {job.model!r} has no tokenizer; multiple-choice tasks need one")
    engine = ProbeEngine(loaded.model, chunk_tokens=job.chunk_tokens)
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    budget = main_budget(engine.n_layers, prune_fraction)
    sets, columns, provs = {}, {}, {}
    for spec in calibrations:
        calib = load_calibration(manager, spec, loaded.tokenizer, seq_len=seq_len, pad_id=pad, seed=seed)
        check_windows(calib.windows, engine.adapter.vocab_size, engine.adapter.max_positions)
        budgets = method_budgets(methods, curve_methods, curve_budgets, budget, calib.kind)
        chosen = choose_sets(engine, calib, loaded.tokenizer, budgets, spacing=spacing, score_pairs=score_pairs,
                             batch_size=batch_size, pad_id=pad, device=engine.unemb.weight.device)
        sets |= {(calib.name, m, b): s for (m, b), s in chosen.items()}
        columns[calib.name] = _calibration_columns(calib)
        provs[calib.name] = {k: v for k, v in spec.items() if k != "lm"} | {
            "data_source": calib.windows.source, "tokens_sha256": calib.windows.sha256}
    head = dict(model=metadata.get("model") or loaded.model_id, revision=metadata.get("revision") or loaded.revision,
                n_layers=engine.n_layers)
    rows = [head | columns[r["calibration"]] | r for r in evaluation_rows(
        engine, evaluation, loaded.tokenizer, sets, batch_size=batch_size, pad_id=pad, curves=frozenset(curve_tasks))]
    prov = provenance.build(loaded, calibrations=provs,
                            tasks={s.name: {"split": s.split, "n_docs": s.n_docs, "subtasks": [p.name for p in s.parts]}
                                   for s in evaluation},
                            prune_fraction=prune_fraction, budget=budget, spacing=spacing, score_pairs=score_pairs,
                            seq_len=seq_len, seed=seed, n_layers=engine.n_layers, layer_evals=engine.layer_evals)
    write_parquet(pa.Table.from_pylist(rows, schema=TASK_PRUNING_SCHEMA), out, prov)
