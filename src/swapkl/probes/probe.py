"""``run_probe``: one checkpoint, one set of windows -> one long-format Parquet file (or one per protocol, sharing
one base pass).

Output schema (one row per measurement): :data:`swapkl.tables.schemas.PROBE_SCHEMA`, documented in the
README. Representation metrics (BI, angular distance) go to a second file
(:data:`swapkl.tables.schemas.REPR_SCHEMA`). Both hold means and per-sequence sums, no confidence
intervals: those are computed by ``swapkl aggregate`` (:mod:`swapkl.stats.intervals`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import numpy as np
import pyarrow as pa

from swapkl.hub.revision_names import step_of
from swapkl.tables import provenance
from swapkl.stats.bootstrap import ratio_mean
from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import check_spec, check_windows, load_windows
from swapkl.model.engine import ProbeEngine, SeqStats
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import replaceable, require_distinct
from swapkl.model.heads import n_units, unit_slices
from swapkl.model.kl_average import reported_kl_mean
from swapkl.model.kl_options import KLOptions
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.model.loading import load_model
from swapkl.options import require_device, require_int
from swapkl.probes.pairs import parse_pair_set
from swapkl.model.variant import Variant
from swapkl.probes.protocols import build_variants, head_protocol_names, parse_protocols
from swapkl.tables.parquet_io import check_writable, write_parquets
from swapkl.probes.resume import ProgressLog, fingerprint, is_progress_file
from swapkl.probes.residual_stream import representation_sums
from swapkl.probes.covariates import covariate_table
from swapkl.tables.schemas import PROBE_SCHEMA, REPR_SCHEMA
from swapkl.model.batch_loop import BASE, in_window_order, sweep, window_batches

log = logging.getLogger(__name__)


#: how run_probe batches the windows (part of the resume key: a progress file's batch numbers mean these batches)
BATCHING = "by-length"


@contextmanager
def quiet_hf_progress():
    """Silence transformers' own progress bars (e.g. "Loading weights") when stderr is not a TTY,
    so logs and error output stay clean; restored afterwards."""
    from transformers.utils import logging as hf_logging  # heavy dependency: imported when a model is loaded

    quiet = not sys.stderr.isatty() and hf_logging.is_progress_bar_enabled()
    if quiet:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if quiet:
            hf_logging.enable_progress_bar()


def _stats_dict(s: SeqStats) -> dict:
    return {k: getattr(s, k).cpu().tolist() for k in ("kl_sum", "tokens", "nll_sum", "nll_tokens")}


def run_probe(job: ProbeJob) -> None:
    """Measure every variant of a :class:`~swapkl.probes.probe_jobs.ProbeJob` (``run_probe(job)``) and write its
    files; the job's fields say what each option does."""
    job = ProbeJob.checked(job)
    protocols = parse_protocols(job.protocols)
    pairs, data, batch_size = job.pairs, job.data, job.batch_size
    parse_pair_set(pairs)
    # every option is checked before anything is loaded or computed
    require_int("batch_size", batch_size, 1)
    require_int("chunk_tokens", job.chunk_tokens, 1)
    require_device(job.device)
    check_spec(data)
    _parse_layers(job.layers)
    outputs = probe_outputs(protocols, job.out, job.progress_path, job.repr_out)
    _check_paths(outputs, job.covariates_out, data)
    metadata = dict(job.metadata or {})
    with quiet_hf_progress():
        loaded = load_model(job.model, job.revision, dtype=job.dtype, device=job.device, allow_pickle=job.allow_pickle,
                            trust_remote_code=job.trust_remote_code, need_tokenizer=data.tokens is None,
                            compute_dtype=job.compute_dtype, rope_scaling=job.rope_scaling,
                            logits_dtype=job.logits_dtype, **(job.placement or {}))
    windows = load_windows(data, loaded.tokenizer)
    label = metadata.pop("model", None) or loaded.model_id
    rev = metadata.pop("revision", None) or loaded.revision or "main"
    files, logs = probe_loaded(job, loaded, windows, outputs, label=label, revision=rev, metadata=metadata)
    if job.covariates_out is not None:  # on this load where it is the covariates' own (see above)
        own = (job.compute_dtype is None and job.rope_scaling == "config" and job.logits_dtype == "float32"
               and not job.placement and job.rope == "on")
        covariate_model = loaded if own else load_model(job.model, job.revision, dtype=job.dtype, device=job.device,
                                                        allow_pickle=job.allow_pickle,
                                                        trust_remote_code=job.trust_remote_code,
                                                        need_tokenizer=data.tokens is None)
        files.append(_covariates_file(covariate_model, windows, job.covariates_out, pairs=pairs, data=data,
                                      batch_size=batch_size, metadata=dict(metadata, model=label, revision=rev)))
    write_parquets(files)  # all or none: a failed --repr-out leaves no --out behind
    for o, n_variants, plog in logs:  # written: the resume files have served
        plog.close(remove=True)
        log.info("wrote %s (%d variants, %d sequences, %d tokens)", o.out, n_variants + 1,
                 windows.input_ids.shape[0], windows.n_tokens)


