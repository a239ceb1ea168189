"""Span experiments of the layer-order literature ("Transformer Layers as Painters", Sun et al. 2024).

A *span* is the symmetric middle run of blocks ``[s, L - s)`` of an ``L``-block model (width
``w = L - 2s``); the experiment sweeps ``s`` and measures ``KL(p_base || p_variant)`` per variant:

* ``skip`` -- the span's blocks do not run (the stream passes from slot s to block L-s);
* ``reverse`` -- the span's blocks run in reverse order, ``L-s-1, ..., s``, at slots ``s .. L-s-1``;
* ``shuffle`` -- the span's blocks run in the order of the first permutation of ``range(s, L - s)``
  drawn by ``numpy.random.default_rng([seed, s]).permutation`` that is not the identity (seeded per span,
  recorded in the table's ``order``);
* ``repeat`` -- every slot of the span runs the middle block ``m = (L - 1) // 2`` (the same block for
  every ``s``: the span is symmetric around it);
* ``parallel`` -- every block ``b`` of the span reads the stream ``h`` entering slot ``s`` (with the
  attention mask of its own slot ``b``), and the span's output is ``h + mean_b (B_b(h) - h)`` (the mean
  of the blocks' outputs), formed in float32; blocks ``L-s .. L-1`` then run at their own slots;
* ``looped_parallel`` -- the parallel step applied ``k`` times (``loops``), each time to the previous
  step's output.

The four reorderings are ordinary block orders (:class:`swapkl.model.variant.Variant`): the probe engine resumes
them from the stream cached at their first changed slot, without copying weights. The parallel
variants resume from the cached stream entering slot ``s`` and call the model's own blocks. Both go
through the one batch loop (:func:`swapkl.model.batch_loop.sweep`) and the one KL (:mod:`swapkl.model.kl`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from swapkl.stats.bootstrap import ratio_mean
from swapkl.errors import SwapKLError
from swapkl.options import require_int
from swapkl.model.variant import Variant
from swapkl.tables.schemas import SPANS_FILE_SCHEMA
from swapkl.tables import provenance
from swapkl.data.windows import check_spec, check_windows, load_windows
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.options import require_device
from swapkl.tables.parquet_io import check_writable, write_parquet
from swapkl.model.batch_loop import sweep, window_batches
from swapkl.hub.revision_names import step_of
from swapkl.studies.spans.jobs import SPAN_VARIANTS, SpansJob

log = logging.getLogger(__name__)

#: variants that are a block order (run by the engine as a Variant)
ORDER_VARIANTS = ("skip", "reverse", "shuffle", "repeat")


@dataclass(frozen=True)
class SpanVariant:
    kind: str
    start: int
    end: int
    n_layers: int
    order: tuple[int, ...] | None = None  # block order (reorderings); None for the parallel variants
    loops: int | None = None  # parallel steps (1 for ``parallel``)
    seed: int | None = None  # the shuffle's seed

    @property
    def width(self) -> int:
        return self.end - self.start

    @property
    def key(self) -> str:
        return f"span_{self.kind}:{self.start}:{self.end}" + ("" if self.loops is None else f":x{self.loops}")

    def as_variant(self) -> Variant:
        """The engine's variant of a reordering (same key)."""
        if self.order is None:
            raise ValueError(f"{self.key} is not a block order")
        return Variant(f"span_{self.kind}", self.start, self.end, self.order)


def parse_variants(spec) -> list[str]:
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    items = [str(v).strip() for v in items if str(v).strip()]
    if not items:
        raise SwapKLError("no span variant given: choose from " + ", ".join(SPAN_VARIANTS))
    bad = [v for v in items if v not in SPAN_VARIANTS]
    if bad:
        raise SwapKLError(f"unknown span variant {bad[0]!r}: choose from " + ", ".join(SPAN_VARIANTS))
    return [v for v in SPAN_VARIANTS if v in items]


def span_starts(n_layers: int, *, min_start: int = 1, min_width: int = 2) -> list[int]:
    """Every ``s >= min_start`` whose span ``[s, L - s)`` holds at least ``min_width`` blocks."""
    return [s for s in range(min_start, n_layers) if n_layers - 2 * s >= min_width]


