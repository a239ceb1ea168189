"""``run_pruning``: remove blocks of one checkpoint by every guide and baseline, measure the cost.

Per checkpoint (one output file, schema :data:`~swapkl.tables.schemas.PRUNING_RUN_SCHEMA`, one row per
guide x budget [x random draw]):

* every guide of the registry :mod:`swapkl.pruning.guides` (in its order): the protocol guides (static
  greedy of :mod:`swapkl.pruning.selection`, spacing Delta) ``interchange``, ``replacement_max``,
  ``replacement_mean``, ``deletion`` and the sanity bound ``anti_interchange``; the baselines
  ``bi``, ``angular``, ``sleb_iterative``, ``sleb_greedy``, ``accuracy_iterative``, ``cka``, ``taylor``, ``laco``
  (a weight-averaging merge: ``merged_layers``), ``beam``, ``sleb_matched`` (search guides report
  ``n_evals``), and
  ``random`` (``n_random`` seeded draws per budget under the same spacing, one row per draw with
  ``random_draw`` set);
* derived rows: ``base`` (budget 0, the unpruned model, whose perplexity is every row's
  ``base_ppl``) and ``random_mean`` (the draws' mean, with ``delta_ppl_pct_sd``, ``_min`` and
  ``_max`` over draws).;
* the paper's settings (:class:`swapkl.pruning.selection_options.SelectionOptions`, ``selection``, recorded in the
  provenance; used by the guides of :mod:`swapkl.pruning.guides.protocol`): scoring partners limited to a pair
  set, the tie-break of equal scores (default: deletion KL, then index), ``interchange_clustered`` /
  ``replacement_max_clustered`` (the greedy within a layer region), ``fixed`` (named fixed layer sets,
  ``fixed_set`` = the name, budget = the set's size, evaluated exactly like a guide's set) and the
  random baseline's own spacing.

Cost of a pruned model: sliding-window perplexity on the evaluation text
(:mod:`swapkl.pruning.perplexity`), ``delta_ppl_pct = 100 * (ppl / base_ppl - 1)``, and ``kl_mean`` =
token-weighted KL(p_base || p_pruned) over every valid token of the probe windows. The per-window
sums are kept (``window_nll_sum``, ``window_tokens``, ``probe_kl_sum``, ``probe_tokens``): the
bootstrap CIs of all three (:func:`swapkl.stats.intervals.pruning_intervals`, seeded with ``seed``) and
later statistics (the I/R ratio) are computed from them downstream, by ``aggregate_pruning``.

A guide whose greedy scan cannot reach a feasible budget (the scan may block more layers than
necessary) gets a row with ``feasible = false``, null ``removed_layers`` and NaN costs; a budget
above ``ceil(n_layers / (spacing + 1))`` is an error.

The calibration windows (SLEB, beam, CKA, Taylor) and the probe windows (the guides' scores, the KL) must come
from a source disjoint from the evaluation text unless ``allow_overlap`` is set (an explicit,
recorded opt-in to reproduce the paper, which used test text for both); the three source names are written in every row
(``eval_split``, ``calibration_split``, ``probe_split``) and in the provenance.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from swapkl.tables import provenance
from swapkl.stats.agreement import agreement_rows
from swapkl.stats.bootstrap import ratio_mean
from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import Windows, check_spec, check_windows, load_windows
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import require_distinct
from swapkl.pruning.guides import Pruned, get_guide, guide_names, registered
from swapkl.pruning.guides.context import GuideContext
from swapkl.model.loading import load_model
from swapkl.model.merge import merged_blocks
from swapkl.options import require_device, require_int
from swapkl.model.variant import Variant
from swapkl.tables.parquet_io import check_writable, write_parquets
from swapkl.pruning.perplexity import load_eval_windows, window_nll
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.pruning.prune_jobs import PruneJob
from swapkl.hub.revision_names import step_of
from swapkl.pruning.inputs import check_budgets, check_disjoint, probe_data_spec, read_probe_inputs
from swapkl.tables.schemas import AGREEMENT_SCHEMA, PRUNING_RUN_SCHEMA, REPR_SCHEMA, read_table
from swapkl.pruning.selection_options import SelectionOptions
from swapkl.pruning.stability import GUIDE_PROTOCOLS, set_stability
from swapkl.model.batch_loop import sweep, window_batches

log = logging.getLogger(__name__)


def select_all(ctx: GuideContext) -> tuple[dict, dict, dict[str, np.ndarray]]:
    """Run every registered guide (or those of ``ctx.options.guides``): ``{(guide, budget, draw): Pruned or
    None}``, the evaluations each search guide spent ``{(guide, budget, draw): int}``, and the guides' per-layer
    scores."""
    chosen = ctx.options.guides
    sel: dict[tuple[str, int, int | None], Pruned | None] = {}
    n_evals: dict[tuple[str, int, int | None], int] = {}
    scores: dict[str, np.ndarray] = {}
    for g in registered():
        if not g.chooses or (chosen is not None and g.name not in chosen):
            continue
        out = g.select(ctx)
        if out is None:
            continue
        for (n, draw), p in out.removed.items():
            sel[(g.name, n, draw)] = p
        n_evals.update({(g.name, n, draw): v for (n, draw), v in out.n_evals.items()})
        scores.update(out.scores)
    return sel, n_evals, scores


def check_guide_choice(guides) -> None:
    """A clear error when a chosen guide is not a registered guide that chooses blocks."""
    for name in guides:
        if not get_guide(name).chooses:
            raise SwapKLError(f"guide {name!r} is a row derived from the others and cannot be chosen: choose from "
                              f"{', '.join(g.name for g in registered() if g.chooses)}")


def pruned_variant(p: Pruned, n_layers: int, merged: dict[tuple[int, int], int]) -> Variant:
    """The block order of a pruned model; a merged slot runs its averaged block (id from ``merged``)."""
    drop = set(p.removed)
    swap = {i: merged[(i, i + 1)] for i in p.merged}
    return Variant("pruned", None, None, tuple(swap.get(b, b) for b in range(n_layers) if b not in drop))


def kl_on_windows(engine, windows: Windows, variants: list[Variant], batch_size: int, device: str):
    """Per-sequence KL sums of each variant and the per-sequence token counts."""
    kl = [np.zeros(windows.input_ids.shape[0]) for _ in variants]
    tokens = windows.attention_mask.sum(1).astype(np.float64)
    # sorted by length and cut after each batch's longest window (no work on trailing padding); rows put back
    batches = window_batches(windows.input_ids, windows.attention_mask, batch_size, by_length=True)
    for m in sweep(engine, batches, variants, device=device, desc="KL of the pruned models"):
        if m.k is not None:
            kl[m.k][m.batch.rows] = engine.seq_stats(m.state, m.kl, m.nll).kl_sum.cpu().numpy()
    return kl, tokens


def _row_order(r: dict) -> tuple:
    return (guide_names().index(r["guide"]), r.get("fixed_set") or "", r["budget"],
            -1 if r["random_draw"] is None else r["random_draw"])


def _check_pruning_arguments(probe_files, repr_file, out, agreement_out, eval_spec: EvalSpec, calib_data, *,
                             seed, chunk_tokens, device, spacing, n_random, batch_size, angular_metric) -> None:
    """:func:`run_pruning`'s checks of its arguments, before anything is read or loaded."""
    eval_spec.check()
    require_int("seed", seed, 0)
    require_int("chunk_tokens", chunk_tokens, 1)
    require_device(device)
    inputs = [("`probe_files`", p) for p in probe_files] + [
        ("`repr_file`", repr_file), ("`eval_data.text_file`", eval_spec.text_file),
        ("`calib_data.tokens`", getattr(calib_data, "tokens", None)),
        ("`calib_data.text_file`", getattr(calib_data, "text_file", None))]
    require_distinct({"`out`": out, "`agreement_out`": agreement_out}, inputs)
    for path in (out, agreement_out):  # before hours of computation, not after them
        if path is not None:
            check_writable(path)
    if spacing < 0:
        raise SwapKLError(f"spacing must be >= 0, got {spacing}")
    if n_random < 0 or batch_size < 1:
        raise SwapKLError(f"n_random must be >= 0 and batch_size >= 1 (got {n_random}, {batch_size})")
    if angular_metric not in ("angular", "angular_last"):
        raise SwapKLError(f"unknown angular metric {angular_metric!r}: choose 'angular' or 'angular_last'")
    if not isinstance(calib_data, DataSpec):
        raise SwapKLError("calib_data must be a swapkl.data.windows.DataSpec")
    check_spec(calib_data)