def probe_loaded(job: ProbeJob, loaded, windows, outputs: list[_Output], *, label: str, revision: str,
                 metadata: dict) -> tuple[list[tuple], list[tuple]]:
    """The (table, path, provenance) of each file of ``outputs`` (and of its representation file): every variant of
    ``job`` measured on ``loaded`` (a :class:`~swapkl.model.loading.LoadedModel`, from a checkpoint or a module in
    memory) and ``windows``, in memory; :func:`run_probe` writes them, the Python API keeps them. Also (output,
    number of variants, resume log) of each output, whose log goes once its file is written."""
    kl_options, pairs, layers = job.kl_options, job.pairs, _parse_layers(job.layers)
    engine = ProbeEngine(loaded.model, chunk_tokens=job.chunk_tokens, kl=kl_options, logits_dtype=job.logits_dtype)
    if job.rope == "off":
        engine.adapter.disable_rope()
    check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
    if windows.shortfall():
        log.warning(windows.shortfall())
    measured = [_measured_variants(engine, o.protocols, pairs, layers, label) for o in outputs]
    plogs = _progress_logs(outputs, measured, loaded, windows, kl=kl_options.as_dict(), dtype=job.dtype,
                           compute_dtype=job.compute_dtype, rope_scaling=job.rope_scaling, batch_size=job.batch_size,
                           # only where set: the resume logs of the clean forward keep their fingerprints
                           **({} if job.logits_dtype == "float32" else {"logits_dtype": job.logits_dtype}),
                           chunk=job.chunk_tokens, rope=job.rope, batching=BATCHING)
    # windows sorted by length into batches cut after their longest window (no work on trailing padding)
    batches = window_batches(windows.input_ids, windows.attention_mask, job.batch_size, by_length=True)
    results, repr_parts = _measure(engine, loaded.device, batches, measured, plogs,
                                   [o.repr_out is not None for o in outputs], f"probe {label}@{revision}")
    meta = dict(model=label, revision=revision, step=step_of(revision), n_layers=engine.n_layers)
    made_from = partial(provenance.build, loaded, windows, pairs=pairs, batch_size=job.batch_size,
                        data_spec=job.data.as_dict(), model=label, revision_label=revision, layers=layers,
                        rope=job.rope, kl_options=kl_options.as_dict(), **metadata)
    files = _probe_tables(outputs, measured, results, repr_parts, meta, kl_options, made_from, batches)
    return files, [(o, len(variants), plog) for o, variants, plog in zip(outputs, measured, plogs)]


def _covariates_file(loaded, windows, out: str, **options) -> tuple:
    """(table, path, provenance) of the per-pair covariates of ``loaded`` (:func:`covariate_table`'s ``options``)."""
    table, made_from = covariate_table(loaded, windows, **options)
    return table, out, made_from


def _progress_logs(outputs, measured, loaded, windows, **settings) -> list[ProgressLog]:
    """The resume log of each probe file of ``outputs``, keyed by everything that determines its numbers."""
    settings.update(weights=loaded.weights_sha256, config=loaded.config_sha256, tokenizer=loaded.tokenizer_sha256,
                    tokens=windows.sha256, device=loaded.device, versions=provenance.software_versions())
    return [ProgressLog(o.progress_path, fingerprint(**settings, variants=[v.key for v in [BASE] + m],
                                                      repr=o.repr_out is not None))
            for o, m in zip(outputs, measured)]


