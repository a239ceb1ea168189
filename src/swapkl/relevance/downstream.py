"""Downstream benchmarks of a checkpoint, its pruned models and its healed models (``results/downstream.parquet``).

The paper's six tasks (HellaSwag, PIQA, WinoGrande, ARC-Easy, ARC-Challenge, LAMBADA; any task of
:mod:`swapkl.relevance.downstream_tasks`) are scored on

* the **base** model;
* every **pruned** model of the checkpoint's pruning table (each guide's set at each budget, LaCo's merged
  slots included, as ``swapkl relevance --pruning`` reads them: :func:`swapkl.relevance.scored_models.pruned_sets_from_table`).
  These are block-list variants of the base, so they run on the probe engine: each batch gets one base pass
  and each distinct pruned model resumes from its first changed slot; no pruned model is built;
* the **healed** models of the recovery stage (:mod:`swapkl.recovery.recovery_table`): each is a checkpoint of
  its own (merged weights), loaded and scored like the base; its ``swapkl_heal.json`` says whether it is the
  unpruned **control** or a healed export, and which blocks that export removed. Each must descend from the
  base's weights (the control's own hash, an export's recorded source hash).

Per scored model and task the row holds ``accuracy`` (``acc``), ``acc_norm`` (multiple choice),
``perplexity`` (LAMBADA), ``score`` (``acc_norm`` where lm-eval reports it, else ``acc``: what the paper's
downstream table reports), ``retention`` against the base model and ``n``; one ``average`` row per scored model
holds the mean over its tasks.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pyarrow as pa

from swapkl.errors import SwapKLError
from swapkl.export import HEAL_FILE, PROVENANCE_FILE as EXPORT_FILE
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.model.choice_scores import BASE
from swapkl.relevance.downstream_jobs import DownstreamJob
from swapkl.relevance.downstream_tasks import load_benchmarks, score_benchmarks
from swapkl.relevance.scored_models import pruned_sets_from_table, scan_for
from swapkl.tables import provenance
from swapkl.tables.file_checks import require_distinct, require_regular_file
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.tables.schemas import DOWNSTREAM_SCHEMA

PHASES = ("base", "pruned", "control", "healed")
AVERAGE = "average"
_NO_SET = dict(guide=None, budget=0, random_draw=None, fixed_set=None, removed_layers=[], merged_layers=None,
               checkpoint=None)


def _score(s: dict) -> float:
    return s["acc_norm"] if s["acc_norm"] is not None else s["accuracy"]


def model_rows(identity: dict, scores: dict[str, dict], base: dict[str, dict] | None) -> list[dict]:
    """The rows of one scored model: one per task (``scores``: task -> summary) and the ``average`` row;
    ``base``: the base model's summaries (None for the base model itself)."""
    rows, retentions = [], []
    for task, s in scores.items():
        ref = _score((base or scores)[task])
        retention = _score(s) / ref if ref > 0 else math.nan
        retentions.append(retention)
        rows.append(identity | dict(task=task, kind=s["kind"], accuracy=s["accuracy"], acc_norm=s["acc_norm"],
                                    score=_score(s), perplexity=s["perplexity"], retention=retention, n=s["n"]))
    rows.append(identity | dict(task=AVERAGE, kind=None, accuracy=float(np.mean([r["accuracy"] for r in rows])),
                                acc_norm=None, score=float(np.mean([r["score"] for r in rows])), perplexity=None,
                                retention=float(np.mean(retentions)), n=int(sum(r["n"] for r in rows))))
    return rows


def heal_record(path: str, base_sha256: str) -> dict:
    """Phase and removed blocks of a healed checkpoint folder, from its ``swapkl_heal.json``; it must descend from
    the base weights ``base_sha256``."""
    f = os.path.join(path, HEAL_FILE)
    if not os.path.isfile(f):
        raise SwapKLError(f"healed model {path!r} has no {HEAL_FILE}: pass checkpoints written by swapkl heal")
    with open(f) as fh:
        heal = json.load(fh)
    export = heal.get("export")
    source_export = os.path.join(str(heal.get("source_path") or ""), EXPORT_FILE)
    if export is None and heal.get("weights_sha256") != base_sha256 and os.path.isfile(source_export):
        with open(source_export) as fh:  # swapkl heal run by hand on an export
            export = json.load(fh)
    if export is None:
        if heal.get("weights_sha256") != base_sha256:
            raise SwapKLError(f"healed model {path!r} was not healed from the base model's weights or an export of them")
        return dict(_NO_SET, phase="control", checkpoint=path)
    if export.get("weights_sha256") != base_sha256:
        raise SwapKLError(f"healed model {path!r} heals an export of other weights than the base model's")
    removed = [int(b) for b in export.get("removed_layers") or []]
    merged = [int(b) for b in export["merged_layers"]] if export.get("merged_layers") else None
    return dict(_NO_SET, phase="healed", guide=export.get("guide"), budget=len(removed), removed_layers=removed,
                merged_layers=merged, checkpoint=path)