def _read_pruning_inputs(probe_files, repr_file, probe_data, eval_spec, calib_data, allow_overlap):
    """The probe and representation tables with their provenance, and the probe windows' spec (by default the
    one the probe files recorded), each window source checked to be disjoint from the evaluation text."""
    probe, probe_provs = read_probe_inputs(probe_files)
    rep, rep_prov = read_table(repr_file, REPR_SCHEMA, "representation") if repr_file else (None, None)
    rep = None if rep is None else rep.to_pandas()
    if probe_data is None:
        probe_data = probe_data_spec(probe_provs)
    for spec, role in ((calib_data, "calibration"), (probe_data, "probe")):
        try:
            check_disjoint(eval_spec, spec, role)
        except SwapKLError as e:
            if not allow_overlap:
                raise
            log.warning("allow_overlap: %s (reproducing a protocol that did this; recorded in the provenance)", e)
    return probe, probe_provs, rep, rep_prov, probe_data


def _require_tables_of(loaded, model, revision, n_layers, probe, probe_files, probe_provs, rep, repr_file,
                       rep_prov) -> None:
    """The probe and representation tables must have been measured on the loaded weights and config."""
    probe_layers = int(probe["n_layers"].iloc[0])
    if probe_layers != n_layers:
        raise SwapKLError(f"the probe files describe {probe_layers} layers but {model!r} has {n_layers}")
    for path, prov in zip(probe_files, probe_provs):  # one check for every table applied to the model
        provenance.require_made_from(path, prov, loaded.weights_sha256, model, "probe file")
    configs = {p["model_config_sha256"] for p in probe_provs}  # recorded by each (read_probe_inputs)
    if configs != {loaded.config_sha256}:
        raise SwapKLError(f"the probe files were measured under another config.json than that of {model!r}"
                          f"{'@' + revision if revision else ''}")
    if rep is not None:  # a table made from another model would pick that model's layers
        provenance.require_made_from(repr_file, rep_prov, loaded.weights_sha256, model, "representation file")
        sizes = sorted(set(int(v) for v in rep["n_layers"]))
        if sizes != [n_layers]:
            raise SwapKLError(f"representation file {str(repr_file)!r} describes models of {sizes} blocks, but "
                              f"{model!r} has {n_layers}")
        provenance.require_recorded(repr_file, rep_prov, ["model_config_sha256"], "representation file")
        if rep_prov["model_config_sha256"] != loaded.config_sha256:
            raise SwapKLError(f"representation file {str(repr_file)!r} was measured under another config.json than "
                              f"that of {model!r}{'@' + revision if revision else ''}")