def _probe_tables(outputs, measured, results, repr_parts, meta, kl_options, made_from, batches) -> list:
    """(table, path, provenance) of each probe file of ``outputs`` and of its representation file, if any;
    ``made_from(protocols=...)``: the provenance of a file of those protocols. Per-sequence columns are in the
    windows' order, whatever order ``batches`` took them in."""
    files = []
    for o, variants, result in zip(outputs, measured, results):
        prov = made_from(protocols=o.protocols)
        rows = [_row(v, result[v.key], meta, kl_options, batches) for v in [BASE] + variants]
        files.append((pa.Table.from_pylist(rows, schema=PROBE_SCHEMA), o.out, prov))
        if o.repr_out is not None:
            files.append((pa.Table.from_pylist(_repr_rows(repr_parts, meta, batches), schema=REPR_SCHEMA),
                          o.repr_out, prov))
    return files


@dataclass(frozen=True)
class _Output:
    """One probe file: the protocols it holds, its resume file and the representation file written with it."""

    protocols: list[str]
    out: str
    progress_path: str | None
    repr_out: str | None


def probe_outputs(protocols: list[str], out, progress_path, repr_out: str | None) -> list[_Output]:
    """The files of ``run_probe``'s ``out`` (one path, or ``{protocol: path}``), with their resume files."""
    if not isinstance(out, Mapping):
        if isinstance(progress_path, Mapping):
            raise SwapKLError("progress_path is one file per protocol, but out is one file: give one of each")
        return [_Output(protocols, out, progress_path, repr_out)]
    if parse_protocols(list(out)) != protocols:
        raise SwapKLError(f"out names the protocols {', '.join(out)}, not the ones measured: {', '.join(protocols)}")
    progress = {} if progress_path is None else progress_path
    if not isinstance(progress, Mapping) or not set(progress) <= set(protocols):
        raise SwapKLError("progress_path: one file per protocol of out ({protocol: file}), as out")
    with_repr = "deletion" if "deletion" in protocols else protocols[0]
    return [_Output([p], out[p], progress.get(p), repr_out if p == with_repr else None) for p in protocols]


def _check_paths(outputs: list[_Output], covariates_out: str | None, data: DataSpec) -> None:
    """The job's files are distinct, its outputs writable and its progress files ones (fails before the run)."""
    named = lambda option, o: f"`{option}`" if len(outputs) == 1 else f"`{option}[{o.protocols[0]}]`"  # noqa: E731
    files = [(named(option, o), path) for o in outputs
             for option, path in (("out", o.out), ("repr_out", o.repr_out), ("progress_path", o.progress_path))]
    require_distinct(files + [("`covariates_out`", covariates_out)],
                     {"`data.tokens`": data.tokens, "`data.text_file`": data.text_file})
    for path in [covariates_out] + [path for o in outputs for path in (o.out, o.repr_out)]:
        if path is not None:  # fail before the computation, not after it
            check_writable(path)
    for o in outputs:
        if o.progress_path:
            replaceable(o.progress_path, "progress file", is_progress_file)


def _measured_variants(engine: ProbeEngine, protocols: list[str], pairs: str, layers: list[int] | None,
                       label: str) -> list[Variant]:
    """The variants of ``protocols`` on ``pairs`` (restricted to ``layers``) of the engine's model."""
    n_layers = engine.n_layers
    heads = bool(set(protocols) & set(head_protocol_names()))
    units = n_units(engine.adapter.config) if heads else 1
    if heads:
        unit_slices(engine.adapter.config, 0)  # an architecture without head swaps fails here, before the run
    measured = _restrict(build_variants(protocols, pairs, n_layers, units), layers, n_layers, label)
    if not measured:
        raise SwapKLError(f"{label} has {n_layers} block(s): no variant of protocols {', '.join(protocols)} "
                          f"with pairs {pairs} exists, nothing to measure")
    return measured