def middle_block(n_layers: int) -> int:
    return (n_layers - 1) // 2


def shuffled(start: int, end: int, seed: int) -> list[int]:
    """The first permutation of ``range(start, end)`` drawn from ``default_rng([seed, start])`` that is not the
    identity (the identity itself for one block)."""
    rng, span = np.random.default_rng([seed, start]), np.arange(start, end)
    while True:
        perm = rng.permutation(span)
        if end - start < 2 or (perm != span).any():
            return [int(b) for b in perm]


def _order(kind: str, s: int, e: int, n: int, seed: int) -> tuple[int, ...]:
    head, tail = list(range(s)), list(range(e, n))
    middle = {"skip": [], "reverse": list(range(e - 1, s - 1, -1)), "shuffle": shuffled(s, e, seed),
              "repeat": [middle_block(n)] * (e - s)}[kind]
    return tuple(head + middle + tail)


def span_variants(kinds, n_layers: int, *, loops=(2,), seed: int = 0, min_start: int = 1,
                  min_width: int = 2) -> list[SpanVariant]:
    """The variants of ``kinds`` for every span of :func:`span_starts`, by start then kind then loops."""
    kinds = parse_variants(kinds)
    require_int("seed", seed, 0)
    require_int("min_start", min_start, 0)
    require_int("min_width", min_width, 1)
    loops = sorted({require_int("loops", k, 2) for k in loops}) if "looped_parallel" in kinds else []
    if "looped_parallel" in kinds and not loops:
        raise SwapKLError("looped_parallel needs at least one loop count (loops >= 2)")
    out = []
    for s in span_starts(n_layers, min_start=min_start, min_width=min_width):
        e = n_layers - s
        for kind in kinds:
            if kind in ORDER_VARIANTS:
                out.append(SpanVariant(kind, s, e, n_layers, _order(kind, s, e, n_layers, seed),
                                       seed=seed if kind == "shuffle" else None))
            elif kind == "parallel":
                out.append(SpanVariant(kind, s, e, n_layers, loops=1))
            else:
                out.extend(SpanVariant(kind, s, e, n_layers, loops=k) for k in loops)
    return out


@torch.inference_mode()
def parallel_hiddens(engine, state, start: int, end: int, loops) -> dict[int, torch.Tensor]:
    """``{k: stream after the last block}`` of the parallel span ``[start, end)`` applied ``k`` times, for
    each ``k`` of ``loops``; the ``k``-step stream is the ``k-1``-step one stepped once more."""
    a, n = engine.adapter, engine.n_layers
    h = state.residuals[start]
    out = {}
    for k in range(1, max(loops) + 1):
        total = None
        for b in range(start, end):
            d = a.run_block(b, b, h, state.ctx).float().to(h.device) - h.float()
            total = d if total is None else total + d
        h = (h.float() + total / (end - start)).to(h.dtype)
        engine.layer_evals += end - start
        if k in loops:
            t = h
            for slot in range(end, n):
                t = a.run_block(slot, slot, t, state.ctx)
            engine.layer_evals += n - end
            out[k] = t
    return out


def measure_spans(engine, batches, variants: list[SpanVariant], *, device, desc: str | None = None) -> dict:
    """``{key: [per-batch stats dict]}`` of every variant and of the base model (key ``base``)."""
    ordered = [v for v in variants if v.order is not None]
    parallel: dict[tuple[int, int], dict[int, SpanVariant]] = {}
    for v in variants:
        if v.order is None:
            parallel.setdefault((v.start, v.end), {})[v.loops] = v
    engine_variants = [v.as_variant() for v in ordered]
    by_key = {v.key: v for v in ordered}
    results: dict[str, list[dict]] = {v.key: [] for v in variants} | {"base": []}
    for m in sweep(engine, batches, engine_variants, device=device, desc=desc):
        results["base" if m.k is None else by_key[m.variant.key].key].append(
            _stats(engine.seq_stats(m.state, m.kl, m.nll)))
        if m.k is not None:
            continue
        for (s, e), per_loop in parallel.items():
            for k, h in parallel_hiddens(engine, m.state, s, e, sorted(per_loop)).items():
                v = per_loop[k]
                kl, nll = engine.hidden_stats(m.state, h, v.key)
                results[v.key].append(_stats(engine.seq_stats(m.state, kl, nll)))
    return results