def healed_folders(folder: str) -> list[str]:
    """The healed checkpoints in ``folder`` (sub-folders holding ``swapkl_heal.json``), the control first."""
    if not os.path.isdir(folder):
        raise SwapKLError(f"{folder!r} is not a directory of healed checkpoints")
    found = [os.path.join(folder, n) for n in sorted(os.listdir(folder))
             if os.path.isfile(os.path.join(folder, n, HEAL_FILE))]
    return sorted(found, key=lambda p: os.path.basename(p) != "control")


def _check_inputs(out, task_files, last_word_files, pruning, healed, pruning_guides) -> None:
    require_distinct({"`out`": out}, [("`task_files`", t) for t in task_files]
                     + [("`last_word_files`", t) for t in last_word_files] + [("`pruning`", pruning)]
                     + [("`healed`", h) for h in healed])
    check_writable(out)
    if pruning is not None:
        require_regular_file(pruning, "pruning table")
    elif pruning_guides is not None:
        raise SwapKLError("`pruning_guides` names the guides of a pruning table; give the table too (`pruning`)")
    for h in healed:
        if not os.path.isdir(h):
            raise SwapKLError(f"healed model {h!r} is not a checkpoint folder")


def run_downstream(job: DownstreamJob) -> list[dict]:
    """Score the downstream tasks on the base model, the pruning table's pruned models and the healed
    checkpoints (see the module docstring); write one Parquet file and return its rows: a
    :class:`~swapkl.relevance.downstream_jobs.DownstreamJob` (``run_downstream(job)``), whose fields say what
    each option does."""
    job = DownstreamJob.checked(job)
    model, out, revision, limit, pruning, pruning_guides = (job.model, job.out, job.revision, job.limit, job.pruning,
                                                            job.pruning_guides)
    lm_eval_tasks, include_path, label, revision_label = (job.lm_eval_tasks, job.include_path, job.label,
                                                          job.revision_label)
    dtype, device, batch_size, chunk_tokens = job.dtype, job.device, job.batch_size, job.chunk_tokens
    allow_pickle, trust_remote_code, placement = job.allow_pickle, job.trust_remote_code, job.placement
    task_files, last_word_files = list(job.task_files), list(job.last_word_files)
    healed = list(job.healed) + (healed_folders(job.healed_dir) if job.healed_dir is not None else [])
    _check_inputs(out, task_files, last_word_files, pruning, healed, pruning_guides)
    benchmarks = load_benchmarks(task_files, last_word_files, lm_eval_tasks, limit=limit, include_path=include_path)
    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code, **(placement or {}))
    if loaded.tokenizer is None:
        raise SwapKLError(f"model {model!r} has no tokenizer; the downstream tasks need one")
    records = [heal_record(h, loaded.weights_sha256) for h in healed]
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens)
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    sets = [] if pruning is None else pruned_sets_from_table(pruning, n_layers=engine.n_layers,
                                                                weights_sha256=loaded.weights_sha256,
                                                                guides=pruning_guides, model=model)
    kinds = {b.name: b.kind for b in benchmarks}
    ident = dict(model=label or loaded.model_id, revision=revision_label or loaded.revision)
    with scan_for(engine, sets, single_blocks=False) as scan:
        scores = score_benchmarks(engine, loaded.tokenizer, benchmarks, scan.variants, batch_size=batch_size,
                                  pad_id=pad)
    by_key = {k: {t: s[k] | {"kind": kinds[t]} for t, s in scores.items()} for k in next(iter(scores.values()))}
    base = by_key[BASE]
    rows = model_rows(ident | dict(_NO_SET, phase="base", checkpoint=loaded.path), base, None)
    for columns, key in scan.entries:
        rows += model_rows(ident | dict(_NO_SET, phase="pruned") | {k: v for k, v in columns.items() if k != "layer"},
                           by_key[key], base)
    n_layers = engine.n_layers
    del engine
    for path, record in zip(healed, records):
        other = load_model(path, None, dtype=dtype, device=device)
        if other.tokenizer_sha256 != loaded.tokenizer_sha256:
            raise SwapKLError(f"healed model {path!r} has another tokenizer than {model!r}")
        got = score_benchmarks(ProbeEngine(other.model, chunk_tokens=chunk_tokens), other.tokenizer, benchmarks, [],
                               batch_size=batch_size, pad_id=pad)
        rows += model_rows(ident | record, {t: s[BASE] | {"kind": kinds[t]} for t, s in got.items()}, base)
        del other
    prov = provenance.build(loaded, tasks={b.name: b.source | {"n_docs": b.n_docs, "kind": b.kind}
                                           for b in benchmarks},
                            limit=limit, n_layers=n_layers,
                            pruning=None if pruning is None else {"path": pruning, "guides": pruning_guides or "all",
                                                                  "n_pruned_sets": len(sets)},
                            healed=[{"path": h, "phase": r["phase"]} for h, r in zip(healed, records)],
                            input_sha256=provenance.input_sha256([*task_files, *last_word_files, pruning]))
    write_parquet(pa.Table.from_pylist(rows, schema=DOWNSTREAM_SCHEMA), out, prov)
    return rows