def _measure(engine: ProbeEngine, device, batches, measured: list[list[Variant]], plogs: list[ProgressLog],
             want_repr: list[bool], desc: str) -> tuple[list[dict[str, list[dict]]], list[dict]]:
    """Per output file (its variants, progress log, whether it wants the representation sums): every (batch,
    variant) result, and the representation sums of each batch where one wants them. Taken over from the
    progress logs where they have them, computed (and added to them) otherwise, in one sweep whose base pass
    serves every file."""
    owner = {v.key: plog for variants, plog in zip(measured, plogs) for v in variants}
    bases = list(zip(plogs, want_repr))
    need_repr = lambda b, plog, want: want and plog.get(b, "repr") is None  # noqa: E731

    def done(b: int, v: Variant) -> bool:
        if v is BASE:
            return all(plog.get(b, BASE.key) is not None and not need_repr(b, plog, want) for plog, want in bases)
        return owner[v.key].get(b, v.key) is not None

    runs = 0  # model runs computed (one variant, or the base model, on one batch): the progress bar's unit
    try:
        for m in sweep(engine, batches, [v for variants in measured for v in variants], device=device, done=done,
                       desc=desc):
            runs += 1
            if m.variant is BASE and any(need_repr(m.index, plog, want) for plog, want in bases):
                sums = representation_sums(m.state.residuals, m.state.valid)
                record = {"repr": {f"{k}:{l}:{n}": [s.cpu().tolist(), c.cpu().tolist()]
                                   for (k, l, n), (s, c) in sums.items()}}
                for plog, want in bases:
                    if need_repr(m.index, plog, want):
                        plog.add(m.index, "repr", record)
            stats = None  # computed once, for every file that lacks it (the base result: each file)
            for plog in plogs if m.variant is BASE else [owner[m.variant.key]]:
                if plog.get(m.index, m.variant.key) is None:
                    stats = stats or _stats_dict(engine.seq_stats(m.state, m.kl, m.nll))
                    plog.add(m.index, m.variant.key, stats)
        results = [{v.key: [plog.get(b, v.key) for b in range(len(batches))] for v in [BASE] + variants}
                   for variants, plog in zip(measured, plogs)]
        repr_parts = [plog.get(b, "repr")["repr"] for plog, want in bases if want for b in range(len(batches))]
    finally:
        for plog in plogs:
            plog.close()
    total = len(batches) * (sum(len(variants) for variants in measured) + 1)
    log.info("computed %d of %d model runs (one variant or the base model on one batch); %d taken over from the "
             "progress file (%d records)", runs, total, total - runs, sum(plog.n_resumed for plog in plogs))
    return results, repr_parts


def _parse_layers(layers) -> list[int] | None:
    if layers is None:
        return None
    items = layers.split(",") if isinstance(layers, str) else list(layers)
    try:
        out = sorted({int(str(x).strip()) for x in items if str(x).strip()})
    except ValueError as e:
        raise SwapKLError(f"layers must be block indices like 0,3,5, got {layers!r}") from e
    if not out:
        raise SwapKLError("layers is empty: give at least one block index")
    return out


def _restrict(variants: list[Variant], layers: list[int] | None, n_layers: int, label: str) -> list[Variant]:
    """The variants whose blocks all lie in ``layers`` (all of them when ``layers`` is None)."""
    if layers is None:
        return variants
    bad = [i for i in layers if not 0 <= i < n_layers]
    if bad:
        raise SwapKLError(f"layer index {bad[0]} is out of range: {label} has {n_layers} layers (0..{n_layers - 1})")
    keep = set(layers)
    out = [v for v in variants if {x for x in (v.layer_i, v.layer_j) if x is not None} <= keep]
    if not out:
        raise SwapKLError(f"no variant of the chosen protocols and pairs lies within layers {layers}")
    return out


def _row(v: Variant, parts: list[dict], meta: dict, kl_options: KLOptions, batches) -> dict:
    kl, tok, nll, ntok = (in_window_order([p[k] for p in parts], batches)
                          for k in ("kl_sum", "tokens", "nll_sum", "nll_tokens"))
    return dict(meta, protocol=v.protocol, layer_i=v.layer_i, layer_j=v.layer_j,
                kl_mean=reported_kl_mean(kl_options, kl, tok), nll_mean=ratio_mean(nll, ntok),
                n_seqs=int(len(tok)), n_tokens=int(tok.sum()),
                seq_kl_sum=kl.tolist(), seq_tokens=tok.astype(np.int64).tolist(),
                seq_nll_sum=nll.tolist(), seq_nll_tokens=ntok.astype(np.int64).tolist(), head=v.head)


def _repr_rows(parts: list[dict], meta: dict, batches) -> list[dict]:
    rows = []
    for key in parts[0]:
        metric, l, n = key.split(":")
        s = in_window_order([p[key][0] for p in parts], batches)
        c = in_window_order([p[key][1] for p in parts], batches)
        rows.append(dict(meta, metric=metric, layer_i=int(l), width=int(n), value=ratio_mean(s, c),
                         n_seqs=int(len(c)), n_tokens=int(c.sum()), seq_value_sum=s.astype(np.float64).tolist(),
                         seq_count=c.astype(np.int64).tolist()))
    rows.sort(key=lambda r: (r["metric"], r["layer_i"], r["width"]))
    return rows