def _stats(s) -> dict:
    return {k: getattr(s, k).cpu().numpy().astype(np.float64) for k in ("kl_sum", "tokens", "nll_sum", "nll_tokens")}


def _row(kind: str, parts: list[dict], meta: dict, v: SpanVariant | None = None) -> dict:
    kl, tok, nll, ntok = (np.concatenate([p[k] for p in parts]) for k in ("kl_sum", "tokens", "nll_sum", "nll_tokens"))
    span = dict(start=None, end=None, width=0, loops=None, order=None, seed=None, middle=None)
    if v is not None:
        span = dict(start=v.start, end=v.end, width=v.width, loops=v.loops,
                    order=None if v.order is None else list(v.order), seed=v.seed,
                    middle=middle_block(v.n_layers) if kind == "repeat" else None)
    return dict(meta, variant=kind, **span, kl_mean=ratio_mean(kl, tok), nll_mean=ratio_mean(nll, ntok),
                n_seqs=int(len(tok)), n_tokens=int(tok.sum()), seq_kl_sum=kl.tolist(),
                seq_tokens=tok.astype(np.int64).tolist(), seq_nll_sum=nll.tolist(),
                seq_nll_tokens=ntok.astype(np.int64).tolist())


def span_table(results: dict, variants: list[SpanVariant], meta: dict) -> pa.Table:
    """One row for the base model, then one per variant (:data:`swapkl.tables.schemas.SPANS_FILE_SCHEMA`)."""
    rows = [_row("base", results["base"], meta)]
    rows += [_row(v.kind, results[v.key], meta, v) for v in variants]
    return pa.Table.from_pylist(rows, schema=SPANS_FILE_SCHEMA)


def run_spans(job: SpansJob) -> None:
    """Measure every span variant of a :class:`~swapkl.studies.spans.jobs.SpansJob` (``run_spans(job)``) on its
    windows and write its ``out``."""
    job = SpansJob.checked(job)
    data, loops, seed, min_start, min_width = job.data, job.loops, job.seed, job.min_start, job.min_width
    batch_size, out = job.batch_size, job.out
    kinds = parse_variants(job.variants)
    require_int("batch_size", batch_size, 1)
    require_int("chunk_tokens", job.chunk_tokens, 1)
    require_device(job.device)
    check_spec(data)
    check_writable(out)
    span_variants(kinds, 2 * min_start + min_width, loops=loops, seed=seed, min_start=min_start,
                  min_width=min_width)  # every option checked before loading
    metadata = dict(job.metadata or {})
    loaded = load_model(job.model, job.revision, dtype=job.dtype, device=job.device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code, need_tokenizer=data.tokens is None,
                        **(job.placement or {}))
    engine = ProbeEngine(loaded.model, chunk_tokens=job.chunk_tokens)
    windows = load_windows(data, loaded.tokenizer)
    check_windows(windows, engine.adapter.vocab_size, engine.adapter.max_positions)
    label = metadata.pop("model", None) or loaded.model_id
    rev = metadata.pop("revision", None) or loaded.revision or "main"
    todo = span_variants(kinds, engine.n_layers, loops=loops, seed=seed, min_start=min_start, min_width=min_width)
    if not todo:
        raise SwapKLError(f"{label} has {engine.n_layers} blocks: no span [s, L-s) with s >= {min_start} holds "
                          f"{min_width} or more blocks")
    batches = window_batches(windows.input_ids, windows.attention_mask, batch_size)
    results = measure_spans(engine, batches, todo, device=loaded.device, desc=f"spans {label}@{rev}")
    meta = dict(model=label, revision=rev, step=step_of(rev), n_layers=engine.n_layers)
    prov = provenance.build(loaded, windows, span_variants=kinds, loops=sorted(set(loops)), span_seed=seed,
                            min_start=min_start, min_width=min_width, batch_size=batch_size,
                            data_spec=data.as_dict(), model=label, revision_label=rev, **metadata)
    write_parquet(span_table(results, todo, meta), out, prov)
    log.info("wrote %s (%d span variants, %d windows)", out, len(todo), len(windows.input_ids))