def _pruning_windows(adapter, tokenizer, probe_data, probe_provs, calib_data, eval_spec):
    """The probe windows (the probe files' own), the calibration windows and the evaluation windows, checked
    against the model's vocabulary and positions."""
    probe_windows = load_windows(probe_data, tokenizer)
    check_windows(probe_windows, adapter.vocab_size, adapter.max_positions)
    probe_tok = {p["tokens_sha256"] for p in probe_provs}  # recorded by each (read_probe_inputs)
    if probe_windows.sha256 not in probe_tok:
        raise SwapKLError(f"the windows rebuilt from {probe_data.describe()} differ from the probe files' windows")
    calib = load_windows(calib_data, tokenizer)
    check_windows(calib, adapter.vocab_size, adapter.max_positions)
    ew = load_eval_windows(eval_spec, tokenizer, adapter.max_positions)
    if int(ew.input_ids.max()) >= adapter.vocab_size:
        raise SwapKLError(f"token id {int(ew.input_ids.max())} of the evaluation text is outside the vocabulary")
    return probe_windows, calib, ew


@dataclass
class _PrunedCosts:
    """Per-window NLL sums of the base model and of each pruned model (``nll``, ``kl`` keyed by its
    :class:`Pruned`), with the windows' token counts."""

    base_nll: np.ndarray
    win_tok: np.ndarray
    seq_tok: np.ndarray
    nll: dict
    kl: dict

    @property
    def base_log_ppl(self):
        return self.base_nll.sum() / self.win_tok.sum()

    def row(self, meta, guide, budget, draw, removed, nll_sum, kl_sum, merged=None, evals=None) -> dict:
        lp = nll_sum.sum() / self.win_tok.sum()
        return dict(meta, guide=guide, budget=budget, random_draw=draw, removed_layers=list(removed), feasible=True,
                    ppl=float(np.exp(lp)), delta_ppl_pct=float(100.0 * np.expm1(lp - self.base_log_ppl)),
                    kl_mean=ratio_mean(kl_sum, self.seq_tok),
                    window_nll_sum=nll_sum.tolist(), window_tokens=self.win_tok.astype(np.int64).tolist(),
                    n_evals=evals, merged_layers=merged, probe_kl_sum=np.asarray(kl_sum, dtype=np.float64).tolist(),
                    probe_tokens=self.seq_tok.astype(np.int64).tolist())


