"""Sequential probing: windows drawn from a pool in batches, each variant measured only while a decision it takes
part in is still open (:mod:`swapkl.stats.sequential` holds the statistics and says when a decision holds).

:func:`measure_sequential` runs in memory on a :class:`~swapkl.model.engine.ProbeEngine` and a pool of windows: it
walks the pool in its order, a look's windows at a time (:attr:`Design.looks`), through the one batch loop
(:func:`swapkl.model.batch_loop.sweep`, which skips the variants that have left), and after each look evaluates
the decisions. A variant's numbers are those of the uniform probe on the windows it saw: the same engine, the
same per-window reductions. :func:`run_sequential_probe` loads the model and the windows, and writes the probe
table (one row per variant, its own ``n_seqs``: the prefix of the pool it saw) and the decisions table.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pyarrow as pa

from swapkl.data.windows import check_spec, check_windows, load_windows
from swapkl.errors import SwapKLError
from swapkl.hub.revision_names import step_of
from swapkl.model.batch_loop import BASE, sweep, window_batches
from swapkl.model.engine import ProbeEngine
from swapkl.model.loading import load_model
from swapkl.options import require_device, require_int
from swapkl.model.variant import Variant
from swapkl.probes.pairs import pairs_for, parse_pair_set
from swapkl.probes.protocols import build_variants
from swapkl.probes.resume import ProgressLog, fingerprint, is_progress_file
from swapkl.pruning.stability import GUIDE_PROTOCOLS, guide_selector
from swapkl.studies.sequential.jobs import SequentialJob
from swapkl.stats.sequential import (HOLDS, Decision, Evidence, halfwidth_decision, keep_held, set_decision,
                                     sign_decision, still_needed)
from swapkl.stats.sequential_design import Decisions, Design
from swapkl.tables import provenance
from swapkl.tables.file_checks import replaceable, require_distinct
from swapkl.tables.parquet_io import check_writable, write_parquets
from swapkl.tables.schemas import DECISIONS_SCHEMA, PROBE_SCHEMA

log = logging.getLogger(__name__)

#: the per-window sums a (batch, variant) result holds, in the order of its record
STAT_KEYS = ("kl_sum", "tokens", "nll_sum", "nll_tokens")

@dataclass
class SequentialResult:
    """What a sequential probe measured: per variant its per-window sums over the windows it saw, and the
    decisions at the last look (``looks``: per look, its window count and how many decisions were open)."""

    evidence: Evidence
    nll: dict[str, list[float]]
    nll_tokens: list[float]
    variants: list[Variant]
    decided: list[Decision]
    design: Design
    looks: list[dict] = field(default_factory=list)

    @property
    def undecided(self) -> list[Decision]:
        return [d for d in self.decided if d.state != HOLDS]

    @property
    def variant_windows(self) -> int:
        """Variant-window evaluations spent (the base model's not counted)."""
        return sum(self.evidence.n(v.key) for v in self.variants)


def decision_variants(decisions: Decisions, pairs: str, n_layers: int) -> list[Variant]:
    """The variants the decisions read: replacement and interchange on ``pairs``, deletion where a set decision's
    guide reads it."""
    unknown = sorted(set(decisions.sets) - set(GUIDE_PROTOCOLS))
    if unknown:
        raise SwapKLError(f"sequential set decisions take the guides {', '.join(GUIDE_PROTOCOLS)}, not {unknown[0]!r}")
    protocols = {p for g in decisions.sets for p in GUIDE_PROTOCOLS[g]}
    if decisions.signs or decisions.halfwidth:
        protocols |= {"replacement", "interchange"}
    if not protocols:
        raise SwapKLError("a sequential probe needs a decision: gap signs, a half-width or a guide's removal sets")
    ordered = [p for p in ("replacement", "interchange", "deletion") if p in protocols]
    return build_variants(ordered, pairs, n_layers, 1)


def evaluate(evidence: Evidence, variants: list[Variant], decisions: Decisions, pairs: str, n_layers: int,
             alpha: float, seed: int) -> list[Decision]:
    """Every decision the run is for, on the windows seen so far, each interval at level ``1 - alpha``."""
    out = []
    probed = pairs_for(pairs, n_layers)
    if decisions.signs:
        out += [sign_decision(evidence, i, j, alpha) for i, j in probed]
    for name, rel in decisions.halfwidth.items():
        members = pairs_for(name, n_layers)
        missing = sorted(set(members) - set(probed))
        if missing:
            raise SwapKLError(f"half-width on pair set {name!r}: pair {missing[0]} is not among the probed pairs "
                              f"({pairs}); probe a wider pair set")
        out.append(halfwidth_decision(evidence, name, members, rel, alpha))
    for guide in decisions.sets:
        keys = [v.key for v in variants if v.protocol in GUIDE_PROTOCOLS[guide]]
        for budget in decisions.budgets:
            out.append(set_decision(evidence, guide, budget, keys, guide_selector(guide, budget, n_layers,
                                                                               decisions.spacing),
                                    decisions, seed + budget, alpha))
    return out


def measure_sequential(engine, input_ids: np.ndarray, attention_mask: np.ndarray, *, pairs: str,
                       design: Design, decisions: Decisions, batch_size: int = 8, device="cpu",
                       desc: str | None = None, progress: ProgressLog | None = None) -> SequentialResult:
    """Probe the pool of windows ``input_ids`` / ``attention_mask`` (in its order) sequentially (module
    docstring). Token-weighted KL over every scored position (the probe's default KL). A variant that stopped and
    is needed again later catches up on the windows it missed, so every variant always holds a prefix of the pool.

    ``progress`` keeps each (batch, variant) result, keyed by the batch's first window, as it is computed, and
    gives back those it holds: a killed run started again with the same settings recomputes nothing it finished
    (the batches, and so the decisions at each look, are the same)."""
    parse_pair_set(pairs)
    n_pool = int(input_ids.shape[0])
    design = design.bounded_by(n_pool)
    variants = decision_variants(decisions, pairs, engine.n_layers)
    evidence, nll, nll_tokens = Evidence(), {v.key: [] for v in [BASE] + variants}, []
    bounds = [0] + design.looks
    active = {v.key for v in variants}
    decided: list[Decision] = []
    looks = []
    for look, stop in enumerate(design.looks):
        running = [v for v in variants if v.key in active]
        seen = {v.key: evidence.n(v.key) for v in running} | {BASE.key: len(nll_tokens)}
        start = min(seen[v.key] for v in running)
        offsets, batches = [], []  # batches within each look's windows, so that every variant's count is a bound
        for lo, hi in zip(bounds, bounds[1:]):
            if hi > start and lo < stop:
                for batch in window_batches(input_ids[lo:hi], attention_mask[lo:hi], batch_size):
                    offsets.append(lo)
                    batches.append(batch)
        per_window: dict[str, dict[int, tuple]] = {}

        def seen_before(index: int, v, offsets=offsets, batches=batches, seen=seen) -> bool:
            return offsets[index] + batches[index].rows.stop <= seen[v.key]

        def kept(index: int, v, offsets=offsets, batches=batches) -> dict | None:
            first = offsets[index] + batches[index].rows.start
            return None if progress is None else progress.get(first, v.key)

        def keep(index: int, v, record: dict, offsets=offsets, batches=batches) -> None:
            rows = range(offsets[index] + batches[index].rows.start, offsets[index] + batches[index].rows.stop)
            per_window.setdefault(v.key, {}).update(
                {w: rest for w, *rest in zip(rows, *(record[k] for k in STAT_KEYS))})

        for index in range(len(batches)):  # what an earlier run of these settings finished, taken over once
            for v in [BASE] + running:
                record = None if seen_before(index, v) else kept(index, v)
                if record is not None:
                    keep(index, v, record)

        def have(index: int, v, offsets=offsets, batches=batches, per_window=per_window) -> bool:
            first = offsets[index] + batches[index].rows.start
            return seen_before(index, v) or first in per_window.get(v.key, {})

        for m in sweep(engine, batches, running, device=device, done=have,
                       desc=desc and f"{desc} look {look + 1}"):
            stats = engine.seq_stats(m.state, m.kl, m.nll)
            record = {k: getattr(stats, k).cpu().tolist() for k in STAT_KEYS}
            if progress is not None:
                progress.add(offsets[m.index] + m.batch.rows.start, m.variant.key, record)
            keep(m.index, m.variant, record)
        for w in range(seen[BASE.key], stop):  # in window order, the base's tokens first
            _, tokens, base_nll, ntok = per_window[BASE.key][w]
            evidence.add_tokens(w, tokens)
            nll_tokens.append(ntok)
            nll[BASE.key].append(base_nll)
        for v in running:
            for w in range(seen[v.key], stop):
                kl_sum, _, nll_sum, _ = per_window[v.key][w]
                evidence.add(v.key, w, kl_sum)
                nll[v.key].append(nll_sum)
        now = evaluate(evidence, variants, decisions, pairs, engine.n_layers, design.alpha_per_look, decisions.seed)
        for d in now:
            d.look = look + 1
        decided = keep_held(decided, now)
        active = still_needed(decided)
        looks.append({"look": look + 1, "windows": stop, "open": sum(d.state != HOLDS for d in decided),
                      "variants": len(running)})
        log.info("look %d at %d windows: %d of %d decisions open, %d variants go on", look + 1, stop,
                 looks[-1]["open"], len(decided), len(active))
        if not active:
            break
    return SequentialResult(evidence, nll, nll_tokens, variants, decided, design, looks)


def probe_rows(result: SequentialResult, meta: dict) -> list[dict]:
    """The probe table's rows (PROBE_SCHEMA): the base model on every window used, each variant on its own."""
    ev = result.evidence
    n_all = len(ev.tokens)  # the windows the base model ran on: every window of the last look
    tokens = np.asarray(ev.tokens, dtype=np.float64)
    ntok = np.asarray(result.nll_tokens, dtype=np.float64)
    rows = [dict(meta, protocol="base", layer_i=None, layer_j=None, kl_mean=0.0,
                 nll_mean=_nan_ratio(np.asarray(result.nll[BASE.key]), ntok), n_seqs=n_all, n_tokens=int(tokens.sum()),
                 seq_kl_sum=[0.0] * n_all, seq_tokens=tokens.astype(np.int64).tolist(),
                 seq_nll_sum=list(result.nll[BASE.key]),
                 seq_nll_tokens=ntok.astype(np.int64).tolist(), head=None)]
    for v in result.variants:
        n = ev.n(v.key)
        rows.append(dict(meta, protocol=v.protocol, layer_i=v.layer_i, layer_j=v.layer_j, kl_mean=ev.kl(v.key),
                         nll_mean=_nan_ratio(np.asarray(result.nll[v.key]), ntok[:n]), n_seqs=n,
                         n_tokens=int(tokens[:n].sum()), seq_kl_sum=list(ev.sums[v.key]),
                         seq_tokens=tokens[:n].astype(np.int64).tolist(), seq_nll_sum=list(result.nll[v.key]),
                         seq_nll_tokens=ntok[:n].astype(np.int64).tolist(), head=None))
    return rows


def _nan_ratio(num: np.ndarray, den: np.ndarray) -> float:
    total = float(den.sum())
    return float(num.sum() / total) if total > 0 else math.nan


def decision_rows(result: SequentialResult, meta: dict) -> list[dict]:
    """The decisions table's rows (:data:`DECISIONS_SCHEMA`), one per decision: as it stands at the last look, or
    for an interval decision that held earlier, as it was at the look where it first held (``look``)."""
    look = len(result.looks)
    return [{"model": meta.get("model"), "revision": meta.get("revision"), "kind": d.kind, "subject": d.subject,
             "state": d.state, "answer": d.answer, "estimate": d.estimate, "low": d.low, "high": d.high,
             "windows": d.windows, "look": d.look or look, "confidence": result.design.confidence}
            for d in result.decided]


def walk_order(n: int, seed: int) -> np.ndarray:
    """The order in which a sequential probe walks a pool of ``n`` windows: ``numpy.random.default_rng(seed)``'s
    permutation. Pools are drawn in corpus order, and neighbouring windows of one text are alike; each look's
    windows must be a random sample of the pool for its interval to hold."""
    return np.random.default_rng(seed).permutation(n)


def run_sequential_probe(job: SequentialJob) -> SequentialResult:
    """Run a :class:`~swapkl.studies.sequential.jobs.SequentialJob` (``run_sequential_probe(job)``): load the
    model, draw the pool of windows ``data`` describes (its ``n_seqs`` windows: the pool), walk it in
    :func:`walk_order` (``data.seed``), probe it sequentially and write the probe table ``out`` (per-window columns
    in walk order) and the decisions table ``decisions_out`` (both or none). ``progress_path`` persists finished
    results (:mod:`swapkl.probes.resume`), so that a killed run started again resumes; it is removed once both
    tables are written."""
    job = SequentialJob.checked(job)
    data, design, decisions, pairs = job.data, job.design, job.decisions, job.pairs
    out, decisions_out, progress_path = job.out, job.decisions_out, job.progress_path
    batch_size, chunk_tokens, dtype, metadata = job.batch_size, job.chunk_tokens, job.dtype, job.metadata
    check_spec(data)
    require_int("batch_size", batch_size, 1)
    require_int("chunk_tokens", chunk_tokens, 1)
    require_device(job.device)
    require_distinct([("`out`", out), ("`decisions_out`", decisions_out), ("`progress_path`", progress_path)],
                     {"`data.tokens`": data.tokens, "`data.text_file`": data.text_file})
    for path in (out, decisions_out):
        check_writable(path)
    if progress_path:
        replaceable(progress_path, "progress file", is_progress_file)
    loaded = load_model(job.model, job.revision, dtype=dtype, device=job.device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code, need_tokenizer=data.tokens is None,
                        **(job.placement or {}))
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens)
    pool = load_windows(data, loaded.tokenizer)
    check_windows(pool, engine.adapter.vocab_size, engine.adapter.max_positions)
    if pool.shortfall():
        log.warning(pool.shortfall())
    order = walk_order(len(pool.input_ids), data.seed)
    windows = replace(pool, input_ids=pool.input_ids[order], attention_mask=pool.attention_mask[order])
    label = (metadata or {}).get("model") or loaded.model_id
    rev = (metadata or {}).get("revision") or loaded.revision or "main"
    plog = ProgressLog(progress_path, fingerprint(
        kind="sequential", weights=loaded.weights_sha256, config=loaded.config_sha256,
        tokenizer=loaded.tokenizer_sha256, tokens=windows.sha256, device=loaded.device,
        versions=provenance.software_versions(), dtype=dtype, batch_size=batch_size, chunk=chunk_tokens,
        pairs=pairs, design=asdict(design), decisions=asdict(decisions)))
    try:
        result = measure_sequential(engine, windows.input_ids, windows.attention_mask, pairs=pairs, design=design,
                                    decisions=decisions, batch_size=batch_size, device=loaded.device,
                                    desc=f"sequential probe {label}@{rev}", progress=plog)
    finally:
        plog.close()
    meta = dict(model=label, revision=rev, step=step_of(rev), n_layers=engine.n_layers)
    prov = provenance.build(loaded, windows, pairs=pairs, batch_size=batch_size, data_spec=data.as_dict(),
                            model=label, revision_label=rev, sequential={
                                "first": design.first, "batch": design.batch, "cap": design.cap,
                                "confidence": design.confidence, "windows_used": len(result.evidence.tokens),
                                "variant_windows": result.variant_windows, "pool": len(order),
                                "walk": f"numpy.random.default_rng({data.seed}).permutation({len(order)})"})
    write_parquets([(pa.Table.from_pylist(probe_rows(result, meta), schema=PROBE_SCHEMA), out, prov),
                    (pa.Table.from_pylist(decision_rows(result, meta), schema=DECISIONS_SCHEMA), decisions_out,
                     prov)])
    plog.close(remove=True)
    for d in result.undecided:
        log.warning("%s %s: undecided at the cap (%d windows)", d.kind, d.subject, d.windows)
    return result