def _measure_pruned(engine, sets: list[Pruned], ew, probe_windows, batch_size: int, device) -> _PrunedCosts:
    """Evaluation NLL and probe-window KL of the base model and of every pruned model in ``sets`` (LaCo's averaged
    blocks registered while measuring)."""
    with merged_blocks(engine, sorted({(i, i + 1) for s in sets for i in s.merged})) as merged:
        variants = [pruned_variant(s, engine.n_layers, merged) for s in sets]
        base_nll, win_tok, nll_list = window_nll(engine, ew, variants, batch_size=batch_size, device=device)
        kl_list, seq_tok = kl_on_windows(engine, probe_windows, variants, batch_size, device)
    return _PrunedCosts(base_nll, win_tok, seq_tok, dict(zip(sets, nll_list)), dict(zip(sets, kl_list)))


def _pruning_rows(meta: dict, costs: _PrunedCosts, sel: dict, n_evals: dict, budgets) -> list[dict]:
    """The rows of the pruning table: the base model, each guide's choice (infeasible ones without costs) and
    the mean of the random draws at each budget, in the table's order."""
    nan = float("nan")
    rows = [costs.row(meta, "base", 0, None, [], costs.base_nll, np.zeros(len(costs.seq_tok)))]
    for (guide, n, tag), p in sel.items():
        draw, fixed = (tag, None) if guide != "fixed" else (tag[1], tag[0])
        evals = n_evals.get((guide, n, tag))
        if p is None:
            rows.append(dict(meta, guide=guide, budget=n, random_draw=draw, removed_layers=None, feasible=False,
                             ppl=nan, delta_ppl_pct=nan, kl_mean=nan, n_evals=evals))
            continue
        rows.append(dict(costs.row(meta, guide, n, draw, p.removed, costs.nll[p], costs.kl[p],
                                   list(p.merged) if p.merged else None, evals), fixed_set=fixed))
    for n in budgets:
        draws = [r for r in rows if r["guide"] == "random" and r["budget"] == n and r["feasible"]]
        if draws:
            d = np.array([r["delta_ppl_pct"] for r in draws])
            rows.append(dict(meta, guide="random_mean", budget=n, random_draw=None, removed_layers=None, feasible=True,
                             ppl=float(np.mean([r["ppl"] for r in draws])), delta_ppl_pct=float(d.mean()),
                             kl_mean=float(np.mean([r["kl_mean"] for r in draws])),
                             n_draws=len(draws), delta_ppl_pct_sd=float(d.std(ddof=1)) if len(d) > 1 else nan,
                             delta_ppl_pct_min=float(d.min()), delta_ppl_pct_max=float(d.max())))
    rows.sort(key=_row_order)
    return rows


def run_pruning(job: PruneJob) -> pd.DataFrame:
    """Prune one checkpoint by every guide and baseline at every budget and write the table: a
    :class:`~swapkl.pruning.prune_jobs.PruneJob` (``run_pruning(job)``), whose fields say
    what each option does. Returns the rows written."""
    job = PruneJob.checked(job)
    model, revision, probe_files, repr_file, out = job.model, job.revision, job.probe_files, job.repr_file, job.out
    eval_data, calib_data, probe_data, selection = job.eval_data, job.calib_data, job.probe_data, job.selection
    budgets, spacing, n_random, seed, angular_metric = job.budgets, job.spacing, job.n_random, job.seed, job.angular_metric
    batch_size, chunk_tokens, device, metadata = job.batch_size, job.chunk_tokens, job.device, job.metadata
    eval_spec = EvalSpec.from_dict(eval_data)
    _check_pruning_arguments(probe_files, repr_file, out, job.agreement_out, eval_spec, calib_data, seed=seed,
                             chunk_tokens=chunk_tokens, device=device, spacing=spacing, n_random=n_random,
                             batch_size=batch_size, angular_metric=angular_metric)
    if selection is not None and selection.guides is not None:
        check_guide_choice(selection.guides)
    metadata = dict(metadata or {})

    probe, probe_provs, rep, rep_prov, probe_data = _read_pruning_inputs(probe_files, repr_file, probe_data,
                                                                         eval_spec, calib_data, job.allow_overlap)
    loaded = load_model(model, revision, dtype=job.dtype, device=device, allow_pickle=job.allow_pickle,
                        trust_remote_code=job.trust_remote_code, need_tokenizer=True, compute_dtype=job.compute_dtype,
                        rope_scaling=job.rope_scaling, logits_dtype=job.logits_dtype, **(job.placement or {}))
    dev = loaded.device
    engine = ProbeEngine(loaded.model, chunk_tokens=chunk_tokens, logits_dtype=job.logits_dtype)
    n_layers = engine.n_layers
    _require_tables_of(loaded, model, revision, n_layers, probe, probe_files, probe_provs, rep, repr_file, rep_prov)
    budgets = check_budgets(budgets, n_layers, spacing)
    probe_windows, calib, ew = _pruning_windows(engine.adapter, loaded.tokenizer, probe_data, probe_provs,
                                                calib_data, eval_spec)

    label = metadata.pop("model", None) or loaded.model_id
    rev = metadata.pop("revision", None) or loaded.revision or "main"
    log.info("pruning %s@%s: %d layers, budgets %s, %d evaluation windows (%d scored tokens)",
             label, rev, n_layers, budgets, ew.n_windows, ew.n_scored)

    selection = selection or SelectionOptions()
    ctx = GuideContext(probe, rep, n_layers, budgets, spacing, n_random, seed, angular_metric, engine, calib,
                       batch_size, dev, options=selection)
    sel, n_evals, scores = select_all(ctx)

    sets = sorted({r for r in sel.values() if r is not None})
    costs = _measure_pruned(engine, sets, ew, probe_windows, batch_size, dev)
    seq_tok = costs.seq_tok
    meta = dict(model=label, revision=rev, step=step_of(rev), n_layers=n_layers, spacing=spacing,
                eval_split=eval_spec.describe(), calibration_split=calib_data.describe(),
                probe_split=probe_data.describe(), eval_window=eval_spec.window, eval_stride=eval_spec.stride,
                eval_max_words=eval_spec.max_words, n_eval_windows=ew.n_windows, n_eval_tokens=ew.n_scored,
                n_probe_seqs=int(len(seq_tok)), n_probe_tokens=int(seq_tok.sum()),
                base_ppl=float(np.exp(costs.base_log_ppl)))
    rows = _pruning_rows(meta, costs, sel, n_evals, budgets)
    for row in rows:  # how much each probe-guided set rests on the probe windows
        if row["guide"] in GUIDE_PROTOCOLS and row["random_draw"] is None and row["feasible"] and not row.get(
                "merged_layers") and row.get("fixed_set") is None:
            row["set_stability"] = set_stability(probe, row["guide"], row["budget"], row["removed_layers"], n_layers,
                                                 spacing)
    table = pa.Table.from_pylist(rows, schema=PRUNING_RUN_SCHEMA)

    prov = provenance.build(
        loaded, None, model=label, revision_label=rev, budgets=budgets, spacing=spacing, n_random=n_random, seed=seed,
        angular_metric=angular_metric, batch_size=batch_size, selection=selection.as_dict(),
        bos_token_id=probe_windows.bos_token_id, bos_prepended=probe_windows.bos_token_id is not None,
        allow_overlap=bool(job.allow_overlap),
        eval_spec=eval_spec.as_dict(), eval_split=eval_spec.describe(), eval_tokens_sha256=ew.sha256,
        calibration_spec=calib_data.as_dict(), calibration_split=calib_data.describe(),
        calibration_tokens_sha256=calib.sha256, probe_spec=probe_data.as_dict(), probe_split=probe_data.describe(),
        probe_tokens_sha256=probe_windows.sha256, probe_files=[str(p) for p in probe_files],
        repr_file=None if repr_file is None else str(repr_file), guides=sorted({r["guide"] for r in rows}),
        input_sha256=provenance.input_sha256([*probe_files, repr_file]),
        sleb_order=ctx.measured("sleb").order[:max(budgets)] if ctx.measured("sleb") else None, **metadata)
    outputs = [(table, out, prov)]
    if job.agreement_out is not None:
        arows = agreement_rows(scores, dict(model=label, revision=rev, step=step_of(rev), n_layers=n_layers))
        outputs.append((pa.Table.from_pylist(arows, schema=AGREEMENT_SCHEMA), job.agreement_out, prov))
    write_parquets(outputs)  # both or neither
    log.info("wrote %s (%d rows, %d distinct pruned models)", out, len(rows), len(sets))
    return table.to_pandas()
